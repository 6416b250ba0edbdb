"""`query` reads the dataset and nothing else: one SELECT, no file outside the dataset's
folder, no statement that writes or changes the connection, no extension loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.cli import main
from delegate_lens.dataset import collect, query
from delegate_lens.errors import UsageError


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("query_safety")
    (root / "in").mkdir()
    shutil.copy(vectors_dir / "mlp_xnnpack" / "etdump.etdp", root / "in" / "run.etdp")
    collect([str(root / "in")], str(root / "ds"))
    return root / "ds"


def _attacks(outside: Path) -> list[tuple[str, str]]:
    """(SQL, what the one-line error says)."""
    return [
        (f"COPY (SELECT 1) TO '{outside}'", "not COPY (the dataset is read-only)"),
        ("DROP VIEW events", "not DROP (the dataset is read-only)"),
        ("CREATE TABLE t AS SELECT 1", "not CREATE (the dataset is read-only)"),
        ("SET enable_external_access = true", "not SET (the dataset is read-only)"),
        (f"ATTACH '{outside}.duckdb'", "not ATTACH (the dataset"),
        ("INSTALL httpfs", "not LOAD (the dataset"),
        ("LOAD json", "not LOAD (the dataset is read-only)"),
        ("SELECT 1; DROP VIEW events", "one SELECT statement, got 2"),
        ("SELECT * FROM read_csv('/etc/passwd')", "reads only the dataset's own files"),
        ("SELECT * FROM read_text('/etc/hostname')", "reads only the dataset's own files"),
        ("SELECT * FROM glob('/etc/*')", "reads only the dataset's own files"),
        (f"SELECT * FROM read_text('{outside.parent}/ds/../../etc/hostname')", "own files"),
        ("SELECT * FROM query('DROP VIEW events')", "query failed"),
        ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "query failed"),
    ]


@pytest.mark.parametrize("index", range(14))
def test_each_attack_is_one_line_exit_2_and_changes_nothing(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int
) -> None:
    outside = tmp_path / "written.csv"
    sql, message = _attacks(outside)[index]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["query", str(dataset), sql])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    assert message in captured.err
    assert "root:" not in captured.err  # no line of /etc/passwd
    assert not outside.exists() and not Path(f"{outside}.duckdb").exists()
    assert query(str(dataset), "SELECT count(*) AS n FROM events")["n"][0].as_py() > 0


def test_reading_the_dataset_still_works(dataset: Path) -> None:
    sql = "WITH e AS (FROM events) SELECT count(*) AS n FROM e"
    assert query(str(dataset), sql)["n"][0].as_py() > 0
    (part,) = sorted(dataset.glob("part-*.parquet"))  # its own files, by name
    direct = query(str(dataset), f"SELECT count(*) AS n FROM read_parquet('{part}')")
    assert direct["n"][0].as_py() == query(str(dataset), sql)["n"][0].as_py()
    assert query(str(dataset), "VALUES (1), (2)").num_rows == 2


def test_python_api_refuses_writes(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"not COPY \(the dataset is read-only\)"):
        query(str(dataset), f"COPY events TO '{tmp_path / 'x.parquet'}'")
    assert not (tmp_path / "x.parquet").exists()
