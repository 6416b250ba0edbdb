"""``collect``'s local engine: this process and ``workers - 1`` started ones collect batches.

How batches move:

* this process finds the files, in steps, and cuts the batches
  (:mod:`~delegate_lens.dataset.batching`); between steps it keeps every other worker
  ``DEPTH`` batches ahead (the one it collects and the next, sent through a pipe), so a
  worker never waits for this process between two batches. Once all are found (or enough
  ahead), it collects a batch itself between two top-ups;
* one more batch per other worker is cut ahead (``ready``): a thread of this process
  receives the workers' results and hands a worker that finished a batch one of those, so
  a long batch here does not starve the others;
* at the end, when no batch is left to cut, those cut ahead go out, and this process takes
  back half of what the busiest worker has not started, the newest files first, even from
  inside a batch (a claim table shared with the workers says who collects which files), so
  both finish together.

Workers are forked (instant: they share this process's imports and memory) where the
platform allows, else started from a fork server or spawned. A worker is our own process:
it tells glibc's malloc to keep freed memory (:func:`_keep_freed_memory`).

Workers are kept for the next run in this process, as a connection pool keeps its
connections: a new worker pays for its start and, more, for its first batch (its memory
is new to it: page faults, cold caches), while a kept one is as warm as this process.
A run that ends well leaves its workers idle (blocked on their pipe, no CPU; after
``TRIM_SECONDS`` a worker hands its kept memory back); the next sends each its dataset,
known hashes and working folder, and waits for its answer, so a worker that ended
meanwhile is replaced. A worker idle for ``IDLE_SECONDS`` ends on its own;
:func:`shutdown_workers` ends them now, and they end with this process, however it ends
(each watches its parent). A run that fails or stops early ends its workers. One set of
workers is kept; a run that finds it in use (another thread's) or unfit (another number
of workers, a setting changed since they started: :class:`_Setting`, or this process
is a fork of the one that started them) starts its own.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from delegate_lens.dataset.batch import FileResult, collect_batch
from delegate_lens.dataset.batching import Batcher
from delegate_lens.dataset.sources import Source
from delegate_lens.errors import CollectError

__all__ = ["DEPTH", "IDLE_SECONDS", "run_workers", "shutdown_workers"]

DEPTH = 2  # batches sent to a worker and not yet done: the one it collects, and the next
_NONE_TAKEN = 1 << 62  # no batch of the worker taken back (a claim table value)
_NEW_RUN, _RUN_OVER = -1, -2  # a worker's messages that are not batches
_MIN_TAKE_SECONDS = 0.004  # less work than this left to share: not worth another part
_PIPE_BYTES = 1 << 20  # a pipe's buffer where the OS lets it grow: a send seldom waits
IDLE_SECONDS = 300.0  # a kept worker with no run for this long ends
TRIM_SECONDS = 5.0  # a kept worker with no run for this long hands its free memory back
_ANSWER_SECONDS = 10.0  # a kept worker answers a new run within this (it is idle)

_Packed = tuple[list[str], list[int], list[str | None], list[str | None], list[int], list[Any]]
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
    )


_RESULT_FIELDS = tuple(field.name for field in attrs.fields(FileResult))[1:]  # not source


def _collect_packed(location: str, packed: _Packed, known: frozenset[str]) -> _PackedResults:
    """:func:`collect_batch` of a packed batch, its results packed too (what a worker
    runs): a list per field but ``source`` (one result per file, in the batch's order,
    so the sender knows each one's file)."""
    paths, sizes, etrecords, labels_files, which, shared = packed
    sources = [
        Source(path, size, etrecord, labels_file, shared[k])
        for path, size, etrecord, labels_file, k in zip(
            paths, sizes, etrecords, labels_files, which
        )
    ]
    results = collect_batch(location, sources, known)
    return tuple([getattr(r, name) for r in results] for name in _RESULT_FIELDS)


def _unpack(packed: _PackedResults, batch: list[Source]) -> list[FileResult]:
    """The results of ``batch`` from :func:`_collect_packed`."""
    return [FileResult(source.path, *fields) for source, fields in zip(batch, zip(*packed))]


def _grow(connection: Any) -> None:
    """Let the pipe behind ``connection`` hold ``_PIPE_BYTES`` where the OS can (Linux)."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # elsewhere, or over the system's limit
        pass


class _Claims:
    """Which files of the batches sent to each worker it collects, shared with the workers
    and kept under one lock: per worker, the last batch it started and when, and what this
    process took back: every batch after ``taken``, and ``taken`` itself from file
    ``taken_from`` on (all of it when 0)."""

    def __init__(self, context: Any, workers: int) -> None:
        self.lock = context.Lock()
        # per worker: started, taken, taken_from
        self.table = context.RawArray("q", [-1, _NONE_TAKEN, 0] * workers)
        self.since = context.RawArray("d", workers)  # time.monotonic() of the start

    def claim(self, index: int, seq: int, files: int) -> int:
        """A worker starts batch ``seq`` of ``files`` files: how many of the first it
        collects (0: all taken back)."""
        at = 3 * index
        with self.lock:
            taken = self.table[at + 1]
            if seq > taken:
                return 0
            if seq == taken:
                files = self.table[at + 2]
            if files:
                self.table[at] = seq
                self.since[index] = time.monotonic()
            return files

    def started(self, index: int) -> tuple[int, float]:
        """The last batch a worker started, and when."""
        with self.lock:
            return self.table[3 * index], self.since[index]

    def take(self, index: int, seq: int, start: int) -> bool:
        """Take back batch ``seq`` from file ``start`` on, unless the worker started it."""
        at = 3 * index
        with self.lock:
            if seq <= self.table[at]:
                return False
            self.table[at + 1] = seq
            self.table[at + 2] = start
            return True

    def reset(self, index: int) -> None:
        """A new run: nothing started, nothing taken back (the worker, between runs)."""
        at = 3 * index
        with self.lock:
            self.table[at : at + 3] = [-1, _NONE_TAKEN, 0]

    def drop(self, index: int) -> None:
        """Take back every batch the worker has not started."""
        at = 3 * index
        with self.lock:
            self.table[at + 1] = min(self.table[at + 1], self.table[at] + 1)
            self.table[at + 2] = 0


def _head(packed: _Packed, files: int) -> _Packed:
    """The first ``files`` files of a packed batch."""
    paths, sizes, etrecords, labels_files, which, shared = packed
    return (
        paths[:files],
        sizes[:files],
        etrecords[:files],
        labels_files[:files],
        which[:files],
        shared,
    )


def _glibc() -> Any:
    """This process's own C library symbols (glibc's, if glibc); None where it has none."""
    import ctypes

    try:
        return ctypes.CDLL(None)
    except (OSError, TypeError):  # not Unix
        return None


def _keep_freed_memory() -> None:
    """In a worker (our own process): let glibc's malloc keep memory freed by one batch
    for the next, instead of returning it to the system and faulting fresh pages in again
    (a batch allocates tens of MB: ~2,000 page faults each time); an idle kept worker
    hands it back after ``TRIM_SECONDS`` (:func:`_give_back_memory`). Not done in the
    caller's process, whose allocator we leave alone."""
    mallopt = getattr(_glibc(), "mallopt", None)
    if mallopt is None:  # not glibc
        return
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: its maximum; bigger blocks are still mapped
    mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GB freed at the heap's top


def _give_back_memory() -> None:
    """In an idle kept worker: hand the memory glibc's malloc keeps for the next batch
    (:func:`_keep_freed_memory`) back to the system."""
    trim = getattr(_glibc(), "malloc_trim", None)
    if trim is not None:  # (glibc)
        trim(0)


def _serve(
    index: int,
    location: str,
    known: frozenset[str],
    inbox: Any,
    outbox: Any,
    claims: _Claims,
) -> None:
    """A started worker: collect each batch sent (the part not taken back), send its
    results, run after run. A thread reads the pipe as batches come (the sender never
    waits on a full pipe while this process collects). A new run sets the dataset, known
    hashes and working folder, and is answered ``ready``; once a run is over (no more
    batches), ``IDLE_SECONDS`` without a message ends the worker, as does ``None``.
    Batches of an earlier run still in the pipe were all taken back: they are skipped
    before the new run begins."""
    _keep_freed_memory()
    with contextlib.suppress(ValueError, AttributeError):  # only the main thread may
        # Ctrl-C is this worker's parent's to handle: it stops the run, and this worker
        # ends after the batch it is writing (no half-written part, no second traceback)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    received: queue.SimpleQueue[Any] = queue.SimpleQueue()

    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    # the worker ends when its parent does, however it ends: a forked worker holds the
    # sending end of its own pipe too, so the pipe alone would never say so
    watched = [inbox] if parent is None else [inbox, parent.sentinel]

    def read() -> None:
        try:
            while True:
                if inbox not in wait(watched):  # the parent ended
                    break
                if (message := inbox.recv()) is None:
                    break
                received.put(message)
        except (EOFError, OSError):  # the pipe is closed
            pass
        received.put(None)

    threading.Thread(target=read, name="delegate-lens-inbox", daemon=True).start()
    in_run = True  # (started for a run)
    trimmed = False
    while True:
        try:
            if in_run:
                message = received.get()
            elif not trimmed:  # idle for a while: the memory kept for the next batch goes
                message = received.get(timeout=min(TRIM_SECONDS, IDLE_SECONDS))
            else:
                message = received.get(timeout=max(0.0, IDLE_SECONDS - TRIM_SECONDS))
        except queue.Empty:
            if trimmed or TRIM_SECONDS >= IDLE_SECONDS:  # idle too long: end (a new run
                return  # then starts a new worker)
            _give_back_memory()
            trimmed = True
            continue
        if message is None:
            return
        seq, packed = message
        if seq == _RUN_OVER:
            in_run, trimmed = False, False
            known = frozenset()  # (the next run sends its own)
            continue
        if seq == _NEW_RUN:  # (dataset, known hashes, working folder)
            in_run = True
            location, known, folder = packed
            try:
                os.chdir(folder)  # the run's relative paths are the caller's
                claims.reset(index)
                outbox.send((seq, "ready", None))
            except Exception as exc:
                outbox.send((seq, "error", CollectError(f"{exc!r}")))
            continue
        files = claims.claim(index, seq, len(packed[0]))
        if not files:
            continue
        try:
            results = _collect_packed(location, _head(packed, files), known)
            reply: tuple[int, str, Any] = (seq, "done", results)
        except Exception as exc:
            reply = (seq, "error", exc)
        try:
            outbox.send(reply)
        except Exception:  # an error that does not pickle: its text instead
            outbox.send((seq, "error", CollectError(f"{reply[2]!r}")))


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


@attrs.define(eq=False)
class _Worker:
    """A started worker, as this process sees it."""

    index: int
    process: Any
    inbox: Any  # this process's end of the pipe of batches
    outbox: Any  # this process's end of the pipe of results
    sent: deque[tuple[int, list[Source]]] = attrs.field(factory=deque)  # not yet done
    seq: int = 0  # the next batch's number
    closed: bool = False  # sent the end: no more batches


@attrs.frozen(eq=False)
class _Setting:
    """What a worker took from this process when it started, besides its imports, and
    what this process may change later: its environment, its loaded configuration, the
    plugin manager and its plugins. Kept workers are reused only while these are the same
    (the same objects, not just equal ones); else new ones start with the new setting."""

    environment: dict[str, str]
    config: object  # delegate_lens.config's cache (None: not loaded yet)
    manager: object  # the plugin manager (None: not built yet)
    options: object  # the -p options
    plugins: frozenset[str] | None  # the names registered in it

    @classmethod
    def now(cls) -> _Setting:
        config = sys.modules.get("delegate_lens.config")
        plugins = sys.modules.get("delegate_lens.pluginmanager")
        manager = None if plugins is None else plugins._pm
        return cls(
            dict(os.environ),
            None if config is None else config._cache,
            manager,
            None if plugins is None else plugins._options,
            None if manager is None else frozenset(n for n, _ in manager.list_name_plugin()),
        )

    def same(self, other: _Setting) -> bool:
        return (
            self.config is other.config
            and self.manager is other.manager
            and self.options == other.options
            and self.plugins == other.plugins
            and self.environment == other.environment
        )


class _Pool:
    """The started workers, and the books of what each has (kept under ``books``)."""

    def __init__(self, others: int, location: str, known: frozenset[str]) -> None:
        import multiprocessing

        self.pid = os.getpid()
        self.setting = _Setting.now()

        method = _start_method()
        context: Any = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(["delegate_lens.dataset.rows", "pyarrow.parquet"])
        self.books = threading.Lock()
        self.reaping = threading.Lock()
        self.claims = _Claims(context, others)
        # the receiving thread waits on this too: woken when workers are sent the end
        self.wake_up, self._wake = context.Pipe(duplex=False)
        self.workers: list[_Worker] = []
        with warnings.catch_warnings():
            # Python >= 3.12 warns of fork in any process with native threads; ours are
            # numpy's and Arrow's, which are fork-safe, and no Python thread runs
            warnings.filterwarnings(
                "ignore", "This process .* is multi-threaded", DeprecationWarning
            )
            for index in range(others):
                batches_in, batches_out = context.Pipe(duplex=False)
                results_in, results_out = context.Pipe(duplex=False)
                _grow(batches_out)
                _grow(results_out)
                process = context.Process(
                    target=_serve,
                    args=(
                        index,
                        location,
                        known,
                        batches_in,
                        results_out,
                        self.claims,
                    ),
                    name=f"delegate-lens-collect-{index + 1}",
                    daemon=True,
                )
                process.start()
                batches_in.close()
                results_out.close()
                self.workers.append(_Worker(index, process, batches_out, results_in))

    def fits(self, others: int) -> bool:
        """Whether this pool may serve a run of ``others`` started workers here."""
        return (
            self.pid == os.getpid()
            and len(self.workers) == others
            and self.setting.same(_Setting.now())
            and all(worker.process.is_alive() for worker in self.workers)
        )

    def begin(self, location: str, known: frozenset[str]) -> bool:
        """A new run for kept workers: each is sent the dataset, known hashes and this
        process's working folder, and answers; ``False`` when one does not (it ended)."""
        try:
            # pickled once for every worker (the known hashes may be millions)
            message = pickle.dumps(
                (_NEW_RUN, (location, known, os.getcwd())), pickle.HIGHEST_PROTOCOL
            )
            for worker in self.workers:
                worker.seq, worker.closed = 0, False
                worker.sent.clear()
                worker.inbox.send_bytes(message)
            for worker in self.workers:
                if not worker.outbox.poll(_ANSWER_SECONDS):
                    return False
                if worker.outbox.recv()[1] != "ready":
                    return False
        except (OSError, EOFError):  # it ended (idle, or killed); or no working folder
            return False
        return True

    def send(self, worker: _Worker, batch: list[Source]) -> None:
        """Give ``worker`` one more batch (under ``books``)."""
        try:
            worker.inbox.send((worker.seq, _pack(batch)))
        except OSError:  # its end of the pipe is closed: it ended
            raise CollectError(
                f"collect: worker process {worker.index + 1} ended (exit code "
                f"{self.reap(worker)}) before it was sent all its batches"
            ) from None
        worker.sent.append((worker.seq, batch))
        worker.seq += 1

    def _left(self, worker: _Worker, rate: float | None, now: float) -> tuple[float, int]:
        """(seconds of work ``worker`` has left, at ``rate`` seconds per byte, else its
        bytes not started; the last batch it started)."""
        started, since = self.claims.started(worker.index)
        left = 0.0
        for seq, batch in worker.sent:
            if seq < started or (rate is None and seq == started):
                continue
            work = float(sum(source.size for source in batch))
            if rate is not None:
                work *= rate
                if seq == started:
                    work = max(0.0, since + work - now)
            left += work
        return left, started

    def hand_out(self, batches: Iterable[list[Source]], rate: float | None) -> None:
        """Send ``batches`` (the last cut ahead), each to the worker with least left."""
        now = time.monotonic()
        with self.books:
            for batch in batches:
                worker = min(
                    (w for w in self.workers if not w.closed),
                    key=lambda w: self._left(w, rate, now)[0],
                )
                self.send(worker, batch)

    def take_back(self, rate: float | None) -> list[list[Source]] | None:
        """Files sent to a worker that it has not started (it will skip them), for this
        process, which has nothing else left, as runs of files in the order found (the
        tail of one batch, and any later batches whole); ``None`` when none is worth
        taking.

        From the worker with the most left: half of it (at ``rate`` seconds per byte, this
        process's own; half of what it has not started when unknown), the newest files
        first, so that both finish together."""
        while True:
            now = time.monotonic()
            with self.books:
                lefts = [(*self._left(w, rate, now), w) for w in self.workers if w.sent]
                if not lefts:
                    return None
                left, started, worker = max(lefts, key=lambda item: item[0])
                if rate is not None and left / 2 < _MIN_TAKE_SECONDS:
                    return None  # not worth a part
                want = left / 2 / rate if rate is not None else left / 2  # bytes
                sent = list(worker.sent)
                # from the newest file back, while a file is at least half wanted: the
                # batches after ``k`` whole, and batch ``k`` from file ``start`` on
                k, start = len(sent), 0
                while k > 0 and sent[k - 1][0] > started and not start:
                    k -= 1
                    batch = sent[k][1]
                    start = len(batch)
                    while start > 0 and want >= batch[start - 1].size / 2:
                        start -= 1
                        want -= batch[start].size
                if k < len(sent) and start == len(sent[k][1]):  # none of batch k
                    k, start = k + 1, 0
                if k == len(sent):
                    return None  # nothing (worth) taking
                if not self.claims.take(worker.index, sent[k][0], start):
                    continue  # it started batch k just now: look again
                taken = [sent[k][1][start:], *(batch for _, batch in sent[k + 1 :])]
                del sent[k + (start > 0) :]
                if start:
                    sent[k] = (sent[k][0], sent[k][1][:start])
                worker.sent = deque(sent)
                if not sent and worker.closed:
                    # no answer is coming from it: the receiving thread must look again
                    # (a kept worker does not end, so its pipe says nothing)
                    self._wake.send(None)
                return taken

    def close(self, *, drop: bool) -> None:
        """No more batches for this run (with ``drop``, any a worker has not started is
        skipped)."""
        with self.books:
            changed = False
            for worker in self.workers:
                if drop:
                    self.claims.drop(worker.index)
                if not worker.closed:
                    worker.closed = changed = True
                    with contextlib.suppress(OSError):  # it is gone
                        worker.inbox.send((_RUN_OVER, None))
            if changed:  # the receiving thread looks again at who is done
                self._wake.send(None)

    def end(self) -> None:
        """Send every worker the end (each ends after the batches it has)."""
        for worker in self.workers:
            with contextlib.suppress(OSError):  # it is gone
                worker.inbox.send(None)

    def reap(self, worker: _Worker) -> int | None:
        """Wait for ``worker`` to end (a minute at most, then stop it): its exit code.
        Either thread may call this, one at a time."""
        with self.reaping:
            worker.process.join(timeout=60)
            if worker.process.is_alive():  # stuck: not worth a hang
                worker.process.terminate()
                worker.process.join()
            code: int | None = worker.process.exitcode
            return code

    def woken(self) -> None:
        """Take the wake-up (what for, the books say)."""
        self.wake_up.recv()

    def join(self) -> None:
        """End every worker and wait for it, then close the pipes."""
        self.end()
        for worker in self.workers:
            self.reap(worker)
        self.release()

    def release(self) -> None:
        """Close the pipes."""
        for worker in self.workers:
            worker.inbox.close()
            worker.outbox.close()
        self.wake_up.close()
        self._wake.close()


_kept_lock = threading.Lock()
_kept: list[_Pool] = []  # idle workers kept for the next run (one set at most)
_exit_registered = False


def _take_kept() -> list[_Pool]:
    """The kept workers, no longer kept: those this process started (a fork's copy of
    another process's are left alone)."""
    with _kept_lock:
        pools, _kept[:] = list(_kept), []
    return [pool for pool in pools if pool.pid == os.getpid()]


def _end_kept_at_exit() -> None:
    """At this process's exit: kept workers are sent the end (multiprocessing's own exit
    handler then stops and reaps its daemon processes, ours among them; a worker also
    ends by itself when this process is gone, however it ends)."""
    for pool in _take_kept():
        pool.end()


def _take_pool(others: int, location: str, known: frozenset[str]) -> _Pool:
    """Workers for a run: the kept ones when they fit and answer, else new ones."""
    global _exit_registered
    with _kept_lock:
        pool = _kept.pop() if _kept else None
    if pool is not None:
        try:
            if pool.fits(others) and pool.begin(location, known):
                return pool
        except BaseException:  # (Ctrl-C while it answers)
            pool.join()
            raise
        if pool.pid == os.getpid():  # (a fork's copy of another process's: left alone)
            pool.join()
    if not _exit_registered:
        import atexit
        import multiprocessing.util  # noqa: F401  (its exit handler first: it runs after ours)

        atexit.register(_end_kept_at_exit)
        _exit_registered = True
    return _Pool(others, location, known)


def _keep(pool: _Pool) -> None:
    """After a run that ended well: keep its workers for the next (one set at most)."""
    with _kept_lock:
        if not _kept:
            _kept.append(pool)
            return
    pool.end()  # another run's are kept already: these end (not waited for)
    pool.release()


def shutdown_workers() -> None:
    """End the worker processes kept for the next ``collect`` in this process, and wait
    for them (they also end after ``IDLE_SECONDS`` idle, and with this process)."""
    for pool in _take_kept():
        pool.join()


def run_workers(
    workers: int, location: str, batches: Iterable[list[Source]], known: frozenset[str]
) -> Iterator[list[FileResult]]:
    """Collect ``batches`` with this process and ``workers - 1`` started ones, yielding
    each batch's results as it finishes. The workers start now, before any thread of
    this process (a progress bar's, the receiving one); each batch is cut when a worker
    is about to need it. Workers kept from an earlier run are used when they fit, and
    kept for the next when this one ends well."""
    pending = iter(batches)
    finder = pending if isinstance(pending, Batcher) else None  # found here, between cuts
    if finder is not None:
        finder.finds_on_cut = False
    ready: deque[list[Source]] = deque()  # cut ahead, for a worker that finishes one
    first = next(pending, None)
    pool = _take_pool(workers - 1, location, known)
    if first is not None:
        try:
            with pool.books:
                pool.send(pool.workers[0], first)
        except BaseException:
            pool.join()
            raise
    done: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

    def next_batch() -> list[Source] | None:  # (only this thread cuts and finds)
        return next(pending, None)

    def take_ready() -> list[Source] | None:
        try:
            return ready.popleft()
        except IndexError:  # none (or the other thread took the last)
            return None

    def top_up() -> None:
        """Every worker ``DEPTH`` batches ahead, and one more each cut ahead."""
        for worker in pool.workers:
            while len(worker.sent) < DEPTH and not worker.closed:
                batch = take_ready() or next_batch()
                if batch is None:
                    return
                with pool.books:
                    pool.send(worker, batch)
        while len(ready) < len(pool.workers):
            batch = next_batch()
            if batch is None:
                return
            ready.append(batch)

    def receive() -> None:
        """Pass every result on; hand a worker that finished a batch one cut ahead."""
        from multiprocessing.connection import wait

        live = {worker.outbox: worker for worker in pool.workers}
        try:
            while live:
                for connection in wait([*live, pool.wake_up]):
                    if connection is pool.wake_up:
                        pool.woken()
                        continue
                    worker = live[connection]
                    try:
                        seq, kind, value = worker.outbox.recv()
                    except EOFError:  # the worker ended
                        del live[connection]
                        if worker.sent:
                            raise CollectError(
                                f"collect: worker process {worker.index + 1} ended (exit "
                                f"code {pool.reap(worker)}) before its batches were done"
                            ) from None
                        continue
                    with pool.books:
                        if not worker.sent or worker.sent[0][0] != seq:
                            raise CollectError(
                                f"collect: worker process {worker.index + 1} answered a "
                                f"batch it was not sent ({seq})"
                            )
                        _, answered = worker.sent.popleft()
                        if not worker.closed and (batch := take_ready()) is not None:
                            pool.send(worker, batch)
                    if kind == "error":
                        raise value
                    done.put(("results", _unpack(value, answered)))
                with pool.books:  # sent the end and done: no need to wait for it to end
                    for worker in [w for w in live.values() if w.closed and not w.sent]:
                        del live[worker.outbox]
        except BaseException as exc:  # raised again by the consumer
            done.put(("error", exc))
        finally:
            done.put(("end", None))

    receiver = threading.Thread(target=receive, name="delegate-lens-receive", daemon=True)

    ended = threading.Event()

    def passed_on(block: bool) -> Iterator[list[FileResult]]:
        """Results the receiving thread passed on (until it ends, when ``block``)."""
        while not ended.is_set():
            try:
                kind, value = done.get(block=block)
            except queue.Empty:
                return
            if kind == "end":
                ended.set()
                return
            if kind == "error":
                raise value
            yield value

    def results() -> Iterator[list[FileResult]]:
        receiver.start()
        finished = False
        spent = 0.0  # seconds this process spent collecting
        collected = 0  # bytes
        try:
            while True:
                top_up()
                if finder is not None and finder.wants_finding:
                    finder.find()  # a step at a time, the others topped up in between
                    continue
                batch = next_batch()
                if batch is None:  # all cut: those cut ahead go out, then the end
                    rate = spent / collected if collected else None
                    pool.hand_out(iter(take_ready, None), rate)
                    pool.close(drop=False)
                    runs = pool.take_back(rate)  # half of what is left, or nothing
                    if runs is None:
                        break
                else:
                    runs = [batch]
                batch = [source for run in runs for source in run]  # one part
                start = time.perf_counter()
                done_here = collect_batch(location, batch, known)
                spent += time.perf_counter() - start
                collected += sum(source.size for source in batch)
                # each run's results apart: the caller orders results by runs
                at = 0
                for run in runs:
                    yield done_here[at : at + len(run)]
                    at += len(run)
                yield from passed_on(block=False)
            yield from passed_on(block=True)
            finished = True
        finally:
            pool.close(drop=not finished)
            if finished:
                _keep(pool)
            else:  # none may still be writing when the error reaches the caller
                pool.join()

    return results()
