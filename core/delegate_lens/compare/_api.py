"""``compare(base, new)``: did a change make a model faster or slower, and where?"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Callable

import attrs
import numpy as np

from delegate_lens.compare._identity import (
    DEFAULT_MIN_MATCHED,
    ProgramMatch,
    etrecord_difference,
    operator_rows,
)
from delegate_lens.compare._matching import BlockPair, match_blocks, match_rows
from delegate_lens.compare._result import (
    FASTER,
    NO_CHANGE,
    SLOWER,
    TOO_FEW,
    BackendSummary,
    BlockSummary,
    CompareResult,
    OneSidedRow,
    RowComparison,
    RowIdentity,
    UnmatchedProgramsError,
)
from delegate_lens.compare._stats import TESTS, compare_samples
from delegate_lens.errors import UsageError
from delegate_lens.inspector import BlockAttribution, BlockTable, Inspector

PathLike = str | os.PathLike[str]
Attributions = Callable[[BlockTable | None], BlockAttribution | None]
"""A block table's attribution of time (None for no table)."""


def _attributions(*inspectors: Inspector) -> Attributions:
    """The attribution of each table of ``inspectors``, as each Inspector keeps it."""
    found = {
        id(table): attribution
        for inspector in inspectors
        for table, attribution in zip(inspector.tables, inspector.get_attribution(), strict=True)
    }

    def of(table: BlockTable | None) -> BlockAttribution | None:
        return None if table is None else found[id(table)]

    return of


ProgramPath = str | os.PathLike[str] | bytes | None
"""A side's program (``.pte``) for maps recovered from it, or None."""


def _inspector(
    value: object, etrecord: object, what: str, program: ProgramPath = None
) -> tuple[Inspector, str]:
    if isinstance(value, Inspector):
        if etrecord is not None or program is not None:
            raise UsageError(
                f"{what}: give the ETRecord and program to the Inspector, not to compare()"
            )
        return value, str(value.etdump_path) if value.etdump_path is not None else what
    if isinstance(value, str | os.PathLike):
        inspector = Inspector(etdump_path=value, etrecord=etrecord, program=program)
        return inspector, os.fspath(value)
    raise UsageError(f"{what} must be an ETDump path or an Inspector, not {type(value).__name__}")


def _two_inspectors(
    base: object,
    base_etrecord: object,
    new: object,
    new_etrecord: object,
    programs: tuple[ProgramPath, ProgramPath] = (None, None),
) -> tuple[tuple[Inspector, str], tuple[Inspector, str]]:
    """Both sides; two ETDump paths are read in two threads (decoding is numpy work that
    releases the GIL for much of the time). A bad base is reported before a bad new."""
    if isinstance(base, Inspector) or isinstance(new, Inspector):
        return (
            _inspector(base, base_etrecord, "base", programs[0]),
            _inspector(new, new_etrecord, "new", programs[1]),
        )
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="compare-load") as pool:
        base_future = pool.submit(_inspector, base, base_etrecord, "base", programs[0])
        new_future = pool.submit(_inspector, new, new_etrecord, "new", programs[1])
        return base_future.result(), new_future.result()


def _check_number(name: str, value: float, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number, not {type(value).__name__}")
    if not (low < value < high) or not math.isfinite(value):
        raise UsageError(f"{name} must be between {low} and {high} (exclusive), got {value}")
    return float(value)


def compare(
    base: PathLike | Inspector,
    new: PathLike | Inspector,
    *,
    base_etrecord: object = None,
    new_etrecord: object = None,
    threshold: float = 0.05,
    alpha: float = 0.05,
    test: str = "median-ci",
    min_samples: int = 3,
    min_matched: float = DEFAULT_MIN_MATCHED,
    base_program: ProgramPath = None,
    new_program: ProgramPath = None,
) -> CompareResult:
    """Compare two ETDumps (paths or :class:`~delegate_lens.inspector.Inspector` objects).

    Rows are matched by identity (see :mod:`delegate_lens.compare._matching`). A matched row
    is ``"slower"`` (``"faster"``) when the change of its median is significant at
    ``alpha`` and the ratio ``new / base`` is above ``1 + threshold`` (below
    ``1 - threshold``), ``"too few samples"`` when either side has fewer than
    ``min_samples``, else ``"no significant change"``. ``test`` is ``"median-ci"`` (the
    medians' order-statistic intervals, numpy only) or ``"mannwhitney"`` (SciPy, the
    ``stats`` extra). Both sides must use the same time scale.

    ``result.programs`` says whether the ETRecords describe the same program and what
    share of the operator rows matched (:mod:`delegate_lens.compare._identity`). Below
    ``min_matched`` (a share from 0 to 1; 0 accepts anything) the two sides do not look
    like one program and no verdict is given: :class:`UnmatchedProgramsError`.

    ``base_program`` / ``new_program``: each side's program (``.pte``), for delegates whose
    map a ``dl_recover_delegate_map`` plugin recovers from it (``Inspector(program=...)``).
    """
    threshold = _check_number("threshold", threshold, 0.0, 1.0)
    alpha = _check_number("alpha", alpha, 0.0, 1.0)
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r} (tests: {', '.join(TESTS)})")
    if isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 2:
        raise UsageError(f"min_samples must be an int of at least 2, got {min_samples!r}")
    if isinstance(min_matched, bool) or not isinstance(min_matched, int | float):
        raise UsageError(f"min_matched must be a number, not {type(min_matched).__name__}")
    if not 0.0 <= min_matched <= 1.0:
        raise UsageError(f"min_matched must be a share from 0 to 1, got {min_matched}")
    (base_inspector, base_name), (new_inspector, new_name) = _two_inspectors(
        base, base_etrecord, new, new_etrecord, (base_program, new_program)
    )
    unit = base_inspector.target_time_scale
    if new_inspector.target_time_scale != unit:
        raise UsageError(
            f"the two Inspectors report in different time scales ({unit.value} and "
            f"{new_inspector.target_time_scale.value})"
        )
    rows: list[RowComparison] = []
    only_base: list[OneSidedRow] = []
    only_new: list[OneSidedRow] = []
    pairs = match_blocks(base_inspector.tables, new_inspector.tables)
    of = _attributions(base_inspector, new_inspector)
    for pair in pairs:
        matches, base_left, new_left = match_rows(pair)
        if matches:
            assert pair.base is not None and pair.new is not None
            rows.extend(_compare_block(pair, matches, threshold, alpha, test, min_samples))
        only_base.extend(_one_sided(pair.base, base_left, "base"))
        only_new.extend(_one_sided(pair.new, new_left, "new"))
    programs = _program_match(base_inspector, new_inspector, rows, only_base, only_new)
    programs = attrs.evolve(programs, min_matched=float(min_matched))
    if programs.below_min:
        raise UnmatchedProgramsError(
            f"{base_name} and {new_name} do not look like one program, no verdict: "
            f"{programs.describe()}; to compare anyway lower min_matched (--min-matched) "
            "or allow it (--allow-unmatched)"
        )
    return CompareResult(
        base=base_name,
        new=new_name,
        time_unit=unit.value,
        threshold=threshold,
        alpha=alpha,
        test=test,
        rows=rows,
        only_base=only_base,
        only_new=only_new,
        blocks=[_block_summary(pair, of) for pair in pairs],
        backends=_backend_summaries(pairs, of),
        programs=programs,
    )


def _program_match(
    base: Inspector,
    new: Inspector,
    rows: list[RowComparison],
    only_base: list[OneSidedRow],
    only_new: list[OneSidedRow],
) -> ProgramMatch:
    """What the ETRecords say and how many operator rows matched (see ``identity``)."""
    same: bool | None = None
    difference = ""
    if base.etrecord is not None and new.etrecord is not None:
        found = etrecord_difference(base.etrecord, new.etrecord)
        same, difference = found is None, found or ""
    matched = operator_rows(row.identity.name for row in rows)
    base_rows = matched + operator_rows(row.identity.name for row in only_base)
    new_rows = matched + operator_rows(row.identity.name for row in only_new)
    return ProgramMatch(same, difference, matched, base_rows, new_rows, 0.0)


def _identity(table: BlockTable, row: int) -> RowIdentity:
    key = table.keys[row]
    link = table.links[row]
    return RowIdentity(
        block=table.name,
        name=key.name,
        instruction_id=None if key.instruction_id < 0 else key.instruction_id,
        delegate_debug_identifier=key.identifier,
        delegate_backend_name=link.delegate_backend_name,
        debug_handles=link.debug_handles,
        op_types=list(link.op_types),
    )


def _compare_block(
    pair: BlockPair,
    matches: list[tuple[int, int, str]],
    threshold: float,
    alpha: float,
    test: str,
    min_samples: int,
) -> list[RowComparison]:
    assert pair.base is not None and pair.new is not None
    base_rows = np.array([m[0] for m in matches], dtype=np.intp)
    new_rows = np.array([m[1] for m in matches], dtype=np.intp)
    base_samples = pair.base.samples[base_rows]
    new_samples = pair.new.samples[new_rows]
    st = compare_samples(base_samples, new_samples, alpha=alpha, test=test, min_samples=min_samples)
    ratio, ratio_low, ratio_high = st.ratio, st.ratio_low, st.ratio_high
    enough = st.enough
    slower = st.significant & (ratio > 1.0 + threshold)
    faster = st.significant & (ratio < 1.0 - threshold)
    out = []
    for i, (_, n, kind) in enumerate(matches):
        verdict = SLOWER if slower[i] else FASTER if faster[i] else NO_CHANGE
        if not enough:
            verdict = TOO_FEW
        p = float(st.p_value[i])
        out.append(
            RowComparison(
                identity=_identity(pair.new, n),
                match=kind,
                base_samples=base_samples[i],
                new_samples=new_samples[i],
                base_median=float(st.base_median[i]),
                new_median=float(st.new_median[i]),
                delta=float(st.delta[i]),
                delta_ci=(float(st.delta_low[i]), float(st.delta_high[i])),
                ratio=float(ratio[i]),
                ratio_ci=(float(ratio_low[i]), float(ratio_high[i])),
                p_value=None if math.isnan(p) else p,
                significant=bool(st.significant[i]),
                verdict=verdict,
            )
        )
    return out


def _one_sided(table: BlockTable | None, rows: list[int], side: str) -> list[OneSidedRow]:
    if table is None:
        return []
    return [
        OneSidedRow(
            identity=_identity(table, row),
            side=side,
            samples=table.samples[row],
            median=float(table.stats[1, row]),
        )
        for row in rows
    ]


def _totals(attribution: BlockAttribution | None) -> tuple[float | None, float | None]:
    """(total, delegated) of one block, medians over its runs, from the one attribution of
    time: the total is the block's denominator (``Method::execute`` when logged, else the
    attributed time), delegated the time in delegate calls; see :class:`BlockSummary`."""
    if attribution is None or (not attribution.charges and not attribution.backend_samples):
        return None, None
    delegated = np.zeros(attribution.n_runs)
    for times in attribution.backend_samples.values():
        delegated = delegated + times
    return float(np.median(attribution.run_samples)), float(np.median(delegated))


def _block_summary(pair: BlockPair, of: Attributions) -> BlockSummary:
    base_total, base_delegated = _totals(of(pair.base))
    new_total, new_delegated = _totals(of(pair.new))
    return BlockSummary(pair.name, base_total, new_total, base_delegated, new_delegated)


def _backend_summaries(pairs: list[BlockPair], of: Attributions) -> list[BackendSummary]:
    """Per backend, on each side: its delegate calls per run and the median over runs of
    their time, summed over blocks, and its share of all blocks' totals."""
    calls: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    times: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    grand = [0.0, 0.0]
    for pair in pairs:
        for side, table in enumerate((pair.base, pair.new)):
            attribution = of(table)
            if attribution is None:
                continue
            grand[side] += _totals(attribution)[0] or 0.0
            for backend, samples in attribution.backend_samples.items():
                calls[backend][side] += attribution.backend_calls[backend]
                times[backend][side] += float(np.median(samples))
    return [
        BackendSummary(
            backend=backend,
            base_calls=calls[backend][0],
            new_calls=calls[backend][1],
            base_time=times[backend][0],
            new_time=times[backend][1],
            base_share=times[backend][0] / grand[0] if grand[0] > 0 else None,
            new_share=times[backend][1] / grand[1] if grand[1] > 0 else None,
        )
        for backend in calls
    ]
