"""collect's local engine (``dataset.workers``) across runs and beyond its process: workers
kept for the next run in this process, and only while they can serve it (none died, the
same number, environment, configuration and plugins) without holding the dataset's lock;
workers started from a fork server get their caller's setting; and no worker outlives its
process when that is killed (in a run or between runs). One run's pool, failures and
stopping early are tested in ``test_collect_workers.py``."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from etdump_variants import vary

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

# test_collect_workers.py's fixtures (forked workers, autouse; 40 small dumps) and helpers
from test_collect_workers import _FORK, _alive, _counted, _ours
from test_collect_workers import fleet as fleet
from test_collect_workers import forked_workers as forked_workers

from delegate_lens.dataset import DatasetStore, collect
from delegate_lens.dataset import _workers as engine


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
