"""Per-block tables: row keys, links, samples and statistics, computed with numpy.

A :class:`BlockTable` is what the Inspector keeps for every merged block; :class:`Event`
objects and every exporter read from it. Samples are a ``(rows, runs)`` float matrix in the
target time scale; rows whose samples are whole source ticks divided by a power of ten
also keep the tick matrix, so that writers can print them as exact decimals quickly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import InspectorError
from delegate_lens.inspector._build import Block, FileColumns
from delegate_lens.inspector._linking import RowKey, RowLink
from delegate_lens.inspector._timescale import elapsed_float, elapsed_ticks

FloatArray = npt.NDArray[np.float64]
DelegateTimes = Callable[
    [int, RowKey, npt.NDArray[np.uint64], npt.NDArray[np.uint64]],
    "tuple[FloatArray, FloatArray] | None",
]
"""``(row, key, start ticks, end ticks) -> (start, end)`` converted into the target scale
for one delegate-logged row, or None for the default conversion."""
EventTimes = Callable[
    [npt.NDArray[np.integer[Any]]], "tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]"
]
"""``events -> (start ticks, end ticks)`` of global event indices, of the same shape."""


@attrs.define(eq=False)
class BlockTable:
    """One merged block with everything its rows need."""

    index: int
    block: Block
    keys: list[RowKey]
    method: str | None
    links: list[RowLink]
    samples: FloatArray  # (rows, runs); NaN for rows without samples
    exact: npt.NDArray[np.bool_]  # rows whose samples are ticks / factor
    stats_of: Callable[[], FloatArray] = attrs.field(repr=False)
    """Computes :attr:`stats` (on first use: the timelines never need them)."""
    debug_data: dict[int, list[Any]] = attrs.field(factory=dict)  # row -> inflated values
    run_output: list[Any] = attrs.field(factory=list)  # final outputs of the first run
    zeros_debug_data: dict[int, list[Any]] | None = None
    """Without a debug buffer: each row's values as the reference gives them (tensors of
    zeros of the logged shape and dtype), where :attr:`debug_data` has None."""
    zeros_run_output: list[Any] | None = None
    converted_start: dict[int, FloatArray] = attrs.field(factory=dict)
    """Delegate rows whose clock went through a converter: start times (target scale)."""
    ticks_of: Callable[[], npt.NDArray[np.uint64] | None] = attrs.field(
        default=lambda: None, repr=False
    )
    event_times: EventTimes | None = attrs.field(default=None, repr=False)
    """Raw start and end ticks of the events at some global indices (e.g. a column of
    ``block.events``), from the file's columns; None: not known."""
    _stats: FloatArray | None = attrs.field(default=None, init=False, repr=False)

    def reference_debug_data(self, row: int) -> list[Any]:
        """Row ``row``'s values as the reference's ``Event.debug_data`` has them."""
        if self.zeros_debug_data is not None and row in self.zeros_debug_data:
            return self.zeros_debug_data[row]
        return self.debug_data.get(row, [])

    def reference_run_output(self) -> list[Any]:
        """The run output as the reference's ``EventBlock.run_output`` has it."""
        return self.run_output if self.zeros_run_output is None else self.zeros_run_output

    @property
    def stats(self) -> FloatArray:
        """``(6, rows)``: p10, p50, p90, avg, min, max of each row's samples (NaN without
        samples), computed on first use."""
        if self._stats is None:
            self._stats = self.stats_of()
        return self._stats

    @property
    def ticks(self) -> npt.NDArray[np.uint64] | None:
        """``(rows, runs)`` elapsed ticks of the exact rows (zeros in the others; None
        without exact rows), from the file's columns on each use: the Inspector does not
        keep 8 bytes per event that only the JSON and trace writers read."""
        return self.ticks_of()

    @property
    def zeroed_rows(self) -> ZeroedRows:
        """``samples`` row by row with NaN as 0.0 (``zeroed_rows[j]``), each row made when
        read: no copy of the whole matrix (8 bytes per event) for readers of rows."""
        return ZeroedRows(self.samples)

    def with_runs(self, positions: Sequence[int]) -> BlockTable:
        """This table with only the block's runs at ``positions`` (each run's samples,
        events and converted start times are its own, so whatever is computed run by run
        comes out the same; ``stats`` stay the whole block's): for views that show a few
        runs of a big block."""
        at = list(positions)
        block = attrs.evolve(self.block, runs=self.block.runs[at], events=self.block.events[at])
        return attrs.evolve(
            self,
            block=block,
            samples=self.samples[:, at],
            stats_of=lambda: self.stats,
            converted_start={j: v[at] for j, v in self.converted_start.items()},
            ticks_of=lambda: None if (t := self.ticks) is None else t[:, at],
        )

    @property
    def name(self) -> str:
        return self.block.name or ""

    @property
    def n_rows(self) -> int:
        return len(self.keys)

    @property
    def n_runs(self) -> int:
        return len(self.block.runs)


class ZeroedRows:
    """The rows of a samples matrix with NaN as 0.0, each made when read."""

    def __init__(self, samples: FloatArray) -> None:
        self._samples = samples

    def __getitem__(self, row: int) -> FloatArray:
        return np.nan_to_num(self._samples[row], nan=0.0)


def row_keys(fc: FileColumns, block: Block) -> list[RowKey]:
    """Name, instruction id and delegate identifier of each row (from the first run)."""
    ev = block.events[0]
    names = fc.name[ev]
    iids = fc.instruction_id[ev]
    dint = fc.did_int[ev]
    dstr = fc.did_str[ev]
    keys = []
    for j in range(len(ev)):
        identifier: int | str | None
        identifier = int(dint[j]) if dint[j] != -1 else fc.string(int(dstr[j]))
        name = str(identifier) if identifier is not None else (fc.string(int(names[j])) or "")
        keys.append(RowKey(name=name, instruction_id=int(iids[j]), identifier=identifier))
    return keys


_CHUNK = 1 << 18
"""Samples computed at a time (whole rows): the temporaries of the gathers stay this small."""


def _row_chunks(rows: npt.NDArray[np.intp], runs: int) -> list[npt.NDArray[np.intp]]:
    step = max(1, _CHUNK // max(runs, 1))
    return [rows[i : i + step] for i in range(0, len(rows), step)]


def _ticks(
    fc: FileColumns,
    ev: npt.NDArray[np.integer[Any]],
    rows: npt.NDArray[np.intp],
    keys: list[RowKey],
    where: str,
) -> npt.NDArray[np.uint64]:
    """Elapsed ticks of ``rows`` (each row's events ``ev[row]``); a bad row is named."""
    sel = ev[rows]
    try:
        return elapsed_ticks(fc.start_time[sel], fc.end_time[sel], where)
    except InspectorError:
        for row in rows:  # find the row, for the message
            one = ev[row]
            elapsed_ticks(fc.start_time[one], fc.end_time[one], f"{where}, row {keys[row].name!r}")
        raise


def exact_ticks(
    fc: FileColumns, block: Block, keys: list[RowKey], exact: npt.NDArray[np.bool_], where: str
) -> npt.NDArray[np.uint64] | None:
    """``(rows, runs)`` elapsed ticks of the ``exact`` rows, zeros elsewhere (None: none)."""
    if not exact.any():
        return None
    ev = block.events.T
    ticks = np.zeros(ev.shape, dtype=np.uint64)
    for rows in _row_chunks(np.flatnonzero(exact), ev.shape[1]):
        ticks[rows] = _ticks(fc, ev, rows, keys, where)
    return ticks


def compute_samples(
    fc: FileColumns,
    block: Block,
    keys: list[RowKey],
    factor: float,
    delegate_times: DelegateTimes,
    where: str,
    converted_start: dict[int, FloatArray] | None = None,
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """Samples ``(rows, runs)`` and the exact-row mask, a few rows at a time
    (:func:`exact_ticks` gives the exact rows' ticks again when asked; :func:`row_stats`
    the statistics).

    Delegate-logged rows go through ``delegate_times``; when it returns None, start and end
    are each divided by ``factor`` before subtracting (as the reference does).
    """
    ev = block.events.T  # (rows, runs)
    m, k = ev.shape
    perf = block.has_perf
    delegated = np.array([key.identifier is not None for key in keys], dtype=bool)
    exact = perf & ~delegated
    samples = np.full((m, k), np.nan, dtype=np.float64)
    for rows in _row_chunks(np.flatnonzero(exact), k):
        samples[rows] = _ticks(fc, ev, rows, keys, where).astype(np.float64) / factor
    for j in np.flatnonzero(perf & delegated):
        sel = ev[j]
        start = fc.start_time[sel]
        end = fc.end_time[sel]
        converted = delegate_times(int(j), keys[j], start, end)
        if converted is None:
            s = start.astype(np.float64) / factor
            e = end.astype(np.float64) / factor
        else:
            s, e = converted
            if converted_start is not None:
                converted_start[int(j)] = np.asarray(s, dtype=np.float64)
        samples[j] = elapsed_float(s, e, f"{where}, row {keys[j].name!r}")
    return samples, exact


def row_stats(samples: FloatArray, perf: npt.NDArray[np.bool_]) -> FloatArray:
    """``(6, rows)``: p10, p50, p90, avg, min, max of the ``perf`` rows of ``samples``
    (``(rows, runs)``), NaN in the others; a few rows at a time."""
    m, k = samples.shape
    stats = np.full((6, m), np.nan, dtype=np.float64)
    for rows in _row_chunks(np.flatnonzero(perf), k):
        data = samples[rows]
        stats[0:3, rows] = np.percentile(data, [10, 50, 90], axis=1)
        stats[3, rows] = data.mean(axis=1)
        stats[4, rows] = data.min(axis=1)
        stats[5, rows] = data.max(axis=1)
    return stats
