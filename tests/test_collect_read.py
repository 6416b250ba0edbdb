"""collect_batch reads small files straight into one buffer and decodes them in place: the
rows equal those of files read and decoded one at a time, also when a file changed size or
vanished since it was found, or when some files of the buffer are skipped."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from etdump_variants import vary

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.dataset import query
from delegate_lens.dataset._batch import _read_all, collect_batch, content_hash
from delegate_lens.dataset._sources import Source, find_sources

SQL = "select * from events order by source, run, event_index"


@pytest.fixture
def dumps(tmp_path: Path, vectors_dir: Path) -> Path:
    base = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(8):
        (folder / f"r{i}.etdp").write_bytes(vary(base, i) if i else base)
    return folder


def _one_at_a_time(sources: list[Source], target: Path) -> list[tuple[str, str, int]]:
    return [(r.source, r.status, r.rows) for s in sources for r in collect_batch(str(target), [s])]


def test_read_in_place_equals_files_read_alone(dumps: Path, tmp_path: Path) -> None:
    sources = find_sources([str(dumps)])
    read = _read_all(sources)
    (block,) = {id(b): b for _, b in read if b is not None}.values()
    assert block.whole and len(block.sizes) == len(sources)
    for source, (data, _) in zip(sources, read):
        assert isinstance(data, memoryview)
        assert bytes(data) == Path(source.path).read_bytes()
    together = collect_batch(str(tmp_path / "a"), sources)
    alone = _one_at_a_time(sources, tmp_path / "b")
    assert [(r.source, r.status, r.rows) for r in together] == alone
    assert all(status == "collected" for _, status, _ in alone)
    assert query(str(tmp_path / "a"), SQL).equals(query(str(tmp_path / "b"), SQL))


def test_files_changed_since_found(dumps: Path, tmp_path: Path, vectors_dir: Path) -> None:
    sources = find_sources([str(dumps)])
    grown, shrunk, gone = (Path(sources[k].path) for k in (1, 4, 6))
    big = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    grown.write_bytes(vary(big, 100) + b"\0" * 64)  # longer than when found: read whole
    shrunk.write_bytes(b"ED00")  # shorter: read as it is now (and fails to decode)
    gone.unlink()
    read = _read_all(sources)
    assert bytes(read[1][0]) == grown.read_bytes()  # type: ignore[arg-type]
    assert bytes(read[4][0]) == b"ED00"  # type: ignore[arg-type]
    assert isinstance(read[6][0], OSError)
    results = collect_batch(str(tmp_path / "a"), sources)
    assert [r.status for r in results] == ["collected"] * 4 + ["failed", "collected", "failed"] + [
        "collected"
    ]
    assert str(gone) in (results[6].error or "") and str(shrunk) in (results[4].error or "")
    good = [s for k, s in enumerate(sources) if k not in (4, 6)]
    alone = _one_at_a_time([attrs.evolve(s, size=-1) for s in good], tmp_path / "b")
    assert [(r.source, r.status, r.rows) for r in results if r.status == "collected"] == alone
    assert query(str(tmp_path / "a"), SQL).equals(query(str(tmp_path / "b"), SQL))


def test_known_files_skipped_from_a_block(dumps: Path, tmp_path: Path) -> None:
    sources = find_sources([str(dumps)])
    known = {content_hash(Path(sources[k].path).read_bytes()) for k in (0, 3)}
    results = collect_batch(str(tmp_path / "a"), sources, known)
    assert [r.status for r in results].count("skipped") == 2
    rest = [s for k, s in enumerate(sources) if k not in (0, 3)]
    alone = _one_at_a_time(rest, tmp_path / "b")
    assert [(r.source, r.status, r.rows) for r in results if r.status != "skipped"] == alone
    assert query(str(tmp_path / "a"), SQL).equals(query(str(tmp_path / "b"), SQL))


def test_cycle_collector_paused_then_restored(
    dumps: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from delegate_lens.dataset import _batch as batch
    from delegate_lens.dataset import _cycles

    during: list[bool] = []
    real_hash = batch.content_hash
    monkeypatch.setattr(
        batch, "content_hash", lambda d: during.append(gc.isenabled()) or real_hash(d)
    )
    assert gc.isenabled()
    collect_batch(str(tmp_path / "a"), find_sources([str(dumps)]))
    assert during == [False] * 8 and gc.isenabled()  # off while it ran, on again after
    gc.disable()
    try:
        with _cycles.no_cycle_collection():
            pass
        assert not gc.isenabled()  # left off, as it was
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), _cycles.no_cycle_collection():
        raise RuntimeError
    assert gc.isenabled()
