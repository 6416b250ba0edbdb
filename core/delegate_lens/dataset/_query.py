"""``query``: SQL over a dataset with DuckDB (embedded; no server).

The dataset's parts are the view ``events`` (columns: :data:`delegate_lens.dataset._schema.COLUMNS`).
"""

from __future__ import annotations

import json
import os
from typing import IO, TYPE_CHECKING, Any, cast

from delegate_lens.dataset._extras import require
from delegate_lens.dataset._limits import (
    HOW_TO_RAISE_MEMORY,
    QueryWatch,
    format_size,
    query_limits,
    resolve_memory_limit,
)
from delegate_lens.dataset._schema import schema
from delegate_lens.dataset._store import DatasetStore
from delegate_lens.errors import QueryLimitError, UsageError

if TYPE_CHECKING:
    import duckdb
    import pyarrow


FORMATS = ("table", "csv", "json", "parquet")
VIEW = "events"
RESULT_BATCH_ROWS = 1 << 16
"""Rows per batch as a result is read (and counted against the memory limit)."""


# Settings of every connection: no extension is installed or loaded behind the query's
# back, and once the view exists the configuration is locked with file access limited to
# the dataset's folder (``enable_external_access`` off, ``allowed_directories``).
_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
}


def _dataset_directory(store: DatasetStore) -> str:
    """The dataset's folder as DuckDB names it (with a trailing slash: a prefix)."""
    root = store.root.rstrip("/") + "/"
    if store.local:
        return root
    return f"{store.location.split('://', 1)[0]}://{root}"


def connect(dataset: str, *, memory_limit: int | str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the dataset as the view ``events``, locked: it
    reads files only inside the dataset's folder, loads no extension and its settings
    cannot be changed. ``memory_limit`` (bytes, or a size such as ``"2GB"``; default: the
    ``[query]`` configuration's, else a quarter of the machine's memory) is DuckDB's."""
    duckdb = require("duckdb", "query")
    limit = resolve_memory_limit(memory_limit)
    store = DatasetStore(dataset)
    if not store.is_dataset():  # no folder, or a folder collect did not make
        raise UsageError(f"{dataset}: no such dataset (collect into it first)")
    con = duckdb.connect(config={**_CONFIG, "memory_limit": f"{limit}B"})
    try:
        parts = store.part_uris()
        if not store.local:  # s3://, gs://...: read through httpfs, loaded now, not on use
            con.execute("INSTALL httpfs")
            con.execute("LOAD httpfs")
        if parts:
            listing = ", ".join("'" + p.replace("'", "''") + "'" for p in parts)
            con.execute(
                f"CREATE VIEW {VIEW} AS SELECT * FROM read_parquet([{listing}], "
                "union_by_name = true)"
            )
        else:  # an empty dataset still has its columns
            pa = require("pyarrow", "query")
            con.register("_empty_events", pa.Table.from_batches([], schema=schema()))
            con.execute(f"CREATE VIEW {VIEW} AS SELECT * FROM _empty_events")
        folder = _dataset_directory(store).replace("'", "''")
        con.execute(f"SET allowed_directories = ['{folder}']")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except duckdb.Error as exc:
        con.close()
        raise UsageError(f"{dataset}: cannot open the dataset: {_first_line(exc)}") from None
    return con


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_reading(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`UsageError` unless ``sql`` is one SELECT (``WITH``, ``VALUES``,
    ``FROM events`` ... are SELECTs): no statement that writes, sets or loads anything."""
    duckdb = require("duckdb", "query")
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise UsageError(f"query takes one SELECT statement, got {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = getattr(kind, "name", str(kind))
        raise UsageError(
            f"query runs only a SELECT over the view {VIEW}, not {name} (the dataset is read-only)"
        )


def query(
    dataset: str,
    sql: str,
    *,
    timeout: float | None = None,
    memory_limit: int | str | None = None,
) -> pyarrow.Table:
    """Run ``sql`` — one SELECT — over the dataset; the result as a ``pyarrow.Table``.
    Other statements (COPY, DROP, SET, ATTACH, INSTALL, ...), files outside the dataset
    and extensions are refused. A bad query is a :class:`UsageError` carrying DuckDB's
    message.

    ``timeout`` (seconds) and ``memory_limit`` (bytes, or a size such as ``"2GB"``) bound
    the query (defaults: the ``[query]`` configuration's, else 300 s and a quarter of the
    machine's memory; see ``docs/trust.md``): past either it stops with a
    :class:`~delegate_lens.errors.QueryLimitError` naming the limit."""
    duckdb = require("duckdb", "query")
    limits = query_limits(timeout, memory_limit)
    con = connect(dataset, memory_limit=limits.memory_limit)
    try:
        _check_reading(con, sql)
        with QueryWatch(con, limits) as watch:
            try:
                table = _run(con, sql, watch)
            except (duckdb.Error, OSError, _arrow_error()) as exc:
                # (an error met while the result streams comes through pyarrow)
                raise watch.stopped or _failure(exc, limits.memory_limit) from None
        if watch.stopped is not None:  # stopped where no error came back: never a cut result
            raise watch.stopped
        return table
    finally:
        con.close()


def _arrow_error() -> type[Exception]:
    error: type[Exception] = require("pyarrow", "query").ArrowException
    return error


def _failure(exc: BaseException, memory_limit: int) -> UsageError:
    """The one-line error of a query DuckDB failed (met running it or reading its result)."""
    duckdb = require("duckdb", "query")
    first = _first_line(exc)
    if isinstance(exc, duckdb.OutOfMemoryException) or first.startswith("Out of Memory Error"):
        return QueryLimitError(
            f"query stopped: it needs more than the memory limit of {format_size(memory_limit)} "
            f"({first}); raise it {HOW_TO_RAISE_MEMORY}"
        )
    if isinstance(exc, duckdb.PermissionException) or first.startswith("Permission Error"):
        return UsageError(f"query failed: {first} (a query reads only the dataset's own files)")
    return UsageError(f"query failed: {first}")


def _run(con: duckdb.DuckDBPyConnection, sql: str, watch: QueryWatch) -> pyarrow.Table:
    """The result of ``sql``, read batch by batch: past the memory limit (its bytes) or the
    timeout, a :class:`QueryLimitError`."""
    pa = require("pyarrow", "query")
    relation = con.sql(sql)
    if relation is None:
        raise UsageError("the SQL statement returns no rows (use a SELECT)")
    read = getattr(relation, "to_arrow_reader", None) or relation.fetch_record_batch
    reader = read(RESULT_BATCH_ROWS)
    batches = []
    size = rows = 0
    limit = watch.limits.memory_limit
    for batch in reader:
        size += batch.nbytes
        rows += batch.num_rows
        if size > limit:
            raise QueryLimitError(
                f"query stopped: its result passed the memory limit of {format_size(limit)} "
                f"after {rows:,} rows; select less (LIMIT, aggregates) or raise the limit "
                f"{HOW_TO_RAISE_MEMORY}"
            )
        if watch.past_deadline():
            raise watch.timed_out()
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=reader.schema)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return format(value, ".10g")
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=str)
    return str(value)


def format_table(table: pyarrow.Table) -> str:
    """The result as an aligned text table (numbers right-aligned)."""
    from delegate_lens._texttable import align_columns

    pa = require("pyarrow", "query")
    header = list(table.column_names)
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [header, *([_cell(col[r]) for col in columns] for r in range(table.num_rows))]
    numeric = {
        i
        for i, field in enumerate(table.schema)
        if pa.types.is_integer(field.type)
        or pa.types.is_floating(field.type)
        or pa.types.is_decimal(field.type)
    }
    return "\n".join(align_columns(rows, right=numeric, rule=True)) + "\n"


def _jsonable(table: pyarrow.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    for row in rows:
        for key, value in row.items():
            if isinstance(value, list) and value and isinstance(value[0], tuple):
                row[key] = dict(value)  # a MAP column comes as (key, value) pairs
    return rows


def write_result(table: pyarrow.Table, stream: IO[str] | IO[bytes], fmt: str) -> None:
    """Write a query result to ``stream`` (text for table/csv/json, binary for parquet)."""
    if fmt == "parquet":
        pq = require("pyarrow.parquet", "query")
        pq.write_table(table, stream)
        return
    _write_text(table, cast("IO[str]", stream), fmt)  # (a text format: a text stream)


def _write_text(table: pyarrow.Table, stream: IO[str], fmt: str) -> None:
    if fmt == "table":
        stream.write(format_table(table))
    elif fmt == "json":
        json.dump(_jsonable(table), stream, default=str, indent=1)
        stream.write("\n")
    elif fmt == "csv":
        import csv

        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(table.column_names)
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        for r in range(table.num_rows):
            writer.writerow([_cell(col[r]) for col in columns])
    else:
        raise UsageError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")


EXTENSIONS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".txt": "table"}
"""The output file extensions ``query -o`` knows, and the format each one means."""


def format_for(output: str | None, fmt: str | None) -> str:
    """``fmt``, else the format named by the output file's extension (one of
    :data:`EXTENSIONS`, else a :class:`UsageError`), else table."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
        return fmt
    if output:
        ext = os.path.splitext(output)[1].lower()
        if ext not in EXTENSIONS:
            known = ", ".join(f"{e} ({f})" for e, f in EXTENSIONS.items())
            raise UsageError(
                f"cannot tell the format of {output} from its extension "
                f"({ext or 'none'}): use {known}, or name it with --format"
            )
        return EXTENSIONS[ext]
    return "table"
