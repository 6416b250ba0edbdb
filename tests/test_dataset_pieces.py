"""collect writes a big file's table in pieces (issue 25: collect's memory): the pieces
are the whole table cut by events, and a file of more than PIECE_ROWS events is a part
of its own, written a piece at a time, holding the rows it would have held whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")

from conftest import VECTORS  # noqa: E402

from delegate_lens.dataset import DatasetStore, collect, query  # noqa: E402
from delegate_lens.dataset import _batch as batch_module  # noqa: E402
from delegate_lens.dataset._event_table import labelled_pieces, labelled_table  # noqa: E402
from delegate_lens.inspector import Inspector  # noqa: E402


def _inspector(name: str) -> Inspector:
    folder = VECTORS / name
    return Inspector(etdump_path=str(folder / "etdump.etdp"), etrecord=str(folder / "etrecord.bin"))


_INSPECTORS: dict[str, Inspector] = {}


def _cached(name: str) -> Inspector:
    if name not in _INSPECTORS:
        _INSPECTORS[name] = _inspector(name)
    return _INSPECTORS[name]


def _rows(tables: list[object]) -> dict[str, list[object]]:
    """Every column's values, the tables one after the other (dictionaries decoded)."""
    whole = pa.concat_tables(tables, promote_options="permissive")
    return {name: whole.column(name).to_pylist() for name in whole.column_names}


@settings(max_examples=8, deadline=None)
@given(
    name=st.sampled_from(["mlp_xnnpack", "gpt_portable"]),
    parts=st.integers(min_value=1, max_value=12),
    less=st.integers(min_value=0, max_value=2),
    labelled=st.booleans(),
)
def test_pieces_are_the_table_cut_by_events(
    name: str, parts: int, less: int, labelled: bool
) -> None:
    """Whatever the piece size (about a ``parts``-th of the events, a little less), the
    pieces hold the whole table's rows, in order, each of at most piece_rows
    (mlp_xnnpack has debug events besides its profile events: the pieces pick the profile
    ones; gpt_portable's are all profile events)."""
    inspector = _cached(name)
    fc = inspector.file_columns
    labels = [{"device": "a", "run": "7"}] if labelled else [{}]
    args = (fc, np.zeros(len(fc.run_names), dtype=np.int64), ["x.etdp"], ["0" * 32], labels)
    whole = labelled_table(*args, inspector=inspector)
    piece_rows = max(1, -(-whole.num_rows // parts) - less)
    pieces = list(labelled_pieces(*args, inspector=inspector, piece_rows=piece_rows))
    assert [p.num_rows for p in pieces[:-1]] == [piece_rows] * (len(pieces) - 1)
    assert 0 < pieces[-1].num_rows <= piece_rows
    assert all(p.schema == whole.schema for p in pieces)
    assert _rows(pieces) == _rows([whole])


@pytest.mark.parametrize("linked", [True, False])
def test_a_big_file_is_a_part_of_its_own_written_in_pieces(
    linked: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PIECE_ROWS below a file's events, that file (decoded alone: with its
    ETRecord, or big) is written as a part of its own (row groups of PIECE_ROWS), the
    other files of the batch together in another; the dataset holds exactly the rows it
    holds when every file is written whole."""
    from delegate_lens.dataset import _reading

    inputs = tmp_path / "in"
    for name in ("mlp_xnnpack", "gpt_portable"):
        (inputs / name).mkdir(parents=True)
        (inputs / name / "etdump.etdp").write_bytes((VECTORS / name / "etdump.etdp").read_bytes())
        if linked:
            (inputs / name / "etrecord.bin").write_bytes(
                (VECTORS / name / "etrecord.bin").read_bytes()
            )
    if not linked:  # gpt_portable decoded on its own, as a big file is
        size = (inputs / "gpt_portable" / "etdump.etdp").stat().st_size
        monkeypatch.setattr(batch_module, "_ALONE_BYTES", size)
        monkeypatch.setattr(_reading, "_ALONE_BYTES", size)
    whole = collect([str(inputs)], str(tmp_path / "whole"))
    events = {Path(r.source).parent.name: r.rows for r in whole.results}
    assert events["gpt_portable"] > 200 > events["mlp_xnnpack"]
    monkeypatch.setattr(batch_module, "PIECE_ROWS", 200)
    cut = collect([str(inputs)], str(tmp_path / "cut"))
    by_name = {Path(r.source).parent.name: r for r in cut.results}
    assert {r.status for r in cut.results} == {"collected"}
    assert {k: r.rows for k, r in by_name.items()} == events
    assert by_name["gpt_portable"].part != by_name["mlp_xnnpack"].part
    store = DatasetStore(str(tmp_path / "cut"))
    parts = {Path(p).name: p for p in store.parts()}
    assert set(parts) == {r.part for r in cut.results}
    own_part = by_name["gpt_portable"].part
    assert own_part is not None
    own = pq.ParquetFile(parts[own_part])
    assert own.metadata.num_row_groups == -(-events["gpt_portable"] // 200)
    listing = {item["source"]: item["rows"] for item in store.manifest().values()}
    assert listing == {r.source: r.rows for r in cut.results}
    sql = "SELECT * EXCLUDE (source) FROM events ORDER BY file_hash, run, event_index"
    assert (
        query(str(tmp_path / "cut"), sql).to_pylist()
        == query(str(tmp_path / "whole"), sql).to_pylist()
    )
