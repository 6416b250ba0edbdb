"""How ``collect`` runs its batches: in this process, in local worker processes, or on a
Dask cluster. Each runner yields every batch's file results as the batch finishes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from delegate_lens.dataset._batch import FileResult, collect_batch
from delegate_lens.dataset._extras import require
from delegate_lens.dataset._sources import Source
from delegate_lens.dataset._workers import run_workers

Runner = Callable[[str, Iterable[list[Source]], frozenset[str]], Iterator[list[FileResult]]]
"""``runner(location, batches, known)``: collects every batch, yielding each one's results
as it finishes. ``batches`` may be lazy (made while files are still being found): a runner
takes each batch as soon as it is made, so finding files overlaps collecting them."""


def run_serial(
    location: str, batches: Iterable[list[Source]], known: frozenset[str]
) -> Iterator[list[FileResult]]:
    for batch in batches:
        yield collect_batch(location, batch, known)


def run_processes(workers: int) -> Runner:
    """``workers`` processes started for the run collect, while this one finds the files
    and hands them out (:func:`~delegate_lens.dataset._workers.run_workers`). One worker is
    this process alone (:func:`run_serial`)."""
    if workers <= 1:
        return run_serial

    def run(
        location: str, batches: Iterable[list[Source]], known: frozenset[str]
    ) -> Iterator[list[FileResult]]:
        return run_workers(workers, location, batches, known)

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
