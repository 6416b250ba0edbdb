"""Turn many FlatBuffer strings into codes into one table of distinct ``str``, vectorized.

The reference writer stores every event name separately (482,002 copies of a few dozen
names in the big vector). Decoding each one in Python would dominate loading, so the
strings are grouped by content with numpy first and only one string per group is decoded:

1. a key of (length, first 8 bytes, last 8 bytes) groups candidates (``np.unique``);
2. every member is then compared byte for byte with its group's first member (the middle
   bytes of long strings in bounded chunks), so grouping is exact; members that differ
   (key collisions) are decoded one by one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump.buffer import Buffer

__all__ = ["StringTable"]

I64 = npt.NDArray[np.int64]
_CHUNK = 1 << 16
_STEPS = np.arange(8, dtype=np.int64)
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)
_K3 = np.uint64(0x165667B19E3779F9)


class StringTable:
    """The distinct strings of one file, shared by all its runs; ``intern`` gives codes."""

    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.strings: list[str] = []
        self._codes: dict[str, int] = {}

    def _code(self, text: str) -> int:
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self.strings)
            self.strings.append(text)
        return code

    def _decode(self, start: int, length: int, pos: int) -> str:
        try:
            return self.buf.bytes_at(start, length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.buf.fail(f"string is not valid UTF-8 ({exc.reason})", pos) from None

    def intern(self, pos: I64, what: str) -> npt.NDArray[np.int32]:
        """Codes for the strings at ``pos`` (-1 where ``pos`` is -1)."""
        out = np.full(len(pos), -1, dtype=np.int32)
        present = pos >= 0
        if not present.any():
            return out
        p = pos[present]
        start, length = self.buf.vectors(p, 1, what)
        out[present] = self._group(p, start, length)
        return out

    def single(self, pos: int, what: str) -> str | None:
        if pos < 0:
            return None
        code = int(self.intern(np.array([pos], dtype=np.int64), what)[0])
        return self.strings[code]

    def _group(self, pos: I64, start: I64, length: I64) -> npt.NDArray[np.int32]:
        n = len(pos)
        first = np.empty(n, dtype=np.uint64)
        last = np.empty(n, dtype=np.uint64)
        u8 = self.buf.u8
        top = self.buf.n - 1
        for lo in range(0, n, _CHUNK):
            s = start[lo : lo + _CHUNK, None]
            ln = length[lo : lo + _CHUNK, None]
            keep = ln > _STEPS
            head = np.where(keep, u8[np.minimum(s + _STEPS, top)], 0)
            tail_idx = s + ln - 8 + _STEPS
            tail = np.where(keep[:, ::-1], u8[np.clip(tail_idx, 0, top)], 0)
            first[lo : lo + _CHUNK] = np.ascontiguousarray(head, dtype=np.uint8).view("<u8")[:, 0]
            last[lo : lo + _CHUNK] = np.ascontiguousarray(tail, dtype=np.uint8).view("<u8")[:, 0]
        key = first * _K1 ^ last * _K2 ^ length.astype(np.uint64) * _K3
        _, rep_index, inverse = np.unique(key, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        rep = rep_index[inverse]
        same = (length == length[rep]) & (first == first[rep]) & (last == last[rep])
        long_ = np.flatnonzero(same & (length > 16) & (rep != np.arange(n)))
        if len(long_):
            same[long_] = self._middle_equal(start[long_], start[rep[long_]], length[long_])
        group_codes = np.array(
            [
                self._code(self._decode(int(start[r]), int(length[r]), int(pos[r])))
                for r in rep_index
            ],
            dtype=np.int32,
        )
        codes = group_codes[inverse]
        for i in np.flatnonzero(~same):
            codes[i] = self._code(self._decode(int(start[i]), int(length[i]), int(pos[i])))
        return codes

    def _middle_equal(self, a: I64, b: I64, length: I64) -> npt.NDArray[np.bool_]:
        """Bytes 8 .. length-8 of strings at ``a`` equal those at ``b`` (lengths > 16)."""
        u8 = self.buf.u8
        result = np.ones(len(a), dtype=bool)
        mid = length - 16
        budget = 1 << 22
        lo = 0
        while lo < len(a):
            cum = np.cumsum(mid[lo:])
            hi = lo + max(1, int(np.searchsorted(cum, budget)))
            counts = mid[lo:hi]
            idx = _ragged(counts)
            ia: Any = np.repeat(a[lo:hi] + 8, counts) + idx
            ib: Any = np.repeat(b[lo:hi] + 8, counts) + idx
            diff = u8[ia] != u8[ib]
            owner = np.repeat(np.arange(hi - lo), counts)
            bad = np.zeros(hi - lo, dtype=bool)
            bad[owner[diff]] = True
            result[lo:hi] = ~bad
            lo = hi
        return result


def _ragged(counts: I64) -> I64:
    """0..c-1 for each count c, concatenated."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)


def check_utf8(data: bytes, where: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ETDumpFormatError(f"string is not valid UTF-8 at byte offset {where}") from exc
