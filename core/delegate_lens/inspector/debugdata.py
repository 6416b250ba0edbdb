"""Debug data: ETDump ``Value``s inflated into numpy arrays and Python scalars (no torch).

Tensor data lives in a separate debug buffer at ``Tensor.offset``. A tensor whose bytes do
not fit the buffer (or when no buffer was given) is unavailable: ``None``, and one warning
per Inspector says how many values were affected.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from delegate_lens.etdump.model import ScalarType, Value, ValueType

__all__ = ["DebugBuffer", "value_to_json"]

_DTYPES: dict[int, Any] = {
    ScalarType.BYTE: np.uint8,
    ScalarType.CHAR: np.int8,
    ScalarType.SHORT: np.int16,
    ScalarType.INT: np.int32,
    ScalarType.LONG: np.int64,
    ScalarType.HALF: np.float16,
    ScalarType.FLOAT: np.float32,
    ScalarType.DOUBLE: np.float64,
    ScalarType.BOOL: np.bool_,
    ScalarType.QINT8: np.int8,
    ScalarType.QUINT8: np.uint8,
    ScalarType.QINT32: np.int32,
    ScalarType.BITS16: np.uint16,
    ScalarType.UINT16: np.uint16,
    ScalarType.UINT32: np.uint32,
    ScalarType.UINT64: np.uint64,
}


class DebugBuffer:
    """The debug buffer (or none) and the problems met while reading values from it."""

    def __init__(self, data: bytes | memoryview | None) -> None:
        self.data = data
        self.problems: list[str] = []

    def inflate(self, value: Value | None) -> Any:
        """A Python/numpy value for an ETDump ``Value`` (None when unavailable)."""
        if value is None:
            return None
        val = int(value.val)
        if val == ValueType.Int:
            return value.int_value.int_val if value.int_value else None
        if val == ValueType.Bool:
            return value.bool_value.bool_val if value.bool_value else None
        if val == ValueType.Float:
            return value.float_value.float_val if value.float_value else None
        if val == ValueType.Double:
            return value.double_value.double_val if value.double_value else None
        if val == ValueType.Tensor:
            return self.tensor(value.tensor)
        if val == ValueType.TensorList:
            tensors = value.tensor_list.tensors if value.tensor_list else []
            return [self.tensor(t) for t in tensors]
        return None

    def tensor(self, tensor: Any) -> np.ndarray[Any, Any] | None:
        if tensor is None:
            return None
        dtype = _DTYPES.get(int(tensor.scalar_type))
        if dtype is None:
            self.problems.append(f"unsupported scalar type {tensor.scalar_type!r}")
            return None
        shape = tuple(int(s) for s in tensor.sizes)
        count = math.prod(shape)
        nbytes = count * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.zeros(shape, dtype=dtype)
        if self.data is None:
            self.problems.append("no debug buffer")
            return None
        offset = int(tensor.offset)
        if offset < 0 or offset + nbytes > len(self.data):
            self.problems.append(
                f"tensor of {nbytes} bytes at offset {offset} is beyond the debug buffer "
                f"({len(self.data)} bytes)"
            )
            return None
        flat = np.frombuffer(self.data, dtype=dtype, count=count, offset=offset)
        return flat.reshape(shape).copy()


def value_to_json(value: Any) -> Any:
    """A debug value as JSON: tensors as ``{"dtype", "shape", "values"}``."""
    if isinstance(value, np.ndarray):
        values = value
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            # JSON has no NaN/inf: those elements become null
            values = value.astype(object)
            values[~np.isfinite(value)] = None
        return {"dtype": str(value.dtype), "shape": list(value.shape), "values": values.tolist()}
    if isinstance(value, list):
        return [value_to_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
