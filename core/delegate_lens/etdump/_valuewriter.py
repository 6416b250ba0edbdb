"""Write :class:`ValueColumns` (debug entries) into the output buffer, vectorized.

Order inside the section (every uoffset points forward): Value tables · TensorList tables ·
their vectors of tensor offsets · Tensor tables · Int/Float/Double/Bool tables · the
int64 ``sizes``/``strides`` vectors. Empty ``sizes``/``strides`` are written as present,
empty vectors, as the reference runtime does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.etdump._buffer import spans
from delegate_lens.etdump._layout import (
    Output,
    TableGroup,
    VTables,
    sequential,
    write_offset_vectors,
)
from delegate_lens.etdump._values import SCALAR_MEMBERS, ValueColumns

I64 = npt.NDArray[np.int64]


class ValueLayout:
    """Tables of one :class:`ValueColumns`: create (before vtables are placed), place, write."""

    def __init__(self, vt: VTables, values: ValueColumns) -> None:
        self.values = values
        v = values
        n = len(v)
        self.value_t = TableGroup(
            vt,
            n,
            [
                (0, 1, v.val != 0),
                (1, 4, v.tensor >= 0),
                (2, 4, v.list_count >= 0),
                *[(slot, 4, v.has[name]) for name, slot, *_ in SCALAR_MEMBERS],
            ],
        )
        self.list_rows = np.flatnonzero(v.list_count >= 0)
        self.list_t = TableGroup(vt, len(self.list_rows), [(0, 4, True)])
        t = v.tensors
        self.tensor_t = TableGroup(
            vt,
            len(t),
            [(0, 1, t.scalar_type != 0), (1, 4, True), (2, 4, True), (3, 8, t.offset != 0)],
        )
        self.scalar_t: dict[str, tuple[I64, TableGroup, npt.NDArray[Any]]] = {}
        for name, _slot, _cls, _attr, dtype in SCALAR_MEMBERS:
            rows = np.flatnonzero(v.has[name])
            vals = v.scalars[name][rows].astype(dtype)
            size = np.dtype(dtype).itemsize
            self.scalar_t[name] = (rows, TableGroup(vt, len(rows), [(0, size, vals != 0)]), vals)

    def place(self, at: int) -> int:
        at = self.value_t.place(at)
        at = self.list_t.place(at)
        counts = self.values.list_count[self.list_rows]
        self.list_vec, at = sequential(at, (4 + 4 * counts + 7) & ~7)
        at = self.tensor_t.place(at)
        for _rows, group, _vals in self.scalar_t.values():
            at = group.place(at)
        t = self.values.tensors
        self.sizes_vec, at = sequential(at, (4 + 8 * t.sizes_count + 7) & ~7)
        self.strides_vec, at = sequential(at, (4 + 8 * t.strides_count + 7) & ~7)
        return at

    def write(self, out: Output, vt: VTables) -> None:
        v = self.values
        groups = [
            self.value_t,
            self.list_t,
            self.tensor_t,
            *(g for _r, g, _v in self.scalar_t.values()),
        ]
        for group in groups:
            group.write_soffsets(out, vt)
        n = len(v)
        self.value_t.write_scalar(out, 0, v.val.astype(np.int8))
        tensor_pos = np.append(self.tensor_t.pos, -1)
        self.value_t.write_offset(out, 1, tensor_pos[v.tensor])
        list_target = np.full(n, -1, dtype=np.int64)
        list_target[self.list_rows] = self.list_t.pos
        self.value_t.write_offset(out, 2, list_target)
        for name, slot, *_ in SCALAR_MEMBERS:
            rows, group, vals = self.scalar_t[name]
            target = np.full(n, -1, dtype=np.int64)
            target[rows] = group.pos
            self.value_t.write_offset(out, slot, target)
            group.write_scalar(out, 0, vals)
        # tensor lists: table -> vector -> tensor tables
        self.list_t.write_offset(out, 0, self.list_vec)
        starts = v.list_start[self.list_rows]
        counts = v.list_count[self.list_rows]
        write_offset_vectors(
            out, self.list_vec, counts, self.tensor_t.pos[v.list_items[spans(starts, counts)]]
        )
        # tensors and their dims
        t = v.tensors
        self.tensor_t.write_scalar(out, 0, t.scalar_type.astype(np.int8))
        self.tensor_t.write_offset(out, 1, self.sizes_vec)
        self.tensor_t.write_offset(out, 2, self.strides_vec)
        self.tensor_t.write_scalar(out, 3, t.offset.astype(np.int64))
        for vec, start, count in (
            (self.sizes_vec, t.sizes_start, t.sizes_count),
            (self.strides_vec, t.strides_start, t.strides_count),
        ):
            out.put(vec, count.astype(np.uint32))
            out.put(spans(vec + 4, count, 8), t.dims[spans(start, count)].astype(np.int64))
