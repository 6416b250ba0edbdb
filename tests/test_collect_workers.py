"""collect's local engine (``dataset.workers``): a process pool per run, one batch per task,
and what happens when a worker fails, dies, its parent dies, or the caller stops early
(or presses Ctrl-C). Every file must be collected exactly once, results come back in the
order found, and no worker outlives its run."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.connection
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


def _pids() -> set[int | None]:
    return {p.pid for p in _ours()}


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_workers_are_kept_for_the_next_run(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that goes to its end keeps its workers for the next run in this process
    (the same processes serve it, with its own dataset, known hashes and working folder:
    relative paths stay the caller's); shutdown_workers ends them."""
    serial = collect([str(fleet)], str(tmp_path / "serial"))
    report = collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    kept = _pids()
    assert len(kept) == 2
    assert [r.source for r in report.results] == [r.source for r in serial.results]
    assert _counted(str(tmp_path / "a")) == _counted(str(tmp_path / "serial"))
    again = collect([str(fleet)], str(tmp_path / "a"), workers=2, batch_bytes=3_000)
    assert {r.status for r in again.results} == {"skipped"}  # the run's known hashes
    monkeypatch.chdir(fleet)  # relative paths, from another working folder
    relative = collect(["dev0", "dev1"], "../rel", workers=2, batch_bytes=3_000)
    assert {r.status for r in relative.results} == {"collected"}
    assert len(DatasetStore(str(tmp_path / "rel")).manifest()) == len(serial.results)
    other = collect(["dev0"], "../other", workers=2, batch_bytes=3_000)  # none known
    assert {r.status for r in other.results} == {"collected"}
    assert _pids() == kept  # every run served by the same two
    engine.shutdown_workers()
    assert not _ours()


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_do_not_hold_the_dataset_lock(fleet: Path, tmp_path: Path) -> None:
    """Workers forked while a run held the dataset's write lock (a flock, shared by a
    forked child's copy of the descriptor) and kept after it do not hold it: the next
    run into the same dataset, in this process or in another, takes it at once (with
    the copy kept, the one here waited forever, and so did the other process)."""
    from delegate_lens.dataset import _collector as collector

    def waits() -> None:
        raise AssertionError("the dataset's lock is still held after the run")

    ds = str(tmp_path / "ds")
    first = collect([str(fleet / "dev0")], ds, workers=2, batch_bytes=3_000)
    assert {r.status for r in first.results} == {"collected"}
    kept = _pids()
    assert len(kept) == 2
    original = collector.on_wait
    collector.on_wait = waits
    try:
        again = collect([str(fleet)], ds, workers=2, batch_bytes=3_000)
    finally:
        collector.on_wait = original
    assert sorted({r.status for r in again.results}) == ["collected", "skipped"]
    assert _pids() == kept
    more = tmp_path / "more"
    more.mkdir()
    (more / "x.etdp").write_bytes(vary((fleet / "dev0" / "run00.etdp").read_bytes(), 99))
    other = subprocess.run(  # another process, while this one keeps its workers
        [sys.executable, "-m", "delegate_lens", "collect", str(more), "-o", ds],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 0, other.stderr
    assert "waiting" not in other.stderr
    assert _pids() == kept
    assert len(DatasetStore(ds).manifest()) == 41


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_serve_only_while_they_can(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept workers are not used when one of them has died since (new ones start; the
    run does not fail), when another number of workers is asked for, or when the
    environment changed; they end by themselves after IDLE_SECONDS without a run."""
    from delegate_lens.dataset import _keeping

    def run(name: str, workers: int = 2) -> set[int | None]:
        report = collect([str(fleet)], str(tmp_path / name), workers=workers, batch_bytes=3_000)
        assert {r.status for r in report.results} == {"collected"}
        return _pids()

    first = run("a")
    assert isinstance(_keeping._kept, engine._Pool)
    killed = _keeping._kept.processes[0]
    os.kill(killed.pid or 0, signal.SIGKILL)
    assert multiprocessing.connection.wait([killed.sentinel], 30)  # (all its threads gone)
    second = run("b")
    assert len(second) == 2 and not second & first
    third = run("c", workers=3)
    assert len(third) == 3 and not third & second
    monkeypatch.setenv("DELEGATE_LENS_TEST_SETTING", "changed")
    fourth = run("d", workers=3)
    assert len(fourth) == 3 and not fourth & third
    assert run("e", workers=3) == fourth
    monkeypatch.setattr(_keeping, "IDLE_SECONDS", 0.2)
    run("f", workers=3)
    deadline = time.monotonic() + 30
    while _ours():
        assert time.monotonic() < deadline, "kept workers did not end when idle"
        time.sleep(0.05)


def _what_a_worker_has() -> tuple[str, tuple[str, ...], bool, bool, str]:
    """(In a worker) its working folder, plugin options, whether its plugins are loaded,
    whether it ignores Ctrl-C, and its run's dataset."""
    from delegate_lens import pluginmanager

    return (
        os.getcwd(),
        pluginmanager.plugin_options(),
        pluginmanager.built_plugin_manager() is not None,
        signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
        engine._run.location,
    )


def _what_a_kept_worker_has() -> tuple[object, tuple[str, ...] | None]:
    """(In a worker) the configuration it has, and its plugin options once loaded."""
    from delegate_lens import config, pluginmanager

    loaded = pluginmanager.built_plugin_manager() is not None
    return config.get_config().data, pluginmanager.plugin_options() if loaded else None


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_serve_only_under_the_same_plugins_and_configuration(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept workers hold the configuration and plugin manager they were forked with: they
    are not used once this process has read the configuration again, or built another
    plugin manager (even with the same options and plugins), or applied other -p
    options; the new ones have what this process has."""
    from delegate_lens import config, pluginmanager
    from delegate_lens.dataset import _keeping

    monkeypatch.chdir(tmp_path)
    config.reset_config()
    pluginmanager.reset_plugin_manager()

    def run(name: str) -> tuple[set[int | None], tuple[object, tuple[str, ...] | None]]:
        report = collect([str(fleet)], str(tmp_path / name), workers=2, batch_bytes=3_000)
        assert {r.status for r in report.results} == {"collected"}
        assert isinstance(_keeping._kept, engine._Pool)
        has = _keeping._kept.executor.submit(_what_a_kept_worker_has).result(timeout=60)
        return _pids(), has

    try:
        first, has = run("a")
        assert len(first) == 2 and has == ({}, None)
        again, _ = run("b")
        assert again == first  # nothing changed
        (tmp_path / "delegate-lens.toml").write_text("[x]\na = 1\n")
        config.reset_config()
        config.get_config()
        second, has = run("c")
        assert len(second) == 2 and not second & first
        assert has == ({"x": {"a": 1}}, None)
        pluginmanager.get_plugin_manager()
        third, has = run("d")
        assert len(third) == 2 and not third & second and has[1] == ()
        pluginmanager.reset_plugin_manager()
        pluginmanager.get_plugin_manager()  # another manager, the same plugins
        fourth, _ = run("e")
        assert len(fourth) == 2 and not fourth & third
        pluginmanager.apply_plugin_options(["no:demo_backend"])
        fifth, has = run("f")
        assert len(fifth) == 2 and not fifth & fourth
        assert has == ({"x": {"a": 1}}, ("no:demo_backend",))
        assert run("g") == (fifth, has)
    finally:
        engine.shutdown_workers()
        pluginmanager.reset_plugin_manager()
        config.reset_config()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_a_worker_gets_its_callers_setting(
    method: str, fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers started from a fork server (as when another thread runs) get, from the
    pool's initializer, what forked ones inherit: the working folder, the plugins loaded
    with the caller's -p options; both ignore Ctrl-C; and collect the same."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"needs {method}")
    from delegate_lens.pluginmanager import apply_plugin_options, reset_plugin_manager

    monkeypatch.setattr(engine, "_start_method", lambda: method)
    monkeypatch.chdir(tmp_path)
    apply_plugin_options(["no:delegate_lens_no_such_plugin"])
    try:
        pool = engine._Pool(2, setup=engine._run_setup("the-dataset", frozenset()))
        try:
            has = pool.executor.submit(_what_a_worker_has).result(timeout=60)
            pool.begin(engine._run_setup("another", frozenset()))  # as kept workers do
            for started in pool.starting:
                started.result(timeout=60)
            again = pool.executor.submit(_what_a_worker_has).result(timeout=60)
        finally:
            pool.close(stop=False)
        assert has == (
            str(tmp_path),
            ("no:delegate_lens_no_such_plugin",),
            True,
            True,
            "the-dataset",
        )
        assert again == (*has[:-1], "another")
        serial = collect([str(fleet)], "serial")
        report = collect([str(fleet)], "ds", workers=2, batch_bytes=3_000)
        assert [r.source for r in report.results] == [r.source for r in serial.results]
        assert _counted(str(tmp_path / "ds")) == _counted(str(tmp_path / "serial"))
    finally:
        engine.shutdown_workers()
        reset_plugin_manager()
    assert not _ours()


_SLOW_WORKER = """
import os, sys, time
from delegate_lens.dataset import collect, _workers as workers
real = workers.collect_batch
def slow(location, sources, known):
    if os.getpid() != {parent}:
        open(os.path.join(sys.argv[3], str(os.getpid())), "w").close()
        time.sleep(1.0)
    return real(location, sources, known)
workers.collect_batch = slow
collect([sys.argv[1]], sys.argv[2], workers=3, batch_bytes=3_000)
"""


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_workers_end_when_their_process_is_killed(tmp_path: Path, fleet: Path) -> None:
    """However this process ends (here: SIGKILL in the middle of a run, no exit handler
    runs), its workers do not outlive it: each ends after the batch it is writing."""
    pids = tmp_path / "pids"
    pids.mkdir()
    code = "import os; parent = os.getpid(); exec(CODE.format(parent=parent))"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"CODE = {_SLOW_WORKER!r}\n{code}",
            str(fleet),
            str(tmp_path / "ds"),
            str(pids),
        ]
    )
    deadline = time.monotonic() + 60
    while len(list(pids.iterdir())) < 3:  # (3 workers, each in its first batch)
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.02)
    workers = [int(p.name) for p in pids.iterdir()]
    process.kill()
    process.wait(10)
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived its process"
        time.sleep(0.05)


_KEEP_AND_FORK = """
import json, multiprocessing, os, sys, time
from delegate_lens.dataset import collect
collect([sys.argv[1]], sys.argv[2], workers=2, batch_bytes=3_000)
workers = [p.pid for p in multiprocessing.active_children()]
child = os.fork()  # holds copies of what the workers watch their parent by
if child == 0:
    time.sleep(60)
    os._exit(0)
print(json.dumps({"workers": workers, "child": child}), flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not _FORK, reason="needs fork")
def test_kept_workers_end_when_their_process_is_killed(tmp_path: Path, fleet: Path) -> None:
    """Kept workers end when their process is killed between runs, even when it forked
    another child since (which holds the other end of their parent's sentinel)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _KEEP_AND_FORK, str(fleet), str(tmp_path / "ds")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    told = json.loads(process.stdout.readline())
    try:
        assert len(told["workers"]) == 2 and all(_alive(pid) for pid in told["workers"])
        process.kill()
        process.wait(10)
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in told["workers"]):
            assert time.monotonic() < deadline, "a kept worker outlived its process"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(told["child"], signal.SIGKILL)


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
