"""collect's local engine (``dataset.workers``): a process pool per run, one batch per task,
and what happens when a worker fails or dies, or the caller stops early (or presses
Ctrl-C). Every file must be collected exactly once, results come back in the order found,
and no worker outlives its run. Workers kept between runs, and what happens when their
parent dies, are tested in ``test_collect_kept_workers.py``."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from etdump_variants import vary

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.dataset import DatasetStore, collect, find_sources, query
from delegate_lens.dataset import _workers as engine
from delegate_lens.dataset._batching import (
    MAX_BATCH_FILES,
    MIN_BATCH_BYTES,
    STREAM_FIRST_BYTES,
    Batcher,
)
from delegate_lens.dataset._engines import run_processes
from delegate_lens.dataset._sources import Source
from delegate_lens.errors import CollectError, UsageError

_FORK = "fork" in multiprocessing.get_all_start_methods()


@pytest.fixture(autouse=True)
def forked_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked from this process, whatever ran before in it: the engine picks a
    fork server once another Python thread runs (one an earlier test left, e.g. tqdm's
    monitor), and a fork server's workers do not see what these tests patch here. The test
    of the fork server sets the method itself."""
    if _FORK:
        monkeypatch.setattr(engine, "_start_method", lambda: "fork")


@pytest.fixture
def fleet(tmp_path: Path, vectors_dir: Path) -> Path:
    """40 distinct small dumps in two folders."""
    base = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    root = tmp_path / "fleet"
    for i in range(40):
        folder = root / f"dev{i % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"run{i:02d}.etdp").write_bytes(vary(base, i) if i else base)
    return root


def _ours() -> list[Any]:
    """This process's collect workers still running."""
    return [p for p in multiprocessing.active_children() if p.name.startswith("delegate")]


def _batches(fleet: Path, size: int) -> list[list[Source]]:
    sources = find_sources([str(fleet)])
    return [sources[i : i + size] for i in range(0, len(sources), size)]


def _counted(location: str) -> dict[str, int]:
    """Rows per source file in the dataset."""
    table = query(location, "SELECT source, count(*) AS n FROM events GROUP BY source")
    return dict(zip(table.column("source").to_pylist(), table.column("n").to_pylist()))


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_every_file_is_collected_once_whatever_the_batches(fleet: Path, tmp_path: Path) -> None:
    """Batches of one file to all of them, over two workers: each file has one result
    and its rows once in the dataset."""
    sources = find_sources([str(fleet)])
    serial = collect([str(fleet)], str(tmp_path / "serial"))
    for size in (1, 3, 7, 40):
        location = str(tmp_path / f"ds{size}")
        results = [
            r
            for batch in run_processes(2)(location, _batches(fleet, size), frozenset())
            for r in batch
        ]
        assert sorted(r.source for r in results) == sorted(s.path for s in sources)
        assert {r.status for r in results} == {"collected"}
        assert _counted(location) == _counted(str(tmp_path / "serial"))
        assert len(DatasetStore(location).manifest()) == len(sources)
    assert serial.rows == sum(_counted(str(tmp_path / "serial")).values())


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_collect_with_workers_reports_in_the_order_found(fleet: Path, tmp_path: Path) -> None:
    sources = find_sources([str(fleet)])
    report = collect([str(fleet)], str(tmp_path / "ds"), workers=2, batch_bytes=20_000)
    assert [r.source for r in report.results] == [s.path for s in sources]
    again = collect([str(fleet)], str(tmp_path / "ds"), workers=3, batch_bytes=20_000)
    assert [r.source for r in again.results] == [s.path for s in sources]
    assert {r.status for r in again.results} == {"skipped"}  # incremental


def _die(*args: Any) -> Any:
    os._exit(3)


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_worker_that_dies_is_an_error_not_a_hang(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "collect_batch", _die)  # the forked workers run this
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 5), frozenset())
    with pytest.raises(CollectError, match=r"worker process [12] ended \(exit code 3; pid \d+\)"):
        list(outcomes)
    assert not _ours()


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_killed_worker_is_named(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker is killed (SIGKILL) in the middle of a batch: the error names that one
    (its number, exit code and pid), not the other the pool then stops."""
    real, pids = engine.collect_batch, tmp_path / "killed"

    def killed(location: str, sources: list[Source], known: frozenset[str]) -> Any:
        if any(source.path.endswith("run07.etdp") for source in sources):
            pids.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return real(location, sources, known)

    monkeypatch.setattr(engine, "collect_batch", killed)
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 1), frozenset())
    with pytest.raises(
        CollectError, match=r"worker process [12] ended \(exit code -9; pid (\d+)\)"
    ) as caught:
        list(outcomes)
    assert f"pid {pids.read_text()})" in str(caught.value)
    assert not _ours()


def _cannot_load(text: str) -> Exception:
    raise RuntimeError(f"{text}: this error cannot be rebuilt")


class _Unpicklable(Exception):
    """Pickles, but does not come back (whatever reducers are registered for exceptions:
    once distributed is imported, one rebuilds an exception whose __init__ takes other
    arguments, and an earlier test in the same process imported it)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a} {b}")

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (_cannot_load, (str(self),))


def _raise_unpicklable(*args: Any) -> Any:
    raise _Unpicklable("disk", "on fire")


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_an_error_that_does_not_come_back_whole_comes_as_its_text(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "collect_batch", _raise_unpicklable)
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 5), frozenset())
    with pytest.raises(CollectError, match="disk on fire"):
        list(outcomes)
    assert not _ours()


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_worker_that_cannot_start_is_an_error_without_a_traceback(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The pool's initializer fails (here: the caller's working folder is gone when the
    worker starts): the first batch says why, as our error; no traceback is logged."""
    gone = tmp_path / "gone"
    with monkeypatch.context() as patched:
        patched.setattr(os, "getcwd", lambda: str(gone))  # (what the workers are sent)
        outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 5), frozenset())
    with pytest.raises(CollectError, match=r"a worker process could not start: .*gone"):
        list(outcomes)
    assert "Traceback" not in capfd.readouterr().err
    assert not _ours()


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_stopping_early_ends_the_workers(fleet: Path, tmp_path: Path) -> None:
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 2), frozenset())
    assert isinstance(outcomes, Generator)
    first = next(outcomes)
    assert first
    outcomes.close()  # the caller stops: workers skip what they have not started, and end
    assert not _ours()
    # whole parts only: every part written is known to the manifest, and none was
    # started after the stop beyond what the workers were collecting then
    parts = list((tmp_path / "ds").glob("part-*.parquet"))
    assert len(DatasetStore(str(tmp_path / "ds")).manifest()) == 2 * len(parts)
    assert len(parts) < len(_batches(fleet, 2))


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_stopping_early_starts_no_more_batches(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller stops at the first result (the quick first batch) while the other
    worker is in a slow one: batches submitted and not started then are not collected
    (at most the one the quick worker took meanwhile is), though the pool had them."""
    real = engine.collect_batch

    def slow(location: str, sources: list[Source], known: frozenset[str]) -> Any:
        if not any(source.path.endswith("run00.etdp") for source in sources):
            time.sleep(1.0)
        return real(location, sources, known)

    monkeypatch.setattr(engine, "collect_batch", slow)
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 2), frozenset())
    assert isinstance(outcomes, Generator)
    assert any(r.source.endswith("run00.etdp") for r in next(outcomes))
    outcomes.close()
    assert not _ours()
    parts = list((tmp_path / "ds").glob("part-*.parquet"))
    assert 2 <= len(parts) <= 3  # of the 4 submitted (2 per worker)
    assert len(DatasetStore(str(tmp_path / "ds")).manifest()) == 2 * len(parts)


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_an_error_in_a_worker_reaches_the_caller(fleet: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(UsageError, match="is a file"):
        for _ in run_processes(3)(str(tmp_path / "file"), _batches(fleet, 2), frozenset()):
            pass
    assert not _ours()


def test_batcher_for_several_workers() -> None:
    """Two quick batches per worker from the first files found (the workers start at
    once, only those files found yet); then each a quarter per worker of what is ahead
    (found a step at a time), never under MIN_BATCH_BYTES: batches shrink towards the end;
    every file comes once, in order."""
    mb = 1 << 20
    made: list[int] = []

    def sources(n: int) -> Any:
        for i in range(n):
            made.append(i)
            yield Source(f"f{i}", mb)

    batcher = Batcher(sources(3000), 64 * mb, workers=3)
    quick = [next(batcher) for _ in range(6)]
    assert [sum(s.size for s in b) for b in quick] == [STREAM_FIRST_BYTES] * 6
    assert len(made) <= 6 * STREAM_FIRST_BYTES // mb + 1  # only what they needed
    step = next(batcher)  # 2,000 more found, of which a quarter per worker: over 64 MB
    assert len(made) == 6 * STREAM_FIRST_BYTES // mb + 1 + MAX_BATCH_FILES
    assert sum(s.size for s in step) == 64 * mb
    rest = list(batcher)
    assert len(made) == 3000
    left = 3000 - 6 * STREAM_FIRST_BYTES // mb - 64  # MB
    want = []
    while left:
        want.append(min(64, max(MIN_BATCH_BYTES // mb, left // 12), left))
        left -= want[-1]
    assert [sum(s.size for s in b) // mb for b in rest] == want
    assert want[0] == 64 and want[-2] == MIN_BATCH_BYTES // mb  # (shrinking to the end)
    assert [s.path for b in [*quick, step, *rest] for s in b] == [f"f{i}" for i in range(3000)]


def _alive(pid: int) -> bool:
    """Running (not ended, and not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _running_with(text: str) -> list[int]:
    """The processes running whose command line holds ``text`` (a forked worker's is its
    parent's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:  # (ended meanwhile)
            continue
    return [pid for pid in found if _alive(pid)]


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_two_threads_collecting_at_once(fleet: Path, tmp_path: Path) -> None:
    """Two runs at once in two threads (each its own pool, its workers started from a
    fork server, as another thread runs): both collect every file, once; one pool is
    kept after them."""
    serial = collect([str(fleet)], str(tmp_path / "serial"))
    reports: dict[str, Any] = {}

    def run(name: str) -> None:
        reports[name] = collect([str(fleet)], str(tmp_path / name), workers=2, batch_bytes=3_000)

    threads = [threading.Thread(target=run, args=(name,)) for name in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for name in ("x", "y"):
        assert [r.source for r in reports[name].results] == [r.source for r in serial.results]
        assert {r.status for r in reports[name].results} == {"collected"}
        assert _counted(str(tmp_path / name)) == _counted(str(tmp_path / "serial"))
    assert len(_ours()) <= 2
    engine.shutdown_workers()
    assert not _ours()


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_ctrl_c_stops_collect_cleanly(tmp_path: Path, vectors_dir: Path) -> None:
    """Ctrl-C in the middle of `collect --workers 2`: exit 130, no traceback (from this
    process or a worker), every part written whole and known to the manifest, no
    temporary file left, no worker left running."""
    base = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for i in range(600):
        (fleet / f"run{i:04d}.etdp").write_bytes(vary(base, i) if i else base)
    dataset = tmp_path / "ds"
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from delegate_lens.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "collect",
            str(fleet),
            "-o",
            str(dataset),
            "-q",
            "--workers",
            "2",
            "--batch-mb",
            "0.01",
        ],  # a part per file or two: many
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 60
    while not list(dataset.glob("part-*.parquet")) and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: to every process of the group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err  # (hundreds of parts to go when interrupted)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    parts = {p.name for p in dataset.glob("part-*.parquet")}
    listed = {json.loads(p.read_text())["part"] for p in (dataset / "_manifest").glob("*.json")}
    # this process may be stopped between a part and its manifest entry (by design: the
    # part lists its files itself, and the manifest recovers them from it)
    assert parts and listed <= parts
    known = DatasetStore(str(dataset)).manifest()
    assert {entry["part"] for entry in known.values()} == parts
    # no temporary file (the dataset's lock file stays: store.DatasetStore.writing)
    assert not [p for p in dataset.rglob(".*") if p.is_file() and p.name != ".lock"]
    rows = query(str(dataset), "SELECT count(*) AS n FROM events").column("n")[0].as_py()
    assert rows == 37 * len(known)
    assert not _running_with(str(dataset))  # no worker left (theirs name the dataset)
