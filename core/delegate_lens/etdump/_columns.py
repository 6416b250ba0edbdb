"""Events of one run as numpy columns: what the Inspector reads and ETDumpGen writes.

One entry per event, in file order. Fields that do not apply to an event's kind hold the
format's default (e.g. ``allocator_id`` 0 for a profile event, ``name`` -1 for an allocation
event), so columns compare directly.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.etdump._objects import (
    AllocationEvent,
    DebugEvent,
    Event,
    ProfileEvent,
    Value,
)

if TYPE_CHECKING:
    from collections.abc import Mapping


class EventKind(enum.IntEnum):
    """``EventColumns.kind``: which member of the ``Event`` table is set."""

    NONE = 0
    PROFILE = 1
    ALLOCATION = 2
    DEBUG = 3


# column name -> (dtype, default for events that do not carry the field)
COLUMN_SPECS: dict[str, tuple[type[np.generic], int]] = {
    "kind": (np.uint8, 0),
    "name": (np.int32, -1),
    "chain_index": (np.int64, 0),
    "instruction_id": (np.int32, -1),
    "delegate_debug_id_int": (np.int32, -1),
    "delegate_debug_id_str": (np.int32, -1),
    "start_time": (np.uint64, 0),
    "end_time": (np.uint64, 0),
    "metadata_offset": (np.int64, 0),
    "metadata_length": (np.int64, -1),
    "allocator_id": (np.int32, 0),
    "allocation_size": (np.uint64, 0),
}

_U64_MASK = (1 << 64) - 1


def _as(value: object, dtype: type[np.generic]) -> npt.NDArray[Any]:
    arr = np.asarray(value)
    return arr if arr.dtype == dtype else arr.astype(dtype)


def _u8(value: object) -> npt.NDArray[np.uint8]:
    return _as(value, np.uint8)


def _i32(value: object) -> npt.NDArray[np.int32]:
    return _as(value, np.int32)


def _i64(value: object) -> npt.NDArray[np.int64]:
    return _as(value, np.int64)


def _u64(value: object) -> npt.NDArray[np.uint64]:
    return _as(value, np.uint64)


@attrs.frozen(eq=False)
class EventColumns:
    """Equal-length numpy arrays, one entry per event of a run (see the module docstring).

    ``name`` and ``delegate_debug_id_str`` are codes into ``strings`` (-1 = absent);
    ``delegate_debug_metadata`` of event ``i`` is
    ``blob[metadata_offset[i] : metadata_offset[i] + metadata_length[i]]`` (length -1 =
    absent). ``debug_entries`` maps the index of a debug event to its ``debug_entry``.
    Build with :meth:`build` (arrays), :class:`EventColumnsBuilder` (one event at a time) or
    :meth:`from_events`.
    """

    kind: npt.NDArray[np.uint8] = attrs.field(converter=_u8)
    name: npt.NDArray[np.int32] = attrs.field(converter=_i32)
    chain_index: npt.NDArray[np.int64] = attrs.field(converter=_i64)
    instruction_id: npt.NDArray[np.int32] = attrs.field(converter=_i32)
    delegate_debug_id_int: npt.NDArray[np.int32] = attrs.field(converter=_i32)
    delegate_debug_id_str: npt.NDArray[np.int32] = attrs.field(converter=_i32)
    start_time: npt.NDArray[np.uint64] = attrs.field(converter=_u64)
    end_time: npt.NDArray[np.uint64] = attrs.field(converter=_u64)
    metadata_offset: npt.NDArray[np.int64] = attrs.field(converter=_i64)
    metadata_length: npt.NDArray[np.int64] = attrs.field(converter=_i64)
    allocator_id: npt.NDArray[np.int32] = attrs.field(converter=_i32)
    allocation_size: npt.NDArray[np.uint64] = attrs.field(converter=_u64)
    strings: list[str] = attrs.field(factory=list)
    blob: bytes | bytearray | memoryview = b""
    debug_entries: Mapping[int, Value] = attrs.field(factory=dict)
    file_span: FileSpan | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
    """Set by the decoder: where these columns lie in the file-wide columns (None when
    built in memory)."""

    def __attrs_post_init__(self) -> None:
        n = len(self.kind)
        for name in COLUMN_SPECS:
            arr = getattr(self, name)
            if arr.ndim != 1 or len(arr) != n:
                raise ValueError(f"column {name} has shape {arr.shape}, expected ({n},)")
        if n:
            ns = len(self.strings)
            for name in ("name", "delegate_debug_id_str"):
                codes = getattr(self, name)
                if int(codes.min()) < -1 or int(codes.max()) >= ns:
                    raise ValueError(f"column {name} holds a code outside strings (0..{ns - 1})")
            present = self.metadata_length >= 0
            if present.any():
                off = self.metadata_offset[present]
                end = off + self.metadata_length[present]
                if int(off.min()) < 0 or int(end.max()) > len(self.blob):
                    raise ValueError("a metadata span lies outside blob")
            if int(self.kind.max()) > 3:
                raise ValueError("column kind holds a value outside EventKind")

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        kind: npt.ArrayLike,
        *,
        strings: Sequence[str] = (),
        blob: bytes | bytearray | memoryview = b"",
        debug_entries: Mapping[int, Value] | None = None,
        **columns: npt.ArrayLike,
    ) -> EventColumns:
        """Columns from arrays; any column not given holds its default for every event.

        ``columns`` are keyword arrays named as the fields (``name``, ``start_time``, ...).
        """
        kind_arr = np.asarray(kind, dtype=np.uint8)
        n = len(kind_arr)
        unknown = set(columns) - set(COLUMN_SPECS)
        if unknown:
            raise TypeError(f"unknown column(s): {', '.join(sorted(unknown))}")
        arrays: dict[str, Any] = {}
        for name, (dtype, default) in COLUMN_SPECS.items():
            if name == "kind":
                continue
            if name in columns:
                arrays[name] = np.asarray(columns[name], dtype=dtype)
            else:
                arrays[name] = np.full(n, default, dtype=dtype)
        return cls(
            kind=kind_arr,
            strings=list(strings),
            blob=blob,
            debug_entries=_entries(debug_entries),
            **arrays,
        )

    @classmethod
    def trusted(
        cls,
        arrays: Mapping[str, npt.NDArray[np.generic]],
        strings: list[str],
        blob: bytes | bytearray | memoryview,
        debug_entries: Mapping[int, Value],
        file_span: FileSpan | None = None,
    ) -> EventColumns:
        """Columns from arrays already of the right dtypes and checked (no validation).

        For decoders that have validated everything in bulk; others use :meth:`build`.
        ``file_span`` says which slice of the file-wide columns these are.
        """
        self = cls.__new__(cls)
        for name in COLUMN_SPECS:
            object.__setattr__(self, name, arrays[name])
        object.__setattr__(self, "strings", strings)
        object.__setattr__(self, "blob", blob)
        object.__setattr__(self, "debug_entries", debug_entries)
        object.__setattr__(self, "file_span", file_span)
        return self

    @classmethod
    def empty(cls) -> EventColumns:
        return cls.build(np.zeros(0, np.uint8))

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> EventColumns:
        from delegate_lens.etdump._builder import EventColumnsBuilder

        builder = EventColumnsBuilder()
        for event in events:
            builder.add_event(event)
        return builder.build()

    # --- access ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.kind)

    def string(self, code: int) -> str | None:
        """The string for a code of ``name`` / ``delegate_debug_id_str`` (None for -1)."""
        return None if code < 0 else self.strings[code]

    def decode(self, codes: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.object_]:
        """Codes -> object array of str (None where -1), vectorized."""
        table = np.empty(len(self.strings) + 1, dtype=object)
        table[:-1] = self.strings
        table[-1] = None
        return table[np.where(codes < 0, len(self.strings), codes)]

    def metadata(self, i: int) -> bytes | None:
        """``delegate_debug_metadata`` of event ``i`` (None when absent)."""
        length = int(self.metadata_length[i])
        if length < 0:
            return None
        start = int(self.metadata_offset[i])
        return bytes(self.blob[start : start + length])

    def profile_event(self, i: int) -> ProfileEvent:
        return ProfileEvent(
            name=self.string(int(self.name[i])),
            chain_index=int(self.chain_index[i]),
            instruction_id=int(self.instruction_id[i]),
            delegate_debug_id_int=int(self.delegate_debug_id_int[i]),
            delegate_debug_id_str=self.string(int(self.delegate_debug_id_str[i])),
            delegate_debug_metadata=self.metadata(i),
            start_time=int(self.start_time[i]),
            end_time=int(self.end_time[i]),
        )

    def allocation_event(self, i: int) -> AllocationEvent:
        return AllocationEvent(
            allocator_id=int(self.allocator_id[i]),
            allocation_size=int(self.allocation_size[i]),
        )

    def debug_event(self, i: int) -> DebugEvent:
        return DebugEvent(
            chain_index=int(self.chain_index[i]) & _U64_MASK,
            instruction_id=int(self.instruction_id[i]),
            debug_entry=self.debug_entries.get(i),
            delegate_debug_id_int=int(self.delegate_debug_id_int[i]),
            delegate_debug_id_str=self.string(int(self.delegate_debug_id_str[i])),
            name=self.string(int(self.name[i])),
        )

    def event(self, i: int) -> Event:
        kind = int(self.kind[i])
        if kind == EventKind.PROFILE:
            return Event(profile_event=self.profile_event(i))
        if kind == EventKind.DEBUG:
            return Event(debug_event=self.debug_event(i))
        if kind == EventKind.ALLOCATION:
            return Event(allocation_event=self.allocation_event(i))
        return Event()

    # --- comparison --------------------------------------------------------------------------

    def equals(self, other: EventColumns) -> bool:
        """Same events (strings compared as text, metadata as bytes), whatever the encoding."""
        if len(self) != len(other):
            return False
        for name in COLUMN_SPECS:
            if name in ("name", "delegate_debug_id_str", "metadata_offset"):
                continue
            if not np.array_equal(getattr(self, name), getattr(other, name)):
                return False
        for name in ("name", "delegate_debug_id_str"):
            if not np.array_equal(
                self.decode(getattr(self, name)), other.decode(getattr(other, name))
            ):
                return False
        for i in np.flatnonzero(self.metadata_length > 0):
            if self.metadata(int(i)) != other.metadata(int(i)):
                return False
        debug = np.flatnonzero(self.kind == EventKind.DEBUG)
        return all(self.debug_entries.get(int(i)) == other.debug_entries.get(int(i)) for i in debug)


def _entries(entries: Mapping[int, Value] | None) -> Mapping[int, Value]:
    """Decoded entries stay lazy; any other mapping is copied into a dict of int keys."""
    from delegate_lens.etdump._values import DebugEntries

    if isinstance(entries, DebugEntries):
        return entries
    return {int(k): v for k, v in (entries or {}).items()}


@attrs.frozen(eq=False)
class FileSpan:
    """Where one run's columns lie in the file-wide columns a decoder sliced them from.

    :param columns: every column of :data:`COLUMN_SPECS` for the whole file (one array
        each, shared by all runs of the file).
    :param bounds: run ``r`` holds events ``bounds[r]:bounds[r + 1]``.
    :param run: this run's position.
    """

    columns: Mapping[str, npt.NDArray[Any]]
    bounds: npt.NDArray[np.int64]
    run: int


def file_wide_columns(runs: Sequence[EventColumns]) -> Mapping[str, npt.NDArray[Any]] | None:
    """The file-wide columns ``runs`` are the consecutive slices of (run 0 first), as a
    decoder made them, or None (runs built in memory, reordered, or of several files):
    readers of a whole file use these instead of concatenating the runs again."""
    if not runs:
        return None
    first = runs[0].file_span
    if first is None or len(first.bounds) != len(runs) + 1:
        return None
    for r, c in enumerate(runs):
        span = c.file_span
        if span is None or span.columns is not first.columns or span.run != r:
            return None
    return first.columns


def concat_columns(
    runs: Sequence[EventColumns], code: Callable[[str], int]
) -> dict[str, npt.NDArray[Any]]:
    """The columns of ``runs`` end to end, string codes translated by ``code`` into one table.

    Each distinct string table is translated once, in run order (the runs of a loaded file
    share theirs); absent strings stay -1. ``metadata_offset`` still points into each run's
    own ``blob``.
    """
    cols: dict[str, npt.NDArray[Any]] = {}
    for name, (dtype, _default) in COLUMN_SPECS.items():
        parts = [getattr(c, name) for c in runs]
        cols[name] = np.concatenate(parts) if parts else np.zeros(0, dtype)
    remaps: dict[int, npt.NDArray[np.int64]] = {}
    for c in runs:
        if id(c.strings) not in remaps:
            remaps[id(c.strings)] = np.array([*map(code, c.strings), -1], dtype=np.int64)
    for name in ("name", "delegate_debug_id_str"):
        if len(remaps) == 1:
            cols[name] = next(iter(remaps.values()))[cols[name]]
        else:
            cols[name] = (
                np.concatenate([remaps[id(c.strings)][getattr(c, name)] for c in runs])
                if runs
                else np.zeros(0, np.int64)
            )
    return cols
