"""The ETDump object model: one attrs class per table of the format, two enums.

Field names, slot order and defaults are the format's (``docs/etdump-format.md``).
Scalars equal to their default are omitted by the writer and restored by the reader;
``None`` means "field absent" for strings, vectors and sub-tables (an empty vector is
``b""`` / ``[]`` and is written as a present, empty vector).

Unknown enum values (e.g. ``ScalarType`` 99 written by a newer runtime) are kept as plain
``int``; known ones are returned as the enum member.

:class:`RunData` keeps its events as columns (:class:`~delegate_lens.etdump._columns.EventColumns`);
``run.events`` builds :class:`Event` objects on access.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat, SupportsIndex, overload

import attrs

if TYPE_CHECKING:
    from delegate_lens.etdump._columns import EventColumns


FRAMEWORK_EVENTS = frozenset({"Method::init", "Program::load_method", "Method::execute"})
"""Names of the events the runtime logs around its own work (not an operator's): loading a
method, initializing it, executing it."""


class ValueType(enum.IntEnum):
    """``Value.val``: which member of a :class:`Value` is meaningful (int8 on the wire)."""

    Null = 0
    Int = 1
    Bool = 2
    Float = 3
    Double = 4
    Tensor = 5
    TensorList = 6
    String = 7


class ScalarType(enum.IntEnum):
    """``Tensor.scalar_type`` (int8 on the wire; same numbering as c10::ScalarType)."""

    BYTE = 0
    CHAR = 1
    SHORT = 2
    INT = 3
    LONG = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    QUINT4X2 = 16
    QUINT2X4 = 17
    BITS16 = 22
    FLOAT8E5M2 = 23
    FLOAT8E4M3FN = 24
    FLOAT8E5M2FNUZ = 25
    FLOAT8E4M3FNUZ = 26
    UINT16 = 27
    UINT32 = 28
    UINT64 = 29


NUMPY_SCALAR_TYPES: dict[str, ScalarType] = {
    "uint8": ScalarType.BYTE,
    "int8": ScalarType.CHAR,
    "int16": ScalarType.SHORT,
    "int32": ScalarType.INT,
    "int64": ScalarType.LONG,
    "float16": ScalarType.HALF,
    "float32": ScalarType.FLOAT,
    "float64": ScalarType.DOUBLE,
    "bool": ScalarType.BOOL,
    "uint16": ScalarType.UINT16,
    "uint32": ScalarType.UINT32,
    "uint64": ScalarType.UINT64,
}
"""numpy dtype name -> :class:`ScalarType`, for the dtypes numpy holds (the writers' and
readers' one table of codes)."""

_VALUE_TYPES = {int(m): m for m in ValueType}
_SCALAR_TYPES = {int(m): m for m in ScalarType}


def value_type(code: int) -> ValueType | int:
    """The :class:`ValueType` member for ``code``, or ``code`` itself when unknown."""
    return _VALUE_TYPES.get(code, code)


def scalar_type(code: int) -> ScalarType | int:
    """The :class:`ScalarType` member for ``code``, or ``code`` itself when unknown."""
    return _SCALAR_TYPES.get(code, code)


# --- validators ---------------------------------------------------------------------------


def _int_range(bits: int, signed: bool) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    kind = f"{'int' if signed else 'uint'}{bits}"

    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{attribute.name} must be an int, not {type(value).__name__}")
        if not lo <= value <= hi:
            raise ValueError(f"{attribute.name}={value} does not fit {kind}")

    return check


_i8 = _int_range(8, True)
_i32 = _int_range(32, True)
_u32 = _int_range(32, False)
_i64 = _int_range(64, True)
_u64 = _int_range(64, False)


def _opt_str(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, not {type(value).__name__}")


def _opt_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return bytes(value)


def _int_list(value: Any) -> list[int]:
    return [int(v) for v in value]


def _check_i64_list(_inst: object, attribute: attrs.Attribute[Any], value: list[int]) -> None:
    for v in value:
        if not -(1 << 63) <= v < (1 << 63):
            raise ValueError(f"{attribute.name} item {v} does not fit int64")


def fits_float32(value: float) -> bool:
    """Whether a float32 can hold ``value`` (NaN and infinities can; rounding is allowed)."""
    return not math.isfinite(value) or abs(value) <= 3.4028234663852886e38


def _float32_range(_inst: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not fits_float32(value):
        raise ValueError(f"{attribute.name}={value} does not fit float32")


# --- value tables ---------------------------------------------------------------------------


@attrs.define
class Int:
    int_val: int = attrs.field(default=0, validator=_i64)


@attrs.define
class Bool:
    bool_val: bool = attrs.field(default=False, converter=bool)


def _to_float(value: SupportsFloat | SupportsIndex | str | bytes) -> float:
    """``float(value)`` as a converter: attrs reads a converter's signature, and a builtin's
    only from its text (tokenized: about 2.5 ms of every start that imports this module)."""
    return float(value)


def _float_key(value: float) -> tuple[bool, float]:
    """Equality key for floats: every NaN equals every NaN (as decoded data should)."""
    return (True, 0.0) if math.isnan(value) else (False, value)


@attrs.define
class Float:
    float_val: float = attrs.field(
        default=0.0, converter=_to_float, validator=_float32_range, eq=_float_key
    )


@attrs.define
class Double:
    double_val: float = attrs.field(default=0.0, converter=_to_float, eq=_float_key)


@attrs.define
class String:
    string_val: str | None = attrs.field(default=None, validator=_opt_str)


@attrs.define
class Tensor:
    scalar_type: ScalarType | int = attrs.field(
        default=ScalarType.BYTE, converter=scalar_type, validator=_i8
    )
    sizes: list[int] = attrs.field(factory=list, converter=_int_list, validator=_check_i64_list)
    strides: list[int] = attrs.field(factory=list, converter=_int_list, validator=_check_i64_list)
    offset: int = attrs.field(default=0, validator=_i64)


@attrs.define
class TensorList:
    tensors: list[Tensor] = attrs.field(factory=list)


@attrs.define
class Value:
    val: ValueType | int = attrs.field(default=ValueType.Null, converter=value_type, validator=_i8)
    tensor: Tensor | None = None
    tensor_list: TensorList | None = None
    int_value: Int | None = None
    float_value: Float | None = None
    double_value: Double | None = None
    bool_value: Bool | None = None
    output: Bool | None = None


# --- events -----------------------------------------------------------------------------------


@attrs.define
class ProfileEvent:
    name: str | None = attrs.field(default=None, validator=_opt_str)
    chain_index: int = attrs.field(default=0, validator=_i32)
    instruction_id: int = attrs.field(default=-1, validator=_i32)
    delegate_debug_id_int: int = attrs.field(default=-1, validator=_i32)
    delegate_debug_id_str: str | None = attrs.field(default=None, validator=_opt_str)
    delegate_debug_metadata: bytes | None = attrs.field(default=None, converter=_opt_bytes)
    start_time: int = attrs.field(default=0, validator=_u64)
    end_time: int = attrs.field(default=0, validator=_u64)


@attrs.define
class AllocationEvent:
    allocator_id: int = attrs.field(default=0, validator=_i32)
    allocation_size: int = attrs.field(default=0, validator=_u64)


@attrs.define
class DebugEvent:
    chain_index: int = attrs.field(default=0, validator=_u64)
    instruction_id: int = attrs.field(default=-1, validator=_i32)
    debug_entry: Value | None = None
    delegate_debug_id_int: int = attrs.field(default=-1, validator=_i32)
    delegate_debug_id_str: str | None = attrs.field(default=None, validator=_opt_str)
    name: str | None = attrs.field(default=None, validator=_opt_str)


@attrs.define
class Event:
    """One event; exactly one member is set in files the runtime writes (none is allowed)."""

    profile_event: ProfileEvent | None = None
    allocation_event: AllocationEvent | None = None
    debug_event: DebugEvent | None = None


@attrs.define
class Allocator:
    name: str | None = attrs.field(default=None, validator=_opt_str)


# --- runs -------------------------------------------------------------------------------------


class EventSequence(Sequence[Event]):
    """A read-only sequence of :class:`Event` built from columns on access (not cached)."""

    __slots__ = ("_columns",)

    def __init__(self, columns: EventColumns) -> None:
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [self._columns.event(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        return self._columns.event(i)

    def __iter__(self) -> Iterator[Event]:
        event = self._columns.event
        for i in range(len(self)):
            yield event(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventSequence):
            return self._columns.equals(other._columns)
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<EventSequence of {len(self)} events>"


def _allocator_list(value: Any) -> list[Allocator]:
    return list(value)


@attrs.define(eq=False, repr=False)
class RunData:
    """One block of events (``Default`` at method load, one ``Execute`` per inference).

    Build it from :class:`Event` objects (``RunData(name, events=[...])``) or from columns
    (:meth:`from_columns`). ``columns`` is the fast view; ``events`` builds objects on access.
    For a run built from an event list, ``columns`` is derived from the list on each access
    (so later edits of the list are seen); runs from :func:`loads` or :meth:`from_columns`
    hold their columns once.
    """

    name: str | None = attrs.field(default=None, validator=_opt_str)
    bundled_input_index: int = attrs.field(default=-1, validator=_i32)
    allocators: list[Allocator] = attrs.field(factory=list, converter=_allocator_list)
    _event_list: list[Event] | None = attrs.field(default=None, alias="events")
    _columns: EventColumns | None = attrs.field(default=None, alias="columns", kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self._event_list is not None and self._columns is not None:
            raise ValueError("RunData takes events or columns, not both")
        if self._event_list is None and self._columns is None:
            self._event_list = []
        elif self._event_list is not None and not isinstance(self._event_list, list):
            if isinstance(self._event_list, EventSequence):
                self._columns = self._event_list._columns
                self._event_list = None
            else:
                self._event_list = list(self._event_list)

    @classmethod
    def from_columns(
        cls,
        name: str | None,
        bundled_input_index: int,
        allocators: Sequence[Allocator],
        columns: EventColumns,
    ) -> RunData:
        """A run whose events are ``columns`` (what writers such as ETDumpGen use)."""
        return cls(name, bundled_input_index, list(allocators), columns=columns)

    @classmethod
    def _trusted(
        cls,
        name: str | None,
        bundled_input_index: int,
        allocators: list[Allocator],
        columns: EventColumns,
    ) -> RunData:
        """For decoders: fields already checked, no validation (a run per block adds up)."""
        self = cls.__new__(cls)
        for key, value in (
            ("name", name),
            ("bundled_input_index", bundled_input_index),
            ("allocators", allocators),
            ("_event_list", None),
            ("_columns", columns),
        ):
            object.__setattr__(self, key, value)
        return self

    @property
    def events(self) -> Sequence[Event]:
        """The events, in file order (a list if the run was built from one, else lazy)."""
        if self._event_list is not None:
            return self._event_list
        assert self._columns is not None
        return EventSequence(self._columns)

    @events.setter
    def events(self, value: Sequence[Event]) -> None:
        self._event_list = list(value)
        self._columns = None

    @property
    def columns(self) -> EventColumns:
        """The events as numpy columns (see :class:`~delegate_lens.etdump._columns.EventColumns`)."""
        if self._columns is not None:
            return self._columns
        from delegate_lens.etdump._columns import EventColumns

        assert self._event_list is not None
        return EventColumns.from_events(self._event_list)

    @property
    def has_columns(self) -> bool:
        """True when the run holds columns (decoded or built), False for an event list."""
        return self._columns is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunData):
            return NotImplemented
        if (
            self.name != other.name
            or self.bundled_input_index != other.bundled_input_index
            or self.allocators != other.allocators
        ):
            return False
        if self._event_list is not None and other._event_list is not None:
            return self._event_list == other._event_list
        return self.columns.equals(other.columns)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"RunData(name={self.name!r}, bundled_input_index={self.bundled_input_index}, "
            f"allocators={self.allocators!r}, events=<{len(self.events)} events>)"
        )


@attrs.define
class ETDump:
    """The root table: a format version and the runs."""

    version: int = attrs.field(default=0, validator=_u32)
    run_data: list[RunData] = attrs.field(factory=list)
