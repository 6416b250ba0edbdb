"""Types of the timeline writers' compiled loops (``_trace_lines.pyx``)."""

import numpy as np
import numpy.typing as npt

def run_lines(
    heads: list[bytes],
    mids: list[bytes],
    starts: npt.NDArray[np.int64],
    durs: npt.NDArray[np.int64],
    cols: npt.NDArray[np.intp],
    runs: list[int],
    extras: list[bytes] | None,
    divisor: int,
    multiplier: int,
    fractions: list[bytes],
    limit: int,
    into: bytearray | None = None,
) -> tuple[bytearray, list[int]] | None: ...
def nest_runs(
    start: npt.NDArray[np.int64], end: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int32]]: ...
def block_lines(
    heads: list[bytes],
    mids: list[bytes],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    clipped: npt.NDArray[np.uint8],
    order: npt.NDArray[np.intp],
    positions: npt.NDArray[np.intp],
    runs: list[int],
    origin: int,
    divisor: int,
    multiplier: int,
    fractions: list[bytes],
    limit: int,
    into: bytearray | None = None,
) -> tuple[bytearray, list[int]] | None: ...
def track_order(
    start: npt.NDArray[np.int64], end: npt.NDArray[np.int64], levels: npt.NDArray[np.int64]
) -> npt.NDArray[np.intp] | None: ...
