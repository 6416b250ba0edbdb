"""delegate-lens plugin: ExecuTorch XNNPACK's operator events linked to the graph's nodes.

Found by delegate-lens through its entry point ``xnnpack`` (group ``delegate_lens``); the
hook lives in :mod:`delegate_lens_xnnpack.plugin`, the blob reader in
:mod:`delegate_lens_xnnpack.graph`, the placing of events on nodes in
:mod:`delegate_lens_xnnpack.align`. Imports neither torch nor executorch.
"""

from __future__ import annotations

from delegate_lens_xnnpack.align import KIND_TYPES, Alignment, align, operator_type
from delegate_lens_xnnpack.graph import NODE_KINDS, XNode, read_xnodes

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
