"""``collect``'s local engine: this process and ``workers - 1`` started ones collect batches.

How batches move:

* this process cuts the batches (finding files as it goes:
  :mod:`~delegate_lens.dataset.batching`), keeps every other worker ``DEPTH`` batches ahead
  (the one it collects and the next, sent through a pipe), and collects a batch itself
  between two top-ups. A worker never waits for this process between two batches;
* one more batch per other worker is cut ahead (``ready``): a thread of this process
  receives the workers' results and hands a worker that finished one of those, so a long
  batch here does not starve the others;
* at the end, when no batch is left to cut, this process takes back a batch it sent but
  the worker has not started (a claim table shared with the workers decides who has it,
  the newest first), so no batch waits behind another while a process is idle.

Workers are forked (instant: they share this process's imports and memory) where the
platform allows, else started from a fork server or spawned.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from delegate_lens.dataset.batch import FileResult, collect_batch
from delegate_lens.dataset.sources import Source
from delegate_lens.errors import CollectError

__all__ = ["DEPTH", "run_workers"]

DEPTH = 2  # batches sent to a worker and not yet done: the one it collects, and the next
_NONE_TAKEN = 1 << 62  # no batch of the worker taken back (a claim table value)
_PIPE_BYTES = 1 << 20  # a pipe's buffer where the OS lets it grow: a send seldom waits

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


def _collect_packed(location: str, packed: _Packed, known: frozenset[str]) -> _PackedResults:
    """:func:`collect_batch` of a packed batch, its results packed too (what a worker runs)."""
    paths, sizes, etrecords, labels_files, which, shared = packed
    sources = [
        Source(path, size, etrecord, labels_file, shared[k])
        for path, size, etrecord, labels_file, k in zip(
            paths, sizes, etrecords, labels_files, which
        )
    ]
    results = collect_batch(location, sources, known)
    return tuple(list(column) for column in zip(*(attrs.astuple(r) for r in results)))


def _unpack(packed: _PackedResults) -> list[FileResult]:
    return [FileResult(*fields) for fields in zip(*packed)]


def _grow(connection: Any) -> None:
    """Let the pipe behind ``connection`` hold ``_PIPE_BYTES`` where the OS can (Linux)."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # elsewhere, or over the system's limit
        pass


def _serve(
    index: int,
    location: str,
    known: frozenset[str],
    inbox: Any,
    outbox: Any,
    claims: Any,
    lock: Any,
) -> None:
    """A started worker: collect each batch sent, unless taken back, and send its results.

    A thread reads the pipe as batches come (the sender never waits on a full pipe while
    this process collects); ``None`` ends the worker. ``claims[2 * index]`` is the last
    batch started here, ``claims[2 * index + 1]`` the first taken back."""
    received: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def read() -> None:
        try:
            while (message := inbox.recv()) is not None:
                received.put(message)
        except (EOFError, OSError):  # this process's parent is gone
            pass
        received.put(None)

    threading.Thread(target=read, name="delegate-lens-inbox", daemon=True).start()
    while (message := received.get()) is not None:
        seq, packed = message
        with lock:
            taken = seq >= claims[2 * index + 1]
            if not taken:
                claims[2 * index] = seq
        if taken:
            continue
        try:
            reply: tuple[int, str, Any] = (seq, "done", _collect_packed(location, packed, known))
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


class _Pool:
    """The started workers, and the books of what each has (kept under ``books``)."""

    def __init__(self, others: int, location: str, known: frozenset[str]) -> None:
        import multiprocessing

        method = _start_method()
        context: Any = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(["delegate_lens.dataset.rows", "pyarrow.parquet"])
        self.books = threading.Lock()
        self.reaping = threading.Lock()
        self.claim_lock = context.Lock()
        self.claims = context.RawArray("q", [-1, _NONE_TAKEN] * others)
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
                        self.claim_lock,
                    ),
                    name=f"delegate-lens-collect-{index + 1}",
                    daemon=True,
                )
                process.start()
                batches_in.close()
                results_out.close()
                self.workers.append(_Worker(index, process, batches_out, results_in))

    def send(self, worker: _Worker, batch: list[Source]) -> None:
        """Give ``worker`` one more batch (under ``books``)."""
        worker.sent.append((worker.seq, batch))
        worker.inbox.send((worker.seq, _pack(batch)))
        worker.seq += 1

    def take_back(self) -> list[Source] | None:
        """The newest batch sent but not started, from the worker with the most of them
        (it will skip it); ``None`` when every batch sent has started."""
        with self.books:
            for worker in sorted(self.workers, key=lambda w: -len(w.sent)):
                if not worker.sent:
                    continue
                seq, batch = worker.sent[-1]
                with self.claim_lock:
                    if seq <= self.claims[2 * worker.index]:
                        continue  # started
                    self.claims[2 * worker.index + 1] = seq
                worker.sent.pop()
                return batch
        return None

    def close(self, *, drop: bool) -> None:
        """Send every worker the end (after its batches; with ``drop``, any not started
        is skipped)."""
        with self.books:
            for worker in self.workers:
                if drop:
                    with self.claim_lock:
                        self.claims[2 * worker.index + 1] = self.claims[2 * worker.index] + 1
                if not worker.closed:
                    worker.closed = True
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

    def join(self) -> None:
        for worker in self.workers:
            self.reap(worker)
            worker.inbox.close()
            worker.outbox.close()


def run_workers(
    workers: int, location: str, batches: Iterable[list[Source]], known: frozenset[str]
) -> Iterator[list[FileResult]]:
    """Collect ``batches`` with this process and ``workers - 1`` started ones, yielding
    each batch's results as it finishes. The workers start now, before any thread of
    this process (a progress bar's, the receiving one); each batch is cut when a worker
    is about to need it."""
    pending = iter(batches)
    cutting = threading.Lock()  # batches are cut by both threads, one at a time
    ready: deque[list[Source]] = deque()  # cut ahead, for a worker that finishes one
    first = next(pending, None)
    pool = _Pool(workers - 1, location, known)
    if first is not None:
        with pool.books:
            pool.send(pool.workers[0], first)
    done: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

    def next_batch() -> list[Source] | None:
        with cutting:
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
                for connection in wait(list(live)):
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
                        if not worker.sent or worker.sent.popleft()[0] != seq:
                            raise CollectError(
                                f"collect: worker process {worker.index + 1} answered a "
                                f"batch it was not sent ({seq})"
                            )
                        if not worker.closed and (batch := take_ready()) is not None:
                            pool.send(worker, batch)
                    if kind == "error":
                        raise value
                    done.put(("results", _unpack(value)))
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
        try:
            while True:
                top_up()
                batch = next_batch() or take_ready()
                if batch is None:
                    pool.close(drop=False)  # no batch is left to send: they end when done
                    batch = pool.take_back()
                    if batch is None:
                        break
                yield collect_batch(location, batch, known)
                yield from passed_on(block=False)
            yield from passed_on(block=True)
            finished = True
        finally:
            pool.close(drop=not finished)
            pool.join()

    return results()
