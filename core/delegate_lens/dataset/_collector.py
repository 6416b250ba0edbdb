"""``collect``: ETDumps -> the dataset, batch by batch, on one machine or a Dask cluster.

Files are found as they are collected and cut into batches
(:mod:`~delegate_lens.dataset._batching`); each batch is read, hashed, decoded and written as
one part by one worker (:func:`~delegate_lens.dataset._batch.collect_batch`), so workers
never share a file and the driver only gathers small reports
(:mod:`~delegate_lens.dataset._engines` runs the batches).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from delegate_lens.dataset._batch import FileResult, dataset_key
from delegate_lens.dataset._batching import iter_batches
from delegate_lens.dataset._cycles import no_cycle_collection
from delegate_lens.dataset._engines import Runner, run_dask, run_processes
from delegate_lens.dataset._sources import Source, iter_sources
from delegate_lens.dataset._store import DatasetStore
from delegate_lens.errors import UsageError

ENGINES = ("local", "dask")
DEFAULT_BATCH_BYTES = 64 << 20


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


class _Progress:
    """A rich progress bar over bytes when rich is installed and stderr is a terminal."""

    def __init__(self, enabled: bool) -> None:
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
        self._task = self._bar.add_task("collect", total=None)
        self._bar.start()

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def advance(self, nbytes: int, total: int) -> None:
        """``nbytes`` more collected, of ``total`` found so far."""
        if self._bar is not None:
            self._bar.update(self._task, advance=nbytes, total=total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def collect(
    paths: Iterable[str],
    dataset: str,
    *,
    labels: Mapping[str, str] | None = None,
    etrecord: str | None = None,
    program: str | None = None,
    engine: str = "local",
    workers: int = 1,
    scheduler: str | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    progress: bool = False,
) -> CollectReport:
    """Collect the ETDumps under ``paths`` into the dataset at ``dataset`` (a folder or a
    pyarrow filesystem URI), skipping files already there. ``engine`` is ``local``
    (``workers`` processes on this machine) or ``dask`` (a Dask cluster at ``scheduler``,
    else a local cluster of ``workers`` processes). ``program``: the program the ETDumps
    ran (a ``.pte``), for delegates whose map a ``dl_recover_delegate_map`` plugin recovers
    from it (their rows' ``op_types``, ``debug_handles`` and ``module_path``); it goes
    with ``etrecord`` (or the ETDumps' ETRecord sidecars)."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
    if workers < 1:
        raise UsageError(f"workers must be at least 1, not {workers}")
    if batch_bytes < 1:
        raise UsageError(f"batch_bytes must be at least 1, not {batch_bytes}")
    if scheduler is not None and engine != "dask":
        raise UsageError("a scheduler address needs --engine dask")
    found = iter_sources(paths, etrecord=etrecord, labels=labels, program=program)
    if etrecord is not None:
        _check_etrecord(etrecord)
    store = DatasetStore(dataset)
    existed = store.exists()
    if existed and not store.is_dataset() and not store.is_empty_folder():
        raise UsageError(
            f"cannot collect into {dataset}: a folder that holds other files and no dataset; "
            "give a new or empty folder, or an existing dataset"
        )
    runner: Runner = run_dask(scheduler, workers) if engine == "dask" else run_processes(workers)
    store.create()
    try:
        with store.writing(on_wait):
            known = known_keys(store.manifest())
            results = _run(store, runner, found, known, engine, workers, batch_bytes, progress)
            supersede(store, results)
    except BaseException:
        if not existed:
            store.remove_if_empty()  # failed before writing: leave no empty dataset
        raise
    if not existed:
        store.remove_if_empty()  # nothing collected into a new dataset: none made
    return CollectReport(results)


def _check_etrecord(path: str) -> None:
    """The ETRecord the user named, read whole now (every graph): a bad one is an error
    before anything is collected, never rows without their op types."""
    from delegate_lens.etrecord import load_etrecord

    load_etrecord(path).validate()


def _waiting() -> None:
    print("note: another collect is writing this dataset; waiting for it", file=sys.stderr)


on_wait = _waiting


def _run(
    store: DatasetStore,
    runner: Runner,
    found: Iterator[Source],
    known: frozenset[str],
    engine: str,
    workers: int,
    batch_bytes: int,
    progress: bool,
) -> list[FileResult]:
    place: dict[str, int] = {}  # each file's place in the order found
    sizes: list[int] = []  # each file's size, in that order
    found_bytes = [0]

    def recorded() -> Iterator[Source]:
        for source in found:
            place[source.path] = len(sizes)
            sizes.append(source.size)
            found_bytes[0] += source.size
            yield source

    batches = iter_batches(
        recorded(), batch_bytes, workers if engine == "local" else max(workers, 2)
    )
    chunks: list[list[FileResult]] = []  # each batch's results (or a part of a batch's)
    with no_cycle_collection():
        # workers start (with the first batch) before the bar's thread; files are found
        # while they collect, so the bar's total grows until all are found
        outcomes = runner(store.location, batches, known)
        bar = _Progress(progress)
        try:
            for batch_results in outcomes:
                if batch_results:
                    chunks.append(batch_results)
                if bar.enabled:
                    done = sum(sizes[place[r.source]] for r in batch_results)
                    bar.advance(done, found_bytes[0])
        finally:
            bar.close()
        # a batch's results are in its order, and a batch is a run of files in the order
        # found: the chunks in the order of their first files are every file in order
        chunks.sort(key=lambda chunk: place.get(chunk[0].source, 0))
        return list(itertools.chain.from_iterable(chunks))


def known_keys(manifest: Mapping[str, Mapping[str, object]]) -> frozenset[str]:
    """What a run skips: every stored ETDump's hash (a file given without an ETRecord is
    not collected again, whatever linked it before), and ``hash+identity`` of the ETRecord
    each was linked with (the same file with that ETRecord is not collected again; with
    another one it is, and replaces its rows)."""
    keys = set(manifest)
    for file_hash, item in manifest.items():
        etrecord = item.get("etrecord")
        if etrecord and isinstance(etrecord, str):
            keys.add(dataset_key(file_hash, etrecord))
    return frozenset(keys)


def supersede(store: DatasetStore, results: Sequence[FileResult]) -> None:
    """Drop the older rows of every ETDump this run collected again (with another ETRecord,
    or none where it had one): each part holding it from an earlier run is written again
    without it, or removed when that leaves it empty. The dataset keeps one copy per ETDump,
    linked by the ETRecord it was last collected with."""
    new_parts = {r.part for r in results if r.status == "collected" and r.part}
    again = {r.file_hash for r in results if r.status == "collected" and r.file_hash}
    if not again:
        return
    from delegate_lens.dataset._check import drop_files

    paths = {path.rsplit("/", 1)[-1]: path for path in store.parts()}
    for _, entry in store.manifest_entries():
        if isinstance(entry, Exception) or entry["part"] in new_parts:
            continue
        stale = {item["hash"] for item in entry["files"]} & again
        if stale and entry["part"] in paths:
            drop_files(store, paths[entry["part"]], entry["part"], entry["files"], stale)
