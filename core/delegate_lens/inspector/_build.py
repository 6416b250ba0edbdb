"""Columnar grouping: ETDump runs -> merged blocks of rows, all with numpy.

Steps (documented in ``docs/inspector.md``):

1. the columns of every run end to end (one string table for the file): the file-wide
   columns the decoder exposes (``etdump.columns.file_wide_columns``, no copy), else the
   runs concatenated once (ETDumps built in memory);
2. group the profile/debug events of each run by ``(instruction_id, chain_index,
   delegate_debug_id_int, delegate_debug_id_str)``; groups are ordered by first appearance;
3. rows: every profile event, ordered by (first appearance of its group, position); a group
   with non-output debug events but no profile event gives one row without samples;
4. a run's signature is (name, bundled_input_index, sequence of row signatures (kind, name,
   instruction_id, delegate ids)); runs with equal signatures merge into one block, in first
   appearance order. A block keeps an ``events`` matrix ``(runs, rows)`` of global event
   indices from which samples, start times and metadata are gathered in one go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.etdump import (
    DebugEntries,
    DecodedColumns,
    ETDump,
    EventColumns,
    EventKind,
    RunColumns,
)
from delegate_lens.etdump._internal import file_wide_columns

if TYPE_CHECKING:
    from collections.abc import Mapping


IntArray = npt.NDArray[np.int64]


@attrs.define(eq=False)
class FileColumns:
    """Every event of a file in one set of arrays (:attr:`run`: index of the run in the file)."""

    run_start: IntArray  # per run: global index of its first event
    kind: npt.NDArray[np.uint8]
    name: npt.NDArray[np.integer[Any]]  # code into strings, -1 absent ("" counts as absent)
    chain_index: IntArray
    instruction_id: npt.NDArray[np.int32]
    did_int: npt.NDArray[np.int32]
    did_str: npt.NDArray[np.integer[Any]]  # code into strings, -1 absent
    start_time: npt.NDArray[np.uint64]
    end_time: npt.NDArray[np.uint64]
    metadata_length: IntArray  # -1 absent
    strings: list[str]
    run_columns: Sequence[EventColumns]
    run_names: list[str | None]
    run_bundled: list[int]
    is_output: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def run(self) -> IntArray:
        """Per event, the index of its run (made on each use: 8 bytes per event that the
        Inspector does not keep; runs are contiguous, :attr:`run_start` says where)."""
        counts = np.diff(self.run_start, append=len(self))
        return np.repeat(np.arange(len(self.run_start), dtype=np.int64), counts)

    def string(self, code: int) -> str | None:
        return None if code < 0 else self.strings[code]

    def _locate(self, event: int) -> tuple[EventColumns, int]:
        run = int(np.searchsorted(self.run_start, event, side="right")) - 1
        return self.run_columns[run], event - int(self.run_start[run])

    def metadata(self, event: int) -> bytes | None:
        columns, local = self._locate(event)
        return columns.metadata(local)

    def debug_entry(self, event: int) -> Any:
        columns, local = self._locate(event)
        return columns.debug_entries.get(local)


def _cat(
    cols: Sequence[EventColumns],
    attr: str,
    dtype: Any,
    wide: Mapping[str, npt.NDArray[np.generic]] | None,
) -> npt.NDArray[Any]:
    """Column ``attr`` of every run end to end: the decoder's file-wide column when the
    runs are its slices (no copy), else one concatenation."""
    if wide is not None:
        return wide[attr].astype(dtype, copy=False)
    if not cols:
        return np.zeros(0, dtype=dtype)
    return np.concatenate([getattr(c, attr) for c in cols]).astype(dtype, copy=False)


def _string_table(strings: list[str], index: dict[str, int], merged: list[str]) -> IntArray:
    """Codes of one run's string table in the file's merged table ("" -> -1)."""
    table = np.empty(len(strings), dtype=np.int64)
    for i, text in enumerate(strings):
        if text == "":
            table[i] = -1
            continue
        code = index.get(text)
        if code is None:
            code = index[text] = len(merged)
            merged.append(text)
        table[i] = code
    return table


def _codes(
    cols: list[EventColumns],
    attr: str,
    tables: dict[int, IntArray],
    wide: Mapping[str, npt.NDArray[np.generic]] | None,
) -> IntArray:
    """A string column of every run as codes into the merged table."""
    if len(tables) == 1:
        raw = _cat(cols, attr, np.int32, wide)
        table = next(iter(tables.values()))
        if np.array_equal(table, np.arange(len(table))):
            return raw
        return np.where(raw < 0, -1, table[np.maximum(raw, 0)]) if len(table) else raw
    parts = []
    for c in cols:
        raw = getattr(c, attr).astype(np.int64)
        table = tables[id(c.strings)]
        parts.append(np.where(raw < 0, -1, table[np.maximum(raw, 0)]) if len(table) else raw)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def concat_runs(etdump: ETDump) -> FileColumns:
    """One :class:`FileColumns` for every run of ``etdump`` (no copies for a decoded file:
    its file-wide columns are used as they are)."""
    runs = etdump.run_data
    cols = [run.columns for run in runs]
    strings: list[str] = []
    index: dict[str, int] = {}
    tables: dict[int, IntArray] = {}
    for c in cols:
        if id(c.strings) not in tables:
            tables[id(c.strings)] = _string_table(c.strings, index, strings)

    lengths = np.array([len(c) for c in cols], dtype=np.int64)
    total = int(lengths.sum())
    starts = np.zeros(len(cols), dtype=np.int64)
    if len(cols) > 1:
        starts[1:] = np.cumsum(lengths)[:-1]
    wide = file_wide_columns(cols)  # the decoder's file-wide columns, when these are its runs

    def column(attr: str, dtype: object) -> Any:
        return _cat(cols, attr, dtype, wide)

    start_time = column("start_time", np.uint64)
    kind = column("kind", np.uint8)
    is_output = np.zeros(total, dtype=bool)
    for c, offset in zip(cols, starts.tolist()):
        entries = c.debug_entries
        if isinstance(entries, DebugEntries):  # decoded: the flags are a column already
            is_output[offset + entries.events[entries.output_flags()]] = True
            continue
        for i, entry in entries.items():
            out = getattr(entry, "output", None)
            if out is not None and out.bool_val:
                is_output[offset + i] = True
    return FileColumns(
        run_start=starts,
        kind=kind,
        name=_codes(cols, "name", tables, wide),
        chain_index=column("chain_index", np.int64),
        instruction_id=column("instruction_id", np.int32),
        did_int=column("delegate_debug_id_int", np.int32),
        did_str=_codes(cols, "delegate_debug_id_str", tables, wide),
        start_time=start_time.astype(np.uint64, copy=False),
        end_time=column("end_time", np.uint64),
        metadata_length=column("metadata_length", np.int64),
        strings=strings,
        run_columns=cols,
        run_names=[run.name for run in runs],
        run_bundled=[run.bundled_input_index for run in runs],
        is_output=_flags(is_output),
    )


def decoded_file_columns(decoded: DecodedColumns) -> FileColumns:
    """The :class:`FileColumns` of every run of ``decoded`` (from
    :func:`~delegate_lens.etdump._reader.decode_columns` or ``decode_many``): the same as
    :func:`concat_runs` of its ETDump, without making an object per run (run columns are
    made when asked for). For a batch of files, ``run`` indexes all their runs in order;
    ``decoded.run_file`` tells each run's file."""
    wide = decoded.columns
    strings = decoded.strings
    bounds = decoded.bounds
    empty = [code for code, text in enumerate(strings) if text == ""]

    def codes(attr: str) -> IntArray:
        raw = wide[attr]
        if not empty:
            return raw
        return np.where(np.isin(raw, empty), -1, raw)  # "" counts as absent

    outputs = decoded.output_events()
    is_output = np.zeros(decoded.n_events if len(outputs) else 0, dtype=bool)
    is_output[outputs] = True
    return FileColumns(
        run_start=bounds[:-1].copy(),
        kind=wide["kind"],
        name=codes("name"),
        chain_index=wide["chain_index"],
        instruction_id=wide["instruction_id"],
        did_int=wide["delegate_debug_id_int"],
        did_str=codes("delegate_debug_id_str"),
        start_time=wide["start_time"],
        end_time=wide["end_time"],
        metadata_length=wide["metadata_length"],
        strings=strings,
        run_columns=RunColumns(decoded),
        run_names=decoded.run_names(),
        run_bundled=decoded.run_bundled.tolist(),
        is_output=_flags(is_output, decoded.n_events),
    )


def _flags(flags: npt.NDArray[np.bool_], n: int | None = None) -> npt.NDArray[np.bool_]:
    """``flags`` (length ``n``), as a read-only view of one False when none is set (no
    byte per event for files without outputs)."""
    n = len(flags) if n is None else n
    if len(flags) == n and flags.any():
        return flags
    return np.broadcast_to(np.False_, (n,))


def _dense(values: npt.NDArray[np.integer[Any]]) -> tuple[npt.NDArray[np.integer[Any]], int]:
    """Small non-negative codes for ``values`` (offset when the range is small, else unique)."""
    if len(values) == 0:
        return values, 1
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 1 << 20:
        return (values - lo if lo else values), hi - lo + 1
    uniq, inv = np.unique(values, return_inverse=True)
    return inv.astype(np.int64), len(uniq)


def _combine(parts: Sequence[npt.NDArray[np.integer[Any]]]) -> IntArray:
    """One int64 code per row for a tuple of columns (mixed radix, or unique rows)."""
    dense = [_dense(p) for p in parts]
    total = 1
    for _codes, size in dense:
        total *= size
    if total < 1 << 62:
        code = dense[0][0].astype(np.int64)
        for codes, size in dense[1:]:
            code *= size
            code += codes
        return code
    stacked = np.stack([codes for codes, _size in dense], axis=1)
    _uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


_TABLE_LIMIT = 1 << 24
"""Largest runs x per-run key space for which groups are found with a lookup table
(linear time); beyond, with a sort."""


def _first_of_group(run: npt.NDArray[np.integer[Any]], local: IntArray) -> IntArray:
    """For each event, the position of the first event with the same ``(run, local)``."""
    count = len(local)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    space = int(local.max()) + 1
    runs = int(run.max()) + 1
    if runs * space <= _TABLE_LIMIT:
        slot = run.astype(np.int64) * space + local
        table = np.full(runs * space, count, dtype=np.int64)
        np.minimum.at(table, slot, np.arange(count, dtype=np.int64))
        return table[slot]
    key = _combine([run, local])
    _uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)].astype(np.int64)


@attrs.define(eq=False)
class Block:
    """Runs merged under one signature: ``events[k, j]`` is the global index of the event
    behind row ``j`` in the block's ``k``-th run (for a row without samples, the index of
    the group's first debug event); int32 when the file has fewer than 2**31 events."""

    name: str | None
    bundled_input_index: int
    runs: IntArray
    events: npt.NDArray[np.integer[Any]]  # shape (len(runs), rows)
    has_perf: npt.NDArray[np.bool_]  # per row
    group: IntArray  # per row: the group id of the row's event in the block's first run


@attrs.define(eq=False)
class Grouping:
    """The file's blocks plus what debug data lookup needs (groups of debug events)."""

    blocks: list[Block]
    debug_sorted_group: IntArray  # group id of each non-output debug event, sorted
    debug_sorted_event: IntArray  # matching event indices (file order within a group)

    def debug_events_of(self, group: int) -> IntArray:
        lo = np.searchsorted(self.debug_sorted_group, group, side="left")
        hi = np.searchsorted(self.debug_sorted_group, group, side="right")
        return self.debug_sorted_event[lo:hi]


_CHUNK = 1 << 18
"""Events grouped at a time (whole runs; a longer run is a chunk of its own): what grouping
holds besides its result is a few arrays of this length, whatever the file's size."""

_ROW_FIELDS = np.dtype(  # what a row's signature is made of, packed (its bytes compare)
    [("perf", "u1"), ("name", "<i4"), ("iid", "<i4"), ("did_int", "<i4"), ("did_str", "<i4")]
)


@attrs.define(eq=False)
class _Merge:
    """What :func:`build_blocks` gathers chunk by chunk."""

    rows: npt.NDArray[np.integer[Any]]  # every run's row events, run after run
    counts: IntArray  # rows per run
    signatures: dict[tuple[Any, ...], list[int]] = attrs.field(factory=dict)
    firsts: dict[tuple[Any, ...], tuple[npt.NDArray[np.bool_], IntArray]] = attrs.field(
        factory=dict
    )  # per signature: has_perf and groups of its first run's rows
    at: int = 0  # rows filled so far
    debug_group: list[IntArray] = attrs.field(factory=list)
    debug_event: list[IntArray] = attrs.field(factory=list)


def build_blocks(fc: FileColumns) -> Grouping:
    """Group, order and merge (see the module docstring), a chunk of whole runs at a
    time: groups never span runs, so each run's rows are found from its own events."""
    n = len(fc)
    n_runs = len(fc.run_names)
    starts = np.append(fc.run_start, n).astype(np.int64)
    index_type = np.int32 if n < 2**31 else np.int64
    merge = _Merge(rows=np.empty(n, dtype=index_type), counts=np.zeros(n_runs, dtype=np.int64))
    r = 0
    while r < n_runs:
        # whole runs, at least one, up to _CHUNK events
        last = int(np.searchsorted(starts, starts[r] + _CHUNK, side="right")) - 1
        last = min(max(last, r + 1), n_runs)
        _group_chunk(fc, r, last, starts, merge)
        r = last
    empty = np.zeros(0, dtype=np.int64)
    debug_group = np.concatenate(merge.debug_group) if merge.debug_group else empty
    debug_event = np.concatenate(merge.debug_event) if merge.debug_event else empty
    bounds = np.zeros(n_runs + 1, dtype=np.int64)
    np.cumsum(merge.counts, out=bounds[1:])
    rows = merge.rows[: merge.at]
    blocks = []
    for (name, bundled, _rows), runs in merge.signatures.items():
        run_arr = np.asarray(runs, dtype=np.int64)
        m = int(merge.counts[runs[0]])
        has_perf, group = merge.firsts[(name, bundled, _rows)]
        events = np.empty((len(run_arr), m), dtype=rows.dtype)
        step = max(1, _CHUNK // max(m, 1))  # gathered a few runs at a time
        for i in range(0, len(run_arr), step):
            first = bounds[run_arr[i : i + step]]
            events[i : i + step] = rows[first[:, None] + np.arange(m, dtype=np.int64)[None, :]]
        blocks.append(
            Block(
                name=name,
                bundled_input_index=bundled,
                runs=run_arr,
                events=events,
                has_perf=has_perf,
                group=group,
            )
        )
    return Grouping(blocks, debug_group, debug_event)


def _group_chunk(fc: FileColumns, r0: int, r1: int, starts: IntArray, merge: _Merge) -> None:
    """Rows of runs ``r0 .. r1 - 1`` (events ``a .. b - 1``) into ``merge``."""
    a, b = int(starts[r0]), int(starts[r1])
    n = b - a
    kind = fc.kind[a:b]
    is_profile = kind == EventKind.PROFILE
    relevant = np.flatnonzero(is_profile | (kind == EventKind.DEBUG))
    if len(relevant) == 0:
        return
    # group of an event = index of the first event of its group (within its run)
    run = np.repeat(np.arange(r1 - r0, dtype=np.int32), np.diff(starts[r0 : r1 + 1]))
    parts = [c[a:b] for c in (fc.chain_index, fc.instruction_id, fc.did_int, fc.did_str)]
    if len(relevant) < n:  # allocation events take no part
        parts = [c[relevant] for c in parts]
        run = run[relevant]
    first = _first_of_group(run, _combine(parts))
    del run, parts
    group = np.full(n, -1, dtype=np.int64)
    group[relevant] = relevant[first]
    del first, relevant

    profile_idx = np.flatnonzero(is_profile)
    debug_idx = np.flatnonzero((kind == EventKind.DEBUG) & ~fc.is_output[a:b])
    has_profile = np.zeros(n, dtype=bool)  # indexed by group (its first event)
    has_profile[group[profile_idx]] = True
    debug_rows = np.zeros(0, dtype=np.int64)
    if len(debug_idx):
        dgroups = group[debug_idx]
        order = np.argsort(dgroups, kind="stable")
        sorted_group = dgroups[order]
        sorted_event = debug_idx[order]
        merge.debug_group.append(a + sorted_group)
        merge.debug_event.append(a + sorted_event)
        # groups with debug events only: one row at the group's first debug event
        only = ~has_profile[sorted_group]
        first_of_group = np.ones(len(order), dtype=bool)
        first_of_group[1:] = sorted_group[1:] != sorted_group[:-1]
        debug_rows = sorted_event[only & first_of_group]
    del has_profile

    row_event = np.concatenate([profile_idx, debug_rows]) if len(debug_rows) else profile_idx
    del profile_idx
    order_key = group[row_event] * np.int64(max(n, 1)) + row_event
    if len(order_key) > 1 and not bool(np.all(order_key[1:] > order_key[:-1])):
        row_event = row_event[np.argsort(order_key, kind="stable")]
    del order_key
    if len(row_event) == 0:
        return
    sig = np.empty(len(row_event), dtype=_ROW_FIELDS)
    sig["perf"] = is_profile[row_event]
    for field, column in (
        ("name", fc.name),
        ("iid", fc.instruction_id),
        ("did_int", fc.did_int),
        ("did_str", fc.did_str),
    ):
        sig[field] = column[a:b][row_event]
    counts = np.bincount(
        np.searchsorted(starts[r0:r1], a + row_event, side="right") - 1, minlength=r1 - r0
    )
    merge.rows[merge.at : merge.at + len(row_event)] = a + row_event
    merge.at += len(row_event)
    merge.counts[r0:r1] = counts
    lo = 0
    for r, count in enumerate(counts.tolist(), start=r0):
        if count == 0:
            continue  # a run without rows (only allocations, or empty)
        hi = lo + count
        key = (fc.run_names[r], fc.run_bundled[r], sig[lo:hi].tobytes())
        runs = merge.signatures.get(key)
        if runs is None:
            runs = merge.signatures[key] = []
            merge.firsts[key] = (sig["perf"][lo:hi].astype(bool), a + group[row_event[lo:hi]])
        runs.append(r)
        lo = hi
