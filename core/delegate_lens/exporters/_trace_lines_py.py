"""The Python twin of the timeline writers' compiled loops (``_trace_lines.pyx``): the same
functions, names and parameters, giving the same results with numpy and Python. The
selection module (:mod:`delegate_lens.exporters._compiled`) takes these where the
extension is not built (no C compiler at install) or ``DELEGATE_LENS_NO_COMPILED`` is on.

They keep the extension's contract: :func:`run_lines` and :func:`block_lines` return None
when a value is out of the exact range (the caller then prints with the float's repr), and
:func:`track_order` returns an order (the compiled sort returns None for a run far from
sorted; this numpy sort never needs to, and the caller takes it then).
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np
import numpy.typing as npt

_CLIPPED = b', "clipped": true'

# below this many runs a block is nested run by run in Python (numpy's per-call cost
# would dominate); from it on, one numpy step per slice position serves every run
_VECTOR_RUNS = 48


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
) -> tuple[bytearray, list[int]] | None:
    """The lines of the runs of one chunk (rows of ``starts``, ``durs``, ``cols``) in a
    bytearray, and the offset where each run's lines end; None when a value is out of the
    exact range (negative, or ``limit`` or more). A slice's line is ``head[col] RUN ', "ts": '
    TS ', "dur": ' DUR mid[col] RUN EXTRA '}}'``; a number is ``ticks // divisor`` and the
    fraction's text ``fractions[ticks % divisor]`` (``divisor`` > 1), else
    ``ticks * multiplier`` and ``.0``. The lines go into ``into`` when it is large enough
    (never resized), else into a new bytearray."""
    starts = np.asarray(starts, dtype=np.int64)
    durs = np.asarray(durs, dtype=np.int64)
    if starts.size and (
        int(starts.min()) < 0
        or int(starts.max()) >= limit
        or int(durs.min()) < 0
        or int(durs.max()) >= limit
    ):
        return None
    k, r = starts.shape
    tail = b"%s}}" if extras is not None else b"}}"
    forms = [
        h.replace(b"%", b"%%")
        + b'%s, "ts": %d%s, "dur": %d%s'
        + m.replace(b"%", b"%%")
        + b"%s"
        + tail
        for h, m in zip(heads, mids, strict=True)
    ]
    ts_int, ts_frac = _parts(starts.ravel(), divisor, multiplier, fractions)
    dur_int, dur_frac = _parts(durs.ravel(), divisor, multiplier, fractions)
    names = np.repeat(_objects([b"%d" % run for run in runs]), r).tolist()
    n = 6 if extras is None else 7  # values per slice
    values: list[object] = [None] * (n * k * r)
    values[0::n] = names
    values[1::n] = ts_int
    values[2::n] = ts_frac
    values[3::n] = dur_int
    values[4::n] = dur_frac
    values[5::n] = names
    if extras is not None:
        values[6::n] = extras
    cols = np.asarray(cols)
    same = k > 0 and bool((cols == cols[0]).all())
    form = b"".join(forms[c] for c in cols[0].tolist()) if same else b""
    every = tuple(values)  # one tuple, sliced run by run
    size = n * r
    parts = [
        (form if same else b"".join(forms[c] for c in cols[i].tolist()))
        % every[size * i : size * (i + 1)]
        for i in range(k)
    ]
    ends = list(accumulate(len(part) for part in parts))
    if into is None or len(into) < (ends[-1] if ends else 0):
        return bytearray().join(parts), ends
    at = 0
    for part, end in zip(parts, ends, strict=True):
        into[at:end] = part  # the same length: never resized
        at = end
    return into, ends


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
) -> tuple[bytearray, list[int]] | None:
    """:func:`run_lines` from a block's slices as they are (``start``, ``end``,
    ``clipped``, each run's track ``order``) for the runs at ``positions``: each run's
    slices taken in track order and nested (:func:`nest_runs`), a clipped slice's args
    ending ``"clipped": true``. None when a value is out of the exact range."""
    order = np.asarray(order)[positions]
    first = np.take_along_axis(np.asarray(start)[positions], order, axis=1)
    last = np.take_along_axis(np.asarray(end)[positions], order, axis=1)
    cut = np.take_along_axis(np.asarray(clipped)[positions], order, axis=1).astype(bool)
    last, more, _depth = nest_runs(first, last)
    cut |= more
    extras = None
    if cut.any():
        extra = np.full(cut.shape, b"", dtype=object)
        extra[cut] = _CLIPPED
        extras = extra.ravel().tolist()
    return run_lines(
        heads,
        mids,
        first - origin,
        last - first,
        order,
        runs,
        extras,
        divisor,
        multiplier,
        fractions,
        limit,
        into,
    )


def nest_runs(
    start: npt.NDArray[np.int64], end: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int32]]:
    """Clip ``(runs, slices)`` slices in track order so that each run's slices nest: the
    clipped ends, which slices were clipped, and each slice's depth (the stack walk of
    ``delegate_lens.exporters._slices.nest``): run by run in Python for few runs, else one
    numpy step per slice position across every run."""
    k, r = start.shape
    if k < _VECTOR_RUNS:
        return _nest_loop(start, end)
    # the columns are made rows (contiguous), the stack holds the ends of the open slices,
    # bottom up, one row per level; they never increase upwards (a slice is clipped to its
    # parent), so the slices a new one closes are always the top ones
    starts = np.ascontiguousarray(start.T)
    ends_out = np.array(end.T)  # clipped in place
    clipped = np.zeros((r, k), dtype=bool)
    depth = np.zeros((r, k), dtype=np.int32)
    stack = np.zeros((4, k), dtype=np.int64)
    levels = np.arange(stack.shape[0])[:, None]
    d = np.zeros(k, dtype=np.intp)
    runs = np.arange(k)
    size = 0  # levels in use on some run's stack
    for i in range(r):
        s = starts[i]
        e = ends_out[i]
        if size:
            ends = stack[:size]
            open_ = ends > s
            zero = s == e
            if zero.any():  # a zero-length slice at an open slice's end stays inside it
                open_ |= (ends == s) & zero
            open_ &= levels[:size] < d
            d = np.count_nonzero(open_, axis=0)
            top = ends[d - 1, runs]
            cut = (d > 0) & (e > top)
            if cut.any():
                np.copyto(e, top, where=cut)
                clipped[i] = cut
            depth[i] = d
        size = int(d.max()) + 1
        if stack.shape[0] < size:
            stack = np.concatenate([stack, np.zeros_like(stack)], axis=0)
            levels = np.arange(stack.shape[0])[:, None]
        stack[d, runs] = e
        d = d + 1
    return ends_out.T, clipped.T, depth.T


def _nest_loop(
    start: npt.NDArray[np.int64], end: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int32]]:
    """:func:`nest_runs` run by run in plain Python (few runs)."""
    out = end.copy()
    clipped = np.zeros(start.shape, dtype=bool)
    depth = np.zeros(start.shape, dtype=np.int32)
    for run in range(start.shape[0]):
        ends: list[int] = []
        cut: list[bool] = []
        depths: list[int] = []
        stack: list[int] = []  # end ticks of the open slices
        for s, e in zip(start[run].tolist(), end[run].tolist(), strict=True):
            while stack and stack[-1] <= s and not (stack[-1] == s == e):
                stack.pop()
            depths.append(len(stack))
            if stack and e > stack[-1]:
                e = stack[-1]
                cut.append(True)
            else:
                cut.append(False)
            stack.append(e)
            ends.append(e)
        out[run] = ends
        clipped[run] = cut
        depth[run] = depths
    return out, clipped, depth


def track_order(
    start: npt.NDArray[np.int64], end: npt.NDArray[np.int64], levels: npt.NDArray[np.int64]
) -> npt.NDArray[np.intp] | None:
    """Each run's track order of ``(runs, slices)`` slices: a stable sort by start, level
    (``levels`` per slice), zero length first, longest first (numpy's sort, whose cost does
    not depend on the order; never None)."""
    order: npt.NDArray[np.intp] = np.lexsort(
        (-end, end > start, np.broadcast_to(levels, start.shape), start), axis=-1
    )
    return order


def _parts(
    ticks: npt.NDArray[np.int64], divisor: int, multiplier: int, fractions: list[bytes]
) -> tuple[list[int], list[bytes]]:
    """The integer and the fraction text of each value's microseconds."""
    if divisor > 1:
        whole, frac = np.divmod(ticks, divisor)
        return whole.tolist(), _objects(fractions)[frac].tolist()
    return (ticks * multiplier).tolist(), [b".0"] * len(ticks)


def _objects(items: list[bytes]) -> npt.NDArray[np.object_]:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out
