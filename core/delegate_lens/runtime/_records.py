"""Values an ETDumpGen logs, as it keeps them while the model runs (tuples: a kind, a
payload, the output flag) and as the codec's :class:`~delegate_lens.etdump.Value` when the
ETDump is built; tensors as (ETDump scalar type, sizes, bytes)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.etdump import NUMPY_SCALAR_TYPES, ScalarType

# dtype name (torch without "torch.", or numpy) -> ETDump ScalarType code. Only the codes of
# the schema's enum: complex types (c10 codes 8-10) have none, so they are not logged.
_SCALAR_TYPE: dict[str, int] = {
    **{name: int(code) for name, code in NUMPY_SCALAR_TYPES.items()},
    "bfloat16": int(ScalarType.BFLOAT16),  # torch-only dtypes
    "float8_e5m2": int(ScalarType.FLOAT8E5M2),
    "float8_e4m3fn": int(ScalarType.FLOAT8E4M3FN),
    "float8_e5m2fnuz": int(ScalarType.FLOAT8E5M2FNUZ),
    "float8_e4m3fnuz": int(ScalarType.FLOAT8E4M3FNUZ),
}


def _contiguous_strides(sizes: list[int]) -> list[int]:
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(sizes[i + 1], 1)
    return strides


def tensor_bytes(x: object) -> tuple[int, list[int], npt.NDArray[np.uint8]] | None:
    """(scalar type, sizes, C-contiguous uint8 array) of a torch tensor or numpy array.

    ``None`` for anything else, and for a dtype the ETDump's ``ScalarType`` has no code for
    (complex, quantized, object arrays): such values are not logged. The array may share
    memory with ``x`` (it is copied into the debug buffer right away).
    """
    if isinstance(x, np.ndarray | np.generic):
        arr = np.ascontiguousarray(x)
        code = _SCALAR_TYPE.get(arr.dtype.name)
        if code is None:
            return None
        return code, list(arr.shape), arr.reshape(-1).view(np.uint8)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach() if x.requires_grad else x
        if t.device.type != "cpu":
            t = t.cpu()
        code = _TORCH_SCALAR_TYPE.get(t.dtype)
        if code is None:
            name = str(t.dtype).removeprefix("torch.")
            code = _SCALAR_TYPE.get(name)
            if code is None:
                return None
            _TORCH_SCALAR_TYPE[t.dtype] = code
        try:
            arr = t.numpy()  # zero-copy view (the fast path)
        except (TypeError, RuntimeError):  # bfloat16 and friends: numpy has no such dtype
            arr = t.contiguous().reshape(-1).view(torch.uint8).numpy()
        return code, list(t.shape), np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return None


_TORCH_SCALAR_TYPE: dict[Any, int] = {}

# debug records, kept as tuples while running and made codec Values when building
REC_TENSOR, REC_LIST, REC_INT, REC_BOOL, REC_DOUBLE = range(5)


def record_to_value(record: tuple[Any, ...]) -> Any:
    from delegate_lens.etdump import Bool, Double, Int, Tensor, TensorList, Value, ValueType

    kind, payload, output = record
    flag = Bool(True) if output else None
    if kind == REC_TENSOR:
        code, sizes, offset = payload
        tensor = Tensor(code, sizes, _contiguous_strides(sizes), offset)
        return Value(ValueType.Tensor, tensor=tensor, output=flag)
    if kind == REC_LIST:
        tensors = [Tensor(c, s, _contiguous_strides(s), o) for c, s, o in payload]
        return Value(ValueType.TensorList, tensor_list=TensorList(tensors), output=flag)
    if kind == REC_INT:
        return Value(ValueType.Int, int_value=Int(payload), output=flag)
    if kind == REC_BOOL:
        return Value(ValueType.Bool, bool_value=Bool(payload), output=flag)
    return Value(ValueType.Double, double_value=Double(payload), output=flag)
