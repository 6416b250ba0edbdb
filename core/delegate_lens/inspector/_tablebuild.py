"""Building the Inspector's :class:`~delegate_lens.inspector._tables.BlockTable` of one merged
block: row keys, links into the ETRecord, samples (delegate clocks through
:class:`~delegate_lens.inspector._delegate_rows.DelegateRows`), debug data, run outputs."""

from __future__ import annotations

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.inspector._build import Block, FileColumns, Grouping
from delegate_lens.inspector._debugdata import DebugBuffer, attach_debug_data, run_output
from delegate_lens.inspector._delegate_rows import DelegateRows
from delegate_lens.inspector._linking import NO_LINK, Linker, RowKey, RowLink
from delegate_lens.inspector._tables import (
    BlockTable,
    compute_samples,
    exact_ticks,
    row_keys,
    row_stats,
)


def link_rows(
    linker: Linker | None, label: str, keys: list[RowKey]
) -> tuple[str | None, list[RowLink]]:
    """The method a block runs (None when unknown) and each row's link into the ETRecord."""
    if linker is None:
        return None, [NO_LINK] * len(keys)
    linker.recover(keys)
    choice = linker.choose(label, keys)
    linker.say_unlinked(choice.link_with, keys)
    links = [
        linker.link(None if key.instruction_id in choice.unlinked else choice.link_with, key)
        for key in keys
    ]
    if choice.link_with is not None and choice.method is None:
        links = [attrs.evolve(link, method=None) for link in links]
    return choice.method, links


def build_table(
    index: int,
    block: Block,
    fc: FileColumns,
    grouping: Grouping,
    linker: Linker | None,
    delegate_rows: DelegateRows,
    debug_buffer: DebugBuffer,
) -> BlockTable:
    """Everything the rows of block ``index`` need, computed with numpy."""
    keys = row_keys(fc, block)
    label = f"block {index} ({block.name!r}, {len(block.runs)} run(s))"
    method, links = link_rows(linker, label, keys)

    def delegate_times(
        row: int, key: RowKey, start: npt.NDArray[np.uint64], end: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
        return delegate_rows.times(links[row].delegate_backend_name, key, start, end, label)

    converted_start: dict[int, npt.NDArray[np.float64]] = {}
    samples, exact = compute_samples(
        fc, block, keys, delegate_rows.factor, delegate_times, label, converted_start
    )
    table = BlockTable(
        index=index,
        block=block,
        keys=keys,
        method=method,
        links=links,
        samples=samples,
        exact=exact,
        stats_of=lambda: row_stats(samples, block.has_perf),
        converted_start=converted_start,
        ticks_of=lambda: exact_ticks(fc, block, keys, exact, label),
        event_times=lambda events: (fc.start_time[events], fc.end_time[events]),
    )
    attach_debug_data(table, grouping, fc, debug_buffer)
    table.run_output = run_output(fc, int(block.runs[0]), debug_buffer)
    return table
