"""``collect``: ETDumps -> the dataset, batch by batch, on one machine or a Dask cluster.

Files are grouped into batches of about ``batch_bytes``; each batch is read, hashed, decoded
and written as one part by one worker (:func:`collect_batch`), so workers never share a
file and the driver only gathers small reports. A file that cannot be read or decoded is
reported and skipped; the others of its batch are still collected.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from delegate_lens.dataset._extras import require
from delegate_lens.dataset.sources import Source, find_sources, read_labels
from delegate_lens.dataset.store import DatasetStore
from delegate_lens.errors import UsageError

__all__ = ["ENGINES", "CollectReport", "FileResult", "collect", "collect_batch"]

ENGINES = ("local", "dask")
DEFAULT_BATCH_BYTES = 64 << 20
MAX_BATCH_FILES = 2000


@attrs.frozen
class FileResult:
    """What happened to one ETDump: ``status`` is collected, skipped (already in the
    dataset, or a duplicate) or failed (``error`` says why)."""

    source: str
    status: str
    nbytes: int = 0
    rows: int = 0
    file_hash: str | None = None
    error: str | None = None
    part: str | None = None


@attrs.frozen
class CollectReport:
    """Every file's :class:`FileResult`, in input order."""

    results: list[FileResult] = attrs.field(factory=list)

    def _with(self, status: str) -> list[FileResult]:
        return [r for r in self.results if r.status == status]

    @property
    def collected(self) -> list[FileResult]:
        return self._with("collected")

    @property
    def skipped(self) -> list[FileResult]:
        return self._with("skipped")

    @property
    def failed(self) -> list[FileResult]:
        return self._with("failed")

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.results)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.collected)

    def summary(self) -> str:
        return (
            f"collected {len(self.collected)} file(s) ({self.rows} events, "
            f"{self.nbytes / 1e6:.1f} MB), skipped {len(self.skipped)} already collected, "
            f"{len(self.failed)} failed"
        )


def _read(path: str) -> bytes:
    if "://" in path:
        fs = require("pyarrow.fs", "collect")
        filesystem, inner = fs.FileSystem.from_uri(path)
        with filesystem.open_input_stream(inner) as stream:
            return bytes(stream.read())
    from delegate_lens.fileio import read_input

    return read_input(path, "ETDump")


def content_hash(data: bytes) -> str:
    """The hash incremental collection skips by (SHA-256, 128 bits in hex)."""
    return hashlib.sha256(data).hexdigest()[:32]


def collect_batch(
    location: str, sources: Sequence[Source], known: Collection[str] = frozenset()
) -> list[FileResult]:
    """Collect ``sources`` into one new part of the dataset at ``location`` (what each
    worker runs); files whose hash is in ``known`` are skipped."""
    from delegate_lens.dataset.rows import events_table, file_columns, with_labels
    from delegate_lens.etrecord import load_etrecord

    pa = require("pyarrow", "collect")
    store = DatasetStore(location)
    results: list[FileResult] = []
    tables: list[Any] = []
    files: list[dict[str, Any]] = []
    seen: set[str] = set()
    records: dict[str, Any] = {}
    pending: list[int] = []
    batch_labels: list[dict[str, str]] = []
    for source in sources:
        file_hash = None
        try:
            data = _read(source.path)
            file_hash = content_hash(data)
            if file_hash in known or file_hash in seen:
                results.append(FileResult(source.path, "skipped", len(data), 0, file_hash))
                continue
            labels = read_labels(source.labels_file) if source.labels_file else {}
            labels.update(source.labels)
            record = None
            if source.etrecord is not None:
                if source.etrecord not in records:
                    records[source.etrecord] = load_etrecord(source.etrecord)
                record = records[source.etrecord]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fc, inspector = file_columns(data, record)
                table = events_table(
                    fc, source=source.path, file_hash=file_hash, labels=labels, inspector=inspector
                )
        except Exception as exc:  # a bad file is reported and skipped, never fatal
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if source.path not in message:
                message = f"{source.path}: {message}"
            results.append(FileResult(source.path, "failed", 0, 0, file_hash, message))
            continue
        seen.add(file_hash)
        batch_labels.append(labels)
        tables.append(table)
        files.append({"hash": file_hash, "source": source.path, "rows": table.num_rows})
        pending.append(len(results))
        results.append(FileResult(source.path, "collected", len(data), table.num_rows, file_hash))
    if tables:
        names = sorted({name for labels in batch_labels for name in labels})
        if any(sorted(labels) != names for labels in batch_labels):  # unify the structs
            tables = [
                with_labels(table.drop_columns(["labels"]) if labels else table, labels, names)
                for table, labels in zip(tables, batch_labels)
            ]
        store.create()
        part = store.write_part(pa.concat_tables(tables), files)
        for i in pending:
            r = results[i]
            results[i] = FileResult(r.source, r.status, r.nbytes, r.rows, r.file_hash, None, part)
    return results


def make_batches(
    sources: Sequence[Source], batch_bytes: int, workers: int = 1
) -> list[list[Source]]:
    """Consecutive groups of about ``batch_bytes`` (at least ~4 per worker when there is
    enough to share)."""
    total = sum(s.size for s in sources)
    if workers > 1:
        batch_bytes = max(1, min(batch_bytes, total // (4 * workers)))
    batches: list[list[Source]] = []
    current: list[Source] = []
    size = 0
    for source in sources:
        if current and (size + source.size > batch_bytes or len(current) >= MAX_BATCH_FILES):
            batches.append(current)
            current, size = [], 0
        current.append(source)
        size += source.size
    if current:
        batches.append(current)
    return batches


Runner = Callable[[str, list[list[Source]], frozenset[str]], Iterator[list[FileResult]]]


def _run_serial(
    location: str, batches: list[list[Source]], known: frozenset[str]
) -> Iterator[list[FileResult]]:
    for batch in batches:
        yield collect_batch(location, batch, known)


def _run_processes(workers: int) -> Runner:
    def run(
        location: str, batches: list[list[Source]], known: frozenset[str]
    ) -> Iterator[list[FileResult]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # forkserver: workers fork from a server that imported the collector once (spawn
        # would import numpy and pyarrow again in every worker; fork would copy the
        # driver's threads)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["delegate_lens.dataset.rows", "pyarrow.parquet"])
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(collect_batch, location, batch, known) for batch in batches]
            for future in as_completed(futures):
                yield future.result()

    return run


def _run_dask(scheduler: str | None, workers: int) -> Runner:
    def run(
        location: str, batches: list[list[Source]], known: frozenset[str]
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


class _Progress:
    """A rich progress bar over bytes when rich is installed and stderr is a terminal."""

    def __init__(self, total: int, enabled: bool) -> None:
        self._bar: Any = None
        if not enabled or not sys.stderr.isatty():
            return
        try:
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )
        except ImportError:
            return
        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            transient=True,
        )
        self._task = self._bar.add_task("collect", total=total)
        self._bar.start()

    def advance(self, nbytes: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, nbytes)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def collect(
    paths: Iterable[str],
    dataset: str,
    *,
    labels: Mapping[str, str] | None = None,
    etrecord: str | None = None,
    engine: str = "local",
    workers: int = 1,
    scheduler: str | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    progress: bool = False,
) -> CollectReport:
    """Collect the ETDumps under ``paths`` into the dataset at ``dataset`` (a folder or a
    pyarrow filesystem URI), skipping files already there. ``engine`` is ``local``
    (``workers`` processes on this machine) or ``dask`` (a Dask cluster at ``scheduler``,
    else a local cluster of ``workers`` processes)."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
    if workers < 1:
        raise UsageError(f"workers must be at least 1, not {workers}")
    if batch_bytes < 1:
        raise UsageError(f"batch_bytes must be at least 1, not {batch_bytes}")
    if scheduler is not None and engine != "dask":
        raise UsageError("a scheduler address needs --engine dask")
    sources = find_sources(paths, etrecord=etrecord, labels=labels)
    store = DatasetStore(dataset)
    store.create()
    known = frozenset(store.manifest())
    if engine == "dask":
        runner: Runner = _run_dask(scheduler, workers)
    elif workers > 1:
        runner = _run_processes(workers)
    else:
        runner = _run_serial
    batches = make_batches(sources, batch_bytes, workers if engine == "local" else max(workers, 2))
    order = {source.path: i for i, source in enumerate(sources)}
    results: list[FileResult] = []
    bar = _Progress(sum(s.size for s in sources), progress)
    try:
        for batch_results in runner(store.location, batches, known):
            results.extend(batch_results)
            bar.advance(sum(sources[order[r.source]].size for r in batch_results))
    finally:
        bar.close()
    results.sort(key=lambda r: order.get(r.source, 0))
    return CollectReport(results)
