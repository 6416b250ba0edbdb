"""delegate_lens.compare and `delegate-lens compare` on the reference vectors: matching by
identity, one-sided rows, the statistics, every output format and bad input."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.cli import main
from delegate_lens.compare import (
    FORMATS,
    NO_CHANGE,
    SLOWER,
    TOO_FEW,
    UnmatchedProgramsError,
    compare,
    write_result,
)
from delegate_lens.compare._stats import compare_samples, interval_samples, median_ci_ranks
from delegate_lens.errors import MissingExtraError, UsageError
from delegate_lens.inspector import Inspector

pytestmark = pytest.mark.filterwarnings("ignore:.*debug buffer:UserWarning")


def _vector(vectors_dir: Path, name: str) -> tuple[Path, Path]:
    return vectors_dir / name / "etdump.etdp", vectors_dir / name / "etrecord.bin"


def test_same_etdump_matches_every_row_by_identity(vectors_dir: Path) -> None:
    dump, record = _vector(vectors_dir, "mlp_xnnpack")
    result = compare(dump, dump, base_etrecord=record, new_etrecord=record)
    assert not result.only_base and not result.only_new
    kinds = {(row.identity.name, row.match) for row in result.rows}
    # XNNPACK rows (string identifiers) by delegate, operators by instruction
    assert ("DELEGATE_CALL", "instruction") in kinds
    assert ("native_call__to_dim_order_copy.out", "instruction") in kinds
    assert ("Method::execute", "name") in kinds
    delegated = [row for row in result.rows if row.identity.is_delegated_op]
    assert delegated and all(row.match == "delegate" for row in delegated)
    assert all(row.identity.delegate_backend_name == "XnnpackBackend" for row in delegated)
    assert all(row.delta == 0 and row.ratio == 1 for row in result.rows)
    assert {row.verdict for row in result.rows} <= {NO_CHANGE, TOO_FEW}
    assert not result.has_regression
    (execute,) = [b for b in result.blocks if b.block == "Execute"]
    assert execute.base_total == execute.new_total and 0 < execute.base_delegated_share < 1  # type: ignore[operator]


def test_different_run_counts_and_same_program(vectors_dir: Path) -> None:
    """50 runs against 2,000 runs of the same GPT: every operator row finds its twin."""
    small, record = _vector(vectors_dir, "gpt_portable")
    big, _ = _vector(vectors_dir, "gpt_portable_big")
    base = Inspector(small, etrecord=record)
    new = Inspector(big, etrecord=record)
    result = compare(base, new)
    assert not result.only_base and not result.only_new
    assert result.match_counts()["instruction"] == 240
    execute = [row for row in result.rows if row.identity.block == "Execute"]
    assert {row.base_samples.size for row in execute} == {50}
    assert {row.new_samples.size for row in execute} == {2000}
    assert not result.backends  # portable kernels only
    # two sessions of one export: different ETRecord files, the same program
    separate = compare(small, big, base_etrecord=record, new_etrecord=big.parent / "etrecord.bin")
    assert separate.programs.same_program is True and separate.programs.matched_share == 1.0


def test_unrelated_programs_get_no_verdict_unless_asked(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 4-layer GPT against an MLP: few rows match by name; no verdict by default."""
    gpt, gpt_record = _vector(vectors_dir, "gpt_portable")
    mlp, mlp_record = _vector(vectors_dir, "mlp_xnnpack")
    args = ["compare", str(gpt), str(mlp), "--base-etrecord", str(gpt_record)]
    args += ["--new-etrecord", str(mlp_record)]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert "do not look like one program" in line and "programs DIFFER" in line
    assert "--allow-unmatched" in line and "Traceback" not in err
    for allow in (["--allow-unmatched"], ["--min-matched", "0%"]):
        # (at --alpha 0.1 the MLP's 5 runs are enough to test a row: else no verdict)
        status = main([*args, *allow, "--alpha", "0.1"])
        out = capsys.readouterr().out
        assert status in (0, 1) and "warning: only 0.417% of the operator rows matched" in out
    # without ETRecords the programs are unknown, and the matched share still decides
    with pytest.raises(UnmatchedProgramsError, match="programs: unknown"):
        compare(gpt, mlp)
    assert compare(gpt, mlp, min_matched=0).programs.same_program is None
    with pytest.raises(UsageError, match="min_matched must be a share from 0 to 1"):
        compare(gpt, gpt, min_matched=1.5)


def test_a_file_against_itself_has_ratio_intervals_around_1(vectors_dir: Path) -> None:
    for name in ("conv_xnnpack", "gpt_portable"):
        dump, record = _vector(vectors_dir, name)
        result = compare(dump, dump, base_etrecord=record, new_etrecord=record)
        assert result.programs.same_program is True and result.programs.matched_share == 1
        timed = [row for row in result.rows if row.base_samples.size >= interval_samples(0.05)]
        # a row timed 0 (below the clock's resolution) has no log scale: its interval is
        # unknown (NaN, "-" in the table), never negative
        zero = [row for row in timed if (row.base_samples <= 0).any()]
        assert all(np.isnan(row.ratio_ci).all() for row in zero)
        timed = [row for row in timed if row not in zero]
        assert len(timed) >= 4
        for row in timed:
            low, high = row.ratio_ci
            assert 0 < low <= 1 <= high < np.inf, (row.identity.name, row.ratio_ci)
            assert row.ratio == 1 and row.verdict == NO_CHANGE


def test_unrelated_programs_leave_one_sided_rows(vectors_dir: Path) -> None:
    mlp, mlp_record = _vector(vectors_dir, "mlp_xnnpack")
    conv, conv_record = _vector(vectors_dir, "conv_xnnpack")
    with pytest.raises(UnmatchedProgramsError, match=r"2 of 7 operator rows matched \(28.6%"):
        compare(mlp, conv, base_etrecord=mlp_record, new_etrecord=conv_record)
    result = compare(mlp, conv, base_etrecord=mlp_record, new_etrecord=conv_record, min_matched=0)
    assert result.programs.same_program is False and "operators" in result.programs.difference
    assert result.programs.matched_share == pytest.approx(2 / 7)
    matched = {row.identity.name for row in result.rows}
    assert "Method::execute" in matched
    assert result.only_base and result.only_new
    only_new = {row.identity.name for row in result.only_new}
    assert "Method::execute" not in only_new
    sides = {row.side for row in result.only_base} | {row.side for row in result.only_new}
    assert sides == {"base", "new"}
    total = len(result.rows) + len(result.only_base)
    assert total == sum(int(t.block.has_perf.sum()) for t in Inspector(mlp).tables)


def test_formats(vectors_dir: Path) -> None:
    mlp, mlp_record = _vector(vectors_dir, "mlp_xnnpack")
    conv, conv_record = _vector(vectors_dir, "conv_xnnpack")
    result = compare(mlp, conv, base_etrecord=mlp_record, new_etrecord=conv_record, min_matched=0)
    texts = {}
    for fmt in FORMATS:
        stream = io.StringIO()
        write_result(result, stream, fmt)
        texts[fmt] = stream.getvalue()
    data = json.loads(texts["json"])
    assert len(data["rows"]) == len(result.rows)
    assert len(data["only_base"]) == len(result.only_base) and data["matched_by"]
    assert "base_samples" not in data["rows"][0]
    stream = io.StringIO()
    write_result(result, stream, "json", samples=True)
    row0 = json.loads(stream.getvalue())["rows"][0]
    assert row0["base_samples"] == result.rows[0].base_samples.tolist()
    records = list(csv.DictReader(io.StringIO(texts["csv"])))
    assert len(records) == len(result.rows) + len(result.only_base) + len(result.only_new)
    assert {r["side"] for r in records} == {"both", "base", "new"}
    both = [r for r in records if r["side"] == "both"]
    assert [float(r["ratio"]) for r in both] == pytest.approx([r.ratio for r in result.rows])
    table_lines = [line for line in texts["markdown"].splitlines() if line.startswith("|")]
    widths = {line.count(" | ") for line in table_lines if "---" not in line}
    assert len(table_lines) > len(result.rows) and len(widths) >= 2
    assert "only in base:" in texts["table"] and "rows:" in texts["table"]
    assert "programs DIFFER" in texts["table"] and "warning: only 28.6%" in texts["markdown"]
    assert data["programs"]["same_program"] is False
    with pytest.raises(UsageError, match="unknown format 'xml'"):
        write_result(result, io.StringIO(), "xml")


def test_mannwhitney_and_missing_scipy(vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dump, record = _vector(vectors_dir, "gpt_portable")
    inspector = Inspector(dump, etrecord=record)
    result = compare(inspector, inspector, test="mannwhitney")
    timed = [row for row in result.rows if row.base_samples.size == 50]
    assert timed and all(row.p_value is not None and row.p_value > 0.9 for row in timed)
    assert all(row.verdict == NO_CHANGE for row in timed)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(MissingExtraError, match=r"delegate-lens\[stats\]"):
        compare(inspector, inspector, test="mannwhitney")


samples_strategy = st.lists(
    st.floats(min_value=0.01, max_value=10.0, allow_nan=False), min_size=3, max_size=40
)


@settings(max_examples=60, deadline=None)
@given(samples_strategy, samples_strategy)
def test_stats_antisymmetric(base: list[float], new: list[float]) -> None:
    a = np.array([base])
    b = np.array([new])
    forward = compare_samples(a, b, alpha=0.05)
    backward = compare_samples(b, a, alpha=0.05)
    assert forward.delta[0] == pytest.approx(-backward.delta[0])
    assert forward.delta_low[0] == pytest.approx(-backward.delta_high[0])
    assert forward.significant[0] == backward.significant[0]
    assert forward.delta_low[0] <= forward.delta[0] <= forward.delta_high[0]
    assert forward.base_median[0] == pytest.approx(np.median(base))
    same = compare_samples(a, a, alpha=0.05)
    assert same.delta[0] == 0 and not same.significant[0]


@settings(max_examples=40, deadline=None)
@given(samples_strategy, st.floats(min_value=3.0, max_value=100.0))
def test_stats_detect_a_clear_shift(base: list[float], factor: float) -> None:
    """Every new sample above every base sample, by a factor: significant with >= 10."""
    a = np.array([base])
    b = np.array([[max(base) * factor + x for x in base]])
    result = compare_samples(a, b, alpha=0.05)
    if len(base) >= 10:
        assert result.significant[0]
    assert result.delta[0] > 0


@settings(max_examples=200, deadline=None)
@given(samples_strategy, samples_strategy, st.floats(min_value=0.001, max_value=0.5))
def test_ratio_intervals_are_positive(base: list[float], new: list[float], alpha: float) -> None:
    """A ratio of times has a positive interval around it, whichever side is base."""
    a, b = np.array([base]), np.array([new])
    forward = compare_samples(a, b, alpha=alpha)
    backward = compare_samples(b, a, alpha=alpha)
    if min(len(base), len(new)) < interval_samples(alpha):
        assert np.isnan(forward.ratio_low[0]) and not forward.significant[0]
        return
    low, ratio, high = forward.ratio_low[0], forward.ratio[0], forward.ratio_high[0]
    assert 0 < low <= ratio <= high < np.inf
    assert low == pytest.approx(1 / backward.ratio_high[0])
    assert forward.significant[0] == (low > 1 or high < 1)
    same = compare_samples(a, a, alpha=alpha)
    assert same.ratio_low[0] <= 1 <= same.ratio_high[0] and not same.significant[0]


@pytest.mark.parametrize(
    ("n", "alpha", "ranks"),
    [
        (5, 0.05, (0, 4)),
        (6, 0.05, (0, 5)),
        (10, 0.05, (1, 8)),
        (20, 0.05, (5, 14)),
        (50, 0.05, (17, 32)),
        (10, 0.5, (3, 6)),
    ],
)
def test_median_interval_ranks_are_the_binomial_ones(
    n: int, alpha: float, ranks: tuple[int, int]
) -> None:
    """The rank c of the interval [x(c+1), x(n-c)] is the largest with P(B <= c) <= alpha/2."""
    import math

    assert median_ci_ranks(n, alpha) == ranks
    c = ranks[0]
    cdf = [sum(math.comb(n, j) for j in range(k + 1)) / 2**n for k in range(n)]
    if n >= interval_samples(alpha):
        assert cdf[c] <= alpha / 2 < cdf[c + 1]
    else:
        assert cdf[0] > alpha / 2 and c == 0


def test_verdicts_hold_their_level_on_simulated_runs() -> None:
    """Same distribution on both sides (log-normal and heavy-tailed timings): a row is called
    changed in at most alpha of 2,000 trials; a 2x slowdown is found with 10 runs."""
    rng = np.random.default_rng(20)
    for n in (6, 10, 30):
        for base, new in (
            (rng.lognormal(0, 0.3, (2000, n)), rng.lognormal(0, 0.3, (2000, n))),
            (1 + rng.pareto(2.0, (2000, n)), 1 + rng.pareto(2.0, (2000, n))),
        ):
            same = compare_samples(base, new, alpha=0.05)
            assert same.significant.mean() <= 0.05
            inside = (same.ratio_low <= 1) & (same.ratio_high >= 1)
            assert inside.mean() >= 0.95
    base = rng.lognormal(0, 0.3, (2000, 10))
    slower = compare_samples(base, rng.lognormal(np.log(2), 0.3, (2000, 10)), alpha=0.05)
    assert slower.significant.mean() >= 0.9 and (slower.ratio_low > 0).all()
    few = compare_samples(base[:, :5], base[:, :5] * 3, alpha=0.05, min_samples=3)
    assert not few.enough and not few.significant.any()  # 5 samples: no 95% interval


def test_rows_with_nan_and_few_samples() -> None:
    base = np.array([[1.0, 1.0, 1.1, 0.9], [1.0, 1.0, 1.0, 1.0]])
    one = compare_samples(base[:, :2], base[:, :2] * 3, alpha=0.05)
    assert not one.significant.any()  # fewer than min_samples
    assert (one.delta > 0).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 0.0}, "threshold must be between"),
        ({"threshold": 1.5}, "threshold must be between"),
        ({"threshold": "5%"}, "threshold must be a number"),
        ({"alpha": 1.0}, "alpha must be between"),
        ({"test": "t-test"}, "unknown test 't-test'"),
        ({"min_samples": 1}, "min_samples must be an int"),
        ({"min_matched": -0.1}, "min_matched must be a share"),
        ({"min_matched": "50%"}, "min_matched must be a number"),
    ],
)
def test_bad_api_arguments(vectors_dir: Path, kwargs: dict[str, object], message: str) -> None:
    dump, _ = _vector(vectors_dir, "mlp_xnnpack")
    with pytest.raises(UsageError, match=message):
        compare(dump, dump, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="base must be an ETDump path or an Inspector"):
        compare(b"bytes", dump)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--threshold", "5x"], "--threshold must be a fraction or a percentage"),
        (["--threshold", "150%"], "--threshold must be between 0 and 1"),
        (["--alpha", "0"], "--alpha must be between 0 and 1"),
        (["--min-samples", "1"], "--min-samples must be at least 2"),
        (["--min-matched", "120%"], "--min-matched must be from 0 to 1"),
        (["--min-matched", "most"], "--min-matched must be a share or a percentage"),
        (["--etrecord", "r", "--base-etrecord", "r"], "give --etrecord or"),
        (["-o", "/nonexistent-folder/out.json"], "folder /nonexistent-folder does not exist"),
        (["--format", "xml"], "invalid choice: 'xml'"),
    ],
)
def test_cli_bad_arguments(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    dump, _ = _vector(vectors_dir, "mlp_xnnpack")
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(dump), str(dump), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_bad_files(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump, record = _vector(vectors_dir, "conv_xnnpack")
    out = tmp_path / "out.csv"
    cases = [
        ([str(tmp_path / "missing.etdp"), str(dump)], "missing.etdp"),
        ([str(dump), str(record)], "not an ETDump"),
        ([str(dump), str(dump), "--new-etrecord", str(dump)], str(dump)),
    ]
    for args, message in cases:
        with pytest.raises(SystemExit) as exc:
            main(["compare", *args, "-o", str(out)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and "Traceback" not in err
        assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_cli_writes_each_format(vectors_dir: Path, tmp_path: Path) -> None:
    dump, record = _vector(vectors_dir, "conv_xnnpack")
    for fmt in FORMATS:
        out = tmp_path / f"report.{fmt}"
        args = ["compare", str(dump), str(dump), "--etrecord", str(record)]
        status = main([*args, "--format", fmt, "-o", str(out)])
        assert status == 0
        assert out.read_text().strip()
    assert json.loads((tmp_path / "report.json").read_text())["regressions"] == 0
    assert SLOWER not in (tmp_path / "report.csv").read_text()


@pytest.mark.parametrize(
    ("name", "extra", "said"),
    [
        # the issue: a --min-samples no row reaches
        (
            "gpt_portable",
            ["--min-samples", "99999999999"],
            "none of the 243 matched row(s) has enough samples to test (at most 50 on a side; "
            "--min-samples 99999999999; a median's interval at --alpha 0.05 needs 6); record "
            "more runs, or lower --min-samples",
        ),
        ("gpt_portable", ["--min-samples", "51", "--test", "mannwhitney"], "(at most 50 on a"),
        # 5 runs: fewer than a median's interval needs at alpha 0.05
        ("mlp_xnnpack", [], "a median's interval at --alpha 0.05 needs 6); record more runs, or"),
    ],
)
def test_cli_gate_that_tests_no_row_does_not_pass(
    vectors_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    extra: list[str],
    said: str,
) -> None:
    if "mannwhitney" in extra:
        pytest.importorskip("scipy")
    dump, record = _vector(vectors_dir, name)
    out = tmp_path / "report.json"
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(dump), str(dump), "--etrecord", str(record), *extra, "-o", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {dump} and {dump}: no verdict: ") and err.count("\n") == 1
    assert said in err
    assert list(tmp_path.iterdir()) == []  # no report: no verdict
    # one row that can be tested is a verdict: mlp at alpha 0.1 (5 runs are enough)
    if name == "mlp_xnnpack":
        args = ["compare", str(dump), str(dump), "--alpha", "0.1", "-f", "json", "-o", str(out)]
        assert main(args) == 0
        verdicts = {row["verdict"] for row in json.loads(out.read_text())["rows"]}
        assert verdicts == {NO_CHANGE, TOO_FEW}
