"""Per-block tables: row keys, links, samples and statistics, computed with numpy.

A :class:`BlockTable` is what the Inspector keeps for every merged block; :class:`Event`
objects and every exporter read from it. Samples are a ``(rows, runs)`` float matrix in the
target time scale; rows whose samples are whole source ticks divided by a power of ten
also keep the tick matrix, so that writers can print them as exact decimals quickly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import InspectorError
from delegate_lens.inspector.build import Block, FileColumns
from delegate_lens.inspector.linking import RowKey, RowLink
from delegate_lens.inspector.timescale import elapsed_float, elapsed_ticks

__all__ = ["BlockTable", "DelegateTimes", "compute_samples", "row_keys"]

FloatArray = npt.NDArray[np.float64]
DelegateTimes = Callable[
    [int, RowKey, npt.NDArray[np.uint64], npt.NDArray[np.uint64]],
    "tuple[FloatArray, FloatArray] | None",
]
"""``(row, key, start ticks, end ticks) -> (start, end)`` converted into the target scale
for one delegate-logged row, or None for the default conversion."""


@attrs.define(eq=False)
class BlockTable:
    """One merged block with everything its rows need."""

    index: int
    block: Block
    keys: list[RowKey]
    method: str | None
    links: list[RowLink]
    samples: FloatArray  # (rows, runs); NaN for rows without samples
    ticks: npt.NDArray[np.uint64] | None  # (rows, runs) elapsed ticks (exact rows only)
    exact: npt.NDArray[np.bool_]  # rows whose samples are ticks / factor
    stats: FloatArray  # (6, rows): p10, p50, p90, avg, min, max (NaN without samples)
    debug_data: dict[int, list[Any]] = attrs.field(factory=dict)  # row -> inflated values
    run_output: list[Any] = attrs.field(factory=list)  # final outputs of the first run
    converted_start: dict[int, FloatArray] = attrs.field(factory=dict)
    """Delegate rows whose clock went through a converter: start times (target scale)."""

    @property
    def name(self) -> str:
        return self.block.name or ""

    @property
    def n_rows(self) -> int:
        return len(self.keys)

    @property
    def n_runs(self) -> int:
        return len(self.block.runs)


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


def compute_samples(
    fc: FileColumns,
    block: Block,
    keys: list[RowKey],
    factor: float,
    delegate_times: DelegateTimes,
    where: str,
    converted_start: dict[int, FloatArray] | None = None,
) -> tuple[FloatArray, npt.NDArray[np.uint64] | None, npt.NDArray[np.bool_], FloatArray]:
    """Samples ``(rows, runs)``, exact ticks, the exact-row mask and the statistics.

    Delegate-logged rows go through ``delegate_times``; when it returns None, start and end
    are each divided by ``factor`` before subtracting (as the reference does).
    """
    ev = block.events.T  # (rows, runs)
    m, k = ev.shape
    perf = block.has_perf
    delegated = np.array([key.identifier is not None for key in keys], dtype=bool)
    exact = perf & ~delegated
    samples = np.full((m, k), np.nan, dtype=np.float64)
    ticks: npt.NDArray[np.uint64] | None = None
    if exact.any():
        rows = np.flatnonzero(exact)
        sel = ev[rows]
        try:
            t = elapsed_ticks(fc.start_time[sel], fc.end_time[sel], where)
        except InspectorError:
            for row in rows:  # find the row, for the message
                one = ev[row]
                elapsed_ticks(
                    fc.start_time[one], fc.end_time[one], f"{where}, row {keys[row].name!r}"
                )
            raise
        ticks = np.zeros((m, k), dtype=np.uint64)
        ticks[rows] = t
        samples[rows] = t.astype(np.float64) / factor
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
    stats = np.full((6, m), np.nan, dtype=np.float64)
    if perf.any():
        rows = np.flatnonzero(perf)
        data = np.ascontiguousarray(samples[rows])
        stats[0:3, rows] = np.percentile(data, [10, 50, 90], axis=1)
        stats[3, rows] = data.mean(axis=1)
        stats[4, rows] = data.min(axis=1)
        stats[5, rows] = data.max(axis=1)
    return samples, ticks, exact, stats
