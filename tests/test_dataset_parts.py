"""The Parquet parts collect writes: columns that always have a value are required, the
encodings and statistics are those store._write_options names, and parts written before
(every column nullable) still query together with new ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")

from delegate_lens.dataset import collect, query  # noqa: E402

REQUIRED = {"source", "file_hash", "run", "block", "event_index", "chain_index"}
REQUIRED |= {"start_time", "duration", "is_delegated"}


def test_required_columns_encodings_and_old_parts(tmp_path: Path, vectors_dir: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("mlp_xnnpack", "conv_xnnpack"):
        shutil.copy(vectors_dir / name / "etdump.etdp", folder / f"{name}.etdp")
    report = collect([str(folder)], str(tmp_path / "ds"), labels={"device": "a"})
    assert len(report.collected) == 2
    (part,) = (tmp_path / "ds").glob("part-*.parquet")
    meta = pq.ParquetFile(part)
    schema = meta.schema_arrow
    assert {f.name for f in schema if not f.nullable} == REQUIRED
    columns = meta.metadata.row_group(0)
    chunks = {
        columns.column(i).path_in_schema: columns.column(i) for i in range(columns.num_columns)
    }
    assert "DELTA_BINARY_PACKED" in chunks["start_time"].encodings
    assert "PLAIN" in chunks["event_index"].encodings
    assert chunks["block"].statistics is None or not chunks["block"].statistics.has_min_max
    assert chunks["source"].statistics.has_min_max
    # a part as an older collect wrote it (every column nullable) queries with the new one
    table = pq.read_table(part)
    old = pa.Table.from_arrays(
        table.columns, schema=pa.schema([f.with_nullable(True) for f in schema])
    )
    old = old.set_column(
        old.schema.get_field_index("source"),
        "source",
        pa.array(["old.etdp"] * old.num_rows).dictionary_encode(),
    )
    pq.write_table(old, tmp_path / "ds" / "part-old.parquet")
    rows = query(
        str(tmp_path / "ds"), "select source, count(*) n from events group by 1 order by 1"
    )
    counts = dict(zip(rows["source"].to_pylist(), rows["n"].to_pylist()))
    assert counts.pop("old.etdp") == table.num_rows == sum(counts.values())
