"""What :func:`delegate_lens.compare.compare` returns: matched rows, one-sided rows and
summaries per block and per delegate backend."""

from __future__ import annotations

import math

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.compare._identity import ProgramMatch
from delegate_lens.errors import UsageError


class UnmatchedProgramsError(UsageError):
    """The two sides do not look like one program (too small a share of their operator
    rows matched): ``compare`` gives no verdict unless asked (``min_matched``)."""


SLOWER = "slower"
FASTER = "faster"
NO_CHANGE = "no significant change"
TOO_FEW = "too few samples"
VERDICTS = (SLOWER, FASTER, NO_CHANGE, TOO_FEW)

MATCH_KINDS = ("delegate", "instruction", "name")
"""How rows are matched, strictest first: delegate backend + delegate call instruction +
identifier; operator instruction + debug handles; name and occurrence (last resort)."""

FloatArray = npt.NDArray[np.float64]


@attrs.frozen
class RowIdentity:
    """Who a row is: what the ETDump and the ETRecord say about it."""

    block: str
    name: str
    instruction_id: int | None
    delegate_debug_identifier: int | str | None
    delegate_backend_name: str | None
    debug_handles: int | list[int] | None
    op_types: list[str]

    @property
    def is_delegated_op(self) -> bool:
        return self.delegate_debug_identifier is not None

    def asdict(self) -> dict[str, object]:
        return {
            "block": self.block,
            "name": self.name,
            "instruction_id": self.instruction_id,
            "delegate_debug_identifier": self.delegate_debug_identifier,
            "delegate_backend_name": self.delegate_backend_name,
            "is_delegated_op": self.is_delegated_op,
            "debug_handles": self.debug_handles,
            "op_types": list(self.op_types),
        }


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


@attrs.define(eq=False)
class RowComparison:
    """One row matched on both sides, with its samples, statistics and verdict.

    ``delta`` is ``new median - base median`` and ``ratio`` is ``new / base`` (in the
    Inspector's target time scale); ``*_ci`` are the ``1 - alpha`` confidence intervals.
    ``p_value`` is set only by the Mann-Whitney test.
    """

    identity: RowIdentity
    match: str = attrs.field(validator=attrs.validators.in_(MATCH_KINDS))
    base_samples: FloatArray
    new_samples: FloatArray
    base_median: float
    new_median: float
    delta: float
    delta_ci: tuple[float, float]
    ratio: float
    ratio_ci: tuple[float, float]
    p_value: float | None
    significant: bool
    verdict: str = attrs.field(validator=attrs.validators.in_(VERDICTS))

    def asdict(self, samples: bool = False) -> dict[str, object]:
        out = self.identity.asdict()
        out.update(
            match=self.match,
            n_base=int(self.base_samples.size),
            n_new=int(self.new_samples.size),
            base_median=_finite_or_none(self.base_median),
            new_median=_finite_or_none(self.new_median),
            delta=_finite_or_none(self.delta),
            delta_ci=[_finite_or_none(v) for v in self.delta_ci],
            ratio=_finite_or_none(self.ratio),
            ratio_ci=[_finite_or_none(v) for v in self.ratio_ci],
            p_value=self.p_value,
            significant=self.significant,
            verdict=self.verdict,
        )
        if samples:
            out["base_samples"] = self.base_samples.tolist()
            out["new_samples"] = self.new_samples.tolist()
        return out


@attrs.define(eq=False)
class OneSidedRow:
    """A row found in only one of the two ETDumps (``side`` is ``"base"`` or ``"new"``)."""

    identity: RowIdentity
    side: str = attrs.field(validator=attrs.validators.in_(("base", "new")))
    samples: FloatArray
    median: float

    def asdict(self, samples: bool = False) -> dict[str, object]:
        out = self.identity.asdict()
        out.update(side=self.side, n=int(self.samples.size), median=_finite_or_none(self.median))
        if samples:
            out["samples"] = self.samples.tolist()
        return out


@attrs.frozen
class BlockSummary:
    """Total time of a block (median of ``Method::execute``, else the sum of its top-level
    rows' medians) and the part spent in delegate calls, on each side (None: absent)."""

    block: str
    base_total: float | None
    new_total: float | None
    base_delegated: float | None
    new_delegated: float | None

    @staticmethod
    def _share(part: float | None, total: float | None) -> float | None:
        if part is None or total is None or total <= 0:
            return None
        return part / total

    @property
    def base_delegated_share(self) -> float | None:
        return self._share(self.base_delegated, self.base_total)

    @property
    def new_delegated_share(self) -> float | None:
        return self._share(self.new_delegated, self.new_total)

    @property
    def ratio(self) -> float | None:
        return self._share(self.new_total, self.base_total)

    def asdict(self) -> dict[str, object]:
        return {
            "block": self.block,
            "base_total": self.base_total,
            "new_total": self.new_total,
            "ratio": self.ratio,
            "base_delegated": self.base_delegated,
            "new_delegated": self.new_delegated,
            "base_delegated_share": self.base_delegated_share,
            "new_delegated_share": self.new_delegated_share,
        }


@attrs.frozen
class BackendSummary:
    """Time in one delegate backend's calls (sum of the calls' medians over every block)
    and its share of all blocks' total time, on each side."""

    backend: str
    base_calls: int
    new_calls: int
    base_time: float
    new_time: float
    base_share: float | None
    new_share: float | None

    @property
    def ratio(self) -> float | None:
        return self.new_time / self.base_time if self.base_time > 0 else None

    def asdict(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "base_calls": self.base_calls,
            "new_calls": self.new_calls,
            "base_time": self.base_time,
            "new_time": self.new_time,
            "ratio": self.ratio,
            "base_share": self.base_share,
            "new_share": self.new_share,
        }


@attrs.define(eq=False)
class CompareResult:
    """Everything :func:`~delegate_lens.compare.compare` found."""

    base: str
    new: str
    time_unit: str
    threshold: float
    alpha: float
    test: str
    rows: list[RowComparison]
    only_base: list[OneSidedRow]
    only_new: list[OneSidedRow]
    blocks: list[BlockSummary]
    backends: list[BackendSummary]
    programs: ProgramMatch  # same program? share of operator rows matched

    @property
    def regressions(self) -> list[RowComparison]:
        """Rows significantly slower beyond the threshold."""
        return [row for row in self.rows if row.verdict == SLOWER]

    @property
    def improvements(self) -> list[RowComparison]:
        """Rows significantly faster beyond the threshold."""
        return [row for row in self.rows if row.verdict == FASTER]

    @property
    def has_regression(self) -> bool:
        return any(row.verdict == SLOWER for row in self.rows)

    def match_counts(self) -> dict[str, int]:
        """How many rows matched each way (every kind listed, zeros included)."""
        counts = dict.fromkeys(MATCH_KINDS, 0)
        for row in self.rows:
            counts[row.match] += 1
        return counts

    def _repr_html_(self) -> str | None:
        """Jupyter's display, from the ``dl_html_display`` hook (the built-in ``notebook``
        plugin: :func:`delegate_lens.report._notebook.compare_html`); None: the repr."""
        from delegate_lens import hooks

        html = hooks.html_display(self)
        return html if isinstance(html, str) else None

    def asdict(self, samples: bool = False) -> dict[str, object]:
        return {
            "base": self.base,
            "new": self.new,
            "time_unit": self.time_unit,
            "threshold": self.threshold,
            "alpha": self.alpha,
            "test": self.test,
            "programs": self.programs.asdict(),
            "matched_by": self.match_counts(),
            "regressions": len(self.regressions),
            "improvements": len(self.improvements),
            "rows": [row.asdict(samples) for row in self.rows],
            "only_base": [row.asdict(samples) for row in self.only_base],
            "only_new": [row.asdict(samples) for row in self.only_new],
            "blocks": [block.asdict() for block in self.blocks],
            "backends": [backend.asdict() for backend in self.backends],
        }
