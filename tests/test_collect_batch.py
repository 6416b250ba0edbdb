"""collect's batch path: many small ETDumps without an ETRecord decoded together. Rows and
labels per file match the codec, one bad file fails alone, a repeated file is skipped, and
the sidecars are found as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from etdump_variants import vary

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.dataset import collect, query
from delegate_lens.dataset._batch import collect_batch
from delegate_lens.dataset._sources import find_sources
from delegate_lens.errors import UsageError
from delegate_lens.etdump import EventKind, load


def _profile(path: Path) -> tuple[int, list[int]]:
    """(profile events, their durations in file order) by the codec, one file at a time."""
    durations: list[int] = []
    for run in load(path).run_data:
        c = run.columns
        keep = c.kind == EventKind.PROFILE
        durations.extend(
            (c.end_time[keep].astype(np.int64) - c.start_time[keep].view(np.int64)).tolist()
        )
    return len(durations), durations


@pytest.fixture
def small_fleet(tmp_path: Path, vectors_dir: Path) -> Path:
    """30 small dumps over three devices' folders (labels.json each, one file with its own
    labels sidecar), no ETRecords; one file is garbage, one is a copy of another."""
    base = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    root = tmp_path / "fleet"
    for i in range(30):
        device = f"dev{i % 3}"
        folder = root / device
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "labels.json").write_text(json.dumps({"device": device, "rev": i % 3 % 2}))
        (folder / f"run{i:02d}.etdp").write_bytes(vary(base, i) if i else base)
    (root / "dev1" / "run07.labels.json").write_text(json.dumps({"device": "special", "slot": 7}))
    data = bytearray((root / "dev2" / "run11.etdp").read_bytes())
    data[40:60] = b"\xff" * 20  # a broken file among good ones
    (root / "dev2" / "run11.etdp").write_bytes(bytes(data))
    (root / "dev0" / "copy.etdp").write_bytes((root / "dev1" / "run04.etdp").read_bytes())
    return root


def test_batch_rows_labels_and_failures(small_fleet: Path, tmp_path: Path) -> None:
    report = collect([str(small_fleet)], str(tmp_path / "ds"))
    bad = str(small_fleet / "dev2" / "run11.etdp")
    assert [r.source for r in report.failed] == [bad]
    assert bad in report.failed[0].error
    # the copy in dev0 comes first (sorted), so the original in dev1 is the one skipped
    assert [r.source for r in report.skipped] == [str(small_fleet / "dev1" / "run04.etdp")]
    assert len(report.collected) == 29
    rows = query(
        str(tmp_path / "ds"),
        "select source, labels.device as device, labels.rev as rev, labels.slot as slot, "
        "count(*) as n, list(duration order by run, event_index) as d from events group by all",
    ).to_pylist()
    by_source = {row["source"]: row for row in rows}
    assert set(by_source) == {r.source for r in report.collected}
    for r in report.collected:
        path = Path(r.source)
        count, durations = _profile(path)
        row = by_source[r.source]
        assert (row["n"], row["d"], r.rows) == (count, durations, count)
        if path.name == "run07.etdp":
            # its own sidecar replaces the folder's labels.json (no merge)
            assert (row["device"], row["slot"], row["rev"]) == ("special", "7", None)
        else:
            assert (row["device"], row["slot"]) == (path.parent.name, None)
            assert row["rev"] == str(int(path.parent.name[3:]) % 2)


def test_batch_equals_one_file_at_a_time(small_fleet: Path, tmp_path: Path) -> None:
    sources = [s for s in find_sources([str(small_fleet)]) if "run11" not in s.path]
    together = collect_batch(str(tmp_path / "a"), sources)
    alone = [r for s in sources for r in collect_batch(str(tmp_path / "b"), [s])]
    # one at a time, each file is new to its own batch; together, the later copy is skipped
    expected = [
        (r.source, "skipped", 0)
        if r.source.endswith("run04.etdp")
        else (r.source, r.status, r.rows)
        for r in alone
    ]
    assert [(r.source, r.status, r.rows) for r in together] == expected
    sql = (
        "select * exclude (labels) from events where source not like '%run04.etdp' "
        "order by source, run, event_index"
    )
    assert query(str(tmp_path / "a"), sql).equals(query(str(tmp_path / "b"), sql))


def test_every_file_bad_leaves_no_part(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    for i in range(3):
        (folder / f"x{i}.etdp").write_bytes(bytes([i]) * 64)
    report = collect([str(folder)], str(tmp_path / "ds"))
    assert len(report.failed) == 3 and not report.collected
    assert not list((tmp_path / "ds").glob("part-*.parquet"))


def test_sidecars_and_order(tmp_path: Path, vectors_dir: Path) -> None:
    for sub in ("b", "a/z", "a"):
        (tmp_path / "in" / sub).mkdir(parents=True, exist_ok=True)
    data = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    (tmp_path / "in" / "b" / "1.etdp").write_bytes(data)
    (tmp_path / "in" / "a" / "z" / "2.etdump").write_bytes(data)
    (tmp_path / "in" / "a" / "3.etdp").write_bytes(data)
    (tmp_path / "in" / "a" / "3.etrecord").write_bytes(b"")
    (tmp_path / "in" / "a" / "z" / "etrecord.bin").write_bytes(b"")
    (tmp_path / "in" / "a" / "notes.txt").write_text("not an ETDump")
    found = find_sources([str(tmp_path / "in"), str(tmp_path / "in" / "a" / "3.etdp")])
    assert [Path(s.path).relative_to(tmp_path / "in").as_posix() for s in found] == [
        "a/3.etdp",
        "a/z/2.etdump",
        "b/1.etdp",
    ]
    assert [s.etrecord and Path(s.etrecord).name for s in found] == [
        "3.etrecord",
        "etrecord.bin",
        None,
    ]


def test_parts_keep_statistics_for_pruning(small_fleet: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    collect([str(small_fleet)], str(tmp_path / "ds"), labels={"build": "b1"})
    (part,) = (tmp_path / "ds").glob("part-*.parquet")
    group = pq.ParquetFile(part).metadata.row_group(0)
    stats = {
        group.column(i).path_in_schema: group.column(i).statistics for i in range(group.num_columns)
    }
    for name in ("source", "file_hash", "run", "labels.device", "labels.build"):
        assert stats[name] is not None and stats[name].has_min_max, name
    assert stats["labels.build"].min == stats["labels.build"].max == "b1"


def test_workers_fork_only_without_other_python_threads() -> None:
    import sys
    import threading

    from delegate_lens.dataset._workers import _start_method

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert _start_method() in ("forkserver", "spawn")
    finally:
        stop.set()
        thread.join()
    if sys.platform == "linux" and threading.active_count() == 1:
        assert _start_method() == "fork"


@pytest.fixture
def linked_fleet(tmp_path: Path, vectors_dir: Path) -> Path:
    """12 dumps of mlp_xnnpack sharing its ETRecord (etrecord.bin beside them); one broken."""
    src = vectors_dir / "mlp_xnnpack"
    base = (src / "etdump.etdp").read_bytes()
    root = tmp_path / "linked"
    root.mkdir()
    (root / "etrecord.bin").write_bytes((src / "etrecord.bin").read_bytes())
    for i in range(12):
        (root / f"r{i:02d}.etdp").write_bytes(vary(base, i) if i else base)
    data = bytearray((root / "r05.etdp").read_bytes())
    data[40:60] = b"\xff" * 20
    (root / "r05.etdp").write_bytes(bytes(data))
    return root


def test_linked_files_decoded_together_equal_one_at_a_time(
    linked_fleet: Path, tmp_path: Path
) -> None:
    sources = find_sources([str(linked_fleet)])
    assert all(s.etrecord for s in sources)
    together = collect_batch(str(tmp_path / "a"), sources)
    alone = [r for s in sources for r in collect_batch(str(tmp_path / "b"), [s])]
    assert [(r.source, r.status, r.rows) for r in together] == [
        (r.source, r.status, r.rows) for r in alone
    ]
    assert [Path(r.source).name for r in together if r.status == "failed"] == ["r05.etdp"]
    sql = "select * from events order by source, run, event_index"
    a, b = query(str(tmp_path / "a"), sql), query(str(tmp_path / "b"), sql)
    assert a.num_rows == 11 * 37 and a.equals(b)
    linked = query(str(tmp_path / "a"), "select count(*) n from events where op_types is not null")
    assert linked["n"][0].as_py() > 0  # the links came through the Inspector


def _plain(frame: Any) -> Any:
    """``frame`` with its tensor cells (``debug_data`` holds torch tensors, as the reference's
    does) as nested lists, which pandas can compare."""

    def plain(value: object) -> object:
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        tolist = getattr(value, "tolist", None)
        return tolist() if callable(tolist) and hasattr(value, "dtype") else value

    return frame.map(plain)


def test_inspector_takes_a_decoded_etdump(vectors_dir: Path) -> None:
    import warnings

    from delegate_lens.errors import UsageError
    from delegate_lens.etdump import decode_many
    from delegate_lens.inspector import Inspector

    src = vectors_dir / "mlp_xnnpack"
    data = (src / "etdump.etdp").read_bytes()
    decoded = decode_many([data, vary(data, 3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = Inspector(etdump=decoded.etdump(0), etrecord=src / "etrecord.bin")
        ref = Inspector(etdump_data=data, etrecord=src / "etrecord.bin")
    assert _plain(one.to_dataframe()).equals(_plain(ref.to_dataframe()))
    with pytest.raises(UsageError, match="exactly one"):
        Inspector(etdump_data=data, etdump=decoded.etdump(0))
    with pytest.raises(
        UsageError, match=r"etdump must be a delegate_lens\.etdump\.ETDump, not bytes"
    ):
        Inspector(etdump=data)  # type: ignore[arg-type]


def test_worker_processes_start_when_the_runner_is_called(
    small_fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """collect calls the runner before starting its progress bar (a thread): the workers
    must be forked then, not when the first result is asked for."""
    from delegate_lens.dataset import _engines as engines
    from delegate_lens.dataset import _workers as workers

    methods: list[str] = []
    real = workers._start_method
    monkeypatch.setattr(workers, "_start_method", lambda: methods.append(real()) or methods[-1])
    sources = find_sources([str(small_fleet / "dev0")])
    outcomes = engines.run_processes(2)(
        str(tmp_path / "ds"), [sources[:5], sources[5:]], frozenset()
    )
    assert len(methods) == 1  # the pool exists before any result is consumed
    results = [r for batch in outcomes for r in batch]
    assert sorted(r.source for r in results) == sorted(s.path for s in sources)


def test_batches_are_made_as_files_are_found() -> None:
    """iter_batches takes sources lazily, keeps them all, in order. With several workers
    the first two batches per worker are small and made before the rest are found; then
    batches take a quarter per worker of what is ahead, shrinking towards the end. One
    worker takes batch_bytes (or MAX_BATCH_FILES files) at a time."""
    from delegate_lens.dataset._batching import (
        MIN_BATCH_BYTES,
        STREAM_FIRST_BYTES,
        iter_batches,
    )
    from delegate_lens.dataset._sources import Source

    taken: list[int] = []

    def sources(n: int, size: int) -> Iterator[Source]:
        for i in range(n):
            taken.append(i)
            yield Source(f"f{i}", size)

    mb = 1 << 20
    batches = iter_batches(sources(400, mb), 64 * mb, workers=2)
    quick = [next(batches) for _ in range(4)]
    assert [sum(s.size for s in b) for b in quick] == [STREAM_FIRST_BYTES] * 4
    assert len(taken) <= 4 * len(quick[0]) + 1  # made before the rest were found
    rest = list(batches)
    assert [s.path for b in [*quick, *rest] for s in b] == [f"f{i}" for i in range(400)]
    sizes = [sum(s.size for s in b) for b in rest]
    left = (400 - 16) * mb
    for size in sizes:  # a quarter per worker of what is left, within MIN_BATCH_BYTES..64 MB
        want = min(64 * mb, max(MIN_BATCH_BYTES, left // 8) // mb * mb, left)
        assert size == want
        left -= size
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= MIN_BATCH_BYTES
    taken.clear()
    serial = list(iter_batches(sources(400, mb), 64 * mb, workers=1))
    assert [len(b) for b in serial] == [64] * 6 + [16]
    many_small = list(iter_batches(sources(5000, 10), 64 * mb, workers=1))
    assert [len(b) for b in many_small] == [2000, 2000, 1000]  # MAX_BATCH_FILES
    big = list(iter_batches(sources(5, 100 * mb), 64 * mb, workers=2))
    assert [len(b) for b in big] == [1] * 5  # a file bigger than a batch goes alone
    assert list(iter_batches(sources(0, mb), 64 * mb, workers=3)) == []


def test_a_path_without_etdumps_fails_before_anything_is_collected(
    small_fleet: Path, tmp_path: Path
) -> None:
    """Files are found while they are collected, but every argument is checked first."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no ETDump"):
        collect([str(small_fleet), str(tmp_path / "empty")], str(tmp_path / "ds"))
    with pytest.raises(UsageError, match="no such file"):
        collect([str(small_fleet), str(tmp_path / "missing")], str(tmp_path / "ds"))
    assert not (tmp_path / "ds").exists()


def test_process_runner_shares_batches_and_passes_errors_on(
    small_fleet: Path, tmp_path: Path
) -> None:
    """run_processes(2): this process and one started process both collect (each batch
    one part, but for batches this process took back at the end, which it collects
    together as one part); an error in a batch reaches the consumer, from either
    process."""
    from delegate_lens.dataset import _engines as engines

    sources = find_sources([str(small_fleet)])
    batches = [[source] for source in sources]
    results = [
        r
        for batch in engines.run_processes(2)(str(tmp_path / "ds"), batches, frozenset())
        for r in batch
    ]
    assert sorted(r.source for r in results) == sorted(s.path for s in sources)
    order = {s.path: i for i, s in enumerate(sources)}
    parts: dict[str | None, list[int]] = {}
    for r in results:
        parts.setdefault(r.part, []).append(order[r.source])
    assert len(parts.pop(None)) == 1  # the broken file: no part
    collected = sorted(i for files in parts.values() for i in files)
    assert len(collected) == len(set(collected)) == len(sources) - 1  # each in one part
    assert len(parts) >= 3  # (a part holds one batch, or several taken back at the end)
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(UsageError, match="is a file"):
        for _ in engines.run_processes(2)(str(tmp_path / "file"), batches, frozenset()):
            pass
