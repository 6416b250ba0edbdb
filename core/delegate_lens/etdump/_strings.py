"""Turn many FlatBuffer strings into codes into one table of distinct ``str``, vectorized.

The reference writer stores every event name separately (482,002 copies of a few dozen
names in the big vector). Decoding each one in Python would dominate loading, so the
strings are grouped by content with numpy first and only one string per group is decoded:

1. strings are bucketed by their number of 4-byte words; each bucket is read as a matrix
   (one gather per chunk of rows) and a key mixing each row's words and the length
   groups candidates;
2. every member is then compared word for word with its group's representative, so the
   grouping is exact; members that differ (key collisions) are decoded one by one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.etdump._buffer import Buffer, factorize
from delegate_lens.etdump._limits import StringBudget

I64 = npt.NDArray[np.int64]
_CHUNK = 1 << 15
# distinct multipliers in [0.5, 1.5) (golden-ratio sequence; importing numpy.random costs ~8 ms)
_FMULT = 0.5 + (np.arange(1, 65) * 0.6180339887498949) % 1.0


class StringTable:
    """The distinct strings of one file, shared by all its runs; ``intern`` gives codes.
    ``budget``, when given, counts every string named (once per offset) and raises past it."""

    def __init__(self, buf: Buffer, budget: StringBudget | None = None) -> None:
        self.buf = buf
        self.budget = budget
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
        if self.budget is not None:
            self.budget.spend(p, length)
        out[present] = self._group(p, start, length)
        return out

    def _group(self, pos: I64, start: I64, length: I64) -> npt.NDArray[np.int32]:
        n = len(pos)
        codes = np.empty(n, dtype=np.int32)
        residue = int(start[0]) & 3
        if not ((start & 3) != residue).any():
            view: npt.NDArray[Any] = self.buf._view(np.dtype("<u4"), residue)
            unit, first, cap = 4, (start - residue) >> 2, 32
        else:
            view, unit, first, cap = self.buf.u8, 1, start, 64
        nwords = (length + unit - 1) // unit
        # rows that are too long, or whose last word runs past the buffer: one by one
        slow = (nwords > cap) | (first + nwords > len(view))
        if slow.any():
            self._slow(np.flatnonzero(slow), codes, pos, start, length)
        # chunks in file order (nearby memory), then per word count: equal strings have
        # equal word counts, so rows need no masking
        for lo in range(0, n, _CHUNK):
            ok = ~slow[lo : lo + _CHUNK]
            nw = nwords[lo : lo + _CHUNK]
            for width in np.flatnonzero(np.bincount(nw[ok], minlength=1)).tolist():
                chunk = lo + np.flatnonzero(ok & (nw == width))
                if width == 0:
                    codes[chunk] = self._code("")
                    continue
                # each string's words as one fixed-size item: a strided view of the buffer
                # (item i = the ``width`` words from word i) gathered in one pass
                items = np.ndarray(
                    shape=(len(view) - width + 1,),
                    dtype=np.dtype(f"V{unit * width}"),
                    buffer=view,
                    strides=(unit,),
                )
                codes[chunk] = self._rows(
                    items[first[chunk]], view.dtype, chunk, pos, start, length
                )
        return codes

    def _slow(
        self, rows: I64, codes: npt.NDArray[np.int32], pos: I64, start: I64, length: I64
    ) -> None:
        """Long strings: decode each distinct one once, after checking they cannot overlap.

        In a valid buffer distinct strings do not overlap, so their lengths add up to at
        most the buffer size; a crafted buffer pointing many offsets into one huge region
        is rejected here instead of being decoded over and over.
        """
        distinct, first_row, inverse = np.unique(pos[rows], return_index=True, return_inverse=True)
        claimed = length[rows][first_row]
        bad = self.buf.over_budget(distinct, claimed)
        if bad >= 0:
            raise self.buf.fail(
                f"strings overlap: {len(distinct)} strings claim {int(claimed.sum())} bytes",
                int(distinct[bad]),
            )
        decoded = np.array(
            [
                self._code(self._decode(int(start[i]), int(length[i]), int(pos[i])))
                for i in rows[first_row].tolist()
            ],
            dtype=np.int32,
        )
        codes[rows] = decoded[inverse.reshape(-1)]

    def _rows(
        self,
        items: npt.NDArray[np.generic],
        word: np.dtype[Any],
        chunk: I64,
        pos: I64,
        start: I64,
        length: I64,
    ) -> npt.NDArray[np.int32]:
        """Codes for strings whose words (all the same count) are ``items`` (one fixed-size
        void item per string; ``word`` the dtype of its words)."""
        ln = length[chunk]
        m = items.view(word).reshape(len(items), -1)
        # any key works (equal keys are verified byte for byte below); a float product is
        # the cheapest to compute, rounding only splits or merges candidate groups
        # einsum, not @: a matrix product wakes BLAS's threads, which then spin on the
        # other cores (and steal them from collect's other workers)
        key = np.einsum("ij,j->i", m.astype(np.float64), _FMULT[: m.shape[1]], optimize=False)
        key += ln
        found = factorize(key)
        if found is None:
            _, inverse = np.unique(key, return_inverse=True)
            inverse = inverse.reshape(-1).astype(np.int64)
            n_groups = int(inverse.max()) + 1
        else:
            inverse, n_groups = found[1], len(found[0])
        rep = np.zeros(n_groups, dtype=np.int64)
        rep[inverse] = np.arange(len(chunk), dtype=np.int64)
        same = (items == items[rep][inverse]) & (ln == ln[rep][inverse])  # memcmp per item
        group_codes = np.array(
            [
                self._code(self._decode(int(start[i]), int(length[i]), int(pos[i])))
                for i in chunk[rep].tolist()
            ],
            dtype=np.int32,
        )
        out = group_codes[inverse]
        for k in np.flatnonzero(~same).tolist():
            i = int(chunk[k])
            out[k] = self._code(self._decode(int(start[i]), int(length[i]), int(pos[i])))
        return out
