"""What the Inspector hands to the writers (:mod:`delegate_lens.exporters`): its rows and
columns as the typed values the writers take, so that no writer reads the Inspector (the
names are on the face, ``delegate_lens.inspector``).

:func:`table_rows` gives one :class:`~delegate_lens.exporters.TableRow` per row of every
block, in block then row order, with plain Python values (the numpy tables behind them,
:class:`~delegate_lens.inspector._tables.BlockTable`, stay an implementation detail);
:func:`table_input`, :func:`json_input` and :func:`trace_input` gather what the table, the
``json`` and the timeline writers take.

>>> from delegate_lens.inspector import table_rows
>>> for row in table_rows(inspector):                     # doctest: +SKIP
...     print(row.block, row.event_name, row.stats.p50 if row.stats else None)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

import numpy as np
import numpy.typing as npt

from delegate_lens.exporters import RowStats, TableInput, TableRow
from delegate_lens.inspector._limits import check_rows
from delegate_lens.inspector._linking import FRAMEWORK_EVENTS
from delegate_lens.inspector._timescale import TimeScale, decimal_places, units_per_second

if TYPE_CHECKING:
    from delegate_lens.exporters import JsonInput, Slices, SliceSource, TraceInput
    from delegate_lens.inspector._api import Inspector
    from delegate_lens.inspector._tables import BlockTable


def _table_rows(
    inspector: Inspector,
    table: BlockTable,
    metadata: bool,
    details: bool = False,
    with_stats: bool = True,
    span: tuple[int, int] | None = None,
) -> list[TableRow]:
    """The typed rows of one block (``span``: rows ``lo:hi`` only); ``details``: debug
    data as JSON values too; ``with_stats``: their statistics (else ``stats`` is None)."""
    if details:
        from delegate_lens.exporters import value_to_json
    stats = table.stats if with_stats else None
    out = []
    bundled = int(table.block.bundled_input_index)
    lo, hi = span if span is not None else (0, len(table.keys))
    for j in range(lo, hi):
        key = table.keys[j]
        link = table.links[j]
        row_stats = None
        perf = bool(table.block.has_perf[j])
        if perf and stats is not None:
            row_stats = RowStats(*(float(v) for v in stats[:, j].tolist()))
        handles = link.debug_handles
        out.append(
            TableRow(
                block=table.name,
                block_index=table.index,
                row=j,
                event_name=key.name,
                stats=row_stats,
                instruction_id=int(key.instruction_id),
                identifier=key.identifier,
                op_types=tuple(link.op_types),
                delegate_backend_name=link.delegate_backend_name,
                method=link.method,
                n_samples=table.n_runs if perf else 0,
                bundled_input_index=bundled,
                debug_handles=tuple(handles) if isinstance(handles, list) else handles,
                module_paths=tuple(link.module_paths),
                module_hierarchy=link.module_hierarchy,
                stack_traces=link.stack_traces,
                debug_data=(
                    tuple(value_to_json(v) for v in table.debug_data.get(j, [])) if details else ()
                ),
                metadata=inspector.row_metadata(table, j)[1] if metadata else None,
            )
        )
    return out


class _BlockRows(Sequence[TableRow]):
    """A block's typed rows for the ``json`` writer, made :data:`_ROW_CHUNK` at a time as
    they are read (in order): the objects of one chunk at a time, not of every row."""

    def __init__(self, inspector: Inspector, table: BlockTable) -> None:
        self._inspector = inspector
        self._table = table
        self._lo = 0
        self._rows: list[TableRow] = []

    def __len__(self) -> int:
        return len(self._table.keys)

    @overload
    def __getitem__(self, index: int) -> TableRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[TableRow]: ...
    def __getitem__(self, index: int | slice) -> TableRow | list[TableRow]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(index)
        if not self._lo <= i < self._lo + len(self._rows):
            self._lo = i - i % _ROW_CHUNK
            span = (self._lo, min(self._lo + _ROW_CHUNK, n))
            self._rows = _table_rows(
                self._inspector, self._table, metadata=True, details=True, span=span
            )
        return self._rows[i - self._lo]


_ROW_CHUNK = 4096


def table_rows(inspector: Inspector, *, metadata: bool = False) -> Iterator[TableRow]:
    """Every row of every block, typed (``OPERATOR_CALL`` rows included); with
    ``metadata`` each holds its parsed delegate metadata."""
    for table in inspector.tables:
        yield from _table_rows(inspector, table, metadata)


def table_input(
    inspector: Inspector, *, metadata: bool | None = None, start_times: bool = False
) -> TableInput:
    """What the table, TSV and CSV writers take. ``metadata``: fill the rows' metadata
    (None: when the file has any); ``start_times``: each row's start times (the
    reference's table shows them)."""
    check_rows(inspector, "a table")
    has_metadata = bool((inspector.file_columns.metadata_length >= 0).any())
    rows = list(table_rows(inspector, metadata=has_metadata if metadata is None else metadata))
    starts: list[list[int] | None] = []
    if start_times:
        column = inspector.file_columns.start_time
        for table in inspector.tables:
            events = table.block.events
            for j in range(table.n_rows):
                has = bool(table.block.has_perf[j])
                starts.append(column[events[:, j]].tolist() if has else None)
    return TableInput(
        unit=inspector.target_time_scale.value,
        rows=rows,
        has_metadata=has_metadata,
        start_times=starts,
    )


def json_input(inspector: Inspector) -> JsonInput:
    """What the ``json`` writer takes (debug problems are said here, once)."""
    from delegate_lens.exporters import JsonBlock, JsonInput

    check_rows(inspector, "JSON")
    places = decimal_places(inspector.time_factor)
    if any(table.debug_data for table in inspector.tables):
        inspector.say_debug_problems()
    blocks = [
        JsonBlock(
            name=table.name,
            bundled_input_index=int(table.block.bundled_input_index),
            method=table.method,
            runs=tuple(int(r) for r in table.block.runs),
            rows=_BlockRows(inspector, table),
            samples=table.samples,
            ticks=table.ticks,
            exact=table.exact,
            places=places,
        )
        for table in inspector.tables
    ]
    return JsonInput(
        source_time_scale=inspector.source_time_scale.value,
        target_time_scale=inspector.target_time_scale.value,
        blocks=blocks,
    )


def trace_input(inspector: Inspector) -> TraceInput:
    """What the ``chrome-trace`` and ``perfetto`` writers take."""
    from delegate_lens.exporters import TraceBlock, TraceInput
    from delegate_lens.inspector._memory import allocator_label

    check_rows(inspector, "a trace")
    source = inspector.source_time_scale
    blocks = []
    for table in inspector.tables:
        slices = slice_source(inspector, table)
        metadata = {}
        for c, j in enumerate(slices.rows):
            raws, parsed = inspector.row_metadata(table, j)
            if raws:
                metadata[c] = (raws, parsed)
        blocks.append(
            TraceBlock(
                index=table.index,
                method=table.method,
                runs=tuple(table.block.runs.tolist()),
                rows=_table_rows(inspector, table, metadata=False, with_stats=False),
                slices=slices,
                metadata=metadata,
            )
        )
    memory: dict[int, dict[str, int]] = {}  # run -> {allocator: bytes}, from allocations
    for usage in inspector.get_memory_usage():
        memory.setdefault(usage.run, {})[allocator_label(usage)] = usage.total_bytes
    return TraceInput(
        source_time_scale=source.value,
        target_time_scale=inspector.target_time_scale.value,
        # cycles have no fixed rate: written as if they were microseconds
        units_per_second=1_000_000 if source is TimeScale.CYCLES else units_per_second(source),
        blocks=blocks,
        run_names=inspector.file_columns.run_names,
        memory=memory,
    )


def _level(name: str, delegated: bool) -> int:
    """Nesting level of an event: framework 0, calls 1, kernels 2, delegate events 3."""
    if name in FRAMEWORK_EVENTS:
        return 0
    if name in ("OPERATOR_CALL", "DELEGATE_CALL"):
        return 1
    return 3 if delegated else 2


def block_slices(inspector: Inspector, table: BlockTable) -> Slices:
    """Every slice of one block for all its runs (see :class:`~delegate_lens.exporters.Slices`):
    a slice starts at its event's start and lasts its sample; a kernel or delegate event
    that sticks out of its instruction's call is clipped to the call."""
    return slice_source(inspector, table).runs(0, table.n_runs)


_FIRST_EVENTS = 1 << 18  # events read at a time for the earliest start


def slice_source(inspector: Inspector, table: BlockTable) -> SliceSource:
    """The slices of one block made a range of runs at a time (:func:`block_slices` of
    those runs), with the earliest start of the block's slices."""
    from delegate_lens.exporters import SliceSource

    slicer = _BlockSlicer(inspector, table)
    first: int | None = None
    k, r = table.n_runs, len(slicer.rows)
    if k and r:
        step = max(1, _FIRST_EVENTS // r)
        # clipping moves a start only later, never before its call's start
        first = min(int(slicer.starts(lo, min(k, lo + step)).min()) for lo in range(0, k, step))
    return SliceSource(rows=slicer.rows, n_runs=k, first_start=first, make=slicer)


class _BlockSlicer:
    """What a block's slices need, worked out once; called with ``(lo, hi)``, the
    :class:`~delegate_lens.exporters.Slices` of the runs at positions ``lo`` to ``hi``."""

    def __init__(self, inspector: Inspector, table: BlockTable) -> None:
        self.fc = inspector.file_columns
        self.factor = inspector.time_factor  # source ticks per target unit
        self.table = table
        block = table.block
        self.rows = [int(j) for j in np.flatnonzero(block.has_perf)]
        self.cols = np.array(self.rows, dtype=np.intp)
        self.every_row = len(self.rows) == len(table.keys)
        keys = [table.keys[j] for j in self.rows]
        self.levels = np.array(
            [_level(key.name, key.identifier is not None) for key in keys], dtype=np.int64
        )
        self.converted = [
            (c, table.converted_start[j])
            for c, j in enumerate(self.rows)
            if j in table.converted_start
        ]
        # a kernel belongs in its OPERATOR_CALL, a delegate event in its DELEGATE_CALL
        calls: dict[tuple[bool, int], int] = {}
        for c, key in enumerate(keys):
            if key.name in ("OPERATOR_CALL", "DELEGATE_CALL"):
                calls.setdefault((key.name == "DELEGATE_CALL", key.instruction_id), c)
        inner: list[int] = []  # kernels and delegate events with a call, and their calls
        outer: list[int] = []
        for c, key in enumerate(keys):
            p = calls.get((key.identifier is not None, key.instruction_id))
            if self.levels[c] >= 2 and p is not None:
                inner.append(c)
                outer.append(p)
        self.inner = np.array(inner, dtype=np.intp)
        self.outer = np.array(outer, dtype=np.intp)

    def starts(self, lo: int, hi: int) -> npt.NDArray[np.int64]:
        """``(runs, rows)`` start ticks of the runs ``lo`` to ``hi``, before clipping."""
        events = self.table.block.events[lo:hi]
        if not self.every_row:
            events = np.take(events, self.cols, axis=1)
        start = np.take(self.fc.start_time, events).view(np.int64)
        for c, converted in self.converted:
            start[:, c] = np.rint(converted[lo:hi] * self.factor)
        return start

    def __call__(self, lo: int, hi: int) -> Slices:
        from delegate_lens.exporters import Slices, track_order

        r = len(self.rows)
        start = self.starts(lo, hi)
        k = start.shape[0]
        if r:
            samples = self.table.samples
            samples = samples[:, lo:hi] if self.every_row else samples[self.cols, lo:hi]
            length = np.rint(samples * self.factor).astype(np.int64)
            end = np.add(start, length.T, order="C")
        else:
            end = np.zeros((k, r), dtype=np.int64)
        clipped = np.zeros((k, r), dtype=bool)
        if self.inner.size:  # the calls are never clipped: every inner slice at once
            inner, outer = self.inner, self.outer
            s0, e0 = start[:, inner], end[:, inner]
            s = np.clip(s0, start[:, outer], end[:, outer])
            e = np.clip(e0, s, end[:, outer])
            clipped[:, inner] = (s != s0) | (e != e0)
            start[:, inner] = s
            end[:, inner] = e
        order = track_order(start, end, self.levels)
        return Slices(rows=self.rows, start=start, end=end, clipped=clipped, order=order)
