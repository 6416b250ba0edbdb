"""Decode an ETDump buffer into :class:`ETDump` with columns, in bulk with numpy.

All events of all runs are decoded together: one vectorized pass per field over every
event table, then each run gets views (slices) of the global columns. Debug entries
(``Value`` tables) of all runs are decoded together too (:func:`.values.decode_values`);
each run gets a lazy ``{event index: Value}`` mapping of its own.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import _fastwalk as fastwalk
from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._columns import COLUMN_SPECS as _SPECS
from delegate_lens.etdump._columns import EventKind
from delegate_lens.etdump._decoded import DecodedColumns, bounds_of
from delegate_lens.etdump._limits import (
    ReadLimits,
    StringBudget,
    check_claims,
    check_unshared,
    read_limits,
)
from delegate_lens.etdump._objects import ETDump
from delegate_lens.etdump._strings import StringTable
from delegate_lens.etdump._values import decode_values

FILE_IDENTIFIER = b"ED00"
_EVENT_CHUNK = 1 << 15
_MEMBERS = {  # an Event's members: (what, the offsets naming them)
    "profile": ("ProfileEvent table", "Event.profile_event offsets"),
    "alloc": ("AllocationEvent table", "Event.allocation_event offsets"),
    "debug": ("DebugEvent table", "Event.debug_event offsets"),
}
I64 = npt.NDArray[np.int64]
_T = TypeVar("_T")


def load(path: str | os.PathLike[str]) -> ETDump:
    """Read an ETDump file (size-prefixed or not). Errors name the file."""
    from delegate_lens.fileio import read_input

    data = read_input(path, "ETDump")
    try:
        return loads(data)
    except ETDumpFormatError as exc:
        raise ETDumpFormatError(f"{os.fspath(path)}: {exc}") from None


def _as_bytes(data: bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
    if isinstance(data, memoryview):
        return data.cast("B") if data.format != "B" or data.ndim != 1 else data
    return data


def _guarded(decode: Callable[[], _T]) -> _T:
    try:
        return decode()
    except ETDumpFormatError:
        raise
    except (IndexError, ValueError, OverflowError, MemoryError, struct.error) as exc:
        # Defensive: every read is checked first; anything that still slips through is
        # reported as a format error rather than leaking an implementation error.
        raise ETDumpFormatError(f"malformed ETDump ({exc.__class__.__name__}: {exc})") from None


def loads(data: bytes | bytearray | memoryview) -> ETDump:
    """Decode an ETDump buffer (size-prefixed or not, identifier ``ED00`` required)."""
    return decode_columns(data).etdump(0)


def decode_columns(
    data: bytes | bytearray | memoryview, *, release: Callable[[], object] | None = None
) -> DecodedColumns:
    """Decode an ETDump buffer into file-wide columns, without making run objects
    (:meth:`DecodedColumns.etdump` makes them); checks as :func:`loads`. ``release`` is
    called every so many events of the compiled walk (see :mod:`.mapped`)."""
    buf = Buffer(_as_bytes(data))
    root = _root_position(buf)
    return _guarded(lambda: _Decoder(buf, release).columns(np.array([root], dtype=np.int64)))


_GAP = 16  # at least this many bytes between files decoded together; files start 16-aligned
_PADS = [bytes(k) for k in range(_GAP, 2 * _GAP)]
_IDENT = int.from_bytes(FILE_IDENTIFIER, "little")


def decode_many(datas: Sequence[bytes | bytearray | memoryview]) -> DecodedColumns:
    """Decode several ETDump buffers together, as one: file ``k`` of the result
    (``run_file == k``) is ``datas[k]``.

    Many small files cost about as much as one file of their total size, where decoding
    them one by one pays numpy's per-call overhead per file. Each file is checked as by
    :func:`loads`, and no offset may leave the file it starts in. The first bad file
    raises :class:`ETDumpFormatError` for the whole call (its offsets are positions in
    the joined buffer): decode files one by one to learn which is bad.
    """
    if len(datas) == 1:
        return decode_columns(datas[0])
    starts, sizes = joined_layout([len(data) for data in datas])
    pieces: list[bytes | bytearray | memoryview] = []
    pads = np.diff(np.append(starts, starts[-1] + sizes[-1] + _GAP)) - sizes
    for data, pad in zip(datas, pads.tolist()):
        pieces.append(data)
        pieces.append(_PADS[pad - _GAP])
    return decode_joined(b"".join(pieces), starts, sizes)


def joined_layout(sizes: Sequence[int] | I64) -> tuple[I64, I64]:
    """Where :func:`decode_joined` wants files of ``sizes`` in one buffer: (starts, sizes),
    each file at a multiple of 16 bytes with at least 16 zero bytes after it. The buffer
    needs ``starts[-1] + sizes[-1] + 16`` bytes (or more; trailing bytes are ignored)."""
    size = np.asarray(sizes, dtype=np.int64).reshape(-1)
    pads = _GAP + (-(size + _GAP) % _GAP)
    starts = np.zeros(len(size), dtype=np.int64)
    np.cumsum((size + pads)[:-1], out=starts[1:])
    return starts, size


def decode_joined(data: bytes | bytearray | memoryview, starts: I64, sizes: I64) -> DecodedColumns:
    """As :func:`decode_many` for files already laid out in one buffer, as
    :func:`joined_layout` places them (so a reader can read files straight into one
    buffer, with no copy to join them): file ``k`` is ``data[starts[k]:starts[k] + sizes[k]]``;
    the bytes between files are never read as part of one."""
    data = _as_bytes(data)
    if len(starts) == 0:
        raise ValueError("decode_joined needs at least one file")
    expected, _ = joined_layout(sizes)
    if not np.array_equal(expected, starts) or int(starts[-1] + sizes[-1]) + _GAP > len(data):
        raise ValueError("files are not laid out as joined_layout() places them")
    if len(starts) == 1:
        return decode_columns(data[: int(sizes[0])])
    buf = Buffer(data, segments=(starts, starts + sizes))
    roots = _roots(buf, starts, sizes)
    for k in np.flatnonzero(roots < 0).tolist():  # one by one, as loads (raises if bad)
        lo, hi = int(starts[k]), int(starts[k] + sizes[k])
        roots[k] = lo + _root_position(Buffer(data[lo:hi]))
    return _guarded(lambda: _Decoder(buf).columns(roots))


def _roots(buf: Buffer, starts: I64, sizes: I64) -> I64:
    """:func:`_root_position` of every file of a joined buffer at once (-1 where a file
    needs the one-by-one check: too short, not an ETDump, a size prefix that lies...)."""
    ok = sizes >= 12
    at = np.where(ok, starts, 0)
    word = buf._view(np.dtype("<u4"), 0)  # files start 16-byte aligned
    first, second, third = (word[(at >> 2) + k] for k in range(3))
    prefixed = third == _IDENT
    # as _root_position: "ED00" at 4 wins unless a matching size prefix says otherwise
    plain = (second == _IDENT) & ~(prefixed & (first == sizes - 4))
    base = np.where(plain, 0, 4)
    ok &= plain | (prefixed & (first <= sizes - 4))
    offset = np.where(base == 0, first, second).astype(np.int64)
    root = base + offset
    ok &= root + 4 <= sizes
    return np.where(ok, starts + root, -1)


def _root_position(buf: Buffer) -> int:
    """Absolute position of the root table; accepts a size prefix or none."""
    n = buf.n
    if n < 8:
        raise ETDumpFormatError(
            f"buffer of {n} bytes is too short for an ETDump (at byte offset 0)"
        )
    raw = bytes(buf.u8[:12])
    prefixed = n >= 12 and raw[8:12] == FILE_IDENTIFIER
    if raw[4:8] == FILE_IDENTIFIER and not (
        prefixed and struct.unpack_from("<I", raw, 0)[0] == n - 4
    ):
        base = 0
    elif prefixed:
        base = 4
        size = struct.unpack_from("<I", raw, 0)[0]
        if size > n - 4:
            raise ETDumpFormatError(
                f"size prefix says {size} bytes but only {n - 4} follow (truncated?) "
                "at byte offset 0"
            )
    else:
        foreign = _describe_foreign(raw)
        if foreign is not None:
            raise ETDumpFormatError(f"not an ETDump: this is {foreign} (at byte offset 0)")
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


def _describe_foreign(head: bytes) -> str | None:
    """What a buffer that is not an ETDump is, from its first bytes (None if unknown)."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "a zip archive (an ETRecord?), not an ETDump"
    for base in (4, 8):
        ident = head[base : base + 4]
        if len(ident) == 4 and ident[:2] == b"ET" and ident[2:].isdigit():
            return f"an ExecuTorch program (.pte, identifier {ident.decode()!r}), not an ETDump"
    return None


class _Decoder:
    def __init__(
        self,
        buf: Buffer,
        release: Callable[[], object] | None = None,
        limits: ReadLimits | None = None,
    ) -> None:
        self.buf = buf
        self.limits = read_limits() if limits is None else limits
        self.strings = StringTable(buf, StringBudget(self.limits, buf.files()))
        self.release = release  # the compiled walk calls it every so many events

    def columns(self, roots: I64) -> DecodedColumns:
        """Every run of the ETDumps whose root tables are at ``roots``, as one set of columns.

        The compiled walk (:mod:`._fastwalk`) makes them when it was chosen and every file
        is well formed; when it declines (None), numpy does, and names the first problem.
        Whatever the walk raises propagates: a bug there is an error, not a slow decode."""
        fast = fastwalk.columns(self.buf, roots, self.release, self.limits)
        if fast is not None:
            return fast
        return self.numpy_columns(roots)

    def numpy_columns(self, roots: I64) -> DecodedColumns:
        """:meth:`columns` by numpy alone (the reference for the compiled walk)."""
        buf = self.buf
        top = buf.tables(roots, "ETDump")
        versions = top.scalar(0, np.uint32, 0, "version")
        run_start, run_count = buf.optional_vectors(top.offset(1, "run_data"), 4, "run_data")
        run_pos = buf.uoffset_targets(buf.expand(run_start, run_count, 4), "run_data entry")
        check_unshared(run_pos, "RunData table", "run_data entries", self.limits)
        run_file = np.repeat(np.arange(len(roots), dtype=np.int64), run_count)
        runs = buf.tables(run_pos, "RunData")
        names = self.strings.intern(runs.offset(0, "name"), "RunData.name")
        bundled = runs.scalar(1, np.int32, -1, "bundled_input_index")
        allocator_bounds, allocator_names = self._allocators(runs.offset(2, "allocators"))
        ev_start, ev_count = buf.optional_vectors(runs.offset(3, "events"), 4, "RunData.events")
        self._unshared_vectors(ev_start, ev_count, 4, "RunData.events")
        event_pos = buf.uoffset_targets(buf.expand(ev_start, ev_count, 4), "events entry")
        check_unshared(event_pos, "Event table", "RunData.events entries", self.limits)
        cols = self._events(event_pos)
        bounds = bounds_of(ev_count)
        # debug entries: every Value of the buffer decoded together
        entry_events = values = None
        if self._entry_events:
            entry_events = np.concatenate(self._entry_events)
            values = decode_values(buf, np.concatenate(self._entry_pos), self.limits)
        return DecodedColumns(
            columns=MappingProxyType(cols),
            bounds=bounds,
            run_file=run_file,
            run_name=names,
            run_bundled=bundled,
            allocator_bounds=allocator_bounds,
            allocator_names=allocator_names,
            versions=versions,
            strings=self.strings.strings,
            blob=buf.data,
            entry_events=entry_events,
            values=values,
        )

    def _allocators(self, vec_pos: I64) -> tuple[I64, npt.NDArray[np.int32]]:
        """Per run, where its allocators' name codes start and end (``bounds``), and the
        codes (-1: no name) of every allocator of every run, in order."""
        start, count = self.buf.optional_vectors(vec_pos, 4, "RunData.allocators")
        self._unshared_vectors(start, count, 4, "RunData.allocators")
        pos = self.buf.uoffset_targets(self.buf.expand(start, count, 4), "allocators entry")
        check_unshared(pos, "Allocator table", "RunData.allocators entries", self.limits)
        tables = self.buf.tables(pos, "Allocator")
        codes = self.strings.intern(tables.offset(0, "name"), "Allocator.name")
        return bounds_of(count), codes

    def _unshared_vectors(self, start: I64, count: I64, elem: int, what: str) -> None:
        """Raise when offsets share a non-empty vector of ``start``/``count`` (the first
        element, the length; one per offset), or when the vectors claim more than the file."""
        full = count > 0
        if not full.all():
            start, count = start[full], count[full]
        vec = start - 4  # the vectors' own positions (their lengths)
        check_unshared(vec, f"{what} vector", f"{what} offsets", self.limits)
        check_claims(vec, count * elem, f"{what} vectors", self.limits, self.buf.files())

    def _events(self, event_pos: I64) -> dict[str, npt.NDArray[Any]]:
        """All event columns, decoded chunk by chunk (bounded temporary memory)."""
        n = len(event_pos)
        self._entry_events: list[I64] = []
        self._entry_pos: list[I64] = []
        self._members: dict[str, list[I64]] = {key: [] for key in _MEMBERS}
        self._meta: list[tuple[I64, I64]] = []
        parts: dict[str, list[npt.NDArray[Any] | None]] = {name: [] for name in _SPECS}
        for lo in range(0, n, _EVENT_CHUNK):
            chunk = self._events_chunk(event_pos[lo : lo + _EVENT_CHUNK], lo)
            for name in _SPECS:
                parts[name].append(chunk.get(name))
        for key, (what, source) in _MEMBERS.items():
            if self._members[key]:
                check_unshared(np.concatenate(self._members.pop(key)), what, source, self.limits)
        if self._meta:
            starts, lengths = zip(*self._meta)
            self._unshared_vectors(
                np.concatenate(starts),
                np.concatenate(lengths),
                1,
                "ProfileEvent.delegate_debug_metadata",
            )
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
        for key, at in (("profile", prof[has_p]), ("alloc", alloc[has_a]), ("debug", debug[has_d])):
            self._members[key].append(at)
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
            self._meta.append((s, c))
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
        with_entry = entries >= 0
        if with_entry.any():
            self._entry_events.append(base + np.flatnonzero(has_d)[with_entry])
            self._entry_pos.append(entries[with_entry])
        return cols
