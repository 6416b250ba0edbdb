"""`query` is bounded (issue 35, items 3 and 4): its output never lands inside the dataset
it reads, and a query that runs forever or takes too much memory stops with one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.cli import main
from delegate_lens.config import reset_config
from delegate_lens.dataset import _limits as limits
from delegate_lens.dataset import collect, query
from delegate_lens.errors import ConfigError, QueryLimitError, UsageError

ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"
HUNGRY = "SELECT string_agg(repeat('x', 1000), ',') FROM range(1000000)"  # one 1 GB string
COUNT = "SELECT count(*) AS n FROM events"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("query_limits")
    (root / "in").mkdir()
    shutil.copy(vectors_dir / "mlp_xnnpack" / "etdump.etdp", root / "in" / "run.etdp")
    collect([str(root / "in")], str(root / "ds"))
    return root / "ds"


@pytest.fixture(autouse=True)
def _no_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DELEGATE_LENS_CONFIG", raising=False)
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    reset_config()


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    return captured.err


# ---------------------------------------------------------------- item 3: -o inside the dataset


def _inside(dataset: Path) -> list[Path]:
    part = next(dataset.glob("part-*.parquet"))
    entry = next((dataset / "_manifest").glob("*.json"))
    return [part, entry, dataset / "_manifest" / "new.json", dataset / "result.csv", dataset]


@pytest.mark.parametrize("which", range(5))
def test_output_inside_the_dataset_is_refused_and_the_dataset_stays(
    dataset: Path, capsys: pytest.CaptureFixture[str], which: int
) -> None:
    before = {p: p.read_bytes() for p in dataset.rglob("*") if p.is_file()}
    answer = query(str(dataset), COUNT)["n"][0].as_py()
    target = _inside(dataset)[which]
    fmt = ["--format", "parquet"] if target.suffix not in (".csv", ".parquet", ".json") else []
    err = _fails(capsys, ["query", str(dataset), "SELECT 1 AS n", "-o", str(target), *fmt])
    if target.is_dir():
        assert "is a folder" in err
    else:
        assert f"cannot write {target}: it is inside the dataset {dataset}" in err
    assert {p: p.read_bytes() for p in dataset.rglob("*") if p.is_file()} == before
    assert query(str(dataset), COUNT)["n"][0].as_py() == answer


def test_output_inside_the_dataset_through_a_link_or_dots_is_refused(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = next(dataset.glob("part-*.parquet"))
    link = tmp_path / "link.parquet"
    link.symlink_to(part)
    dotted = tmp_path / ".." / os.path.relpath(part, tmp_path.parent)
    folder_link = tmp_path / "ds-link"
    folder_link.symlink_to(dataset)
    for target in (link, dotted, folder_link / part.name):
        err = _fails(capsys, ["query", str(dataset), "SELECT 1 AS n", "-o", str(target)])
        assert "it is inside the dataset" in err
    assert link.is_symlink() and query(str(dataset), COUNT)["n"][0].as_py() > 1


def test_output_beside_the_dataset_is_written(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = dataset.parent / f"{dataset.name}-result.csv"  # a sibling whose name starts alike
    assert main(["query", str(dataset), COUNT, "-o", str(out)]) == 0
    assert out.read_text().splitlines()[0] == "n"
    out.unlink()


# ---------------------------------------------------------------- item 4: time and memory


def test_endless_query_stops_at_the_timeout(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.monotonic()
    err = _fails(capsys, ["query", str(dataset), ENDLESS, "--timeout", "1"])
    assert time.monotonic() - start < 10
    assert "ran past the timeout of 1 s" in err and "--timeout" in err


def test_endless_query_stops_at_the_timeout_in_a_process(dataset: Path) -> None:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "delegate_lens", "query", str(dataset), ENDLESS, "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - start < 30
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "ran past the timeout of 1 s" in done.stderr


def test_memory_hungry_query_stops_at_the_memory_limit(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _fails(capsys, ["query", str(dataset), HUNGRY, "--memory-limit", "100MB"])
    assert "memory limit of 100MB" in err and "--memory-limit" in err


def test_a_result_larger_than_the_memory_limit_stops(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # DuckDB does not count the result it hands over: the reading does
    sql = "SELECT * FROM range(100000000)"
    out = tmp_path / "big.parquet"
    err = _fails(capsys, ["query", str(dataset), sql, "--memory-limit", "20MB", "-o", str(out)])
    assert "its result passed the memory limit of 20MB" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_python_api_takes_the_limits(dataset: Path) -> None:
    with pytest.raises(QueryLimitError, match=r"timeout of 0\.5 s"):
        query(str(dataset), ENDLESS, timeout=0.5)
    with pytest.raises(QueryLimitError, match="memory limit of 100MB"):
        query(str(dataset), HUNGRY, memory_limit="100MB")
    with pytest.raises(QueryLimitError, match="memory limit of 50MB"):
        query(str(dataset), HUNGRY, memory_limit=50_000_000)
    assert query(str(dataset), COUNT, timeout=30, memory_limit="200MB")["n"][0].as_py() > 1
    assert issubclass(QueryLimitError, UsageError)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--timeout", "-1", "seconds > 0, got '-1'"),
        ("--timeout", "0", "seconds > 0, got '0'"),
        ("--timeout", "soon", "seconds > 0, got 'soon'"),
        ("--timeout", "nan", "seconds > 0"),
        ("--memory-limit", "-5GB", "a size such as 2GB"),
        ("--memory-limit", "lots", "a size such as 2GB"),
        ("--memory-limit", "10XB", "a size such as 2GB"),
        ("--memory-limit", "1KB", "below 1MB"),
    ],
)
def test_bad_limits_are_usage_errors(
    dataset: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    err = _fails(capsys, ["query", str(dataset), COUNT, f"{option}={value}"])
    assert option in err and message in err


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout": -1}, {"timeout": "x"}, {"memory_limit": "2 parsecs"}, {"memory_limit": 0}],
)
def test_bad_limits_in_python_are_usage_errors(dataset: Path, kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        query(str(dataset), COUNT, **kwargs)  # type: ignore[arg-type]


def test_sizes() -> None:
    assert limits.parse_size("2GB") == 2 * 10**9
    assert limits.parse_size("500MB") == 500 * 10**6
    assert limits.parse_size("1.5 GiB") == 3 << 29
    assert limits.parse_size("2gb") == 2 * 10**9
    assert limits.parse_size(10**7) == 10**7
    assert limits.format_size(100 * 10**6) == "100MB"
    assert limits.default_memory_limit() >= 256 * 10**6


def test_a_file_in_the_current_folder_lowers_the_limits_never_raises_them(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "delegate-lens.toml"
    config.write_text('[query]\ntimeout = 1e9\nmemory_limit = "1000TB"\n')
    reset_config()
    assert limits.query_limits() == limits.QueryLimits()  # the defaults, not raised
    config.write_text('[query]\ntimeout = 0.5\nmemory_limit = "100MB"\n')
    reset_config()
    assert limits.query_limits() == limits.QueryLimits(0.5, 100 * 10**6)
    with pytest.raises(QueryLimitError, match=r"timeout of 0\.5 s"):
        query(str(dataset), ENDLESS)
    config.write_text('[query]\ntimeout = "soon"\n')
    reset_config()
    with pytest.raises(ConfigError, match=r"toml: query\.timeout: expected a number of seconds"):
        query(str(dataset), COUNT)
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", 'query.memory_limit = "1000TB"')
    config.unlink()
    reset_config()
    assert limits.query_limits().memory_limit == 10**15  # a chosen configuration raises it


def test_the_process_growing_past_twice_the_limit_stops_the_query(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # memory DuckDB does not count (one huge value): the watch sees the process grow
    sizes = iter([10**9])
    monkeypatch.setattr(limits, "_resident_bytes", lambda: next(sizes, 10**12))
    with pytest.raises(QueryLimitError, match="the process grew by more than"):
        query(str(dataset), ENDLESS, memory_limit="100MB")
