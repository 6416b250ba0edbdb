"""Bounds-checked, vectorized reading of FlatBuffer tables, vectors and strings with numpy.

Every position is an absolute byte offset in the input (size prefix included) held in an
int64 array; every read is checked against the buffer before numpy touches it, so a lying
offset or length becomes an :class:`ETDumpFormatError` naming the byte offset, never an
IndexError or a huge allocation.

A buffer may hold several files end to end (``segments``, see :class:`Buffer`): then every
read is also checked to stay inside the file it started from, so one decode serves many
small files and a lying offset still cannot reach a neighbour.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError

I64 = npt.NDArray[np.int64]
_BLOCK_SHIFT = 4
_BLOCK = 1 << _BLOCK_SHIFT  # segments aligned to this many bytes get a lookup table


def spans(starts: I64, counts: I64, step: int = 1) -> I64:
    """``starts[i] + step * k`` for ``k`` in ``range(counts[i])``, every span in order."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    first = np.repeat(starts - (ends - counts) * step, counts)
    return first + np.arange(total, dtype=np.int64) * step


class Buffer:
    """A byte buffer with vectorized, checked little-endian reads at arrays of positions.

    ``segments`` (starts, ends), sorted, the first start 0 and every start a multiple of 16,
    with a gap of at least 8 bytes after each end, makes the buffer several files: a
    position belongs to the last segment starting at or before it, and every read must end
    within that segment (the decoder follows offsets only forward, checking each target
    against its source's segment, so every position it reaches stays in the file it came
    from). :func:`~delegate_lens.etdump._reader.decode_many` lays files out so.
    """

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        segments: tuple[I64, I64] | None = None,
    ) -> None:
        self.data = data
        self.u8 = np.frombuffer(data, dtype=np.uint8)
        self.n = len(self.u8)
        self._views: dict[tuple[str, int], npt.NDArray[Any]] = {}
        self._starts: I64 | None = None
        self._ends: I64 | None = None
        self._block_start: npt.NDArray[np.integer[Any]] | None = None
        self._block_end: npt.NDArray[np.integer[Any]] | None = None
        if segments is not None and len(segments[0]) > 1:
            self._starts, self._ends = starts, _ = segments
            if (starts & (_BLOCK - 1)).any() or int(starts[0]) != 0:
                raise ValueError(f"segments must start at 0 and on {_BLOCK}-byte boundaries")

    def files(self) -> tuple[I64, I64]:
        """(starts, ends) of the buffer's files (one file: the whole buffer)."""
        if self._starts is None or self._ends is None:
            return np.zeros(1, dtype=np.int64), np.full(1, self.n, dtype=np.int64)
        return self._starts, self._ends

    def _blocks(self) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]:
        """Per 16-byte block, the start and end of its file: a position's segment bounds
        are one lookup (the table caches better than a binary search). Made on first use
        (the compiled walk never needs it); one spare block at the end."""
        if self._block_start is None or self._block_end is None:
            starts, ends = self.files()
            blocks = np.diff(np.append(starts, (self.n // _BLOCK + 1) * _BLOCK)) // _BLOCK
            small = np.uint32 if self.n < 1 << 32 else np.int64
            self._block_start = np.repeat(starts.astype(small), blocks)
            self._block_end = np.repeat(ends.astype(small), blocks)
        return self._block_start, self._block_end

    def segment_bounds(self, pos: I64) -> tuple[I64 | int, I64 | int]:
        """(start, end) of the file holding each of ``pos`` (the whole buffer when one);
        ``pos`` must lie in ``0 ..= n``."""
        if self._starts is None:
            return 0, self.n
        block_start, block_end = self._blocks()
        block = pos >> _BLOCK_SHIFT
        return block_start[block], block_end[block]

    def segment_end(self, pos: I64) -> I64 | int:
        """End of the file holding each of ``pos`` (see :meth:`segment_bounds`)."""
        if self._starts is None:
            return self.n
        return self._blocks()[1][pos >> _BLOCK_SHIFT]

    def over_budget(self, pos: I64, sizes: I64) -> int:
        """Index of an item of a file whose ``sizes`` add up to more than the file holds
        (-1: none). Distinct items of a valid file do not overlap, so this bounds the
        work a crafted file can ask for (items pointing many times at one region)."""
        if not len(pos):
            return -1
        if self._starts is None or self._ends is None:
            return 0 if int(sizes.sum()) > self.n else -1
        seg = np.searchsorted(self._starts, pos, side="right") - 1
        totals = np.bincount(seg, weights=sizes, minlength=len(self._starts))
        over = totals > (self._ends - self._starts)
        return int(np.argmax(over[seg])) if over.any() else -1

    # --- checks ---------------------------------------------------------------------------

    def fail(self, what: str, offset: int) -> ETDumpFormatError:
        """The error naming ``offset`` (unsigned: a position before the buffer is not one)."""
        if offset < 0:
            return ETDumpFormatError(f"{what} (a position before the start of the buffer)")
        return ETDumpFormatError(f"{what} at byte offset {offset}")

    def check(self, pos: I64, size: int | I64, what: str) -> None:
        """Raise unless ``pos[i] .. pos[i] + size[i]`` lies inside the buffer for all i."""
        if len(pos) == 0:
            return
        end = pos + size
        if int(pos.min()) < 0 or int(end.max()) > self.n:
            bad = int(np.flatnonzero((pos < 0) | (end > self.n))[0])
            raise self.fail(f"{what} lies outside the buffer ({self.n} bytes)", int(pos[bad]))
        if self._starts is not None:
            limit = self.segment_end(pos)
            if (end > limit).any():
                bad = int(np.argmax(end > limit))
                raise self.fail(f"{what} lies outside its file", int(pos[bad]))

    # --- reads ------------------------------------------------------------------------------

    def _view(self, dtype: np.dtype[Any], shift: int) -> npt.NDArray[Any]:
        key = (dtype.str, shift)
        view = self._views.get(key)
        if view is None:
            count = (self.n - shift) // dtype.itemsize
            view = np.frombuffer(self.data, dtype=dtype, count=count, offset=shift)
            self._views[key] = view
        return view

    def read(self, pos: I64, dtype: Any) -> npt.NDArray[Any]:
        """Values of ``dtype`` (little-endian) at ``pos`` (caller has checked the bounds).

        Positions are grouped by their residue modulo the item size, so every group is
        one gather from an aligned view of the buffer (no per-byte gathers).
        """
        dt = np.dtype(dtype).newbyteorder("<")
        k = dt.itemsize
        if len(pos) == 0:
            return np.zeros(0, dtype=dt)
        if k == 1:
            return self.u8[pos].view(dt)
        shift = k.bit_length() - 1
        residue = pos & (k - 1)
        first = int(residue[0])
        if not (residue != first).any():
            return self._view(dt, first)[pos >> shift]
        out = np.empty(len(pos), dtype=dt)
        counts = np.bincount(residue, minlength=k)
        for r in np.flatnonzero(counts).tolist():
            sel = residue == r
            out[sel] = self._view(dt, r)[pos[sel] >> shift]
        return out

    def read_checked(self, pos: I64, dtype: Any, what: str) -> npt.NDArray[Any]:
        self.check(pos, np.dtype(dtype).itemsize, what)
        return self.read(pos, dtype)

    def uoffset_targets(self, pos: I64, what: str) -> I64:
        """Follow the uoffsets stored at ``pos`` (checked); returns target positions."""
        rel = self.read_checked(pos, np.uint32, what).astype(np.int64)
        target = pos + rel
        if len(target) and int(target.max()) >= self.n:
            bad = int(np.argmax(target >= self.n))
            raise self.fail(f"{what} points past the end of the buffer", int(pos[bad]))
        if self._starts is not None and len(target):
            limit = self.segment_end(pos)
            if (target >= limit).any():
                bad = int(np.argmax(target >= limit))
                raise self.fail(f"{what} points past the end of its file", int(pos[bad]))
        return target

    def vectors(self, pos: I64, elem_size: int, what: str) -> tuple[I64, I64]:
        """Vectors at ``pos``: (position of the first element, length), both checked."""
        length = self.read_checked(pos, np.uint32, f"length of {what}").astype(np.int64)
        self.check(pos + 4, length * elem_size, what)
        return pos + 4, length

    def optional_vectors(self, pos: I64, elem_size: int, what: str) -> tuple[I64, I64]:
        """:meth:`vectors` where ``pos`` may be -1 (absent: start 0, length 0)."""
        start = np.zeros(len(pos), dtype=np.int64)
        count = np.zeros(len(pos), dtype=np.int64)
        present = pos >= 0
        if present.any():
            start[present], count[present] = self.vectors(pos[present], elem_size, what)
        return start, count

    def expand(self, starts: I64, lengths: I64, elem_size: int) -> I64:
        """Positions of every element of several vectors, concatenated in order."""
        bad = self.over_budget(starts, lengths)  # bounds allocations
        if bad >= 0:
            raise self.fail("vector lengths exceed the buffer", int(starts[bad]))
        return spans(starts, lengths, elem_size)

    def tables(self, pos: I64, what: str) -> Tables:
        return Tables(self, pos, what)

    def bytes_at(self, start: int, length: int) -> bytes:
        return bytes(self.u8[start : start + length])


def factorize(
    values: npt.NDArray[np.generic], limit: int = 1 << 16
) -> tuple[npt.NDArray[Any], I64] | None:
    """(distinct values sorted, index of each value in them), fast when there are few.

    Starts from a sample and grows the set with the values it misses; returns None when
    there are more than ``limit`` distinct values, or when the sample misses more than a
    tenth of the values (many distinct values, e.g. the vtables of many files decoded
    together: callers then take a general path, cheaper than growing the set).
    """
    n = len(values)
    if n == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    distinct = np.unique(values[:: max(1, n // 512)])
    for round_ in range(4):
        if len(distinct) == 1:
            miss = values != distinct[0]
            index = np.zeros(n, dtype=np.int64)
        else:
            index = np.searchsorted(distinct, values)
            np.minimum(index, len(distinct) - 1, out=index)
            miss = distinct[index] != values
        missed = int(np.count_nonzero(miss))
        if not missed:
            return distinct, index
        if round_ == 0 and missed * 10 > n:
            return None
        distinct = np.union1d(distinct, values[miss])
        if len(distinct) > limit:
            return None
    return None


class Tables:
    """Many tables of one type at once: their vtables are read and checked up front.

    Tables usually share a handful of vtables, so vtables are read once per distinct
    vtable and the per-table values are small lookups.
    """

    def __init__(self, buf: Buffer, pos: I64, what: str) -> None:
        self.buf = buf
        self.pos = pos
        self.what = what
        soffset = buf.read_checked(pos, np.int32, what).astype(np.int64)
        vt = pos - soffset
        lo, hi = buf.segment_bounds(pos)
        outside = (vt < lo) | (vt + 4 > hi)
        if len(vt) and outside.any():
            # name the table (its soffset is what points outside), never a negative position
            bad = int(np.argmax(outside))
            raise buf.fail(
                f"vtable of {what} (soffset {int(soffset[bad])}) lies outside the buffer "
                f"({buf.n} bytes)",
                int(pos[bad]),
            )
        found = factorize(vt)
        if found is None:
            self.vt, self.index = vt, None
        else:
            self.vt, self.index = found
        vt = self.vt
        buf.check(vt, 4, f"vtable of {what}")
        self.vt_size = buf.read(vt, np.uint16).astype(np.int64)
        self.table_size = buf.read(vt + 2, np.uint16).astype(np.int64)
        if len(vt):
            bad_size = (self.vt_size < 4) | (self.vt_size & 1 == 1)
            if bad_size.any():
                bad = int(np.argmax(bad_size))
                raise buf.fail(f"vtable of {what} has a bad size", int(vt[bad]))
            buf.check(vt, self.vt_size, f"vtable of {what}")
            buf.check(pos, np.maximum(self._per_table(self.table_size), 4), what)
        self._max_slots = int((self.vt_size.min() - 4) // 2) if len(vt) else 0

    def _per_table(self, per_vtable: I64) -> I64:
        return per_vtable if self.index is None else per_vtable[self.index]

    def __len__(self) -> int:
        return len(self.pos)

    def field(self, slot: int, size: int, name: str) -> I64:
        """Absolute positions of field ``slot`` (-1 where absent), checked to lie in the table."""
        entry = 4 + 2 * slot
        if slot < self._max_slots:
            voff = self.buf.read(self.vt + entry, np.uint16).astype(np.int64)
        else:
            voff = np.zeros(len(self.vt), dtype=np.int64)
            has = self.vt_size >= entry + 2
            if has.any():
                voff[has] = self.buf.read(self.vt[has] + entry, np.uint16)
        present = voff != 0
        outside = present & ((voff < 4) | (voff + size > self.table_size))
        if outside.any():
            bad = int(np.argmax(outside))
            where = int(self.vt[bad]) if self.index is not None else int(self.pos[bad])
            raise self.buf.fail(f"field {name} of {self.what} lies outside its table", where)
        if self.index is not None:
            if not present.any():
                return np.full(len(self.pos), -1, dtype=np.int64)
            if present.all():
                return self.pos + voff[self.index]
            voff = voff[self.index]
            present = voff != 0
        return np.where(present, self.pos + voff, -1)

    def scalar(self, slot: int, dtype: Any, default: int | float, name: str) -> npt.NDArray[Any]:
        dt = np.dtype(dtype)
        fpos = self.field(slot, dt.itemsize, name)
        present = fpos >= 0
        if present.all():
            return self.buf.read(fpos, dt).astype(dt, copy=False)
        out = np.full(len(fpos), default, dtype=dt)
        if present.any():
            out[present] = self.buf.read(fpos[present], dt)
        return out

    def offset(self, slot: int, name: str) -> I64:
        """Targets of the uoffset field ``slot`` (-1 where absent)."""
        fpos = self.field(slot, 4, name)
        present = fpos >= 0
        if present.all():
            return self.buf.uoffset_targets(fpos, f"{name} of {self.what}")
        out = np.full(len(fpos), -1, dtype=np.int64)
        if present.any():
            out[present] = self.buf.uoffset_targets(fpos[present], f"{name} of {self.what}")
        return out
