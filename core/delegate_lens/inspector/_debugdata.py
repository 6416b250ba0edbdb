"""Debug data: ETDump ``Value``s inflated into numpy arrays and Python scalars (no torch).

Tensor data lives in a separate debug buffer at ``Tensor.offset``. A tensor whose bytes do
not fit the buffer (or when no buffer was given) is unavailable: ``None``, and one warning
per Inspector says how many values were affected. A tensor whose shape no array can have
(more than :data:`MAX_DIMS` dimensions, a negative size) is a damaged ETDump: an
:class:`~delegate_lens.errors.ETDumpFormatError` naming the event and the field, with or
without a buffer.

What a crafted ETDump may cost is bounded (see ``docs/trust.md``): the tensors read from a
buffer (each a copy) add up to at most ``[inspector] max_debug_ratio`` times its size, and
the zeros given without a buffer beyond :data:`ZEROS_BUDGET` bytes are read-only views of
one zero (a tensor of sizes ``[10**10]`` allocates nothing).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import NUMPY_SCALAR_TYPES, ScalarType, Value, ValueType

if TYPE_CHECKING:
    from delegate_lens.etdump import Tensor
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


ZEROS_BUDGET = 64 << 20
"""Bytes of zeros (tensors without a buffer) made as arrays of their own; the rest are
read-only views of one zero, allocating nothing."""
_MAX_SIZE = 1 << 62
"""A size no array can have: more elements than memory has bytes."""

MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
"""The most dimensions a tensor's ``sizes`` may have (numpy's limit: ExecuTorch's own is 16)."""


class _BadTensor(ETDumpFormatError):
    """A tensor's shape no array can have (the message names the field, not yet the event)."""


class DebugBuffer:
    """The debug buffer (or none) and the problems met while reading values from it.
    ``origin`` names the ETDump in errors."""

    def __init__(
        self, data: bytes | memoryview | None, origin: str = "the ETDump", *, zeros: bool = False
    ) -> None:
        self.data = data
        self.origin = origin
        self.problems: list[str] = []
        self.zeros = zeros
        """Without a buffer, give tensors of zeros (the reference's values) instead of None."""
        self.spent = 0
        """Bytes of tensors given so far (copies from the buffer, or arrays of zeros)."""
        self.ratio: float = 0
        self.budget: float = ZEROS_BUDGET
        if data is not None:
            from delegate_lens.inspector._limits import debug_budget

            self.ratio, self.budget = debug_budget(len(data))

    def inflate_event(self, fc: FileColumns, event: int) -> Any:
        """:meth:`inflate` of the debug entry of ``event`` (a global index of ``fc``); a
        tensor of a shape no array can have is an :class:`ETDumpFormatError` naming the file,
        the run, the event and the field."""
        try:
            return self.inflate(fc.debug_entry(event))
        except _BadTensor as exc:
            raise ETDumpFormatError(f"{self.origin}: {_describe(fc, event)}: {exc}") from None

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
            return [
                self.tensor(t, f"debug_entry.tensor_list.tensors[{i}]")
                for i, t in enumerate(tensors)
            ]
        return None

    def tensor(
        self, tensor: Tensor | None, field: str = "debug_entry.tensor"
    ) -> np.ndarray[Any, Any] | None:
        """The array of ``tensor`` (``field`` names it in errors), or None when unavailable."""
        if tensor is None:
            return None
        dtype = _DTYPES.get(int(tensor.scalar_type))
        if dtype is None:
            self.problems.append(f"unsupported scalar type {tensor.scalar_type!r}")
            return None
        shape = _shape(tensor, field)
        count = math.prod(shape)
        nbytes = count * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.zeros(shape, dtype=dtype)
        if self.data is None:
            self.problems.append("no debug buffer")
            return self._zeros(shape, dtype, nbytes) if self.zeros else None
        offset = int(tensor.offset)
        if offset < 0 or offset + nbytes > len(self.data):
            self.problems.append(
                f"tensor of {nbytes} bytes at offset {offset} is beyond the debug buffer "
                f"({len(self.data)} bytes)"
            )
            return None
        self._spend(nbytes, field)
        flat = np.frombuffer(self.data, dtype=dtype, count=count, offset=offset)
        return _in_memory_order(flat, shape, tensor.strides).copy()

    def _zeros(self, shape: tuple[int, ...], dtype: Any, nbytes: int) -> np.ndarray[Any, Any]:
        """Zeros of ``shape``: an array of their own within :data:`ZEROS_BUDGET`, else a
        read-only view of one zero (nothing allocated)."""
        if self.spent + nbytes <= self.budget:
            self.spent += nbytes
            return np.zeros(shape, dtype=dtype)
        return np.broadcast_to(np.zeros((), dtype=dtype), shape)

    def _spend(self, nbytes: int, field: str) -> None:
        """Count ``nbytes`` read from the buffer; past ``[inspector] max_debug_ratio``, a
        :class:`_BadTensor` naming the limit and how to raise it."""
        self.spent += nbytes
        if self.spent <= self.budget:
            return
        from delegate_lens.inspector._limits import DEBUG_SLACK, how_to_raise

        assert self.data is not None
        size = len(self.data)
        needed = math.ceil(max(self.spent - DEBUG_SLACK, 1) / max(size, 1))
        raise _BadTensor(
            f"{field}: the tensors read from the debug buffer add up to more than "
            f"{int(self.budget):,} bytes, [inspector] max_debug_ratio = {self.ratio:g} times "
            f"its {size:,} bytes plus {DEBUG_SLACK >> 20} MiB (tensors naming the same bytes "
            "again and again? a writer gives each tensor bytes of its own); at least "
            + how_to_raise("max_debug_ratio", needed)
        )


def _in_memory_order(
    flat: np.ndarray[Any, Any], shape: tuple[int, ...], strides: Any
) -> np.ndarray[Any, Any]:
    """The tensor of ``shape`` whose elements lie in ``flat`` as ``strides`` (in elements)
    say: a channels-last tensor is logged in its memory order with strides such as
    ``[192, 1, 24, 3]``. Strides that are not a dense layout of ``shape`` (none, the
    contiguous ones, or damaged) read ``flat`` as contiguous."""
    steps = [int(s) for s in strides or ()]
    if len(steps) != len(shape) or len(shape) < 2:
        return flat.reshape(shape)
    order = sorted(range(len(shape)), key=lambda d: (steps[d], -d), reverse=True)
    expected = 1
    dense = [0] * len(shape)
    for d in reversed(order):  # innermost first: each stride is the product of the inner sizes
        dense[d] = expected
        expected *= shape[d]
    if any(steps[d] != dense[d] for d in range(len(shape)) if shape[d] > 1):
        return flat.reshape(shape)
    permuted = flat.reshape([shape[d] for d in order])  # memory order, outermost first
    return permuted.transpose(np.argsort(order))


def _shape(tensor: Tensor, field: str) -> tuple[int, ...]:
    """``tensor.sizes`` as a shape; a :class:`_BadTensor` when no array can have it."""
    shape = tuple(int(s) for s in tensor.sizes)
    if len(shape) > MAX_DIMS:
        raise _BadTensor(
            f"{field}.sizes has {len(shape)} dimensions; a tensor has at most {MAX_DIMS} "
            "(a damaged ETDump?)"
        )
    for i, size in enumerate(shape):
        if size < 0:
            raise _BadTensor(f"{field}.sizes[{i}] is {size}; a size is never negative")
    count = math.prod(shape)
    if count >= _MAX_SIZE or (count == 0 and max(shape, default=0) >= _MAX_SIZE):
        raise _BadTensor(
            f"{field}.sizes {list(shape)} make {count:,} elements, more than any array can "
            "hold (a damaged ETDump?)"
        )
    return shape


def _describe(fc: FileColumns, event: int) -> str:
    """``run 0 ('Execute'), event 3 (debug event 'conv', instruction 7)``: where ``event`` is."""
    run = int(np.searchsorted(fc.run_start, event, side="right")) - 1
    local = event - int(fc.run_start[run])
    run_name = fc.run_names[run] if run < len(fc.run_names) else None
    name = fc.string(int(fc.name[event]))
    where = f"run {run}" + (f" ({run_name!r})" if run_name else "")
    what = "debug event" + (f" {name!r}" if name else "")
    return f"{where}, event {local} ({what}, instruction {int(fc.instruction_id[event])})"


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
            cache[g] = [buffer.inflate_event(fc, int(e)) for e in events]
        if cache[g]:
            table.debug_data[j] = cache[g]
    if buffer.data is None and table.debug_data:  # the reference's values: zeros
        zeros = DebugBuffer(None, buffer.origin, zeros=True)
        table.zeros_debug_data = {}
        for j in table.debug_data:
            events = grouping.debug_events_of(int(groups[j]))
            table.zeros_debug_data[j] = [zeros.inflate_event(fc, int(e)) for e in events]
        table.zeros_run_output = run_output(fc, int(table.block.runs[0]), zeros)


def run_output(fc: FileColumns, run: int, buffer: DebugBuffer) -> list[Any]:
    """The final outputs logged by run ``run`` (empty when the ETDump logs none)."""
    if not fc.is_output.any():
        return []
    lo = int(fc.run_start[run])
    hi = lo + len(fc.run_columns[run])
    events = lo + np.flatnonzero(fc.is_output[lo:hi])
    return [buffer.inflate_event(fc, int(e)) for e in events]


def debug_problems_message(buffer: DebugBuffer) -> str | None:
    """One warning's text about the values ``buffer`` could not give (None: no problem)."""
    problems = buffer.problems
    if not problems:
        return None
    if problems[0] == "no debug buffer" and all(p == problems[0] for p in problems):
        return (
            f"{len(problems)} debug value(s) refer to a debug buffer but none was given "
            "(debug_buffer_path / --debug-buffer); they are unavailable (None; zeros in "
            "Event.debug_data and DataFrames, as the reference gives them)"
        )
    return f"{len(problems)} debug value(s) are unavailable (None): {problems[0]}" + (
        f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
    )
