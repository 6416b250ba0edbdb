"""The entry point (``delegate_lens`` group, name ``executorch``): answers
``dl_executorch_bridge`` with :class:`~delegate_lens_executorch.bridge.Bridge` (the core's
:class:`~delegate_lens.hookspecs.ExecuTorchBridge`, which the annotation holds it to) when
the ``executorch`` package is importable, else nothing (the core then names the extra).

Loading this module is cheap: it does not import ``executorch`` (nor torch).
"""

from __future__ import annotations

import importlib.util

from delegate_lens import hookimpl
from delegate_lens.hookspecs import ExecuTorchBridge
from delegate_lens_executorch.bridge import Bridge

__all__ = ["dl_executorch_bridge", "executorch_installed"]


def executorch_installed() -> bool:
    """Whether the ``executorch`` package can be imported here."""
    try:
        return importlib.util.find_spec("executorch") is not None
    except (ImportError, ValueError):
        return False


@hookimpl
def dl_executorch_bridge() -> ExecuTorchBridge | None:
    return Bridge() if executorch_installed() else None
