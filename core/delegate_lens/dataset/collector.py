"""``collect``: ETDumps -> the dataset, batch by batch, on one machine or a Dask cluster.

Files are grouped into batches of about ``batch_bytes``; each batch is read, hashed, decoded
and written as one part by one worker (:func:`collect_batch`), so workers never share a
file and the driver only gathers small reports. A file that cannot be read or decoded is
reported and skipped; the others of its batch are still collected.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from delegate_lens.dataset._extras import require
from delegate_lens.dataset.sources import Source, find_sources, read_labels
from delegate_lens.dataset.store import DatasetStore
from delegate_lens.errors import UsageError

__all__ = ["ENGINES", "CollectReport", "FileResult", "collect", "collect_batch"]

ENGINES = ("local", "dask")
DEFAULT_BATCH_BYTES = 64 << 20
MAX_BATCH_FILES = 2000
_ALONE_BYTES = 4 << 20  # a file this big is decoded on its own
_GROUP_BYTES = 16 << 20  # smaller files are decoded together, this many bytes at a time


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


def _read(path: str, size: int = -1) -> bytes | memoryview:
    """The file's bytes: a read-only memory map for a big local file (no copy: the
    decoder and the hash read the page cache directly), else read whole. ``size`` is the
    size the file had when found (-1: unknown)."""
    if "://" in path:
        fs = require("pyarrow.fs", "collect")
        filesystem, inner = fs.FileSystem.from_uri(path)
        with filesystem.open_input_stream(inner) as stream:
            return bytes(stream.read())
    from delegate_lens.fileio import reraise_as_input_error

    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            if size < 0:
                size = os.fstat(fd).st_size
            if size >= _ALONE_BYTES:
                return memoryview(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
            data = os.read(fd, size + 1)  # one more: a file that grew is read whole
            if len(data) <= size:
                return data
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    except OSError as exc:
        reraise_as_input_error(exc, path, "ETDump")


def content_hash(data: bytes | memoryview) -> str:
    """The hash incremental collection skips by (SHA-256, 128 bits in hex)."""
    return hashlib.sha256(data).hexdigest()[:32]


@attrs.frozen
class _Pending:
    """A file read and hashed, waiting to be decoded."""

    index: int  # in the batch
    source: Source
    data: bytes | memoryview
    file_hash: str
    labels: dict[str, str]


def _message(path: str, exc: BaseException) -> str:
    text = str(exc).strip()
    message = text.splitlines()[0] if text else type(exc).__name__
    return message if path in message else f"{path}: {message}"


def _groups(pending: Sequence[_Pending]) -> Iterator[list[_Pending]]:
    """Files to decode together: each big file alone, small ones up to ``_GROUP_BYTES``."""
    group: list[_Pending] = []
    size = 0
    for item in pending:
        if len(item.data) >= _ALONE_BYTES:
            yield [item]
            continue
        if group and size + len(item.data) > _GROUP_BYTES:
            yield group
            group, size = [], 0
        group.append(item)
        size += len(item.data)
    if group:
        yield group


def _rows_per_file(table: Any, files: int) -> list[int]:
    """Rows of each file in a table from ``files_table`` (its ``source`` codes)."""
    source = table.column("source").combine_chunks()
    return np.bincount(source.indices.to_numpy(), minlength=files).tolist()


def _decode_group(
    group: list[_Pending], label_names: Sequence[str]
) -> Iterator[tuple[list[_Pending], Any] | tuple[_Pending, Exception]]:
    """Tables of ``group`` (all files in one, when all decode), or per file on failure:
    ``(files, table)`` for what was collected, ``(file, error)`` for a bad file."""
    from delegate_lens.dataset.rows import FileLabels, files_columns, files_table

    def table(items: list[_Pending]) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fc, run_file = files_columns([item.data for item in items])
            files = [FileLabels(i.source.path, i.file_hash, i.labels) for i in items]
            return files_table(fc, run_file, files, label_names=label_names)

    try:
        yield group, table(group)
        return
    except Exception as exc:  # a bad file is reported and skipped, never fatal
        if len(group) == 1:
            yield group[0], exc
            return
    for item in group:  # one file at a time, to tell the bad from the good
        try:
            yield [item], table([item])
        except Exception as exc:
            yield item, exc


def collect_batch(
    location: str, sources: Sequence[Source], known: Collection[str] = frozenset()
) -> list[FileResult]:
    """Collect ``sources`` into one new part of the dataset at ``location`` (what each
    worker runs); files whose hash is in ``known`` are skipped.

    Files without an ETRecord are decoded together, many small files in one vectorized
    pass (:func:`~delegate_lens.etdump.reader.decode_many`); a file with an ETRecord goes
    through the Inspector for its links. A file repeated within the batch is skipped, or
    fails as its first copy did.
    """
    from delegate_lens.dataset.rows import events_table, file_columns
    from delegate_lens.etrecord import load_etrecord

    pa = require("pyarrow", "collect")
    results: list[FileResult | None] = [None] * len(sources)
    first_of: dict[str, int] = {}  # hash -> index of its first copy in the batch
    copies: list[tuple[int, str, int]] = []  # (index, hash, size) of later copies
    plain: list[_Pending] = []
    linked: list[_Pending] = []
    for i, source in enumerate(sources):
        file_hash = None
        try:
            data = _read(source.path, source.size)
            file_hash = content_hash(data)
            if file_hash in known:
                results[i] = FileResult(source.path, "skipped", len(data), 0, file_hash)
                continue
            if file_hash in first_of:
                copies.append((i, file_hash, len(data)))
                continue
            labels = read_labels(source.labels_file) if source.labels_file else {}
            labels.update(source.labels)
        except Exception as exc:  # a bad file is reported and skipped, never fatal
            results[i] = FileResult(
                source.path, "failed", 0, 0, file_hash, _message(source.path, exc)
            )
            continue
        first_of[file_hash] = i
        item = _Pending(i, source, data, file_hash, labels)
        (plain if source.etrecord is None else linked).append(item)

    names = sorted({name for item in (*plain, *linked) for name in item.labels})
    tables: list[tuple[list[_Pending], Any]] = []
    collected: list[_Pending] = []
    failed: dict[int, str] = {}
    for group in _groups(plain):
        for done, outcome in _decode_group(group, names):
            if isinstance(done, list):
                tables.append((done, outcome))
                collected.extend(done)
            else:
                failed[done.index] = _message(done.source.path, outcome)
    records: dict[str, Any] = {}
    for item in linked:
        try:
            etrecord = item.source.etrecord
            assert etrecord is not None
            if etrecord not in records:
                records[etrecord] = load_etrecord(etrecord)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fc, inspector = file_columns(item.data, records[etrecord])
                linked_table = events_table(
                    fc,
                    source=item.source.path,
                    file_hash=item.file_hash,
                    labels=item.labels,
                    inspector=inspector,
                    label_names=names,
                )
            tables.append(([item], linked_table))
            collected.append(item)
        except Exception as exc:  # a bad file (or ETRecord) is reported and skipped
            failed[item.index] = _message(item.source.path, exc)

    rows: dict[int, int] = {}
    for done, table in tables:
        for item, count in zip(done, _rows_per_file(table, len(done))):
            rows[item.index] = count
    part = None
    if tables:
        files = [
            {"hash": item.file_hash, "source": item.source.path, "rows": rows[item.index]}
            for item in sorted(collected, key=lambda item: item.index)
        ]
        store = DatasetStore(location)
        store.create()
        part = store.write_part(pa.concat_tables([table for _, table in tables]), files)
    pending = {item.index: item for item in (*plain, *linked)}
    for i, item in pending.items():
        if i in failed:
            results[i] = FileResult(item.source.path, "failed", 0, 0, item.file_hash, failed[i])
        else:
            results[i] = FileResult(
                item.source.path, "collected", len(item.data), rows[i], item.file_hash, None, part
            )
    for i, file_hash, size in copies:  # a repeated file: as its first copy went
        first = first_of[file_hash]
        if first in failed:
            message = failed[first].replace(sources[first].path, sources[i].path, 1)
            results[i] = FileResult(sources[i].path, "failed", 0, 0, file_hash, message)
        else:
            results[i] = FileResult(sources[i].path, "skipped", size, 0, file_hash)
    return [r for r in results if r is not None]


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


def _run_processes(workers: int) -> Runner:
    def run(
        location: str, batches: list[list[Source]], known: frozenset[str]
    ) -> Iterator[list[FileResult]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        method = _start_method()
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(["delegate_lens.dataset.rows", "pyarrow.parquet"])
        with warnings.catch_warnings():
            # Python >= 3.12 warns of fork in any process with native threads; ours are
            # numpy's and Arrow's, which are fork-safe, and no Python thread runs
            warnings.filterwarnings(
                "ignore", "This process .* is multi-threaded", DeprecationWarning
            )
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
            futures = [pool.submit(collect_batch, location, batch, known) for batch in batches]
        with pool:
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
