"""``collect``'s local engine: a :class:`~concurrent.futures.ProcessPoolExecutor` of
``workers`` processes, one task per batch.

This process finds the files and cuts them into batches as they are found
(:mod:`~delegate_lens.dataset._batching`), keeps ``DEPTH`` batches per worker submitted
(the one a worker collects and the next, so no worker waits for this process between two)
and passes each batch's results on as it finishes. The workers take their batches from
the pool's one queue: none idles while a batch is queued, and at the end, where batches
are smallest, they finish close together.

The pool is kept from run to run in this process (:mod:`~delegate_lens.dataset._keeping`:
while the settings are the same and every worker runs; it ends after ``IDLE_SECONDS`` idle,
on :func:`shutdown_workers`, or with this process), and started with a run's first batch
otherwise (before any other thread of this process: a progress bar's, the pool's own).
Its workers are forked (instant: they share this process's imports, plugins and
configuration) where the platform allows, else started from a fork server or spawned. A
forked worker does not hold the dataset's write lock it was forked under
(:mod:`~delegate_lens.dataset._store` closes it in every forked child). The pool's
initializer (:func:`_start_worker`) is handed the caller's settings
(:class:`~delegate_lens.dataset._keeping.WorkerSettings`): it loads the plugins the
caller had loaded (with its ``-p`` options) where the worker did not inherit them,
ignores Ctrl-C (the caller stops the run: a worker finishes the batch it is writing,
takes no other, and ends), and watches its parent: a worker ends when its parent does,
however it ends. Each run starts with one task per worker (:func:`_begin_run`: the
run's dataset, known hashes and working folder). A worker that dies breaks the pool: a
:class:`~delegate_lens.errors.CollectError` names it and its exit code; a run that fails
or is stopped ends its workers.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Barrier, Event
from typing import Any, TypeVar

import attrs

from delegate_lens.dataset import _keeping
from delegate_lens.dataset._batch import FileResult, collect_batch
from delegate_lens.dataset._keeping import WorkerSettings
from delegate_lens.dataset._sources import Source
from delegate_lens.errors import CollectError, DelegateLensError

_T = TypeVar("_T")
_R = TypeVar("_R")

DEPTH = 2  # batches submitted per worker and not yet done: the one it collects, and the next

_Packed = tuple[
    list[str], list[int], list[str | None], list[str | None], list[int], list[Any], list[str | None]
]
_PackedResults = tuple[list[Any], ...]


def _pack(batch: list[Source]) -> _Packed:
    """A batch as a few lists (pickled far faster than an object per file); label
    mappings shared by files are sent once."""
    maps: dict[int, int] = {}
    shared: list[Any] = []
    which = []
    for source in batch:
        k = maps.get(id(source.labels))
        if k is None:
            k = maps[id(source.labels)] = len(shared)
            shared.append(source.labels)
        which.append(k)
    return (
        [s.path for s in batch],
        [s.size for s in batch],
        [s.etrecord for s in batch],
        [s.labels_file for s in batch],
        which,
        shared,
        [s.program for s in batch],
    )


_RESULT_FIELDS = tuple(field.name for field in attrs.fields(FileResult))[1:]  # not source


def _unpack(packed: _PackedResults, batch: list[Source]) -> list[FileResult]:
    """The results of ``batch`` from :func:`_collect_packed`."""
    return [FileResult(source.path, *fields) for source, fields in zip(batch, zip(*packed))]


@attrs.define
class _WorkerRun:
    """What a worker keeps: from the pool's initializer (:func:`_start_worker`) once,
    and from each run's start (:func:`_begin_run`)."""

    location: str = ""
    known: frozenset[str] = frozenset()
    stop: Event | None = None  # the pool's stop event: set, a worker takes no more batches
    barrier: Barrier | None = None  # each worker takes one run start (see _Pool.begin)
    error: Exception | None = None  # why the worker could not start (raised by a task)
    busy: threading.Lock = attrs.field(factory=threading.Lock)  # held while collecting


_run = _WorkerRun()


def _start_worker(
    stop: Event, barrier: Barrier, settings: WorkerSettings, setup: bytes | None
) -> None:
    """The pool's initializer: runs once in each worker, before its first task
    (``settings``: the caller's when the pool started; ``setup``: its first run's, see
    :func:`_begin_run`)."""
    # Ctrl-C is the caller's to handle: it stops the run, and this worker ends after the
    # batch it is writing (no half-written part, no second traceback). SIGINT came in
    # blocked (:func:`_sigint_blocked`): one sent meanwhile is dropped here, not raised.
    with contextlib.suppress(ValueError):  # (only a main thread may; a worker's is)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _watch_parent()
    _keep_freed_memory()
    _run.stop, _run.barrier = stop, barrier
    try:  # (an initializer's error would break the pool with a logged traceback)
        settings.apply()  # the caller's plugins, where not inherited
        if setup is not None:
            _set_run(setup)
    except Exception as exc:  # the first batch raises it (and a later run's start)
        _run.error = _cannot_start(exc)


def _cannot_start(exc: Exception) -> Exception:
    if isinstance(exc, DelegateLensError):
        return exc
    return CollectError(f"collect: a worker process could not start: {exc}")


def _run_setup(location: str, known: frozenset[str]) -> bytes:
    """What a worker needs of a run: its dataset, known hashes and working folder,
    pickled once per run."""
    return pickle.dumps((location, known, os.getcwd()), pickle.HIGHEST_PROTOCOL)


def _set_run(setup: bytes) -> None:
    location, known, folder = pickle.loads(setup)
    os.chdir(folder)  # the run's relative paths are the caller's
    _run.location, _run.known = location, known


def _begin_run(setup: bytes) -> None:
    """A kept worker's first task of a later run (one per worker: each waits at the
    pool's barrier until every worker has taken one): the run's ``setup``."""
    error = _run.error
    try:
        _set_run(setup)
    except Exception as exc:
        error = error or _cannot_start(exc)
    assert _run.barrier is not None
    try:  # (first: a worker raising here takes no sibling's start)
        _run.barrier.wait(_BARRIER_SECONDS)
    except threading.BrokenBarrierError:
        error = error or CollectError(
            f"collect: the workers did not all start within {_BARRIER_SECONDS:.0f} s"
        )
    if error is not None:
        raise error


_BARRIER_SECONDS = 300.0
"""How long a worker waits for its siblings to take their run start."""


def _keep_freed_memory() -> None:
    """In a worker (a process of our own, ending with the run): let glibc's malloc keep
    the memory one batch frees for the next, instead of handing it back to the system and
    faulting fresh pages in again (a batch allocates tens of MB: thousands of page faults
    of 3-4 us each; measured: about 3 faults per small file without this, 0.1 with it,
    benchmarks/trace_collect.py). Not done in the caller's process, whose allocator we
    leave alone; nothing where the C library is not glibc."""
    import ctypes

    try:
        mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    except (OSError, TypeError):  # not Unix
        return
    if mallopt is not None:  # (glibc)
        mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: its maximum; bigger blocks still mapped
        mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GB freed at the heap's top


def _watch_parent() -> None:
    """End this worker when its parent ends, however it ends (the pool's queues alone
    would never say so: a forked worker holds their other ends too), after the batch it
    is writing. The parent's sentinel says so at once, unless another child the parent
    forked later holds a copy of its other end (kept workers outlive their run): then
    this worker sees within a second that it has another parent."""
    import multiprocessing
    from multiprocessing.connection import wait as wait_for

    parent = multiprocessing.parent_process()
    if parent is None:
        return
    ppid = os.getppid()

    def watch() -> None:
        while not wait_for([parent.sentinel], 1.0) and os.getppid() == ppid:
            pass
        with _run.busy:  # (the batch being written first)
            os._exit(0)

    threading.Thread(target=watch, name="delegate-lens-parent", daemon=True).start()


def _collect_packed(packed: _Packed) -> _PackedResults | None:
    """A worker's task: :func:`collect_batch` of a packed batch into the run's dataset,
    its results packed too (a list per field but ``source``, in the batch's order);
    ``None`` when the run was stopped before the batch started."""
    with _run.busy:
        if _run.stop is not None and _run.stop.is_set():
            return None
        if _run.error is not None:
            raise _run.error
        paths, sizes, etrecords, labels_files, which, shared, programs = packed
        sources = [
            Source(path, size, etrecord, labels_file, shared[k], program)
            for path, size, etrecord, labels_file, k, program in zip(
                paths, sizes, etrecords, labels_files, which, programs
            )
        ]
        try:
            results = collect_batch(_run.location, sources, _run.known)
        except Exception as exc:
            if _comes_back(exc):
                raise
            text = f"{exc!r}"
        else:
            return tuple([getattr(r, name) for r in results] for name in _RESULT_FIELDS)
    # raised here, not where it was caught: with no context (the error that would not
    # come back), which some reducers pickle too (distributed's, once it is imported)
    raise CollectError(text)


def _comes_back(exc: Exception) -> bool:
    """Whether ``exc`` goes back to the caller whole (pickled, then unpickled there)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return False
    return True


def _start_method() -> str:
    """How worker processes start: ``fork`` on Linux while this process runs no other
    Python thread (instant: the workers share the collector's imports; numpy's and
    Arrow's native pools re-create themselves after a fork), else ``forkserver`` (one
    server imports the collector, ~0.4 s, and workers fork from it), else ``spawn``."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back from this thread meanwhile, and from the workers it starts until
    their initializer ignores it; one sent meanwhile is raised here at the end."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


_GRACE_SECONDS = 2.0
"""How long a broken pool's workers get to end before they are killed."""


class _Pool:
    """``workers`` processes (an executor), kept from run to run: each run starts with
    :meth:`begin` and is tracked by the batches submitted and not yet done."""

    def __init__(
        self, workers: int, settings: WorkerSettings | None = None, setup: bytes | None = None
    ) -> None:
        """``setup``: the first run's (:func:`_run_setup`), given to each worker as it
        starts (no :meth:`begin` for that run)."""
        import multiprocessing

        self.settings = settings or WorkerSettings.now(workers)
        method = _start_method()
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(
                ["delegate_lens.dataset._event_table", "pyarrow.parquet"]
            )
        self.workers = workers
        self.stop = context.Event()
        self.barrier = context.Barrier(workers)
        self.executor = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(self.stop, self.barrier, self.settings, setup),
        )
        self.running: dict[Future[_PackedResults | None], list[Source]] = {}
        self.starting: list[Future[None]] = []  # this run's starts (one per worker)
        self.processes: list[BaseProcess] = []  # in the order started

    def begin(self, setup: bytes) -> None:
        """Start a later run with kept workers: each takes one start (:func:`_begin_run`)
        before any batch of the run."""
        self.starting = [self._submit(_begin_run, setup) for _ in range(self.workers)]

    def usable(self) -> bool:
        """Every worker still running, nothing broken: kept workers can serve a run."""
        from multiprocessing.connection import wait as ended_within

        if getattr(self.executor, "_broken", False) or len(self.processes) != self.workers:
            return False
        return not ended_within([process.sentinel for process in self.processes], 0)

    def _submit(self, fn: Callable[[_T], _R], arg: _T) -> Future[_R]:
        with warnings.catch_warnings(), _sigint_blocked():
            # Python >= 3.12 warns of fork in any process with native threads; ours are
            # numpy's and Arrow's, which are fork-safe, and no Python thread runs
            warnings.filterwarnings(
                "ignore", "This process .* is multi-threaded", DeprecationWarning
            )
            try:
                future = self.executor.submit(fn, arg)
            except BrokenProcessPool:
                raise CollectError(self.died()) from None
        self._name_processes()
        return future

    def submit(self, batch: list[Source]) -> None:
        """Queue ``batch`` for a worker."""
        self.running[self._submit(_collect_packed, _pack(batch))] = batch

    def _name_processes(self) -> None:
        """Note the workers started so far, named ``delegate-lens-collect-N``."""
        # the executor's table of its processes (pid -> Process), kept since Python 3.2
        table: dict[int, BaseProcess] = getattr(self.executor, "_processes", None) or {}
        for process in table.values():
            if process not in self.processes:
                self.processes.append(process)
                process.name = f"delegate-lens-collect-{len(self.processes)}"

    def finished(self) -> Iterator[list[FileResult]]:
        """Wait for batches to finish: the results of each that did (a worker's failed
        start raises here)."""
        waiting: list[Future[Any]] = [*self.running, *self.starting]
        done, _ = wait(waiting, return_when=FIRST_COMPLETED)
        for future in done:
            try:
                packed = future.result()
            except BrokenProcessPool:
                raise CollectError(self.died()) from None
            if future in self.running:
                batch = self.running.pop(future)
                if packed is not None:
                    yield _unpack(packed, batch)
            else:
                self.starting.remove(future)

    def died(self) -> str:
        """Why the pool broke: which worker ended, and how (once all have ended)."""
        self._name_processes()
        # the pool ends the other workers itself; one still waiting on the pool's queue
        # after a grace (Python 3.11 can leave one when a worker fails to start) is killed
        # here, so that the shutdown below cannot wait for it forever
        from multiprocessing.connection import wait as ended_within

        killed: set[int] = set()
        for index, process in enumerate(self.processes, 1):
            # a worker's sentinel says it ended, whichever thread reaps it (asking the
            # process itself races with the pool's own thread joining it)
            if not ended_within([process.sentinel], _GRACE_SECONDS):
                process.kill()
                killed.add(index)
        self.executor.shutdown(wait=True)
        ended = [
            (index, process.exitcode)
            for index, process in enumerate(self.processes, 1)
            if process.exitcode not in (0, None) and index not in killed
        ]
        # the pool stops the others (SIGTERM) once one is gone: the one gone first is
        # one that ended otherwise, when there is one
        first = [item for item in ended if item[1] != -signal.SIGTERM] or ended
        if not first:
            return "collect: a worker process ended before its batches were done"
        index, code = first[0]
        pid = self.processes[index - 1].pid
        return (
            f"collect: worker process {index} ended (exit code {code}; pid {pid}) before "
            f"its batches were done"
        )

    def close(self, *, stop: bool) -> None:
        """End the workers and wait for them (with ``stop``, each takes no more batches:
        it ends after the one it is writing)."""
        if stop:
            self.stop.set()
        self.executor.shutdown(wait=True, cancel_futures=stop)


def shutdown_workers() -> None:
    """End the workers kept from the last run now (they end by themselves after
    ``IDLE_SECONDS`` idle, or with this process)."""
    _keeping.shutdown()


def run_workers(
    workers: int, location: str, batches: Iterable[list[Source]], known: frozenset[str]
) -> Iterator[list[FileResult]]:
    """Collect ``batches`` with ``workers`` processes, yielding each batch's results as
    it finishes (in the order they finish). The workers are those kept from the last
    run in this process, else started now, with the first batch, before any thread of
    this process; each later batch is cut when the workers are about to need it."""
    pending = iter(batches)
    first = next(pending, None)
    if first is None:
        return iter(())
    setup = _run_setup(location, known)
    started: list[_Pool] = []

    def start(count: int, settings: WorkerSettings) -> _Pool:
        started.append(_Pool(count, settings, setup))  # (its workers start with the run's)
        return started[-1]

    pool = _keeping.take(_Pool, workers, start)
    try:
        if not started:
            pool.begin(setup)
        pool.submit(first)
    except BaseException:
        pool.close(stop=True)
        raise
    return _results(pool, pending, DEPTH * workers)


def _results(
    pool: _Pool, pending: Iterator[list[Source]], depth: int
) -> Iterator[list[FileResult]]:
    """Keep ``depth`` batches submitted; pass the results on; at the end keep the
    workers for the next run when the run went to its end, else end them (an error, the
    caller stopping, Ctrl-C)."""
    finished = False
    try:
        more = True
        while True:
            while more and len(pool.running) < depth:
                batch = next(pending, None)
                if batch is None:
                    more = False
                else:
                    pool.submit(batch)
            if not pool.running and not pool.starting:
                break
            yield from pool.finished()
        finished = True
    finally:
        if finished:
            _keeping.keep(pool)
        else:
            pool.close(stop=True)
