"""What decoding one ETDump may cost when its offsets share what they point at (see
``docs/trust.md``).

A FlatBuffers offset may point anywhere forward, so a crafted file can point a million
``RunData.events`` entries at one ``Event`` table, or a thousand names at one 4 MB string:
a few megabytes that decode to gigabytes, each pointer paid for again. The reference
writer (flatcc in ExecuTorch's ``ETDumpGen``) never shares: every table, vector and string
it writes is named by one offset (also the empty ``delegate_debug_metadata`` vectors);
ours shares equal strings only (each distinct string is written once). So:

- **tables and non-empty vectors** may be named by at most ``max_references`` offsets
  (default 1: none shared), and the vectors of one kind may not claim more bytes, together,
  than ``max_references`` times the file (distinct vectors do not overlap);
- **strings**, counted once per offset that names them, may add up to at most
  ``max_string_ratio`` times the file's size plus :data:`STRING_SLACK` (what a table or CSV
  of the events writes out).

Past either, decoding stops with an :class:`~delegate_lens.errors.ETDumpFormatError`
naming the file, the limit and how to raise it. The limits come from the ``[etdump]``
table of the configuration; as for every safety limit, a file that merely lies in the
current folder may lower them, only the configuration the user chose
(``DELEGATE_LENS_CONFIG``, ``DELEGATE_LENS_OPTIONS``) may raise them.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError

I64 = npt.NDArray[np.int64]

DEFAULT_MAX_REFERENCES = 1
"""Offsets that may name one table or non-empty vector by default (1: none shared)."""
DEFAULT_MAX_STRING_RATIO = 8
"""Times its file's size the strings named by a file's offsets may add up to by default."""
STRING_SLACK = 32 << 20
"""Strings may always add up to this many bytes beyond the ratio (32 MiB)."""

_KEYS: dict[str, int | float] = {
    "max_references": DEFAULT_MAX_REFERENCES,
    "max_string_ratio": DEFAULT_MAX_STRING_RATIO,
}


def how_to_raise(key: str, value: int) -> str:
    """The end of an error past the limit ``key``: how to raise it (to ``value``)."""
    return (
        f"if the file is trusted, raise [etdump] {key} "
        f"(DELEGATE_LENS_OPTIONS='etdump.{key} = {value}'; see docs/trust.md)"
    )


@attrs.frozen
class ReadLimits:
    """What decoding one ETDump may cost (see the module docstring).

    :param max_references: offsets that may name one table or non-empty vector.
    :param max_string_ratio: times its file's size (plus :data:`STRING_SLACK`) the strings
        a file's offsets name may add up to, each counted once per offset.
    """

    max_references: int = DEFAULT_MAX_REFERENCES
    max_string_ratio: float = DEFAULT_MAX_STRING_RATIO

    def string_budget(self, sizes: I64) -> npt.NDArray[np.float64]:
        """Bytes of strings each file of ``sizes`` bytes may name."""
        return sizes.astype(np.float64) * float(self.max_string_ratio) + STRING_SLACK


def read_limits() -> ReadLimits:
    """The limits of the ``[etdump]`` configuration table, else the defaults; a limit is
    raised above its default only by the configuration the user chose."""
    from delegate_lens.config import chosen_config, get_config

    found = get_config().section("etdump")
    found.check_keys(set(_KEYS))
    chosen = chosen_config().section("etdump")
    values: dict[str, Any] = {}
    for key, default in _KEYS.items():
        section = chosen if key in chosen else found
        value = section.get_number(key, default, positive=True)
        if key == "max_references" and not isinstance(value, int):
            raise section.error(key, f"expected a whole number, got {value!r}")
        values[key] = value if section is chosen else min(value, default)
    return ReadLimits(**values)


def check_unshared(pos: I64, what: str, source: str, limits: ReadLimits) -> None:
    """Raise unless no position of ``pos`` (the targets of the offsets ``source``, -1 for
    absent ones) appears more than ``limits.max_references`` times.

    Writers lay the objects of a kind out in the order they are named (forward or
    backward), so one pass usually shows every position distinct; otherwise a sort (of
    runs: cheap when the positions are ordered file by file) finds the repeats."""
    pos = pos[pos >= 0] if len(pos) and int(pos.min()) < 0 else pos
    if len(pos) < 2:
        return
    step = pos[1:] - pos[:-1]
    if (step > 0).all() or (step < 0).all():
        return
    ordered = np.sort(pos, kind="stable")
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return
    values, counts = np.unique(ordered, return_counts=True)
    worst = int(np.argmax(counts))
    if int(counts[worst]) <= limits.max_references:
        return
    count = int(counts[worst])
    raise ETDumpFormatError(
        f"the {what} at byte offset {int(values[worst])} is named by {count:,} offsets "
        f"({source}), more than [etdump] max_references = {limits.max_references:,}: a "
        "writer names each once, and decoding it once per offset makes a small file take "
        f"gigabytes; {how_to_raise('max_references', count)}"
    )


def check_claims(
    owner: I64, claimed: I64, what: str, limits: ReadLimits, files: tuple[I64, I64]
) -> None:
    """Raise when the objects at ``owner`` (vectors of one kind, one per offset naming
    them) claim, per file, more than ``limits.max_references`` times the file's bytes
    (``claimed``: bytes each claims): distinct objects do not overlap."""
    if not len(owner):
        return
    starts, ends = files
    if len(starts) == 1:
        over = int(claimed.sum()) > limits.max_references * int(ends[0] - starts[0])
        bad = 0
    else:
        seg = np.searchsorted(starts, owner, side="right") - 1
        totals = np.bincount(seg, weights=claimed, minlength=len(starts))
        past = totals > limits.max_references * (ends - starts)
        over = bool(past.any())
        bad = int(np.argmax(past[seg])) if over else 0
    if over:
        times = "" if limits.max_references == 1 else f"{limits.max_references:,} times "
        raise ETDumpFormatError(
            f"{what} claim more bytes together than {times}the file holds (they overlap, "
            f"or offsets share them), one at byte offset {int(owner[bad])}"
        )


class StringBudget:
    """Bytes of strings named so far, per file, against ``limits.max_string_ratio``."""

    def __init__(self, limits: ReadLimits, files: tuple[I64, I64]) -> None:
        self.starts, ends = files
        self.budget = limits.string_budget(ends - self.starts)
        self.ratio = limits.max_string_ratio
        self.spent = np.zeros(len(self.starts), dtype=np.float64)

    def spend(self, pos: I64, length: I64) -> None:
        """Count the strings at ``pos`` (``length`` bytes each); raise past the budget."""
        if not len(pos):
            return
        if len(self.starts) == 1:
            self.spent[0] += float(length.sum())
        else:
            seg = np.searchsorted(self.starts, pos, side="right") - 1
            self.spent += np.bincount(seg, weights=length, minlength=len(self.starts))
        past = self.spent > self.budget
        if past.any():
            k = int(np.argmax(past))
            mine = (
                np.arange(len(pos))
                if len(self.starts) == 1
                else np.flatnonzero(np.searchsorted(self.starts, pos, side="right") - 1 == k)
            )
            longest = int(mine[int(np.argmax(length[mine]))]) if len(mine) else 0
            size = float(self.budget[k] - STRING_SLACK) / self.ratio
            needed = int(np.ceil(max(self.spent[k] - STRING_SLACK, 0.0) / max(size, 1.0)))
            raise ETDumpFormatError(
                f"the strings named by the file's offsets add up to more than "
                f"{int(self.budget[k]):,} bytes, [etdump] max_string_ratio = {self.ratio:g} "
                f"times the file's {int(size):,} bytes plus {STRING_SLACK >> 20} MiB (a "
                f"string named again and again? the longest, at byte offset "
                f"{int(pos[longest])}, has {int(length[longest]):,} bytes); "
                f"{how_to_raise('max_string_ratio', needed)}"
            )
