"""The serialized program's data model: torch-free attrs value classes.

The container that writes and reads them is :mod:`delegate_lens.program._format`; both are
public through :mod:`delegate_lens.program`.

A method is a value table plus instructions in execution order. Values are referred to by
their index in the table (a *value id*):

* :class:`TensorValue` — dtype (``"float32"``, ``"int64"``, … torch names without
  ``torch.``), shape, and ``data`` bytes for constants (weights); ``data=None`` is a tensor the
  runtime produces (inputs, intermediates, outputs).
* :class:`IntValue`, :class:`FloatValue`, :class:`BoolValue`, :class:`StringValue`,
  :class:`NoneValue` — scalars of operator arguments.
* :class:`ListValue` — a list of other values by id (tensor lists, optional tensor lists,
  lists of ints such as sizes).
* :class:`DTypeValue`, :class:`MemoryFormatValue`, :class:`LayoutValue`,
  :class:`DeviceValue` — the torch enum-like arguments, by name (``"float32"``,
  ``"contiguous_format"``, ``"strided"``, ``"cpu"``).

Instructions: :class:`OperatorInstruction` (``op`` such as ``"aten.linear.default"``,
positional ``args`` and ``kwargs`` as value ids, ``outputs``) and
:class:`DelegateCallInstruction` (``delegate_index`` into :attr:`ProgramData.delegates`,
``args``, ``outputs``). Both carry the ``debug_handles`` of the graph nodes they came from.
An operator's result is assigned to ``outputs`` flattened: a tensor to ``outputs[0]``, a
tuple or list element-wise (``-1`` for an element nobody uses).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, SupportsInt, TypeAlias

import attrs

from delegate_lens.errors import ProgramFormatError

DTYPE_ITEMSIZE: dict[str, int] = {
    "bool": 1,
    "uint8": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
}
"""Dtypes a :class:`TensorValue` may have, with their size in bytes."""


def _ints(values: Iterable[SupportsInt]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _opt_bytes(value: bytes | bytearray | memoryview | None) -> bytes | None:
    return None if value is None else bytes(value)


def _tuple(values: Iterable[object]) -> tuple[Any, ...]:
    return tuple(values)


def _check_dtype(_inst: object, _attr: object, value: str) -> None:
    if value not in DTYPE_ITEMSIZE:
        raise ProgramFormatError(f"unknown dtype {value!r} (known: {', '.join(DTYPE_ITEMSIZE)})")


# --------------------------------------------------------------------------- values


@attrs.frozen
class TensorValue:
    """A tensor: constant when ``data`` holds its bytes, else produced at run time."""

    dtype: str = attrs.field(validator=_check_dtype)
    shape: tuple[int, ...] = attrs.field(converter=_ints)
    data: bytes | None = attrs.field(default=None, converter=_opt_bytes)

    def __attrs_post_init__(self) -> None:
        if any(s < 0 for s in self.shape):
            raise ProgramFormatError(f"tensor shape {self.shape} has a negative size")
        if self.data is not None and len(self.data) != self.nbytes:
            raise ProgramFormatError(
                f"constant tensor {self.dtype}{list(self.shape)} needs {self.nbytes} bytes, "
                f"got {len(self.data)}"
            )

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_ITEMSIZE[self.dtype]


@attrs.frozen
class IntValue:
    value: int = attrs.field(converter=int)


@attrs.frozen
class FloatValue:
    value: float = attrs.field(converter=float)


@attrs.frozen
class BoolValue:
    value: bool = attrs.field(converter=bool)


@attrs.frozen
class StringValue:
    value: str


@attrs.frozen
class NoneValue:
    pass


@attrs.frozen
class ListValue:
    """A list of other values of the same method, by value id."""

    items: tuple[int, ...] = attrs.field(converter=_ints)


@attrs.frozen
class DTypeValue:
    dtype: str = attrs.field(validator=_check_dtype)


@attrs.frozen
class MemoryFormatValue:
    name: str  # "contiguous_format", "channels_last", "preserve_format", ...


@attrs.frozen
class LayoutValue:
    name: str  # "strided", ...


@attrs.frozen
class DeviceValue:
    name: str  # "cpu"


Value: TypeAlias = (
    TensorValue
    | IntValue
    | FloatValue
    | BoolValue
    | StringValue
    | NoneValue
    | ListValue
    | DTypeValue
    | MemoryFormatValue
    | LayoutValue
    | DeviceValue
)


# --------------------------------------------------------------------------- instructions


def _kwargs(
    value: Mapping[str, SupportsInt] | Iterable[tuple[str, SupportsInt]],
) -> tuple[tuple[str, int], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple((str(k), int(v)) for k, v in items)


@attrs.frozen
class OperatorInstruction:
    """Run one operator with a torch kernel, e.g. ``op="aten.linear.default"``."""

    op: str
    args: tuple[int, ...] = attrs.field(converter=_ints)
    outputs: tuple[int, ...] = attrs.field(converter=_ints)
    kwargs: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=_kwargs)
    debug_handles: tuple[int, ...] = attrs.field(default=(), converter=_ints)


@attrs.frozen
class DelegateCallInstruction:
    """Run delegate ``delegate_index`` of the program on ``args``, writing ``outputs``."""

    delegate_index: int = attrs.field(converter=int)
    args: tuple[int, ...] = attrs.field(converter=_ints)
    outputs: tuple[int, ...] = attrs.field(converter=_ints)
    debug_handles: tuple[int, ...] = attrs.field(default=(), converter=_ints)


Instruction: TypeAlias = OperatorInstruction | DelegateCallInstruction


# --------------------------------------------------------------------------- program


class _SpecLike(Protocol):
    """Anything with a ``key`` and a ``value`` (a ``delegate_lens.CompileSpec``)."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> bytes: ...


def _compile_specs(
    values: Iterable[_SpecLike | tuple[str, bytes]],
) -> tuple[CompileSpecData, ...]:
    out = []
    for spec in values:
        if isinstance(spec, CompileSpecData):
            out.append(spec)
        elif isinstance(spec, tuple):
            out.append(CompileSpecData(spec[0], spec[1]))
        else:  # anything with .key / .value (delegate_lens.CompileSpec)
            out.append(CompileSpecData(spec.key, spec.value))
    return tuple(out)


@attrs.frozen
class CompileSpecData:
    key: str
    value: bytes = attrs.field(converter=bytes)


@attrs.frozen
class DelegateData:
    """A lowered partition: the backend id, its blob and the compile specs it was made with."""

    backend_id: str
    processed_bytes: bytes = attrs.field(converter=bytes)
    compile_specs: tuple[CompileSpecData, ...] = attrs.field(default=(), converter=_compile_specs)


@attrs.frozen
class MethodData:
    name: str
    inputs: tuple[int, ...] = attrs.field(converter=_ints)
    outputs: tuple[int, ...] = attrs.field(converter=_ints)
    values: tuple[Value, ...] = attrs.field(converter=_tuple)
    instructions: tuple[Instruction, ...] = attrs.field(converter=_tuple)


@attrs.frozen
class ProgramData:
    methods: tuple[MethodData, ...] = attrs.field(converter=_tuple)
    delegates: tuple[DelegateData, ...] = attrs.field(default=(), converter=_tuple)

    def method(self, name: str) -> MethodData:
        for m in self.methods:
            if m.name == name:
                return m
        known = ", ".join(m.name for m in self.methods) or "none"
        raise ProgramFormatError(f"program has no method {name!r} (methods: {known})")

    @property
    def method_names(self) -> list[str]:
        return [m.name for m in self.methods]
