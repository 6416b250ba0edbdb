"""Debug data: ETDump ``Value``s inflated into numpy arrays and Python scalars (no torch).

Tensor data lives in a separate debug buffer at ``Tensor.offset``. A tensor whose bytes do
not fit the buffer (or when no buffer was given) is unavailable: ``None``, and one warning
per Inspector says how many values were affected.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.etdump._objects import NUMPY_SCALAR_TYPES, ScalarType, Value, ValueType

if TYPE_CHECKING:
    from delegate_lens.etdump._objects import Tensor
    from delegate_lens.inspector._build import FileColumns, Grouping
    from delegate_lens.inspector._tables import BlockTable


_DTYPES: dict[int, Any] = {
    **{int(code): np.dtype(name).type for name, code in NUMPY_SCALAR_TYPES.items()},
    # no numpy dtype of their own: read as their storage
    ScalarType.QINT8: np.int8,
    ScalarType.QUINT8: np.uint8,
    ScalarType.QINT32: np.int32,
    ScalarType.BITS16: np.uint16,
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

    def tensor(self, tensor: Tensor | None) -> np.ndarray[Any, Any] | None:
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


# --------------------------------------------------------------------------- per table


def attach_debug_data(
    table: BlockTable, grouping: Grouping, fc: FileColumns, buffer: DebugBuffer
) -> None:
    """Fill ``table.debug_data``: each row's debug values (from the first run), inflated."""
    if len(grouping.debug_sorted_event) == 0:
        return
    groups = table.block.group  # the first run's
    cache: dict[int, list[Any]] = {}
    for j in range(table.n_rows):
        g = int(groups[j])
        if g not in cache:
            events = grouping.debug_events_of(g)
            cache[g] = [buffer.inflate(fc.debug_entry(int(e))) for e in events]
        if cache[g]:
            table.debug_data[j] = cache[g]


def run_output(fc: FileColumns, run: int, buffer: DebugBuffer) -> list[Any]:
    """The final outputs logged by run ``run`` (empty when the ETDump logs none)."""
    if not fc.is_output.any():
        return []
    lo = int(fc.run_start[run])
    hi = lo + len(fc.run_columns[run])
    events = lo + np.flatnonzero(fc.is_output[lo:hi])
    return [buffer.inflate(fc.debug_entry(int(e))) for e in events]


def debug_problems_message(buffer: DebugBuffer) -> str | None:
    """One warning's text about the values ``buffer`` could not give (None: no problem)."""
    problems = buffer.problems
    if not problems:
        return None
    if problems[0] == "no debug buffer" and all(p == problems[0] for p in problems):
        return (
            f"{len(problems)} debug value(s) refer to a debug buffer but none was given "
            "(debug_buffer_path / --debug-buffer); they are unavailable (None)"
        )
    return f"{len(problems)} debug value(s) are unavailable (None): {problems[0]}" + (
        f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
    )
