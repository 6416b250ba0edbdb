"""Record events one at a time, then make the columns once: what an event tracer uses
(:class:`EventColumnsBuilder`; the columns are :class:`~delegate_lens.etdump._columns.EventColumns`)."""

from __future__ import annotations

import numpy as np

from delegate_lens.etdump._columns import COLUMN_SPECS, EventColumns, EventKind
from delegate_lens.etdump._objects import Event, Value

_U64_MASK = (1 << 64) - 1


class EventColumnsBuilder:
    """Record events one at a time into Python lists, then :meth:`build` the columns.

    This is what an event tracer uses: appends are cheap, and the columns (and the string
    table and metadata blob) are made once at the end.
    """

    def __init__(self) -> None:
        self._cols: dict[str, list[int]] = {name: [] for name in COLUMN_SPECS}
        self._strings: dict[str, int] = {}
        self._blob = bytearray()
        self._debug: dict[int, Value] = {}

    def __len__(self) -> int:
        return len(self._cols["kind"])

    def _code(self, text: str | None) -> int:
        if text is None:
            return -1
        code = self._strings.get(text)
        if code is None:
            code = self._strings[text] = len(self._strings)
        return code

    def _append(self, **values: int) -> None:
        for name, (_dtype, default) in COLUMN_SPECS.items():
            self._cols[name].append(values.get(name, default))

    def _metadata(self, metadata: bytes | bytearray | memoryview | None) -> tuple[int, int]:
        if metadata is None:
            return 0, -1
        start = len(self._blob)
        self._blob += metadata
        return start, len(self._blob) - start

    def add_profile_event(
        self,
        name: str | None = None,
        chain_index: int = 0,
        instruction_id: int = -1,
        delegate_debug_id_int: int = -1,
        delegate_debug_id_str: str | None = None,
        delegate_debug_metadata: bytes | bytearray | memoryview | None = None,
        start_time: int = 0,
        end_time: int = 0,
    ) -> int:
        """Append a profile event; returns its index."""
        offset, length = self._metadata(delegate_debug_metadata)
        self._append(
            kind=EventKind.PROFILE,
            name=self._code(name),
            chain_index=chain_index,
            instruction_id=instruction_id,
            delegate_debug_id_int=delegate_debug_id_int,
            delegate_debug_id_str=self._code(delegate_debug_id_str),
            start_time=start_time,
            end_time=end_time,
            metadata_offset=offset,
            metadata_length=length,
        )
        return len(self) - 1

    def add_allocation_event(self, allocator_id: int = 0, allocation_size: int = 0) -> int:
        self._append(
            kind=EventKind.ALLOCATION, allocator_id=allocator_id, allocation_size=allocation_size
        )
        return len(self) - 1

    def add_debug_event(
        self,
        chain_index: int = 0,
        instruction_id: int = -1,
        debug_entry: Value | None = None,
        delegate_debug_id_int: int = -1,
        delegate_debug_id_str: str | None = None,
        name: str | None = None,
    ) -> int:
        """Append a debug event (``chain_index`` is the uint64 value); returns its index."""
        index = len(self)
        if debug_entry is not None:
            self._debug[index] = debug_entry
        self._append(
            kind=EventKind.DEBUG,
            chain_index=_as_i64(chain_index),
            instruction_id=instruction_id,
            delegate_debug_id_int=delegate_debug_id_int,
            delegate_debug_id_str=self._code(delegate_debug_id_str),
            name=self._code(name),
        )
        return index

    def add_event(self, event: Event) -> int:
        if event.profile_event is not None:
            if event.allocation_event is not None or event.debug_event is not None:
                raise ValueError("an Event must set at most one member")
            p = event.profile_event
            return self.add_profile_event(
                p.name,
                p.chain_index,
                p.instruction_id,
                p.delegate_debug_id_int,
                p.delegate_debug_id_str,
                p.delegate_debug_metadata,
                p.start_time,
                p.end_time,
            )
        if event.allocation_event is not None:
            if event.debug_event is not None:
                raise ValueError("an Event must set at most one member")
            a = event.allocation_event
            return self.add_allocation_event(a.allocator_id, a.allocation_size)
        if event.debug_event is not None:
            d = event.debug_event
            return self.add_debug_event(
                d.chain_index,
                d.instruction_id,
                d.debug_entry,
                d.delegate_debug_id_int,
                d.delegate_debug_id_str,
                d.name,
            )
        return self.add_event_none()

    def add_event_none(self) -> int:
        """Append an event with no member set (kind NONE)."""
        self._append(kind=EventKind.NONE)
        return len(self) - 1

    def build(self) -> EventColumns:
        try:
            arrays = {
                name: np.array(values, dtype=COLUMN_SPECS[name][0])
                for name, values in self._cols.items()
            }
        except OverflowError as exc:
            raise ValueError(f"an event field does not fit its column: {exc}") from None
        kind = arrays.pop("kind")
        return EventColumns.build(
            kind,
            strings=list(self._strings),
            blob=bytes(self._blob),
            debug_entries=dict(self._debug),
            **arrays,
        )


def _as_i64(value: int) -> int:
    """uint64 value -> the int64 with the same bits (what the chain_index column holds)."""
    value = int(value)
    if not -(1 << 63) <= value <= _U64_MASK:
        raise ValueError(f"chain_index={value} does not fit uint64")
    return value - (1 << 64) if value >= (1 << 63) else value
