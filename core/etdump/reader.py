"""Decode an ETDump buffer into :class:`ETDump` with columns, in bulk with numpy.

All events of all runs are decoded together: one vectorized pass per field over every
event table, then each run gets views (slices) of the global columns. Debug entries
(``Value`` tables, rare) are decoded per event with checked scalar reads.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump.buffer import Buffer, Tables
from delegate_lens.etdump.columns import EventColumns, EventKind
from delegate_lens.etdump.model import (
    Allocator,
    Bool,
    Double,
    ETDump,
    Float,
    Int,
    RunData,
    Tensor,
    TensorList,
    Value,
    scalar_type,
    value_type,
)
from delegate_lens.etdump.strings import StringTable

__all__ = ["FILE_IDENTIFIER", "load", "loads"]

FILE_IDENTIFIER = b"ED00"
_EVENT_CHUNK = 1 << 16
I64 = npt.NDArray[np.int64]


def load(path: str | os.PathLike[str]) -> ETDump:
    """Read an ETDump file (size-prefixed or not). Errors name the file."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return loads(data)
    except ETDumpFormatError as exc:
        raise ETDumpFormatError(f"{os.fspath(path)}: {exc}") from None


def loads(data: bytes | bytearray | memoryview) -> ETDump:
    """Decode an ETDump buffer (size-prefixed or not, identifier ``ED00`` required)."""
    if isinstance(data, memoryview):
        data = data.cast("B") if data.format != "B" or data.ndim != 1 else data
    buf = Buffer(data)
    root = _root_position(buf)
    try:
        return _Decoder(buf).decode(root)
    except ETDumpFormatError:
        raise
    except (IndexError, ValueError, OverflowError, MemoryError, struct.error) as exc:
        # Defensive: every read is checked first; anything that still slips through is
        # reported as a format error rather than leaking an implementation error.
        raise ETDumpFormatError(f"malformed ETDump ({exc.__class__.__name__}: {exc})") from None


def _root_position(buf: Buffer) -> int:
    """Absolute position of the root table; accepts a size prefix or none."""
    n = buf.n
    if n < 8:
        raise ETDumpFormatError(
            f"buffer of {n} bytes is too short for an ETDump (at byte offset 0)"
        )
    raw = bytes(buf.u8[:12])
    if raw[4:8] == FILE_IDENTIFIER:
        base = 0
    elif n >= 12 and raw[8:12] == FILE_IDENTIFIER:
        base = 4
        size = struct.unpack_from("<I", raw, 0)[0]
        if size > n - 4:
            raise ETDumpFormatError(
                f"size prefix says {size} bytes but only {n - 4} follow (truncated?) "
                "at byte offset 0"
            )
    else:
        found = raw[8:12] if n >= 12 else raw[4:8]
        raise ETDumpFormatError(
            f"not an ETDump: file identifier is {found!r}, expected {FILE_IDENTIFIER!r} "
            f"at byte offset {4 + (4 if n >= 12 else 0)}"
        )
    root = base + struct.unpack_from("<I", raw, base)[0]
    if root + 4 > n:
        raise ETDumpFormatError(
            f"root table offset {root} lies outside the buffer at byte offset {base}"
        )
    return root


def _one(arr: npt.NDArray[Any]) -> int:
    return int(arr[0])


class _Decoder:
    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.strings = StringTable(buf)
        self.entry_budget = buf.n
        self.value_cache: dict[int, Value] = {}

    def decode(self, root: int) -> ETDump:
        buf = self.buf
        top = buf.tables(np.array([root], dtype=np.int64), "ETDump")
        version = _one(top.scalar(0, np.uint32, 0, "version"))
        run_vec = _one(top.offset(1, "run_data"))
        if run_vec < 0:
            return ETDump(version=version, run_data=[])
        start, count = buf.vectors(np.array([run_vec], dtype=np.int64), 4, "run_data")
        run_pos = buf.uoffset_targets(buf.expand(start, count, 4), "run_data entry")
        runs = buf.tables(run_pos, "RunData")
        names = self.strings.intern(runs.offset(0, "name"), "RunData.name")
        bundled = runs.scalar(1, np.int32, -1, "bundled_input_index")
        allocators = self._allocators(runs.offset(2, "allocators"))
        ev_vec = runs.offset(3, "events")
        has_events = ev_vec >= 0
        ev_start = np.zeros(len(runs), dtype=np.int64)
        ev_count = np.zeros(len(runs), dtype=np.int64)
        if has_events.any():
            s, c = buf.vectors(ev_vec[has_events], 4, "RunData.events")
            ev_start[has_events] = s
            ev_count[has_events] = c
        event_pos = buf.uoffset_targets(buf.expand(ev_start, ev_count, 4), "events entry")
        cols = self._events(event_pos)
        bounds = np.concatenate([[0], np.cumsum(ev_count)])
        debug_by_run: list[dict[int, Value]] = [{} for _ in range(len(runs))]
        for i, value in self._debug_entries.items():
            r = int(np.searchsorted(bounds, i, side="right")) - 1
            debug_by_run[r][i - int(bounds[r])] = value
        run_data = []
        for r in range(len(runs)):
            lo, hi = int(bounds[r]), int(bounds[r + 1])
            columns = EventColumns.trusted(
                {k: v[lo:hi] for k, v in cols.items()},
                self.strings.strings,
                buf.data,
                debug_by_run[r],
            )
            name_code = int(names[r])
            run_data.append(
                RunData._trusted(
                    None if name_code < 0 else self.strings.strings[name_code],
                    int(bundled[r]),
                    allocators[r],
                    columns,
                )
            )
        return ETDump(version=version, run_data=run_data)

    def _allocators(self, vec_pos: I64) -> list[list[Allocator]]:
        out: list[list[Allocator]] = [[] for _ in range(len(vec_pos))]
        present = np.flatnonzero(vec_pos >= 0)
        if not len(present):
            return out
        start, count = self.buf.vectors(vec_pos[present], 4, "RunData.allocators")
        pos = self.buf.uoffset_targets(self.buf.expand(start, count, 4), "allocators entry")
        tables = self.buf.tables(pos, "Allocator")
        codes = self.strings.intern(tables.offset(0, "name"), "Allocator.name")
        k = 0
        for r, c in zip(present, count):
            out[int(r)] = [
                Allocator(None if code < 0 else self.strings.strings[code])
                for code in codes[k : k + int(c)].tolist()
            ]
            k += int(c)
        return out

    def _events(self, event_pos: I64) -> dict[str, npt.NDArray[Any]]:
        """All event columns, decoded chunk by chunk (bounded temporary memory)."""
        n = len(event_pos)
        self._debug_entries: dict[int, Value] = {}
        parts: dict[str, list[npt.NDArray[Any] | None]] = {name: [] for name in _SPECS}
        for lo in range(0, n, _EVENT_CHUNK):
            chunk = self._events_chunk(event_pos[lo : lo + _EVENT_CHUNK], lo)
            for name in _SPECS:
                parts[name].append(chunk.get(name))
        cols: dict[str, npt.NDArray[Any]] = {}
        for name, (dtype, default) in _SPECS.items():
            pieces = parts.pop(name)
            if all(piece is None for piece in pieces):
                # a column that holds only its default costs no memory (read-only view)
                arr = np.broadcast_to(np.array(default, dtype=dtype), (n,))
            else:
                arr = np.empty(n, dtype=dtype)
                at = 0
                for k, piece in enumerate(pieces):
                    size = min(_EVENT_CHUNK, n - at)
                    arr[at : at + size] = default if piece is None else piece
                    pieces[k] = None
                    at += size
            arr.flags.writeable = False
            cols[name] = arr
        return cols

    def _events_chunk(self, event_pos: I64, base: int) -> dict[str, npt.NDArray[Any]]:
        """Columns of some events; a column left out holds only its default."""
        buf = self.buf
        n = len(event_pos)
        events = buf.tables(event_pos, "Event")
        prof = events.offset(0, "profile_event")
        alloc = events.offset(1, "allocation_event")
        debug = events.offset(2, "debug_event")
        has_p, has_a, has_d = prof >= 0, alloc >= 0, debug >= 0
        several = has_p.astype(np.int8) + has_a + has_d > 1
        if several.any():
            bad = int(np.argmax(several))
            raise buf.fail(
                "Event sets more than one of profile_event/allocation_event/debug_event",
                int(event_pos[bad]),
            )
        kind = np.zeros(n, dtype=np.uint8)
        kind[has_p] = EventKind.PROFILE
        kind[has_a] = EventKind.ALLOCATION
        kind[has_d] = EventKind.DEBUG
        cols: dict[str, npt.NDArray[Any]] = {"kind": kind}

        def fill(
            name: str, dtype: Any, default: int, where: npt.NDArray[np.bool_], values: Any
        ) -> None:
            values = np.asarray(values)
            arr = cols.get(name)
            if arr is None:
                if not len(values) or not (values != default).any():
                    return  # all default so far: stays a constant column
                if where.all():
                    cols[name] = np.asarray(values).astype(dtype, copy=False)
                    return
                arr = cols[name] = np.full(n, default, dtype=dtype)
            arr[where] = values

        # profile events
        p = buf.tables(prof[has_p], "ProfileEvent")
        fill(
            "name",
            np.int32,
            -1,
            has_p,
            self.strings.intern(p.offset(0, "name"), "ProfileEvent.name"),
        )
        fill("chain_index", np.int64, 0, has_p, p.scalar(1, np.int32, 0, "chain_index"))
        fill("instruction_id", np.int32, -1, has_p, p.scalar(2, np.int32, -1, "instruction_id"))
        fill(
            "delegate_debug_id_int",
            np.int32,
            -1,
            has_p,
            p.scalar(3, np.int32, -1, "delegate_debug_id_int"),
        )
        fill(
            "delegate_debug_id_str",
            np.int32,
            -1,
            has_p,
            self.strings.intern(
                p.offset(4, "delegate_debug_id_str"), "ProfileEvent.delegate_debug_id_str"
            ),
        )
        meta = p.offset(5, "delegate_debug_metadata")
        meta_off = np.zeros(len(meta), dtype=np.int64)
        meta_len = np.full(len(meta), -1, dtype=np.int64)
        has_meta = meta >= 0
        if has_meta.any():
            s, c = buf.vectors(meta[has_meta], 1, "ProfileEvent.delegate_debug_metadata")
            meta_off[has_meta] = s
            meta_len[has_meta] = c
        fill("metadata_offset", np.int64, 0, has_p, meta_off)
        fill("metadata_length", np.int64, -1, has_p, meta_len)
        fill("start_time", np.uint64, 0, has_p, p.scalar(6, np.uint64, 0, "start_time"))
        fill("end_time", np.uint64, 0, has_p, p.scalar(7, np.uint64, 0, "end_time"))

        # allocation events
        a = buf.tables(alloc[has_a], "AllocationEvent")
        fill("allocator_id", np.int32, 0, has_a, a.scalar(0, np.int32, 0, "allocator_id"))
        fill("allocation_size", np.uint64, 0, has_a, a.scalar(1, np.uint64, 0, "allocation_size"))

        # debug events
        d = buf.tables(debug[has_d], "DebugEvent")
        fill(
            "chain_index",
            np.int64,
            0,
            has_d,
            d.scalar(0, np.uint64, 0, "chain_index").view(np.int64),
        )
        fill("instruction_id", np.int32, -1, has_d, d.scalar(1, np.int32, -1, "instruction_id"))
        entries = d.offset(2, "debug_entry")
        fill(
            "delegate_debug_id_int",
            np.int32,
            -1,
            has_d,
            d.scalar(3, np.int32, -1, "delegate_debug_id_int"),
        )
        fill(
            "delegate_debug_id_str",
            np.int32,
            -1,
            has_d,
            self.strings.intern(
                d.offset(4, "delegate_debug_id_str"), "DebugEvent.delegate_debug_id_str"
            ),
        )
        fill(
            "name", np.int32, -1, has_d, self.strings.intern(d.offset(5, "name"), "DebugEvent.name")
        )
        debug_index = np.flatnonzero(has_d)
        for i, pos in zip(debug_index.tolist(), entries.tolist()):
            if pos >= 0:
                self._debug_entries[base + i] = _ValueReader(self).value(pos)
        return cols


from delegate_lens.etdump.columns import COLUMN_SPECS as _SPECS  # noqa: E402


class _ValueReader:
    """Checked reads of one ``Value`` (and its tensors) with plain Python."""

    def __init__(self, decoder: _Decoder) -> None:
        self.buf = decoder.buf
        self.decoder = decoder

    def _spend(self, nbytes: int, pos: int) -> None:
        """Debug entries of a valid buffer do not overlap: their vectors fit in the buffer."""
        self.decoder.entry_budget -= nbytes
        if self.decoder.entry_budget < 0:
            raise self.buf.fail("debug entries reference more data than the buffer holds", pos)

    def _sub(self, t: Tables, slot: int, name: str) -> int:
        return _one(t.offset(slot, name))

    def value(self, pos: int) -> Value:
        """The Value at ``pos`` (decoded once per position; tables cost budget)."""
        cached = self.decoder.value_cache.get(pos)
        if cached is None:
            cached = self.decoder.value_cache[pos] = self._value(pos)
        return cached

    def _table(self, pos: int, what: str) -> Tables:
        self._spend(4, pos)
        return self.buf.tables(np.array([pos], dtype=np.int64), what)

    def _value(self, pos: int) -> Value:
        t = self._table(pos, "Value")
        val = _one(t.scalar(0, np.int8, 0, "val"))
        tensor_pos = self._sub(t, 1, "tensor")
        list_pos = self._sub(t, 2, "tensor_list")
        subs: dict[str, Any] = {}
        if tensor_pos >= 0:
            subs["tensor"] = self.tensor(tensor_pos)
        if list_pos >= 0:
            lt = self._table(list_pos, "TensorList")
            vec = self._sub(lt, 0, "tensors")
            tensors: list[Tensor] = []
            if vec >= 0:
                start, count = self.buf.vectors(
                    np.array([vec], dtype=np.int64), 4, "TensorList.tensors"
                )
                self._spend(4 * int(count[0]), vec)
                for tp in self.buf.uoffset_targets(
                    self.buf.expand(start, count, 4), "tensors entry"
                ).tolist():
                    tensors.append(self.tensor(tp))
            subs["tensor_list"] = TensorList(tensors)
        for slot, key, cls, dtype, default in (
            (3, "int_value", Int, np.int64, 0),
            (4, "float_value", Float, np.float32, 0.0),
            (5, "double_value", Double, np.float64, 0.0),
            (6, "bool_value", Bool, np.uint8, 0),
            (7, "output", Bool, np.uint8, 0),
        ):
            sub = self._sub(t, slot, key)
            if sub >= 0:
                st = self._table(sub, cls.__name__)
                raw = st.scalar(0, dtype, default, key).tolist()[0]
                subs[key] = cls(bool(raw)) if cls is Bool else cls(raw)
        return Value(val=value_type(val), **subs)

    def tensor(self, pos: int) -> Tensor:
        t = self._table(pos, "Tensor")
        st = _one(t.scalar(0, np.int8, 0, "scalar_type"))
        dims: dict[str, list[int]] = {}
        for slot, key in ((1, "sizes"), (2, "strides")):
            vec = self._sub(t, slot, key)
            if vec < 0:
                dims[key] = []
                continue
            start, count = self.buf.vectors(np.array([vec], dtype=np.int64), 8, f"Tensor.{key}")
            self._spend(8 * int(count[0]), vec)
            dims[key] = self.buf.read(self.buf.expand(start, count, 8), np.int64).tolist()
        offset = _one(t.scalar(3, np.int64, 0, "offset"))
        return Tensor(
            scalar_type=scalar_type(st), sizes=dims["sizes"], strides=dims["strides"], offset=offset
        )
