"""The timeline writers' compiled loops (``_trace_lines.pyx``, Cython, built at install when
a C compiler is there), and whether to take them: when built, unless the environment
variable ``DELEGATE_LENS_NO_COMPILED`` is set to a non-empty value other than ``0`` (as
for the ETDump decoder's walk). Without them the same output comes from numpy and Python.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

NestRuns = Callable[
    [npt.NDArray[np.int64], npt.NDArray[np.int64]],
    tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int32]],
]
nest_runs: NestRuns | None
run_lines: Callable[..., tuple[bytearray, list[int]] | None] | None
block_lines: Callable[..., tuple[bytearray, list[int]] | None] | None
track_order: (
    Callable[
        [npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]],
        npt.NDArray[np.intp] | None,
    ]
    | None
)
try:
    from delegate_lens.exporters._trace_lines import (
        block_lines,
        nest_runs,
        run_lines,
        track_order,
    )
except ImportError:  # not built: numpy and Python
    block_lines = nest_runs = run_lines = track_order = None


def compiled() -> bool:
    """Whether the compiled loops are taken (built, and not switched off)."""
    return run_lines is not None and os.environ.get("DELEGATE_LENS_NO_COMPILED", "0") in ("", "0")
