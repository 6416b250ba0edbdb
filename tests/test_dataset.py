"""delegate_lens.dataset and `delegate-lens collect` / `query`: counts against the codec and
the Inspector, labels, incremental skip, bad files, atomic parts, SQL outputs, CLI errors."""

from __future__ import annotations

import csv
import io
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from etdump_variants import vary

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")

from delegate_lens.cli import main  # noqa: E402
from delegate_lens.dataset import DatasetStore, collect, query  # noqa: E402
from delegate_lens.errors import UsageError  # noqa: E402
from delegate_lens.etdump import EventKind, load  # noqa: E402
from delegate_lens.inspector import Inspector  # noqa: E402

VECTORS = ("mlp_xnnpack", "conv_xnnpack")


@pytest.fixture
def fleet(tmp_path: Path, vectors_dir: Path) -> Path:
    """Two devices' folders: each vector's ETDump + ETRecord sidecar, and a labels sidecar."""
    root = tmp_path / "fleet"
    for device in ("pixel8", "s24"):
        for name in VECTORS:
            folder = root / device / name
            folder.mkdir(parents=True)
            shutil.copy(vectors_dir / name / "etdump.etdp", folder / "run.etdp")
            shutil.copy(vectors_dir / name / "etrecord.bin", folder / "etrecord.bin")
            (folder / "labels.json").write_text(json.dumps({"device": device, "model": name}))
    # the second device's files differ in content (else they would be skipped as duplicates)
    for name in VECTORS:
        path = root / "s24" / name / "run.etdp"
        path.write_bytes(vary(path.read_bytes(), 1000))
    return root


def _profile_count(path: Path) -> int:
    return sum(int((r.columns.kind == EventKind.PROFILE).sum()) for r in load(path).run_data)


def test_rows_match_codec_and_inspector(fleet: Path, tmp_path: Path) -> None:
    report = collect([str(fleet)], str(tmp_path / "ds"))
    assert len(report.collected) == 4 and not report.failed
    files = sorted(fleet.rglob("*.etdp"))
    counts = query(str(tmp_path / "ds"), "select source, count(*) n from events group by 1")
    by_source = dict(zip(counts["source"].to_pylist(), counts["n"].to_pylist()))
    assert by_source == {str(f): _profile_count(f) for f in files}
    # against the Inspector: rows with samples x runs, durations, op types of delegate calls
    for f in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inspector = Inspector(etdump_path=f, etrecord=f.parent / "etrecord.bin")
        samples = sum(int(t.block.has_perf.sum()) * t.n_runs for t in inspector.tables)
        rows = query(
            str(tmp_path / "ds"),
            f"select event_name, duration, op_types, delegate_backend, debug_handles "
            f"from events where source = '{f}' order by run, event_index",
        ).to_pylist()
        assert samples == len(rows)
        expected = {}
        for block in inspector.event_blocks:
            for event in block.events:
                if event.perf_data is not None:
                    expected[event.name] = (event.op_types, event.delegate_backend_name)
        for row in rows:
            assert (row["op_types"], row["delegate_backend"]) == expected[row["event_name"]]
        assert any(r["delegate_backend"] == "XnnpackBackend" for r in rows)
        fc = inspector.file_columns
        profile = fc.kind == EventKind.PROFILE
        ticks = fc.end_time[profile].astype(np.int64) - fc.start_time[profile].astype(np.int64)
        assert sorted(r["duration"] for r in rows) == sorted(ticks.tolist())


def test_labels_from_sidecar_and_command_line(fleet: Path, tmp_path: Path) -> None:
    ds = str(tmp_path / "ds")
    collect([str(fleet / "pixel8")], ds, labels={"build": "abc123", "model": "override"})
    out = query(
        ds, "select distinct labels['device'] d, labels['build'] b, labels['model'] m from events"
    )
    assert out.to_pylist() == [{"d": "pixel8", "b": "abc123", "m": "override"}]


def test_labels_differing_between_files_and_parts(fleet: Path, tmp_path: Path) -> None:
    ds = str(tmp_path / "ds")
    (fleet / "s24" / "conv_xnnpack" / "labels.json").write_text('{"build": 7, "fast": true}')
    collect([str(fleet / "s24")], ds)  # one part: two files with different label names
    collect([str(fleet / "pixel8" / "mlp_xnnpack" / "run.etdp")], str(tmp_path / "other"))
    plain = tmp_path / "plain.etdp"  # a part without labels at all
    plain.write_bytes(vary((fleet / "pixel8" / "mlp_xnnpack" / "run.etdp").read_bytes(), 5))
    collect([str(plain)], ds)
    sql = "select distinct labels.device d, labels['build'] b, labels.fast f from events"
    rows = {tuple(row.values()) for row in query(ds, sql).to_pylist()}
    assert rows == {(None, None, None), (None, "7", "true"), ("s24", None, None)}


def test_incremental_skip_by_content(fleet: Path, tmp_path: Path) -> None:
    ds = str(tmp_path / "ds")
    first = collect([str(fleet)], ds)
    again = collect([str(fleet)], ds)
    assert len(again.skipped) == 4 and not again.collected
    copy = tmp_path / "copy.etdp"  # same bytes under another name: already collected
    shutil.copy(fleet / "pixel8" / "mlp_xnnpack" / "run.etdp", copy)
    skipped = collect([str(copy)], ds).skipped
    original = [
        r for r in first.results if r.source == str(fleet / "pixel8" / "mlp_xnnpack" / "run.etdp")
    ]
    assert [r.file_hash for r in skipped] == [original[0].file_hash]
    total = query(ds, "select count(*) n from events")["n"][0].as_py()
    assert total == first.rows
    assert len(DatasetStore(ds).parts()) == 1


def test_bad_file_reported_and_skipped(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = fleet / "pixel8" / "broken.etdp"
    bad.write_bytes(b"\x00" * 40)
    ds = str(tmp_path / "ds")
    assert main(["collect", str(fleet / "pixel8"), "-o", ds]) == 0
    err = capsys.readouterr().err
    assert f"warning: skipped {bad}:" in err and "collected 2 file(s)" in err
    assert query(ds, "select count(distinct source) n from events")["n"][0].as_py() == 2


def test_crash_while_writing_leaves_no_part(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = tmp_path / "ds"

    def crash(table: object, where: object, **kwargs: object) -> None:
        where.write(b"PAR1 half a part")  # type: ignore[attr-defined]
        raise KeyboardInterrupt  # the process dies mid-write

    monkeypatch.setattr(pq, "write_table", crash)
    with pytest.raises(KeyboardInterrupt):
        collect([str(fleet)], str(ds))
    assert sorted(p.name for p in ds.rglob("*") if p.is_file()) == []
    monkeypatch.undo()
    report = collect([str(fleet)], str(ds))  # nothing counted as collected before
    assert len(report.collected) == 4


def test_part_without_manifest_entry_is_still_known(fleet: Path, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    collect([str(fleet)], str(ds))
    for entry in (ds / "_manifest").iterdir():  # a crash after the part, before the manifest
        entry.unlink()
    assert len(collect([str(fleet)], str(ds)).skipped) == 4


def test_query_formats(fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = str(tmp_path / "ds")
    collect([str(fleet)], ds)
    sql = (
        "select labels['device'] device, event_name, count(*) n, median(duration) p50 "
        "from events where is_delegated group by all order by device, event_name"
    )
    expected = query(ds, sql).to_pylist()
    assert expected and {r["device"] for r in expected} == {"pixel8", "s24"}
    assert main(["query", ds, sql]) == 0
    table = capsys.readouterr().out.splitlines()
    assert (
        table[0].split() == ["device", "event_name", "n", "p50"] and len(table) == len(expected) + 2
    )
    assert main(["query", ds, sql, "-o", str(tmp_path / "out.csv")]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out.csv").read_text())))
    assert [int(r["n"]) for r in rows] == [r["n"] for r in expected]
    assert main(["query", ds, sql, "--format", "json", "-o", str(tmp_path / "out.txt")]) == 0
    assert json.loads((tmp_path / "out.txt").read_text()) == expected
    assert main(["query", ds, sql, "-o", str(tmp_path / "out.parquet")]) == 0
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["collect", "{fleet}", "-o", "{ds}", "--label", "device"], "expected NAME=VALUE"),
        (["collect", "{fleet}", "-o", "{ds}", "--engine", "spark"], "unknown engine 'spark'"),
        (["collect", "{fleet}/*.nothing", "-o", "{ds}"], "no file matches"),
        (["collect", "{ds}/_manifest", "-o", "{ds}"], "no ETDump (*.etdp, *.etdump) in this"),
        (["collect", "{fleet}", "-o", "{fleet}/s24/labels.json"], "is a file, not a dataset"),
        (["collect", "{fleet}", "-o", "{ds}", "--workers", "0"], "workers must be at least 1"),
        (["collect", "{fleet}", "-o", "{ds}", "--batch-mb", "0"], "number of MB > 0, got '0'"),
        (["collect", "{fleet}", "-o", "{ds}", "--batch-mb", "nan"], "number of MB > 0, got 'nan'"),
        (["collect", "{fleet}", "-o", "{ds}", "--batch-mb", "inf"], "number of MB > 0, got 'inf'"),
        (["query", "{ds}/nope", "select 1"], "no such dataset"),
        (["query", "{fleet}", "select 1"], "{fleet}: no such dataset"),  # a folder, no dataset
        (["query", "{ds}/_manifest", "select 1"], "no such dataset"),
        (["collect", "{fleet}/pixel8", "-o", "{fleet}/s24"], "holds other files and no dataset"),
        (["collect", "--check", "-o", "{fleet}/s24"], "{fleet}/s24: no such dataset"),
        (["query", "{ds}", "select 1", "-o", "{ds}.xyz"], "(.xyz): use .csv (csv), .json (json)"),
        (["query", "{ds}", "select 1", "-o", "{ds}.out"], ".parquet (parquet), .txt (table)"),
        (["query", "{ds}", "select * from nope"], "query failed: Catalog Error"),
        (["query", "{ds}", "select 1", "--format", "xml"], "unknown format 'xml'"),
        (["query", "{ds}", "select 1", "--format", "parquet"], "needs -o FILE"),
    ],
)
def test_cli_errors_one_line_exit_2(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    ds = tmp_path / "ds"
    collect([str(fleet / "pixel8" / "mlp_xnnpack")], str(ds))
    (fleet / "s24" / "labels.json").write_text("{}")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([a.format(fleet=fleet, ds=ds) for a in argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert message.format(fleet=fleet, ds=ds) in err
    assert not list(tmp_path.glob("ds.*"))  # no output file
    assert not (fleet / "s24" / "_manifest").exists()  # nothing written beside the user's


def test_collect_into_an_empty_folder_or_a_dataset_but_no_other_folder(
    fleet: Path, tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds other files and no dataset"):
        collect([str(fleet / "pixel8")], str(mine))
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    with pytest.raises(UsageError, match="no such dataset"):
        query(str(mine), "select 1")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="no such dataset"):
        query(str(empty), "select 1")
    assert len(collect([str(fleet / "pixel8")], str(empty)).collected) == 2
    assert len(collect([str(fleet / "s24")], str(empty)).collected) == 2  # a dataset now
    assert query(str(empty), "select count(distinct source) n from events").to_pylist() == [
        {"n": 4}
    ]


def test_two_local_workers_collect_the_same_rows(fleet: Path, tmp_path: Path) -> None:
    files = []
    base = (fleet / "pixel8" / "mlp_xnnpack" / "run.etdp").read_bytes()
    for i in range(8):
        path = tmp_path / "many" / f"d{i}.etdp"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(vary(base, i))
        files.append(path)
    # 8 small files fit one batch (STREAM_FIRST_BYTES): small batches make both work
    size = files[0].stat().st_size
    report = collect(
        [str(tmp_path / "many")], str(tmp_path / "ds"), workers=2, batch_bytes=3 * size
    )
    assert len(report.collected) == 8 and len(DatasetStore(str(tmp_path / "ds")).parts()) >= 3
    assert report.rows == 8 * _profile_count(files[0])


def test_dask_local_cluster(fleet: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    ds = str(tmp_path / "ds")
    collect([str(fleet)], str(tmp_path / "serial"))
    collect([str(fleet / "pixel8")], ds)  # half already there: the workers must skip it
    report = collect([str(fleet)], ds, engine="dask", workers=2)
    assert len(report.collected) == 2 and len(report.skipped) == 2
    sql = "select source, event_name, sum(duration) t from events group by all order by all"
    assert query(ds, sql).equals(query(str(tmp_path / "serial"), sql))


def test_the_etrecord_is_part_of_the_key(tmp_path: Path, vectors_dir: Path) -> None:
    """Collected again with another ETRecord, an ETDump replaces its old rows (a dataset
    first filled with an ETRecord that linked nothing, or none, is mended by collecting
    again with the right one); given again without one, it is skipped."""
    import zipfile

    from delegate_lens.dataset._batch import etrecord_identity

    mlp = vectors_dir / "mlp_xnnpack"
    etdump = tmp_path / "run.etdp"
    shutil.copy(mlp / "etdump.etdp", etdump)
    first = tmp_path / "first.etrecord"
    shutil.copy(mlp / "etrecord.bin", first)
    other = tmp_path / "other.etrecord"  # the same record, other bytes (deflated entries)
    with zipfile.ZipFile(first) as src, zipfile.ZipFile(other, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    ds = str(tmp_path / "ds")

    def linked_rows() -> tuple[int, int]:
        table = query(ds, "SELECT count(*) n, count(op_types) linked FROM events")
        return table["n"][0].as_py(), table["linked"][0].as_py()

    plain = collect([str(etdump)], ds)
    rows = plain.rows
    assert linked_rows() == (rows, 0)
    assert len(collect([str(etdump)], ds, etrecord=str(first)).collected) == 1
    total, linked = linked_rows()
    assert total == rows and linked > 0  # replaced, not stored twice
    assert len(collect([str(etdump)], ds, etrecord=str(first)).skipped) == 1
    assert len(collect([str(etdump)], ds).skipped) == 1  # no ETRecord: keeps the links
    assert len(collect([str(etdump)], ds, etrecord=str(other)).collected) == 1
    assert linked_rows() == (total, linked)
    assert len(DatasetStore(ds).parts()) == 1
    stored = DatasetStore(ds).manifest()
    assert [item.get("etrecord") for item in stored.values()] == [etrecord_identity(str(other))]
