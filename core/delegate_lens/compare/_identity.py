"""Did the two sides of a comparison run the same program?

Two facts answer it, and ``compare`` reports both:

* the **ETRecords** (when both sides have one): the same program has the same methods,
  the same operators with the same debug handles, the same debug handle map and the same
  delegate map. The files' bytes may differ (two sessions of one export), what they
  describe may not;
* the **matched share**: operator rows matched on both sides (framework events such as
  ``Method::execute``, which every program has, left out) over the rows of the side with
  more of them. Below ``min_matched`` the verdicts would speak for a small part of either
  program, and :func:`~delegate_lens.compare.compare` refuses them
  (:class:`~delegate_lens.compare.UnmatchedProgramsError`) unless asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from delegate_lens.etdump import FRAMEWORK_EVENTS

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord


DEFAULT_MIN_MATCHED = 0.5
"""Below this share of matched operator rows ``compare`` gives no verdict unless asked."""


def _graph_ops(record: ETRecord, method: str) -> list[tuple[str, int | None]]:
    return [(node.target, node.debug_handle) for node in record.graph(method).nodes]


def etrecord_difference(base: ETRecord, new: ETRecord) -> str | None:
    """What differs between the programs two ETRecords describe (``None``: the same)."""
    if base is new:
        return None
    if base.methods != new.methods:
        return f"methods differ ({', '.join(base.methods)} vs {', '.join(new.methods)})"
    for method in base.methods:
        ops_base, ops_new = _graph_ops(base, method), _graph_ops(new, method)
        if len(ops_base) != len(ops_new):
            return f"method {method!r} has {len(ops_base)} operators vs {len(ops_new)}"
        for i, (a, b) in enumerate(zip(ops_base, ops_new)):
            if a != b:
                return f"method {method!r} differs at operator {i}: {a[0]} vs {b[0]}"
    if base.debug_handle_map != new.debug_handle_map:
        return "the debug handle maps differ"
    if base.delegate_map != new.delegate_map:
        return "the delegate maps differ"
    return None


def operator_rows(names: Iterable[str]) -> int:
    """How many of the rows (by name) are not framework events."""
    return sum(1 for name in names if name not in FRAMEWORK_EVENTS)


@attrs.frozen
class ProgramMatch:
    """How far the two sides are the same program (see the module docstring).

    ``same_program`` is what the ETRecords say (``None``: a side has none) and
    ``difference`` what differs; ``matched``, ``base_rows`` and ``new_rows`` count operator
    rows (framework events left out).
    """

    same_program: bool | None
    difference: str
    matched: int
    base_rows: int
    new_rows: int
    min_matched: float

    @property
    def matched_share(self) -> float:
        """Matched operator rows over the rows of the side with more (1.0 when none)."""
        most = max(self.base_rows, self.new_rows)
        return self.matched / most if most else 1.0

    @property
    def below_min(self) -> bool:
        """The matched share is below ``min_matched``: no verdict unless asked."""
        return self.matched_share < self.min_matched

    def describe(self) -> str:
        """One line: what the ETRecords say and the matched share."""
        if self.same_program is None:
            programs = "programs: unknown (no ETRecord on both sides)"
        elif self.same_program:
            programs = "programs: the same (the ETRecords agree)"
        else:
            programs = f"programs DIFFER: {self.difference}"
        most = max(self.base_rows, self.new_rows)
        return (
            f"{programs}; {self.matched} of {most} operator rows matched "
            f"({100 * self.matched_share:.3g}%, minimum {100 * self.min_matched:.3g}%)"
        )

    def asdict(self) -> dict[str, object]:
        return {
            "same_program": self.same_program,
            "difference": self.difference or None,
            "matched_operator_rows": self.matched,
            "base_operator_rows": self.base_rows,
            "new_operator_rows": self.new_rows,
            "matched_share": self.matched_share,
            "min_matched": self.min_matched,
        }
