"""Debug entries (``Value`` tables and their tensors) as columns, decoded in bulk.

A debug event's ``debug_entry`` is a small tree (Value -> Tensor / TensorList / scalar
tables -> int64 vectors). All entries of a file are decoded together with numpy into
:class:`ValueColumns`; :class:`DebugEntries` is the per-run ``{event index: Value}``
mapping that builds :class:`Value` objects on access.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._limits import ReadLimits, check_unshared
from delegate_lens.etdump._objects import (
    Bool,
    Double,
    Float,
    Int,
    Tensor,
    TensorList,
    Value,
    scalar_type,
    value_type,
)

I64 = npt.NDArray[np.int64]
_EMPTY = np.zeros(0, dtype=np.int64)


@attrs.frozen(eq=False)
class TensorColumns:
    """Tensor tables: one row each; ``sizes``/``strides`` are spans of ``dims``."""

    scalar_type: npt.NDArray[np.int8]
    sizes_start: I64
    sizes_count: I64
    strides_start: I64
    strides_count: I64
    offset: I64
    dims: I64

    def __len__(self) -> int:
        return len(self.scalar_type)

    def tensor(self, row: int) -> Tensor:
        s, c = int(self.sizes_start[row]), int(self.sizes_count[row])
        t, d = int(self.strides_start[row]), int(self.strides_count[row])
        return Tensor(
            scalar_type=scalar_type(int(self.scalar_type[row])),
            sizes=self.dims[s : s + c].tolist(),
            strides=self.dims[t : t + d].tolist(),
            offset=int(self.offset[row]),
        )


# scalar members of Value: (field, slot, table class, value attribute, dtype)
SCALAR_MEMBERS: tuple[tuple[str, int, type, str, Any], ...] = (
    ("int_value", 3, Int, "int_val", np.int64),
    ("float_value", 4, Float, "float_val", np.float32),
    ("double_value", 5, Double, "double_val", np.float64),
    ("bool_value", 6, Bool, "bool_val", np.uint8),
    ("output", 7, Bool, "bool_val", np.uint8),
)


@attrs.frozen(eq=False)
class ValueColumns:
    """Value tables: one row each.

    ``tensor`` is a row of ``tensors`` (-1 = absent); a tensor list is the span
    ``list_items[list_start : list_start + list_count]`` of tensor rows (count -1 = absent);
    each scalar member has a presence mask ``has[name]`` and values ``scalars[name]``.
    """

    val: npt.NDArray[np.int8]
    tensor: I64
    list_start: I64
    list_count: I64
    list_items: I64
    has: Mapping[str, npt.NDArray[np.bool_]]
    scalars: Mapping[str, npt.NDArray[Any]]
    tensors: TensorColumns

    def __len__(self) -> int:
        return len(self.val)

    def value(self, row: int) -> Value:
        subs: dict[str, Any] = {}
        t = int(self.tensor[row])
        if t >= 0:
            subs["tensor"] = self.tensors.tensor(t)
        count = int(self.list_count[row])
        if count >= 0:
            start = int(self.list_start[row])
            subs["tensor_list"] = TensorList(
                [self.tensors.tensor(int(k)) for k in self.list_items[start : start + count]]
            )
        for name, _slot, cls, _attr, _dtype in SCALAR_MEMBERS:
            if self.has[name][row]:
                raw = self.scalars[name][row].item()
                subs[name] = cls(bool(raw)) if cls is Bool else cls(raw)
        return Value(val=value_type(int(self.val[row])), **subs)

    @classmethod
    def from_values(cls, values: Sequence[Value]) -> ValueColumns:
        """Columns of ``values`` (Python objects, e.g. recorded by a tracer), one row each."""
        n = len(values)
        val = np.array([int(v.val) for v in values], dtype=np.int8)
        tensors: list[Tensor] = []
        tensor_row = np.full(n, -1, dtype=np.int64)
        list_start = np.zeros(n, dtype=np.int64)
        list_count = np.full(n, -1, dtype=np.int64)
        items: list[int] = []
        has = {name: np.zeros(n, dtype=bool) for name, *_ in SCALAR_MEMBERS}
        scalars = {name: np.zeros(n, dtype=dtype) for name, _s, _c, _a, dtype in SCALAR_MEMBERS}
        for i, v in enumerate(values):
            if v.tensor is not None:
                tensor_row[i] = len(tensors)
                tensors.append(v.tensor)
            if v.tensor_list is not None:
                list_start[i] = len(items)
                list_count[i] = len(v.tensor_list.tensors)
                for t in v.tensor_list.tensors:
                    items.append(len(tensors))
                    tensors.append(t)
            for name, _slot, _cls, attr, _dtype in SCALAR_MEMBERS:
                member = getattr(v, name)
                if member is not None:
                    has[name][i] = True
                    scalars[name][i] = getattr(member, attr)
        counts_s = np.array([len(t.sizes) for t in tensors], dtype=np.int64)
        counts_t = np.array([len(t.strides) for t in tensors], dtype=np.int64)
        dims_list: list[int] = []
        for t in tensors:
            dims_list.extend(t.sizes)
            dims_list.extend(t.strides)
        per = counts_s + counts_t
        starts = np.cumsum(per) - per
        tensor_cols = TensorColumns(
            scalar_type=np.array([int(t.scalar_type) for t in tensors], dtype=np.int8),
            sizes_start=starts,
            sizes_count=counts_s,
            strides_start=starts + counts_s,
            strides_count=counts_t,
            offset=np.array([t.offset for t in tensors], dtype=np.int64),
            dims=np.array(dims_list, dtype=np.int64),
        )
        return cls(
            val=val,
            tensor=tensor_row,
            list_start=list_start,
            list_count=list_count,
            list_items=np.array(items, dtype=np.int64),
            has=has,
            scalars=scalars,
            tensors=tensor_cols,
        )


class DebugEntries(Mapping[int, Value]):
    """``{event index: Value}`` for the debug events of one run, built on access.

    ``events`` (sorted) are the run's event indices that have a ``debug_entry``; ``rows``
    the matching rows of ``value_columns`` (shared by every run of a file).
    """

    __slots__ = ("events", "rows", "value_columns")

    def __init__(self, events: I64, rows: I64, value_columns: ValueColumns) -> None:
        self.events = events
        self.rows = rows
        self.value_columns = value_columns

    def _row(self, index: int) -> int:
        k = int(np.searchsorted(self.events, index))
        if k < len(self.events) and int(self.events[k]) == index:
            return int(self.rows[k])
        return -1

    def __getitem__(self, index: int) -> Value:
        row = self._row(index) if isinstance(index, (int, np.integer)) else -1
        if row < 0:
            raise KeyError(index)
        return self.value_columns.value(row)

    def __contains__(self, index: object) -> bool:
        return isinstance(index, (int, np.integer)) and self._row(int(index)) >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self.events.tolist())

    def __len__(self) -> int:
        return len(self.events)

    def output_flags(self) -> npt.NDArray[np.bool_]:
        """Per entry (aligned with ``events``): is ``output`` set and true."""
        has = self.value_columns.has["output"][self.rows]
        return has & (self.value_columns.scalars["output"][self.rows] != 0)

    def __repr__(self) -> str:
        return f"<DebugEntries: {len(self)} entries>"


# --- decoding --------------------------------------------------------------------------------------


def _distinct_vectors(
    buf: Buffer, pos: I64, elem: int, what: str, limits: ReadLimits
) -> tuple[I64, I64, I64, I64]:
    """Vectors at ``pos`` (all present), each distinct one expanded once.

    Returns (start, count) of the distinct vectors, then for each input its (start in the
    expanded elements, count). Distinct vectors of a valid buffer do not overlap, so their
    total size must fit in the buffer; a crafted buffer claiming more is rejected. A
    non-empty vector named by more offsets than ``limits`` allow is refused (empty ones
    cost nothing to share).
    """
    if not len(pos):
        return _EMPTY, _EMPTY, _EMPTY, _EMPTY
    distinct, inverse = np.unique(pos, return_inverse=True)
    inverse = inverse.reshape(-1)
    start, count = buf.vectors(distinct, elem, what)
    if len(distinct) < len(pos):
        full = count[inverse] > 0
        check_unshared(pos[full], f"{what} vector", f"{what} offsets", limits)
    claimed = 4 + count * elem
    bad = buf.over_budget(distinct, claimed)
    if bad >= 0:
        raise buf.fail(
            f"{what}: vectors overlap ({int(claimed.sum())} bytes in a {buf.n}-byte buffer)",
            int(distinct[bad]),
        )
    flat_start = np.cumsum(count) - count
    return start, count, flat_start[inverse], count[inverse]


def _tensors(buf: Buffer, pos: I64, limits: ReadLimits) -> TensorColumns:
    """Decode the Tensor tables at ``pos`` (all present)."""
    t = buf.tables(pos, "Tensor")
    st = t.scalar(0, np.int8, 0, "scalar_type")
    parts: dict[str, tuple[I64, I64]] = {}
    dims_parts: list[I64] = []
    at = 0
    for slot, key in ((1, "sizes"), (2, "strides")):
        vec = t.offset(slot, key)
        present = vec >= 0
        start_per = np.zeros(len(pos), dtype=np.int64)
        count_per = np.zeros(len(pos), dtype=np.int64)
        start, count, flat, each = _distinct_vectors(buf, vec[present], 8, f"Tensor.{key}", limits)
        values = buf.read(buf.expand(start, count, 8), np.int64).astype(np.int64)
        dims_parts.append(values)
        start_per[present] = at + flat
        count_per[present] = each
        parts[key] = (start_per, count_per)
        at += len(values)
    return TensorColumns(
        scalar_type=st,
        sizes_start=parts["sizes"][0],
        sizes_count=parts["sizes"][1],
        strides_start=parts["strides"][0],
        strides_count=parts["strides"][1],
        offset=t.scalar(3, np.int64, 0, "offset").astype(np.int64),
        dims=np.concatenate(dims_parts),
    )


def decode_values(buf: Buffer, pos: I64, limits: ReadLimits | None = None) -> ValueColumns:
    """Decode the Value tables at ``pos`` (one row per position, in order); no table or
    non-empty vector may be named by more offsets than ``limits`` allow (default: once)."""
    limits = ReadLimits() if limits is None else limits
    check_unshared(pos, "Value table", "DebugEvent.debug_entry offsets", limits)
    v = buf.tables(pos, "Value")
    n = len(pos)
    val = v.scalar(0, np.int8, 0, "val")
    direct = v.offset(1, "tensor")
    lists = v.offset(2, "tensor_list")
    # tensor lists: table -> vector of tensor offsets
    has_list = lists >= 0
    list_start = np.zeros(n, dtype=np.int64)
    list_count = np.full(n, -1, dtype=np.int64)
    item_pos = _EMPTY
    if has_list.any():
        check_unshared(lists[has_list], "TensorList table", "Value.tensor_list offsets", limits)
        lt = buf.tables(lists[has_list], "TensorList")
        vec = lt.offset(0, "tensors")
        has_vec = vec >= 0
        start, count, flat, each = _distinct_vectors(
            buf, vec[has_vec], 4, "TensorList.tensors", limits
        )
        item_pos = buf.uoffset_targets(buf.expand(start, count, 4), "tensors entry")
        counts = np.zeros(len(vec), dtype=np.int64)
        starts = np.zeros(len(vec), dtype=np.int64)
        counts[has_vec] = each
        starts[has_vec] = flat
        list_start[has_list] = starts
        list_count[has_list] = counts
    # every tensor (direct or in a list), each distinct table decoded once
    all_pos = np.concatenate([direct[direct >= 0], item_pos])
    distinct, inverse = np.unique(all_pos, return_inverse=True)
    inverse = inverse.reshape(-1)
    if len(distinct) < len(all_pos):
        check_unshared(all_pos, "Tensor table", "Value.tensor and tensor list offsets", limits)
    tensors = _tensors(buf, distinct, limits)
    tensor_row = np.full(n, -1, dtype=np.int64)
    n_direct = int((direct >= 0).sum())
    tensor_row[direct >= 0] = inverse[:n_direct]
    list_items = inverse[n_direct:].astype(np.int64)
    has: dict[str, npt.NDArray[np.bool_]] = {}
    scalars: dict[str, npt.NDArray[Any]] = {}
    for name, slot, cls, attr, dtype in SCALAR_MEMBERS:
        sub = v.offset(slot, name)
        present = sub >= 0
        values = np.zeros(n, dtype=dtype)
        check_unshared(sub, f"{cls.__name__} table", f"Value.{name} offsets", limits)
        if present.any():
            st = buf.tables(sub[present], cls.__name__)
            values[present] = st.scalar(0, dtype, 0, attr)
        has[name] = present
        scalars[name] = values
    return ValueColumns(
        val=val.astype(np.int8),
        tensor=tensor_row,
        list_start=list_start,
        list_count=list_count,
        list_items=list_items,
        has=has,
        scalars=scalars,
        tensors=tensors,
    )
