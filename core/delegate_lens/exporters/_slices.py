"""The slices of the timeline writers (``chrome-trace``, ``perfetto``; the report's timeline
too): every profile event of a block, for all its runs at once, as numpy columns.

A slice starts at its event's start and lasts its sample (integer ticks of the runtime's
clock). Viewers need proper nesting on a track, so a kernel or delegate event that sticks
out of its instruction's call (a delegate clock that is not quite the runtime's) is
clipped to the call (the Inspector does that when it builds the :class:`Slices`), and
:func:`nest` then clips any slice that overlaps the end of the slice it starts in. The
order on a track: by start; at the same start outer levels first (``Method::execute``,
then ``OPERATOR_CALL``/``DELEGATE_CALL``, then kernels, then delegate events), within a
level zero-length slices first (siblings rather than children of a longer slice starting
at the same instant), then longest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.exporters import _compiled

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@attrs.frozen
class Nested:
    """Slices of some runs of a block in track order, each ``(runs, slices)``: ``cols``
    (which of :attr:`Slices.rows`), ``start`` and ``end`` (ticks, ``end`` clipped to
    the enclosing slice), ``clipped`` (either clipping changed the slice) and ``depth``
    (number of enclosing slices)."""

    cols: npt.NDArray[np.intp]
    start: IntArray
    end: IntArray
    clipped: BoolArray
    depth: npt.NDArray[np.int32]


@attrs.frozen(eq=False)
class Slices:
    """Every slice of one block, for all its runs: ``start``/``end`` are ``(runs, rows)``
    integer ticks of the runtime's clock (rows: the block's rows with samples, ``rows``),
    ``clipped`` marks the slices clipped to their call, ``order`` is each run's track
    order (indices into ``rows``)."""

    rows: list[int]
    start: IntArray
    end: IntArray
    clipped: BoolArray
    order: npt.NDArray[np.intp]

    def nested(self, positions: slice | npt.NDArray[np.intp] = slice(None)) -> Nested:
        """The slices of the runs at ``positions`` (in the block) in track order, nested."""
        order = self.order[positions]
        start = np.take_along_axis(self.start[positions], order, axis=1)
        end = np.take_along_axis(self.end[positions], order, axis=1)
        clipped = np.take_along_axis(self.clipped[positions], order, axis=1)
        end, more, depth = nest(start, end)
        return Nested(order, start, end, clipped | more, depth)


@attrs.frozen(eq=False)
class SliceSource:
    """A block's slices, made for a range of its runs at a time: the writers never hold a
    whole block's (25 bytes per event), only a range's, which stays in the CPU's caches.

    :param rows: the block's rows with samples (what :attr:`Slices.rows` holds).
    :param n_runs: the block's runs.
    :param first_start: the earliest start of any slice (ticks), None without slices.
    :param make: ``make(lo, hi)``, the :class:`Slices` of the runs at positions
        ``lo`` to ``hi`` (exclusive) of the block.
    """

    rows: list[int]
    n_runs: int
    first_start: int | None
    make: Callable[[int, int], Slices]

    @classmethod
    def of(cls, slices: Slices) -> SliceSource:
        """The source of slices already made (all of a block's runs)."""

        def make(lo: int, hi: int) -> Slices:
            return Slices(
                slices.rows,
                slices.start[lo:hi],
                slices.end[lo:hi],
                slices.clipped[lo:hi],
                slices.order[lo:hi],
            )

        first = int(slices.start.min()) if slices.start.size else None
        return cls(slices.rows, slices.start.shape[0], first, make)

    def runs(self, lo: int, hi: int) -> Slices:
        """The slices of the runs at positions ``lo`` to ``hi`` (exclusive)."""
        return self.make(lo, min(hi, self.n_runs))

    def ranges(self, events: int) -> Iterator[tuple[int, Slices]]:
        """Every run's slices, about ``events`` slices at a time: ``(first position, slices)``."""
        span = max(1, events // max(1, len(self.rows)))
        for lo in range(0, self.n_runs, span):
            yield lo, self.runs(lo, lo + span)

    def spans(self, positions: Iterable[int], events: int) -> dict[int, tuple[int, int]]:
        """First start and last end (ticks) of the runs at ``positions`` that have slices,
        made a range of runs at a time (only the ranges holding one of them)."""
        wanted = sorted(set(positions))
        out: dict[int, tuple[int, int]] = {}
        if not self.rows or not wanted:
            return out
        span = max(1, events // len(self.rows))
        at = 0
        while at < len(wanted):
            lo = wanted[at]
            sl = self.runs(lo, lo + span)
            firsts = sl.start.min(axis=1).tolist()
            lasts = sl.end.max(axis=1).tolist()
            while at < len(wanted) and wanted[at] < lo + sl.start.shape[0]:
                pos = wanted[at]
                out[pos] = (int(firsts[pos - lo]), int(lasts[pos - lo]))
                at += 1
        return out


def track_order(start: IntArray, end: IntArray, levels: IntArray) -> npt.NDArray[np.intp]:
    """Each run's track order of ``(runs, slices)`` slices, ``levels`` per slice: by start;
    at the same start outer levels first, within a level zero-length slices first, then
    longest; ties in slice order (a stable sort)."""
    order = _compiled.track_order(
        np.ascontiguousarray(start),
        np.ascontiguousarray(end),
        np.ascontiguousarray(levels, dtype=np.int64),
    )
    if order is None:  # runs far from sorted, which the compiled sort declines: numpy's
        return np.lexsort((-end, end > start, np.broadcast_to(levels, start.shape), start), axis=-1)
    return order


def nest(start: IntArray, end: IntArray) -> tuple[IntArray, BoolArray, npt.NDArray[np.int32]]:
    """Clip ``(runs, slices)`` slices in track order so that each run's slices nest:
    the clipped ends, which slices were clipped, and each slice's depth.

    A slice closes the slices on the stack that end at or before its start (but a
    zero-length slice exactly at the end of an open slice stays inside it) and is clipped
    to end no later than the slice left on top, its parent.
    """
    return _compiled.nest_runs(np.ascontiguousarray(start), np.ascontiguousarray(end))
