"""Torch kernels for operator instructions, and program values as torch objects.

Operators run with ``torch.ops`` (``"aten.add.Tensor"`` -> ``torch.ops.aten.add.Tensor``).
Each gets the name the reference runtime gives its kernel event: ``native_call_`` + the
operator + ``.`` + the overload of its out variant (``aten.add.Tensor`` ->
``native_call_add.out``, ``aten.arange.start`` -> ``native_call_arange.start_out``; view
operators use their ``_copy`` form, as the edge dialect does: ``native_call_view_copy.out``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import torch

from delegate_lens.errors import RuntimeBackendError
from delegate_lens.program import (
    BoolValue,
    DeviceValue,
    DTypeValue,
    FloatValue,
    IntValue,
    LayoutValue,
    ListValue,
    MemoryFormatValue,
    NoneValue,
    StringValue,
    TensorValue,
    Value,
)

_GETITEM_NAMES = {"getitem", "operator.getitem", "_operator.getitem", "builtins.getitem"}


def resolve_op(name: str) -> Callable[..., Any]:
    """The torch callable for an operator name such as ``"aten.linear.default"``."""
    if name in _GETITEM_NAMES:
        return operator.getitem
    parts = name.split(".")
    if len(parts) not in (2, 3) or not all(parts):
        raise RuntimeBackendError(f"operator {name!r}: expected 'namespace.name[.overload]'")
    namespace, op_name = parts[0], parts[1]
    overload = parts[2] if len(parts) == 3 else "default"
    try:
        packet = getattr(getattr(torch.ops, namespace), op_name)
        return getattr(packet, overload)
    except (AttributeError, RuntimeError):
        raise RuntimeBackendError(f"operator {name!r} has no torch kernel") from None


def _signature(schema: torch.FunctionSchema) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in schema.arguments if not a.is_out]


def _out_overload(namespace: str, op_name: str, overload: str) -> str | None:
    try:
        packet = getattr(getattr(torch.ops, namespace), op_name)
        functional = getattr(packet, overload)._schema
    except (AttributeError, RuntimeError):
        return None
    want = _signature(functional)
    for candidate in packet.overloads():
        try:
            schema = getattr(packet, candidate)._schema
        except (AttributeError, RuntimeError):
            continue
        if any(a.is_out for a in schema.arguments) and _signature(schema) == want:
            return str(candidate)
    return None


@functools.cache
def kernel_event_name(name: str) -> str:
    """The reference runtime's kernel event name for operator ``name``."""
    parts = name.split(".")
    if len(parts) < 2 or name in _GETITEM_NAMES:
        return f"native_call_{parts[-1]}.out"
    namespace, op_name = parts[0], parts[1]
    overload = parts[2] if len(parts) > 2 else "default"
    out = _out_overload(namespace, op_name, overload)
    if out is not None:
        return f"native_call_{op_name}.{out}"
    copy = _out_overload(namespace, f"{op_name}_copy", overload)
    if copy is not None:
        return f"native_call_{op_name}_copy.{copy}"
    suffix = "out" if overload in ("default", "Tensor") else f"{overload}_out"
    return f"native_call_{op_name}.{suffix}"


def _torch_attr(kind: str, name: str, cls: type) -> Any:
    value = getattr(torch, name, None)
    if not isinstance(value, cls):  # e.g. "nn" is a torch attribute, not a memory format
        raise RuntimeBackendError(f"unknown {kind} {name!r} in program")
    return value


def constant_value(value: Value) -> object:
    """The Python/torch object for a value known at load time (not lists, not runtime tensors)."""
    if isinstance(value, TensorValue):
        dtype = _torch_attr("dtype", value.dtype, torch.dtype)
        if value.data is None:
            return None
        if not value.data:
            return torch.empty(value.shape, dtype=dtype)
        return torch.frombuffer(bytearray(value.data), dtype=dtype).reshape(value.shape)
    if isinstance(value, IntValue | FloatValue | BoolValue | StringValue):
        return value.value
    if isinstance(value, NoneValue):
        return None
    if isinstance(value, DTypeValue):
        return _torch_attr("dtype", value.dtype, torch.dtype)
    if isinstance(value, MemoryFormatValue):
        return _torch_attr("memory format", value.name, torch.memory_format)
    if isinstance(value, LayoutValue):
        return _torch_attr("layout", value.name, torch.layout)
    if isinstance(value, DeviceValue):
        try:
            return torch.device(value.name)
        except (RuntimeError, ValueError, TypeError):
            raise RuntimeBackendError(f"unknown device {value.name!r} in program") from None
    if isinstance(value, ListValue):
        return None  # resolved by the method (items may be runtime tensors)
    raise RuntimeBackendError(f"unsupported program value {value!r}")
