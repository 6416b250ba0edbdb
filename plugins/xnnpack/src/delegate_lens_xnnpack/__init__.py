"""delegate-lens plugin: ExecuTorch XNNPACK's operator events linked to the graph's nodes.

Found by delegate-lens through its entry point ``xnnpack`` (group ``delegate_lens``); the
hook lives in :mod:`delegate_lens_xnnpack.plugin`, the blob reader in
:mod:`delegate_lens_xnnpack.graph`, the placing of events on nodes in
:mod:`delegate_lens_xnnpack.align`. Imports neither torch nor executorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens_xnnpack.graph import NODE_KINDS, XNode, read_xnodes

if TYPE_CHECKING:
    from delegate_lens_xnnpack.align import KIND_TYPES, Alignment, align, operator_type

__all__ = [
    "KIND_TYPES",
    "NODE_KINDS",
    "Alignment",
    "XNode",
    "align",
    "operator_type",
    "read_xnodes",
]
__version__ = "0.1.0"


_ALIGN_NAMES = frozenset({"KIND_TYPES", "Alignment", "align", "operator_type"})


def __getattr__(name: str) -> object:
    """The aligner's names, imported on first use: it needs numpy, which loading the plugin
    (every delegate-lens command) must not import."""
    if name in _ALIGN_NAMES:
        import importlib

        module = importlib.import_module("delegate_lens_xnnpack.align")
        # importing the submodule binds its name here; the function of that name wins
        globals().update({n: getattr(module, n) for n in _ALIGN_NAMES})
        return globals()[name]
    raise AttributeError(f"module 'delegate_lens_xnnpack' has no attribute {name!r}")
