"""Many ETDumps as one queryable dataset: ``collect`` into Parquet, ``query`` with SQL.

Needs the ``dataset`` extra (pyarrow, duckdb); ``collect(engine="dask")`` needs the ``dask``
extra. See ``docs/fleet.md``.
"""

from __future__ import annotations

from delegate_lens.dataset._batch import FileResult, collect_batch
from delegate_lens.dataset._collector import ENGINES, CollectReport, collect
from delegate_lens.dataset._query import FORMATS, connect, query, write_result
from delegate_lens.dataset._schema import COLUMNS, schema
from delegate_lens.dataset._sources import Source, find_sources, iter_sources
from delegate_lens.dataset._store import DatasetStore
from delegate_lens.dataset._workers import shutdown_workers

__all__ = [
    "COLUMNS",
    "ENGINES",
    "FORMATS",
    "CollectReport",
    "DatasetStore",
    "FileResult",
    "Source",
    "collect",
    "collect_batch",
    "connect",
    "find_sources",
    "iter_sources",
    "query",
    "schema",
    "shutdown_workers",
    "write_result",
]
