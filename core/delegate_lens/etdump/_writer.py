"""Encode an :class:`ETDump` as a size-prefixed FlatBuffer (identifier ``ED00``), vectorized.

Layout, front to back (every uoffset points forward): header (size prefix, root offset,
identifier) · all distinct vtables · root table · run_data vector · RunData tables ·
allocators and events vectors · Allocator tables · Event tables · ProfileEvent,
AllocationEvent, DebugEvent tables · debug entries (Value/Tensor/... tables and vectors,
see :mod:`.valuewriter`) · metadata vectors · strings (each distinct string once). See :mod:`.layout` for alignment.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump._buffer import spans
from delegate_lens.etdump._columns import EventColumns, EventKind, concat_columns
from delegate_lens.etdump._layout import (
    Output,
    TableGroup,
    VTables,
    pad8,
    sequential,
    write_offset_vectors,
)
from delegate_lens.etdump._objects import ETDump, RunData
from delegate_lens.etdump._reader import FILE_IDENTIFIER
from delegate_lens.etdump._values import DebugEntries, ValueColumns
from delegate_lens.etdump._valuewriter import ValueLayout
from delegate_lens.fileio import write_bytes_atomic

I64 = npt.NDArray[np.int64]
_HEADER = 12  # size prefix, root uoffset, identifier


def dump(etdump: ETDump, path: str | os.PathLike[str]) -> None:
    """Write ``etdump`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    write_bytes_atomic(path, dumps(etdump))


class _Strings:
    """The file's distinct strings, each with its code (the order they are first seen)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, text: str | None) -> int:
        if text is None:
            return -1
        code = self.codes.get(text)
        if code is None:
            code = self.codes[text] = len(self.codes)
        return code


def _concat(runs: Sequence[EventColumns], strings: _Strings) -> dict[str, Any]:
    """All runs' columns as one set of arrays (codes global, metadata into one source)."""
    cols: dict[str, Any] = concat_columns(runs, strings.code)
    # metadata: one source buffer
    blobs: dict[int, Any] = {}
    for c in runs:
        blobs.setdefault(id(c.blob), c.blob)
    if len(blobs) <= 1:
        cols["source"] = next(iter(blobs.values()), b"")
    else:
        base: dict[int, int] = {}
        at = 0
        for key, blob in blobs.items():
            base[key] = at
            at += len(blob)
        shift = np.concatenate([np.full(len(c), base[id(c.blob)], dtype=np.int64) for c in runs])
        cols["metadata_offset"] = cols["metadata_offset"] + shift
        cols["source"] = b"".join(bytes(b) for b in blobs.values())
    return cols


_PROFILE_FIELDS = (
    "name",
    "chain_index",
    "instruction_id",
    "delegate_debug_id_int",
    "delegate_debug_id_str",
    "metadata_offset",
    "metadata_length",
    "start_time",
    "end_time",
)
_DEBUG_FIELDS = (
    "chain_index",
    "instruction_id",
    "delegate_debug_id_int",
    "delegate_debug_id_str",
    "name",
)


def _select(
    cols: dict[str, Any], names: Sequence[str], rows: npt.NDArray[np.bool_]
) -> dict[str, Any]:
    """The columns ``names`` of the ``rows`` (all of them: the columns themselves, no copy)."""
    if rows.all():
        return {k: cols[k] for k in names}
    return {k: cols[k][rows] for k in names}


def _check_range(
    cols: dict[str, Any], name: str, lo: int, hi: int, where: npt.NDArray[np.bool_], what: str
) -> None:
    values = cols[name][where]
    if len(values) and (int(values.min()) < lo or int(values.max()) > hi):
        bad = int(np.flatnonzero((values < lo) | (values > hi))[0])
        index = int(np.flatnonzero(where)[bad])
        raise ETDumpFormatError(
            f"cannot write event {index}: {what}={int(values[bad])} is out of range"
        )


def dumps(etdump: ETDump) -> bytes:
    """Encode ``etdump`` (size-prefixed, identifier ``ED00``)."""
    runs: list[RunData] = list(etdump.run_data)
    try:
        columns = [r.columns for r in runs]
    except ValueError as exc:
        raise ETDumpFormatError(f"cannot write: {exc}") from None
    strings = _Strings()
    run_names = np.array([strings.code(r.name) for r in runs], dtype=np.int64)
    alloc_names = [
        np.array([strings.code(a.name) for a in r.allocators], dtype=np.int64) for r in runs
    ]
    cols = _concat(columns, strings)
    n_runs = len(runs)
    n_events = len(cols["kind"])
    counts = np.array([len(c) for c in columns], dtype=np.int64)
    alloc_counts = np.array([len(r.allocators) for r in runs], dtype=np.int64)
    all_alloc_names = np.concatenate(alloc_names) if n_runs else np.zeros(0, np.int64)

    kind = cols["kind"]
    is_p = kind == EventKind.PROFILE
    is_a = kind == EventKind.ALLOCATION
    is_d = kind == EventKind.DEBUG
    _check_range(cols, "chain_index", -(1 << 31), (1 << 31) - 1, is_p, "ProfileEvent.chain_index")
    meta_present = cols["metadata_length"] >= 0
    if bool(np.any(meta_present & ~is_p)):
        raise ETDumpFormatError("cannot write: metadata on an event that is not a profile event")
    entry_event, entry_group, entry_row, value_sources = _debug_entries(columns, counts)

    vt = VTables()
    root = TableGroup(vt, 1, [(0, 4, etdump.version != 0), (1, 4, n_runs > 0)])
    run_t = TableGroup(
        vt,
        n_runs,
        [
            (0, 4, run_names >= 0),
            (1, 4, np.array([r.bundled_input_index != -1 for r in runs], dtype=bool)),
            (2, 4, alloc_counts > 0),
            (3, 4, np.ones(n_runs, dtype=bool)),
        ],
    )
    alloc_t = TableGroup(vt, len(all_alloc_names), [(0, 4, all_alloc_names >= 0)])
    event_t = TableGroup(vt, n_events, [(0, 4, is_p), (1, 4, is_a), (2, 4, is_d)])
    p = _select(cols, _PROFILE_FIELDS, is_p)
    prof_t = TableGroup(
        vt,
        int(is_p.sum()),
        [
            (0, 4, p["name"] >= 0),
            (1, 4, p["chain_index"] != 0),
            (2, 4, p["instruction_id"] != -1),
            (3, 4, p["delegate_debug_id_int"] != -1),
            (4, 4, p["delegate_debug_id_str"] >= 0),
            (5, 4, p["metadata_length"] >= 0),
            (6, 8, p["start_time"] != 0),
            (7, 8, p["end_time"] != 0),
        ],
    )
    a = _select(cols, ("allocator_id", "allocation_size"), is_a)
    alloc_ev_t = TableGroup(
        vt, int(is_a.sum()), [(0, 4, a["allocator_id"] != 0), (1, 8, a["allocation_size"] != 0)]
    )
    d = _select(cols, _DEBUG_FIELDS, is_d)
    debug_index = np.flatnonzero(is_d)
    has_entry = np.zeros(len(debug_index), dtype=bool)
    entry_slot = np.searchsorted(debug_index, entry_event)
    if len(entry_event):
        ok = entry_slot < len(debug_index)
        ok[ok] = debug_index[entry_slot[ok]] == entry_event[ok]
        if not ok.all():
            raise ETDumpFormatError(
                "cannot write: a debug entry belongs to an event that is not a debug event"
            )
        has_entry[entry_slot] = True
    value_layouts = [ValueLayout(vt, values) for values in value_sources]
    debug_t = TableGroup(
        vt,
        len(debug_index),
        [
            (0, 8, d["chain_index"] != 0),
            (1, 4, d["instruction_id"] != -1),
            (2, 4, has_entry),
            (3, 4, d["delegate_debug_id_int"] != -1),
            (4, 4, d["delegate_debug_id_str"] >= 0),
            (5, 4, d["name"] >= 0),
        ],
    )

    # --- positions -----------------------------------------------------------------------------
    at = vt.place(_HEADER)
    at = root.place(at)
    run_vec = at
    at += pad8(4 + 4 * n_runs)
    at = run_t.place(at)
    alloc_vec, at = sequential(at, np.where(alloc_counts > 0, (4 + 4 * alloc_counts + 7) & ~7, 0))
    ev_vec, at = sequential(at, (4 + 4 * counts + 7) & ~7)
    at = alloc_t.place(at)
    at = event_t.place(at)
    at = prof_t.place(at)
    at = alloc_ev_t.place(at)
    at = debug_t.place(at)
    for layout in value_layouts:
        at = layout.place(at)
    entry_pos = np.zeros(len(entry_event), dtype=np.int64)
    for g, layout in enumerate(value_layouts):
        mine = entry_group == g
        entry_pos[mine] = layout.value_t.pos[entry_row[mine]]

    meta_len = p["metadata_length"]
    meta_rows = meta_len >= 0
    m_len = meta_len[meta_rows]
    m_pos_rows, at = sequential(at, (4 + m_len + 7) & ~7)

    # only strings something refers to (a decoded file's table is shared by all its runs)
    n_codes = len(strings.codes)
    used = np.zeros(n_codes + 1, dtype=bool)
    for codes in (run_names, all_alloc_names, cols["name"], cols["delegate_debug_id_str"]):
        used[codes] = True  # -1 marks the extra last slot
    used_codes = np.flatnonzero(used[:n_codes])
    table = list(strings.codes)
    try:
        text = [table[c].encode("utf-8") for c in used_codes.tolist()]
    except UnicodeEncodeError as exc:
        raise ETDumpFormatError(
            f"cannot write the string {exc.object!r}: {exc.reason} (strings are UTF-8)"
        ) from None
    s_pos, at = sequential(at, np.array([pad8(4 + len(t) + 1) for t in text], dtype=np.int64))
    s_lookup = np.full(n_codes + 1, -1, dtype=np.int64)  # code -1 -> -1 (absent)
    s_lookup[used_codes] = s_pos

    total = pad8(at)  # objects end at 4 mod 8; pad the buffer to a multiple of 8
    if total >= 1 << 32:
        raise ETDumpFormatError(f"cannot write: the ETDump would be {total} bytes (over 4 GiB)")
    out = Output(total)

    # --- header, vtables, root ------------------------------------------------------------
    out.put(
        np.array([0, 4], dtype=np.int64),
        np.array([total - 4, int(root.pos[0]) - 4], dtype=np.uint32),
    )
    out.put_bytes(8, FILE_IDENTIFIER)
    for blob, pos in zip(vt.blobs, vt.positions):
        out.put_bytes(pos, blob)
    for group in (root, run_t, alloc_t, event_t, prof_t, alloc_ev_t, debug_t):
        group.write_soffsets(out, vt)
    root.write_scalar(out, 0, np.array([etdump.version], dtype=np.uint32))
    root.write_offset(out, 1, np.array([run_vec], dtype=np.int64))

    # --- runs ------------------------------------------------------------------------------
    write_offset_vectors(out, np.array([run_vec], dtype=np.int64), np.array([n_runs]), run_t.pos)
    run_t.write_offset(out, 0, s_lookup[run_names])
    run_t.write_scalar(out, 1, np.array([r.bundled_input_index for r in runs], dtype=np.int32))
    run_t.write_offset(out, 2, alloc_vec)
    run_t.write_offset(out, 3, ev_vec)
    has_alloc = alloc_counts > 0
    write_offset_vectors(out, alloc_vec[has_alloc], alloc_counts[has_alloc], alloc_t.pos)
    alloc_t.write_offset(out, 0, s_lookup[all_alloc_names])
    write_offset_vectors(out, ev_vec, counts, event_t.pos)

    # --- events ----------------------------------------------------------------------------
    sub = np.full(n_events, -1, dtype=np.int64)
    sub[is_p] = prof_t.pos
    sub[is_a] = alloc_ev_t.pos
    sub[is_d] = debug_t.pos
    for slot in range(3):
        event_t.write_offset(out, slot, sub)
    prof_t.write_offset(out, 0, s_lookup[p["name"]])
    prof_t.write_scalar(out, 1, p["chain_index"].astype(np.int32))
    prof_t.write_scalar(out, 2, p["instruction_id"])
    prof_t.write_scalar(out, 3, p["delegate_debug_id_int"])
    prof_t.write_offset(out, 4, s_lookup[p["delegate_debug_id_str"]])
    meta_target = np.full(len(meta_len), -1, dtype=np.int64)
    meta_target[meta_rows] = m_pos_rows
    prof_t.write_offset(out, 5, meta_target)
    prof_t.write_scalar(out, 6, p["start_time"])
    prof_t.write_scalar(out, 7, p["end_time"])
    alloc_ev_t.write_scalar(out, 0, a["allocator_id"])
    alloc_ev_t.write_scalar(out, 1, a["allocation_size"])
    debug_t.write_scalar(out, 0, d["chain_index"].view(np.uint64))
    debug_t.write_scalar(out, 1, d["instruction_id"])
    entry_target = np.full(len(debug_index), -1, dtype=np.int64)
    entry_target[entry_slot] = entry_pos
    debug_t.write_offset(out, 2, entry_target)
    debug_t.write_scalar(out, 3, d["delegate_debug_id_int"])
    debug_t.write_offset(out, 4, s_lookup[d["delegate_debug_id_str"]])
    debug_t.write_offset(out, 5, s_lookup[d["name"]])
    for layout in value_layouts:
        layout.write(out, vt)

    # --- metadata bytes and strings ---------------------------------------------------------
    if len(m_len):
        out.put(m_pos_rows, m_len.astype(np.uint32))
        src = np.frombuffer(cols["source"], dtype=np.uint8)
        m_off = p["metadata_offset"][meta_rows]
        _copy_ragged(out, src, m_off, m_pos_rows + 4, m_len)
    for t, pos in zip(text, s_pos.tolist()):
        out.put_bytes(pos, len(t).to_bytes(4, "little") + t)
    return out.u8.tobytes()


def _debug_entries(
    columns: Sequence[EventColumns], counts: I64
) -> tuple[I64, I64, I64, list[ValueColumns]]:
    """Every debug entry: (event index in the file, source number, row), and the sources.

    Runs of a loaded file share one :class:`ValueColumns`; entries given as Value objects
    (a dict) are turned into columns first.
    """
    sources: dict[int, int] = {}
    values_list: list[ValueColumns] = []
    events: list[I64] = []
    groups: list[I64] = []
    rows: list[I64] = []
    start = 0
    for c, count in zip(columns, counts.tolist()):
        entries = c.debug_entries
        if isinstance(entries, DebugEntries):
            values, ev, rw = entries.value_columns, entries.events, entries.rows
        elif entries:
            keys = sorted(entries)
            values = ValueColumns.from_values([entries[k] for k in keys])
            ev = np.array(keys, dtype=np.int64)
            rw = np.arange(len(keys), dtype=np.int64)
        else:
            start += count
            continue
        g = sources.get(id(values))
        if g is None:
            g = sources[id(values)] = len(values_list)
            values_list.append(values)
        events.append(ev.astype(np.int64) + start)
        groups.append(np.full(len(ev), g, dtype=np.int64))
        rows.append(rw.astype(np.int64))
        start += count
    if not events:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, []
    group, row = np.concatenate(groups), np.concatenate(rows)
    _unshare(group, row, values_list)
    return np.concatenate(events), group, row, values_list


def _unshare(group: I64, row: I64, values_list: list[ValueColumns]) -> None:
    """Give every entry a row of its own (one run given twice names its rows twice): a
    reader refuses a Value table named by two events (see ``etdump._limits``). The
    repeats get rows of a new source, appended to ``values_list``."""
    key = group * (int(row.max()) + 1) + row
    order = np.argsort(key, kind="stable")
    repeat = np.zeros(len(key), dtype=bool)
    repeat[order[1:]] = key[order[1:]] == key[order[:-1]]
    if not repeat.any():
        return
    again = np.flatnonzero(repeat)
    copies = [values_list[g].value(r) for g, r in zip(group[again].tolist(), row[again].tolist())]
    values_list.append(ValueColumns.from_values(copies))
    group[again] = len(values_list) - 1
    row[again] = np.arange(len(again), dtype=np.int64)


def _copy_ragged(
    out: Output, src: npt.NDArray[np.uint8], src_off: I64, dst_off: I64, lengths: I64
) -> None:
    budget = 1 << 22
    lo = 0
    n = len(lengths)
    while lo < n:
        cum = np.cumsum(lengths[lo:])
        hi = lo + max(1, int(np.searchsorted(cum, budget)))
        counts = lengths[lo:hi]
        out.u8[spans(dst_off[lo:hi], counts)] = src[spans(src_off[lo:hi], counts)]
        lo = hi
