"""How ``collect`` runs its batches: in this process, in local worker processes, or on a
Dask cluster. Each runner yields every batch's file results as the batch finishes."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from delegate_lens.dataset._extras import require
from delegate_lens.dataset.batch import FileResult, collect_batch
from delegate_lens.dataset.sources import Source

__all__ = ["Runner", "run_dask", "run_processes", "run_serial"]

Runner = Callable[[str, Iterable[list[Source]], frozenset[str]], Iterator[list[FileResult]]]
"""``runner(location, batches, known)``: collects every batch, yielding each one's results
as it finishes. ``batches`` may be lazy (made while files are still being found): a runner
takes each batch as soon as it is made, so finding files overlaps collecting them."""


def run_serial(
    location: str, batches: Iterable[list[Source]], known: frozenset[str]
) -> Iterator[list[FileResult]]:
    for batch in batches:
        yield collect_batch(location, batch, known)


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


def _start_method() -> str:
    """How worker processes start: ``fork`` on Linux while this process runs no other
    Python thread (instant: the workers share the collector's imports; numpy's and
    Arrow's native pools re-create themselves after a fork), else ``forkserver`` (one
    server imports the collector, ~0.4 s, and workers fork from it), else ``spawn``."""
    import multiprocessing
    import threading

    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


_SWITCH_INTERVAL = 0.0002  # seconds, while collecting with several workers


def run_processes(workers: int) -> Runner:
    """``workers`` processes collect: this one and ``workers - 1`` started for the run.

    A thread of this process hands each other worker its next batch the moment it is done
    with one (no batch waits behind a running one, so none is left to the end), while this
    process collects a batch itself whenever it is free: it is already warm (imports,
    memory), where a new process pays a few tens of milliseconds on its first batch, and it
    would otherwise sit idle. Batches are cut when a worker asks for one, so their size is
    decided as late as possible (:mod:`~delegate_lens.dataset.batching`). One worker is
    this process alone (:func:`run_serial`)."""
    if workers <= 1:
        return run_serial

    def run(
        location: str, batches: Iterable[list[Source]], known: frozenset[str]
    ) -> Iterator[list[FileResult]]:
        """Start the other workers with the first batch now, before any thread of ours
        starts (a progress bar's, the dispatching one), then yield results as batches
        finish."""
        import multiprocessing
        import queue
        import threading
        from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

        method = _start_method()
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(["delegate_lens.dataset.rows", "pyarrow.parquet"])
        others = workers - 1
        pending = iter(batches)
        cutting = threading.Lock()  # batches are cut by both threads, one at a time

        def next_batch() -> list[Source] | None:
            with cutting:
                return next(pending, None)

        def submit(batch: list[Source]) -> Future[_PackedResults]:
            return pool.submit(_collect_packed, location, _pack(batch), known)

        first = next_batch()
        with warnings.catch_warnings():
            # Python >= 3.12 warns of fork in any process with native threads; ours are
            # numpy's and Arrow's, which are fork-safe, and no Python thread runs
            warnings.filterwarnings(
                "ignore", "This process .* is multi-threaded", DeprecationWarning
            )
            pool = ProcessPoolExecutor(max_workers=others, mp_context=context)
            # the first submit starts every process (fork: all at once, before the pool's
            # own thread)
            running: set[Future[_PackedResults]] = set()
            if first is not None:
                running.add(submit(first))
        done_ahead: queue.Queue[tuple[str, Any]] = queue.Queue()
        stop = threading.Event()

        def dispatch() -> None:
            """Keep every other worker busy with one batch; pass their results on."""
            try:
                while not stop.is_set():
                    while len(running) < others and not stop.is_set():
                        batch = next_batch()
                        if batch is None:
                            break
                        running.add(submit(batch))
                    if not running:
                        break
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        running.discard(future)
                        done_ahead.put(("results", _unpack(future.result())))
            except BaseException as exc:  # raised again by the consumer
                done_ahead.put(("error", exc))
            finally:
                done_ahead.put(("end", None))

        dispatcher = threading.Thread(target=dispatch, name="delegate-lens-dispatch", daemon=True)

        ended = threading.Event()

        def passed_on(block: bool) -> Iterator[list[FileResult]]:
            """Results the dispatching thread passed on (until it ends, when ``block``)."""
            while not ended.is_set():
                try:
                    kind, value = done_ahead.get(block=block)
                except queue.Empty:
                    return
                if kind == "end":
                    ended.set()
                    return
                if kind == "error":
                    raise value
                yield value

        def results() -> Iterator[list[FileResult]]:
            # the dispatching thread waits on the others and finds files (system calls,
            # each giving up the interpreter lock): with the default 5 ms switch interval
            # it would wait up to 5 ms for the lock after each, behind this thread's work
            interval = sys.getswitchinterval()
            sys.setswitchinterval(_SWITCH_INTERVAL)
            dispatcher.start()
            try:
                with pool:
                    while (batch := next_batch()) is not None:  # this process collects too
                        yield collect_batch(location, batch, known)
                        yield from passed_on(block=False)
                    yield from passed_on(block=True)
            finally:
                stop.set()
                sys.setswitchinterval(interval)

        return results()

    return run


def run_dask(scheduler: str | None, workers: int) -> Runner:
    def run(
        location: str, batches: Iterable[list[Source]], known: frozenset[str]
    ) -> Iterator[list[FileResult]]:
        distributed = require("distributed", "collect --engine dask")
        if scheduler is not None:
            client = distributed.Client(scheduler)
            cluster = None
        else:
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=40,
            )
            client = distributed.Client(cluster)
        try:
            # one copy of the known hashes per worker, not one per task
            shared = client.scatter([known], broadcast=True)[0] if known else known
            batches = list(batches)
            futures = client.map(
                collect_batch, [location] * len(batches), batches, known=shared, pure=False
            )
            for future in distributed.as_completed(futures):
                yield future.result()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    return run
