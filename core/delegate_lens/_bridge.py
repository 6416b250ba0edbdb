"""Where the core meets real ExecuTorch: the bridge plugin found through its hook.

The core never imports ``executorch``. What runs real programs or lowers with real
partitioners asks :func:`executorch_bridge` for the object the ``dl_executorch_bridge``
hook returns (the plugin distribution ``delegate-lens-executorch``, installed by the
``executorch`` extra); without it, the caller gets one line naming the extra to install.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from delegate_lens.errors import MissingExtraError

if TYPE_CHECKING:
    from delegate_lens.hookspecs import ExecuTorchBridge
    from delegate_lens.inspector import Inspector


EXTRA_HINT = "pip install 'delegate-lens[executorch]'"
"""What installs the bridge (the plugin and ``executorch>=1.5``)."""


def executorch_bridge(what: str) -> ExecuTorchBridge:
    """The bridge (:class:`~delegate_lens.hookspecs.ExecuTorchBridge`), or a
    :class:`MissingExtraError` saying ``what`` needs the extra."""
    from delegate_lens import hooks

    bridge = hooks.executorch_bridge()
    if bridge is None:
        raise MissingExtraError(f"{what} needs real ExecuTorch: {EXTRA_HINT}")
    return bridge


def profile(
    program: str | os.PathLike[str],
    *,
    etrecord: str | os.PathLike[str] | None = None,
    inputs: Sequence[object] | str | os.PathLike[str] | None = None,
    bundled: str | os.PathLike[str] | None = None,
    runs: int = 1,
    debug: bool = False,
    output_dir: str | os.PathLike[str] | None = None,
    method: str = "forward",
) -> Inspector:
    """Run a real ExecuTorch program (``.pte``) with ETDump and return the Inspector.

    ``inputs`` are the method's inputs: tensors or numpy arrays, or a file: ``.npy`` (one
    array, the only input), ``.npz`` (the inputs in the order the archive stores them,
    ``arr_0``, ``arr_1``, ... as ``numpy.savez`` names them; names are not used, inputs go
    by position) or ``torch.save`` (a tensor, or a list/tuple of inputs); ``bundled`` a
    bundled program whose first test case gives them instead; by default the ETRecord's
    representative inputs. The program is checked (loaded) before its inputs. ``runs`` executions; ``debug`` also logs
    intermediate outputs in a debug buffer. With ``output_dir``, the ETDump, debug buffer,
    Inspector table, ``report.html`` and numeric gaps are written there. Needs the
    ``executorch`` extra.
    """
    bridge = executorch_bridge("delegate_lens.profile")
    return bridge.profile(
        program,
        etrecord=etrecord,
        inputs=inputs,
        bundled=bundled,
        runs=runs,
        debug=debug,
        output_dir=output_dir,
        method=method,
    )
