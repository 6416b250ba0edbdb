"""FlatBuffer layout for the writer: many tables of one type placed and filled with numpy.

The writer lays the buffer out front to back, so every uoffset points forward as the
format requires. Alignment rule used throughout: every object (vtable, table, vector,
string) starts at a position congruent to 4 modulo 8 and occupies a multiple of 8 bytes.
A table's soffset then sits at the start, its 8-byte fields right after it (8-aligned),
then 4-, 2- and 1-byte fields; a vector's length is followed by 8-aligned elements.
Fields equal to their default are omitted; tables with the same present fields share one
vtable.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from delegate_lens.etdump._buffer import spans

I64 = npt.NDArray[np.int64]


def pad8(n: int) -> int:
    return (n + 7) & ~7


def sequential(start: int, sizes: I64) -> tuple[I64, int]:
    """Objects of ``sizes`` placed one after the other from ``start``: (positions, end)."""
    ends = np.cumsum(sizes)
    return start + ends - sizes, start + (int(ends[-1]) if len(sizes) else 0)


class VTables:
    """Distinct vtables, laid out together; ``add`` returns an id, ``position`` its place."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}
        self.blobs: list[bytes] = []
        self.positions: list[int] = []

    def add(self, vtable: bytes) -> int:
        vid = self._ids.get(vtable)
        if vid is None:
            vid = self._ids[vtable] = len(self.blobs)
            self.blobs.append(vtable)
        return vid

    def place(self, start: int) -> int:
        pos = start
        for blob in self.blobs:
            self.positions.append(pos)
            pos += pad8(len(blob))
        return pos


def table_layout(
    sizes: Sequence[int], slots: Sequence[int], present: Sequence[bool]
) -> tuple[list[int], int, bytes]:
    """(voffset per field or 0, padded table size, vtable bytes) for one set of present fields."""
    order = sorted(
        (i for i in range(len(sizes)) if present[i]), key=lambda i: (-sizes[i], slots[i])
    )
    voff = [0] * len(sizes)
    at = 4
    for i in order:
        voff[i] = at
        at += sizes[i]
    inline = at
    n_slots = max((slots[i] + 1 for i in order), default=0)
    entries = [0] * n_slots
    for i in order:
        entries[slots[i]] = voff[i]
    vtable = struct.pack(f"<{2 + n_slots}H", 4 + 2 * n_slots, inline, *entries)
    return voff, pad8(inline), vtable


class TableGroup:
    """``n`` tables of one type: fields given as (slot, byte size, present mask)."""

    def __init__(
        self,
        vtables: VTables,
        n: int,
        fields: Sequence[tuple[int, int, npt.NDArray[np.bool_] | bool]],
    ) -> None:
        self.n = n
        nf = len(fields)
        sizes = [f[1] for f in fields]
        slots = [f[0] for f in fields]
        mask = np.zeros(n, dtype=np.int64)
        self.present: list[npt.NDArray[np.bool_]] = []
        for i, (_slot, _size, present) in enumerate(fields):
            p = np.broadcast_to(np.asarray(present, dtype=bool), (n,))
            self.present.append(p)
            mask |= p.astype(np.int64) << i
        used = np.flatnonzero(np.bincount(mask, minlength=1 << nf)) if n else np.zeros(0, np.int64)
        lut = np.zeros(1 << nf, dtype=np.int64)
        lut[used] = np.arange(len(used))
        self.mask_id = lut[mask]
        voffs = np.zeros((max(len(used), 1), max(nf, 1)), dtype=np.int64)
        tsize = np.zeros(max(len(used), 1), dtype=np.int64)
        vt_ids = np.zeros(max(len(used), 1), dtype=np.int64)
        for k, m in enumerate(used.tolist()):
            present_m = [bool(m >> i & 1) for i in range(nf)]
            voff, size, vtable = table_layout(sizes, slots, present_m)
            voffs[k, :nf] = voff
            tsize[k] = size
            vt_ids[k] = vtables.add(vtable)
        self._voffs = voffs
        self._vt_ids = vt_ids
        self.sizes = tsize[self.mask_id]
        self.pos = np.zeros(n, dtype=np.int64)

    def place(self, start: int) -> int:
        """Put the tables one after the other from ``start``; returns the end."""
        if self.n == 0:
            return start
        self.pos, end = sequential(start, self.sizes)
        return end

    def field_positions(self, i: int) -> tuple[npt.NDArray[np.bool_], I64]:
        """(present mask, absolute positions of field i where present)."""
        present = self.present[i]
        voff = self._voffs[self.mask_id[present], i]
        return present, self.pos[present] + voff

    def write_soffsets(self, out: Output, vtables: VTables) -> None:
        if self.n == 0:
            return
        vt_pos = np.asarray(vtables.positions, dtype=np.int64)[self._vt_ids[self.mask_id]]
        out.put(self.pos, (self.pos - vt_pos).astype(np.int32))

    def write_scalar(self, out: Output, i: int, values: npt.NDArray[np.generic]) -> None:
        present, pos = self.field_positions(i)
        out.put(pos, values[present] if values.ndim else np.broadcast_to(values, pos.shape))

    def write_offset(self, out: Output, i: int, targets: I64) -> None:
        """Field i holds uoffsets to ``targets`` (full-length array; used where present)."""
        present, pos = self.field_positions(i)
        out.put(pos, (targets[present] - pos).astype(np.uint32))


class Output:
    """The output buffer (a multiple of 8 bytes) with aligned vectorized stores."""

    def __init__(self, size: int) -> None:
        self.u8 = np.zeros(size, dtype=np.uint8)

    def put(self, pos: I64, values: npt.NDArray[np.generic]) -> None:
        if len(pos) == 0:
            return
        dt = values.dtype.newbyteorder("<")
        k = dt.itemsize
        if k == 1:
            self.u8[pos] = values.view(np.uint8)
        else:
            self.u8.view(dt)[pos // k] = values

    def put_bytes(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        self.u8[pos : pos + len(data)] = np.frombuffer(data, dtype=np.uint8)


def write_offset_vectors(out: Output, vec_pos: I64, counts: I64, targets: I64) -> None:
    """Vectors of uoffsets at ``vec_pos`` holding ``counts`` entries each, in ``targets`` order."""
    if len(vec_pos) == 0:
        return
    out.put(vec_pos, counts.astype(np.uint32))
    elem = spans(vec_pos + 4, counts, 4)
    out.put(elem, (targets - elem).astype(np.uint32))
