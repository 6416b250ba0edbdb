"""Columnar grouping: ETDump runs -> merged blocks of rows, all with numpy.

Steps (spec: ``shared/spec/inspector-semantics.md``):

1. concatenate the columns of every run (one string table for the file);
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

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from attrs import define, field

from delegate_lens.etdump import ETDump
from delegate_lens.etdump.columns import EventColumns, EventKind

__all__ = ["Block", "FileColumns", "build_blocks", "concat_runs"]

IntArray = npt.NDArray[np.int64]


@define(eq=False)
class FileColumns:
    """Every event of a file in one set of arrays (``run`` = index of the run in the file)."""

    run: IntArray
    local: IntArray  # index of the event within its run
    kind: npt.NDArray[np.uint8]
    name: IntArray  # code into strings, -1 absent ("" counts as absent)
    chain_index: IntArray
    instruction_id: IntArray
    did_int: IntArray
    did_str: IntArray  # code into strings, -1 absent
    start_time: npt.NDArray[np.uint64]
    end_time: npt.NDArray[np.uint64]
    strings: list[str]
    run_columns: list[EventColumns]
    run_names: list[str | None]
    run_bundled: list[int]
    is_output: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.kind)

    def string(self, code: int) -> str | None:
        return None if code < 0 else self.strings[code]

    def metadata(self, event: int) -> bytes | None:
        return self.run_columns[int(self.run[event])].metadata(int(self.local[event]))

    def debug_entry(self, event: int) -> Any:
        return self.run_columns[int(self.run[event])].debug_entries.get(int(self.local[event]))


def _remap(codes: npt.NDArray[Any], table: npt.NDArray[np.int64]) -> IntArray:
    codes = codes.astype(np.int64)
    return np.where(codes < 0, -1, table[np.maximum(codes, 0)]) if len(table) else codes


def concat_runs(etdump: ETDump) -> FileColumns:
    """One :class:`FileColumns` for every run of ``etdump``."""
    runs = etdump.run_data
    cols = [run.columns for run in runs]
    strings: list[str] = []
    index: dict[str, int] = {}
    tables: dict[int, npt.NDArray[np.int64]] = {}
    for c in cols:
        if id(c.strings) in tables:
            continue
        table = np.empty(len(c.strings), dtype=np.int64)
        for i, text in enumerate(c.strings):
            if text == "":
                table[i] = -1
                continue
            code = index.get(text)
            if code is None:
                code = index[text] = len(strings)
                strings.append(text)
            table[i] = code
        tables[id(c.strings)] = table

    lengths = np.array([len(c) for c in cols], dtype=np.int64)

    def cat(name: str, dtype: Any) -> Any:
        if not cols:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([getattr(c, name) for c in cols]).astype(dtype, copy=False)

    name = np.concatenate(
        [_remap(c.name, tables[id(c.strings)]) for c in cols] or [np.zeros(0, np.int64)]
    )
    did_str = np.concatenate(
        [_remap(c.delegate_debug_id_str, tables[id(c.strings)]) for c in cols]
        or [np.zeros(0, np.int64)]
    )
    run = np.repeat(np.arange(len(cols), dtype=np.int64), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(cols) else lengths
    local = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)
    kind = cat("kind", np.uint8)
    is_output = np.zeros(len(kind), dtype=bool)
    offset = 0
    for c in cols:
        for i, entry in c.debug_entries.items():
            out = getattr(entry, "output", None)
            if out is not None and out.bool_val:
                is_output[offset + i] = True
        offset += len(c)
    return FileColumns(
        run=run,
        local=local,
        kind=kind,
        name=name,
        chain_index=cat("chain_index", np.int64),
        instruction_id=cat("instruction_id", np.int64),
        did_int=cat("delegate_debug_id_int", np.int64),
        did_str=did_str,
        start_time=cat("start_time", np.uint64),
        end_time=cat("end_time", np.uint64),
        strings=strings,
        run_columns=cols,
        run_names=[run.name for run in runs],
        run_bundled=[run.bundled_input_index for run in runs],
        is_output=is_output,
    )


def _dense(values: IntArray) -> tuple[IntArray, int]:
    """Small non-negative codes for ``values`` (offset when the range is small, else unique)."""
    if len(values) == 0:
        return values, 1
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 1 << 20:
        return values - lo, hi - lo + 1
    uniq, inv = np.unique(values, return_inverse=True)
    return inv.astype(np.int64), len(uniq)


def _combine(parts: Sequence[IntArray]) -> IntArray:
    """One int64 code per row for a tuple of columns (mixed radix, or unique rows)."""
    dense = [_dense(p) for p in parts]
    total = 1
    for _codes, size in dense:
        total *= size
    if total < 1 << 62:
        code = np.zeros(len(parts[0]), dtype=np.int64)
        for codes, size in dense:
            code = code * size + codes
        return code
    stacked = np.stack([codes for codes, _size in dense], axis=1)
    _uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


@define(eq=False)
class Block:
    """Runs merged under one signature: ``events[k, j]`` is the global index of the event
    behind row ``j`` in the block's ``k``-th run (for a row without samples, the index of
    the group's first debug event)."""

    name: str | None
    bundled_input_index: int
    runs: IntArray
    events: IntArray  # shape (len(runs), rows)
    has_perf: npt.NDArray[np.bool_]  # per row
    group: IntArray  # shape (len(runs), rows): group id of each row's event
    extra: dict[str, Any] = field(factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.events.shape[1])


@define(eq=False)
class Grouping:
    """The file's blocks plus what debug data lookup needs (groups of debug events)."""

    columns: FileColumns
    blocks: list[Block]
    debug_sorted_group: IntArray  # group id of each non-output debug event, sorted
    debug_sorted_event: IntArray  # matching event indices (file order within a group)

    def debug_events_of(self, group: int) -> IntArray:
        lo = np.searchsorted(self.debug_sorted_group, group, side="left")
        hi = np.searchsorted(self.debug_sorted_group, group, side="right")
        return self.debug_sorted_event[lo:hi]


def build_blocks(fc: FileColumns) -> Grouping:
    """Group, order and merge (see the module docstring)."""
    n = len(fc)
    empty = np.zeros(0, dtype=np.int64)
    relevant = np.flatnonzero((fc.kind == EventKind.PROFILE) | (fc.kind == EventKind.DEBUG))
    if len(relevant) == 0:
        return Grouping(fc, [], empty, empty)

    key = _combine(
        [
            fc.run[relevant],
            fc.chain_index[relevant],
            fc.instruction_id[relevant],
            fc.did_int[relevant],
            fc.did_str[relevant],
        ]
    )
    _uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    group = np.full(n, -1, dtype=np.int64)
    group[relevant] = inverse
    first_event = relevant[first]  # per group: global index of its first event
    n_groups = len(first)

    is_profile = fc.kind == EventKind.PROFILE
    profile_idx = np.flatnonzero(is_profile)
    debug_idx = np.flatnonzero((fc.kind == EventKind.DEBUG) & ~fc.is_output)

    has_profile = np.zeros(n_groups, dtype=bool)
    has_profile[group[profile_idx]] = True
    if len(debug_idx):
        dgroups = group[debug_idx]
        order = np.argsort(dgroups, kind="stable")
        debug_sorted_group = dgroups[order]
        debug_sorted_event = debug_idx[order]
        # groups with debug events only: one row at the group's first debug event
        only = ~has_profile[debug_sorted_group]
        first_of_group = np.ones(len(order), dtype=bool)
        first_of_group[1:] = debug_sorted_group[1:] != debug_sorted_group[:-1]
        debug_rows = debug_sorted_event[only & first_of_group]
    else:
        debug_sorted_group = debug_sorted_event = empty
        debug_rows = empty

    row_event = np.concatenate([profile_idx, debug_rows]) if len(debug_rows) else profile_idx
    order_key = first_event[group[row_event]] * np.int64(max(n, 1)) + row_event
    row_event = row_event[np.argsort(order_key, kind="stable")]
    if len(row_event) == 0:
        return Grouping(fc, [], debug_sorted_group, debug_sorted_event)

    row_perf = is_profile[row_event]
    row_sig = _combine(
        [
            row_perf.astype(np.int64),
            fc.name[row_event],
            fc.instruction_id[row_event],
            fc.did_int[row_event],
            fc.did_str[row_event],
        ]
    )
    row_run = fc.run[row_event]
    n_runs = len(fc.run_names)
    counts = np.bincount(row_run, minlength=n_runs)
    bounds = np.concatenate([[0], np.cumsum(counts)])

    signatures: dict[tuple[Any, ...], list[int]] = {}
    for r in range(n_runs):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        if hi == lo:
            continue  # a run without rows (only allocations, or empty)
        sig = (fc.run_names[r], fc.run_bundled[r], row_sig[lo:hi].tobytes())
        signatures.setdefault(sig, []).append(r)

    blocks = []
    for (name, bundled, _rows), runs in signatures.items():
        run_arr = np.asarray(runs, dtype=np.int64)
        m = int(counts[runs[0]])
        positions = bounds[run_arr][:, None] + np.arange(m, dtype=np.int64)[None, :]
        events = row_event[positions]
        blocks.append(
            Block(
                name=name,
                bundled_input_index=bundled,
                runs=run_arr,
                events=events,
                has_perf=row_perf[positions[0]],
                group=group[events],
            )
        )
    return Grouping(fc, blocks, debug_sorted_group, debug_sorted_event)
