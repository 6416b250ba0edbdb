"""delegate_lens.compare and `delegate-lens compare` on the shared vectors: matching by
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
    compare,
    write_result,
)
from delegate_lens.compare.stats import compare_samples
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


def test_unrelated_programs_leave_one_sided_rows(vectors_dir: Path) -> None:
    mlp, mlp_record = _vector(vectors_dir, "mlp_xnnpack")
    conv, conv_record = _vector(vectors_dir, "conv_xnnpack")
    result = compare(mlp, conv, base_etrecord=mlp_record, new_etrecord=conv_record)
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
    result = compare(mlp, conv, base_etrecord=mlp_record, new_etrecord=conv_record)
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
