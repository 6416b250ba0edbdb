"""``collect``: ETDumps -> the dataset, batch by batch, on one machine or a Dask cluster.

Files are grouped into batches of about ``batch_bytes``; each batch is read, hashed, decoded
and written as one part by one worker (:func:`~delegate_lens.dataset.batch.collect_batch`),
so workers never share a file and the driver only gathers small reports
(:mod:`~delegate_lens.dataset.engines` runs the batches).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from delegate_lens.dataset._cycles import no_cycle_collection
from delegate_lens.dataset.batch import FileResult, collect_batch
from delegate_lens.dataset.engines import Runner, run_dask, run_processes, run_serial
from delegate_lens.dataset.sources import Source, find_sources
from delegate_lens.dataset.store import DatasetStore
from delegate_lens.errors import UsageError

__all__ = ["ENGINES", "CollectReport", "FileResult", "collect", "collect_batch"]

ENGINES = ("local", "dask")
DEFAULT_BATCH_BYTES = 64 << 20
MAX_BATCH_FILES = 2000


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

    @property
    def enabled(self) -> bool:
        return self._bar is not None

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
        runner: Runner = run_dask(scheduler, workers)
    elif workers > 1:
        runner = run_processes(workers)
    else:
        runner = run_serial
    batches = make_batches(sources, batch_bytes, workers if engine == "local" else max(workers, 2))
    order = {source.path: i for i, source in enumerate(sources)}
    results: list[FileResult] = []
    outcomes = runner(store.location, batches, known)  # workers start before the bar's thread
    bar = _Progress(sum(s.size for s in sources), progress)
    try:
        with no_cycle_collection():
            for batch_results in outcomes:
                results.extend(batch_results)
                if bar.enabled:
                    bar.advance(sum(sources[order[r.source]].size for r in batch_results))
            results.sort(key=lambda r: order.get(r.source, 0))
    finally:
        bar.close()
    return CollectReport(results)
