"""collect's local engine (``dataset.workers``): batches sent ahead to started workers, the
claim table that lets this process take back what a worker has not started (even part of
a batch), and what happens when a worker fails, dies, or the caller stops early. Every
file must be collected exactly once, and results come back in the order found."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from etdump_variants import vary

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.dataset import DatasetStore, collect, find_sources, query
from delegate_lens.dataset import workers as engine
from delegate_lens.dataset.batching import MIN_BATCH_BYTES, STREAM_FIRST_BYTES, Batcher
from delegate_lens.dataset.engines import run_processes
from delegate_lens.dataset.sources import Source
from delegate_lens.errors import CollectError, UsageError

_FORK = "fork" in multiprocessing.get_all_start_methods()


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


def _claims(workers: int = 1) -> engine._Claims:
    return engine._Claims(multiprocessing.get_context(), workers)


def test_claims_a_worker_collects_what_was_not_taken_back() -> None:
    claims = _claims(2)
    assert claims.claim(0, 0, 10) == 10  # nothing taken: all of it
    assert claims.started(0)[0] == 0 and claims.started(1)[0] == -1
    assert not claims.take(0, 0, 4)  # started: too late
    assert claims.take(0, 2, 6)  # batch 2 from file 6 on, and every later batch
    assert claims.claim(0, 1, 10) == 10
    assert claims.claim(0, 2, 10) == 6
    assert claims.started(0)[0] == 2
    assert claims.claim(0, 3, 10) == 0  # after the batch taken from: all taken
    assert claims.take(1, 0, 0)  # all of batch 0 of worker 1
    assert claims.claim(1, 0, 5) == 0 and claims.started(1)[0] == -1  # skipped: not started
    claims.drop(0)  # the caller stopped: nothing more is started
    assert claims.claim(0, 3, 10) == 0 and claims.started(0)[0] == 2


class _Inbox:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)


def _books(batches: list[list[int]], started: int, since: float) -> engine._Pool:
    """A pool's books without processes: one worker sent ``batches`` (file sizes), the
    last it started ``started`` (at ``since``)."""
    pool = engine._Pool.__new__(engine._Pool)
    pool.books = threading.Lock()
    pool.claims = _claims(1)
    worker = engine._Worker(0, None, _Inbox(), None)
    worker.sent = deque(
        (seq, [Source(f"s{seq}f{k}", size) for k, size in enumerate(sizes)])
        for seq, sizes in enumerate(batches)
    )
    worker.seq = len(batches)
    pool.workers = [worker]
    for seq in range(started + 1):
        assert pool.claims.claim(0, seq, len(batches[seq]))
    pool.claims.since[0] = since
    return pool


def _files(runs: list[list[Source]] | None) -> list[str]:
    assert runs is not None
    return [source.path for run in runs for source in run]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> float:
    """The engine's clock stopped (a running batch's work left does not shrink while a
    test looks at it)."""
    now = time.monotonic()
    monkeypatch.setattr(
        engine, "time", types.SimpleNamespace(monotonic=lambda: now, perf_counter=time.perf_counter)
    )
    return now


def test_take_back_takes_half_of_what_is_left_from_the_newest_files(clock: float) -> None:
    """Worker: batch 0 running (1,000 bytes, just started), batch 1 (10 x 100 bytes) not
    started. At 1 ms per 100 bytes it has 20 ms left: this process takes the newest 10 ms
    of it, the last 10 files; the worker then collects batch 0 alone."""
    pool = _books([[1000], [100] * 10], started=0, since=clock)
    taken = _files(pool.take_back(rate=1e-5))
    assert taken == [f"s1f{k}" for k in range(10)]
    assert [seq for seq, _ in pool.workers[0].sent] == [0]
    assert pool.claims.claim(0, 1, 10) == 0  # the worker skips batch 1
    # with 1,000 bytes of batch 1 running instead, half is taken from inside batch 2
    pool = _books([[1000], [500] * 2, [100] * 10], started=1, since=clock)
    assert _files(pool.take_back(rate=1e-5)) == [f"s2f{k}" for k in range(10)]
    pool = _books([[100] * 10, [100] * 10], started=0, since=clock)
    # 20 ms left: the last 10 ms
    assert _files(pool.take_back(rate=1e-5)) == [f"s1f{k}" for k in range(10)]
    pool = _books([[100] * 10, [100] * 20], started=0, since=clock)
    # 30 ms left: 15 ms, from inside batch 1
    assert _files(pool.take_back(rate=1e-5)) == [f"s1f{k}" for k in range(5, 20)]
    assert [len(batch) for _, batch in pool.workers[0].sent] == [10, 5]
    assert pool.claims.claim(0, 1, 20) == 5  # the worker collects the first 5 of batch 1


def test_take_back_without_a_rate_halves_what_was_not_started(clock: float) -> None:
    pool = _books([[100] * 4, [100] * 8], started=0, since=clock)
    assert _files(pool.take_back(rate=None)) == [f"s1f{k}" for k in range(4, 8)]
    # two batches not started, 600 bytes: the last whole and the last file of the other,
    # as two runs (each in the order found)
    pool = _books([[100] * 4, [100] * 4, [100] * 2], started=0, since=clock)
    runs = pool.take_back(rate=None)
    assert runs is not None and [[s.path for s in run] for run in runs] == [
        ["s1f3"],
        ["s2f0", "s2f1"],
    ]
    assert pool.claims.claim(0, 1, 4) == 3 and pool.claims.claim(0, 2, 2) == 0


def test_take_back_leaves_what_is_not_worth_a_part(clock: float) -> None:
    pool = _books([[100] * 4, [100]], started=0, since=clock)
    assert pool.take_back(rate=1e-9) is None  # microseconds of work left
    pool = _books([[100] * 4], started=0, since=clock)
    assert pool.take_back(rate=1e-5) is None  # all started
    assert len(pool.workers[0].sent) == 1


def _batches(fleet: Path, size: int) -> list[list[Source]]:
    sources = find_sources([str(fleet)])
    return [sources[i : i + size] for i in range(0, len(sources), size)]


def _counted(location: str) -> dict[str, int]:
    """Rows per source file in the dataset."""
    table = query(location, "SELECT source, count(*) AS n FROM events GROUP BY source")
    return dict(zip(table.column("source").to_pylist(), table.column("n").to_pylist()))


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_every_file_is_collected_once_whoever_takes_it(fleet: Path, tmp_path: Path) -> None:
    """Batches sent ahead, cut ahead, and taken back at the end (in part or whole): each
    file has one result and its rows once in the dataset."""
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


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_worker_that_dies_is_an_error_not_a_hang(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def die(*args: Any) -> Any:
        os._exit(3)

    monkeypatch.setattr(engine, "_collect_packed", die)  # the forked worker runs this
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 5), frozenset())
    with pytest.raises(CollectError, match=r"worker process 1 ended \(exit code 3\)"):
        list(outcomes)
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("delegate")]


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_stopping_early_ends_the_workers(fleet: Path, tmp_path: Path) -> None:
    outcomes = run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 2), frozenset())
    assert isinstance(outcomes, Generator)
    first = next(outcomes)
    assert first
    outcomes.close()  # the caller stops: workers skip what they have not started, and end
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("delegate")]


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_an_error_in_a_worker_reaches_the_caller(fleet: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(UsageError, match="is a file"):
        for _ in run_processes(3)(str(tmp_path / "file"), _batches(fleet, 2), frozenset()):
            pass
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("delegate")]


def test_batcher_driven_by_its_finder() -> None:
    """With the driver finding files (finds_on_cut off): each started worker's first batch
    is small and cut from the first files found; then each takes half per worker of what
    is ahead (never under MIN_BATCH_BYTES), found yet or not; every file comes once, in
    order."""
    mb = 1 << 20
    made: list[int] = []

    def sources(n: int) -> Any:
        for i in range(n):
            made.append(i)
            yield Source(f"f{i}", mb)

    batcher = Batcher(sources(300), 64 * mb, workers=3)
    batcher.finds_on_cut = False
    first = [next(batcher) for _ in range(2)]  # one per started worker
    assert [sum(s.size for s in b) for b in first] == [STREAM_FIRST_BYTES] * 2
    assert len(made) <= 2 * STREAM_FIRST_BYTES // mb + 2  # only what they needed
    batcher.find(60)  # 60 ahead (the driver's step)
    step = next(batcher)
    assert sum(s.size for s in step) == 60 * mb // 6
    while batcher.wants_finding:
        batcher.find(100)
    assert len(made) == 300
    rest = list(batcher)
    left = (300 - 2 * STREAM_FIRST_BYTES // mb - 10) * mb
    for batch in rest:
        want = min(64 * mb, max(MIN_BATCH_BYTES, left // 6) // mb * mb, left)
        assert sum(s.size for s in batch) == want
        left -= want
    assert left == 0 and len(rest) > 5
    assert [s.path for b in [*first, step, *rest] for s in b] == [f"f{i}" for i in range(300)]


def _kept_processes() -> list[Any]:
    return [worker.process for pool in engine._kept for worker in pool.workers]


def _kept_pids() -> list[int]:
    return [process.pid for process in _kept_processes()]


def _ours() -> list[Any]:
    return [p for p in multiprocessing.active_children() if p.name.startswith("delegate")]


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_workers_are_kept_for_the_next_run(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that ends well keeps its workers; the next sends them its dataset, known
    hashes and working folder (relative paths are the caller's), and they collect it as
    new ones would, with nothing left over from the last run's taken-back batches."""
    serial = collect([str(fleet)], str(tmp_path / "serial"))
    first = collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    kept = _kept_pids()
    assert len(kept) == 1 and _ours()[0].pid == kept[0]
    second = collect([str(fleet)], str(tmp_path / "b"), workers=2, batch_bytes=3_000)
    assert _kept_pids() == kept  # the same worker
    for report, name in ((first, "a"), (second, "b")):
        assert [r.source for r in report.results] == [r.source for r in serial.results]
        assert {r.status for r in report.results} == {"collected"}
        assert _counted(str(tmp_path / name)) == _counted(str(tmp_path / "serial"))
    again = collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    assert {r.status for r in again.results} == {"skipped"}  # the new run's known hashes
    monkeypatch.chdir(fleet)  # relative paths, from another working folder
    relative = collect(["dev0", "dev1"], "../rel", workers=2, batch_bytes=3_000)
    assert _kept_pids() == kept
    assert {r.status for r in relative.results} == {"collected"}
    assert len(DatasetStore(str(tmp_path / "rel")).manifest()) == len(serial.results)


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_run_after_take_backs_collects_everything(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept worker's claims start afresh each run: batches taken back from it in one run
    (whose numbers the next run uses again) are not skipped in the next."""
    real = engine._collect_packed
    slow_down = tmp_path / "slow"  # while it exists, the worker is slow
    slow_down.touch()

    def slow(*args: Any) -> Any:  # this process then takes back from the worker
        if slow_down.exists():
            time.sleep(0.3)
        return real(*args)

    monkeypatch.setattr(engine, "_collect_packed", slow)
    monkeypatch.setattr(engine, "_MIN_TAKE_SECONDS", 0.0)  # any work left is worth taking

    def hung(*args: Any) -> None:
        raise TimeoutError("collect did not end")

    # (in this thread: with another thread running, workers would not be forked, and
    # would not run the slow version)
    previous = signal.signal(signal.SIGALRM, hung)
    try:
        for name in ("a", "b"):
            signal.alarm(60)
            report = collect([str(fleet)], str(tmp_path / name), workers=2, batch_bytes=3_000)
            signal.alarm(0)
            assert {r.status for r in report.results} == {"collected"}
            assert len(DatasetStore(str(tmp_path / name)).manifest()) == 40
            if name == "a":
                (pool,) = engine._kept
                assert pool.claims.table[1] != engine._NONE_TAKEN  # took back from the worker
                slow_down.unlink()  # the next run: the worker collects every batch it is sent
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_run_ends_when_all_a_worker_had_left_is_taken_back(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is slow to start its second batch: this process takes back everything
    it has left, so no answer is coming from it; the run must still end (a kept worker
    does not end, so its pipe says nothing)."""
    here, real = os.getpid(), engine._Claims.claim

    def late(self: Any, index: int, seq: int, files: int) -> int:
        if os.getpid() != here and seq >= 1:
            time.sleep(1.0)
        return real(self, index, seq, files)

    monkeypatch.setattr(engine._Claims, "claim", late)
    monkeypatch.setattr(engine, "_MIN_TAKE_SECONDS", 0.0)

    def hung(*args: Any) -> None:
        raise TimeoutError("the run did not end")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        results = [
            r
            for batch in run_processes(2)(str(tmp_path / "ds"), _batches(fleet, 4), frozenset())
            for r in batch
        ]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert sorted(r.source for r in results) == sorted(s.path for s in find_sources([str(fleet)]))
    assert len(DatasetStore(str(tmp_path / "ds")).manifest()) == 40


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_kept_worker_that_ended_is_replaced(fleet: Path, tmp_path: Path) -> None:
    collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    (worker,) = _kept_processes()
    pid = worker.pid
    os.kill(pid, signal.SIGKILL)
    worker.join(10)
    report = collect([str(fleet)], str(tmp_path / "b"), workers=2, batch_bytes=3_000)
    assert {r.status for r in report.results} == {"collected"}
    assert len(DatasetStore(str(tmp_path / "b")).manifest()) == len(report.results)
    assert _kept_pids() != [pid] and len(_ours()) == 1


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_kept_worker_ends_when_idle_and_on_shutdown(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "IDLE_SECONDS", 1.0)  # the forked worker reads these
    monkeypatch.setattr(engine, "TRIM_SECONDS", 0.5)
    collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    worker = _kept_processes()[0]
    worker.join(10)  # it ends on its own
    assert worker.exitcode == 0
    collect([str(fleet)], str(tmp_path / "b"), workers=3, batch_bytes=3_000)  # new ones
    kept = _kept_processes()
    assert len(kept) == 2 and worker not in kept
    engine.shutdown_workers()
    assert not engine._kept and all(process.exitcode == 0 for process in kept)


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_a_worker_waiting_in_a_run_does_not_end_as_idle(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle limit is for kept workers between runs: within a run, a worker waits for
    this process however long its own batch takes."""
    monkeypatch.setattr(engine, "IDLE_SECONDS", 0.2)
    real, here = engine.collect_batch, os.getpid()

    def slow_here(*args: Any) -> Any:  # this process's batches are slow, not the worker's
        if os.getpid() == here:
            time.sleep(0.6)
        return real(*args)

    monkeypatch.setattr(engine, "collect_batch", slow_here)
    report = collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=30_000)
    assert {r.status for r in report.results} == {"collected"}
    assert len(DatasetStore(str(tmp_path / "a")).manifest()) == 40
    assert len({r.part for r in report.results}) > 4  # the worker had batches after a wait
    worker = _kept_processes()[0]
    worker.join(10)  # the run is over: now it ends when idle
    assert worker.exitcode == 0


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_are_not_used_under_other_plugins(fleet: Path, tmp_path: Path) -> None:
    from delegate_lens.pluginmanager import get_plugin_manager, reset_plugin_manager

    get_plugin_manager()
    collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    kept = _kept_pids()
    reset_plugin_manager()
    try:
        get_plugin_manager()  # another plugin manager: workers forked under the old one
        collect([str(fleet)], str(tmp_path / "b"), workers=2, batch_bytes=3_000)
        assert _kept_pids() != kept and len(_ours()) == 1
    finally:
        reset_plugin_manager()


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_are_not_used_under_another_environment(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    kept = _kept_pids()
    monkeypatch.setenv("DELEGATE_LENS_TEST_SETTING", "changed")  # e.g. a config file's path
    collect([str(fleet)], str(tmp_path / "b"), workers=2, batch_bytes=3_000)
    assert _kept_pids() != kept
    again = _kept_pids()
    collect([str(fleet)], str(tmp_path / "c"), workers=2, batch_bytes=3_000)
    assert _kept_pids() == again  # the same setting: kept again


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_end_when_their_process_is_killed(tmp_path: Path, fleet: Path) -> None:
    """However this process ends (here: SIGKILL, no exit handler runs), its kept workers
    do not outlive it."""
    code = (
        "import sys; from delegate_lens.dataset import collect, workers; "
        "collect([sys.argv[1]], sys.argv[2], workers=3, batch_bytes=3_000); "
        "print(*[w.process.pid for w in workers._kept[0].workers], flush=True); "
        "import time; time.sleep(60)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(fleet), str(tmp_path / "ds")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    pids = [int(pid) for pid in process.stdout.readline().split()]
    assert len(pids) == 2
    process.kill()
    process.wait(10)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "a worker outlived its process"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running (not ended, and not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_two_threads_collecting_at_once(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One set of workers is kept; a run that finds it in use starts its own."""
    serial = collect([str(fleet)], str(tmp_path / "serial"))
    collect([str(fleet)], str(tmp_path / "warm"), workers=2, batch_bytes=3_000)
    started: list[int] = []
    real_init = engine._Pool.__init__

    def counted(self: Any, *args: Any) -> None:
        started.append(1)
        real_init(self, *args)

    monkeypatch.setattr(engine._Pool, "__init__", counted)
    reports: dict[str, Any] = {}

    def run(name: str) -> None:
        reports[name] = collect([str(fleet)], str(tmp_path / name), workers=2, batch_bytes=3_000)

    threads = [threading.Thread(target=run, args=(name,)) for name in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for name in ("x", "y"):
        assert {r.status for r in reports[name].results} == {"collected"}
        assert _counted(str(tmp_path / name)) == _counted(str(tmp_path / "serial"))
    assert len(engine._kept) == 1
    assert len(started) == 1  # one of the two used the kept workers, the other its own
    assert serial.rows == sum(_counted(str(tmp_path / "x")).values())


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
    assert not [p for p in dataset.rglob(".*") if p.is_file()]  # no temporary file
    rows = query(str(dataset), "SELECT count(*) AS n FROM events").column("n")[0].as_py()
    assert rows == 37 * len(known)
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("delegate")]
