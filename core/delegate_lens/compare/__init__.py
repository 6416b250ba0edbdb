"""Compare two ETDumps: which rows got faster or slower, with confidence intervals.

Built on the Inspector's tables; importing it never imports torch or SciPy. See
``docs/compare.md``.
"""

from __future__ import annotations

from delegate_lens.compare._api import compare
from delegate_lens.compare._identity import ProgramMatch
from delegate_lens.compare._output import FORMATS, write_result
from delegate_lens.compare._result import (
    FASTER,
    MATCH_KINDS,
    NO_CHANGE,
    SLOWER,
    TOO_FEW,
    VERDICTS,
    BackendSummary,
    BlockSummary,
    CompareResult,
    OneSidedRow,
    RowComparison,
    RowIdentity,
    UnmatchedProgramsError,
)
from delegate_lens.compare._stats import TESTS

__all__ = [
    "FASTER",
    "FORMATS",
    "MATCH_KINDS",
    "NO_CHANGE",
    "SLOWER",
    "TESTS",
    "TOO_FEW",
    "VERDICTS",
    "BackendSummary",
    "BlockSummary",
    "CompareResult",
    "OneSidedRow",
    "ProgramMatch",
    "RowComparison",
    "RowIdentity",
    "UnmatchedProgramsError",
    "compare",
    "write_result",
]
