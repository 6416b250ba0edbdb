"""`delegate-lens query`: SQL over a collected dataset (DuckDB; the view is ``events``)."""

from __future__ import annotations

import argparse

from delegate_lens.errors import UsageError


def _seconds(text: str) -> float:
    from delegate_lens.dataset._internal import check_timeout

    try:
        return check_timeout(text, "seconds")
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def _size(text: str) -> int:
    from delegate_lens.dataset._internal import parse_size

    try:
        return parse_size(text, "size")
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "query",
        help="run SQL over a collected dataset (the view 'events')",
        description="Run SQL over a dataset made by 'collect' with DuckDB; the table is 'events'.",
    )
    parser.add_argument("dataset", metavar="DATASET", help="dataset folder or URI")
    parser.add_argument("sql", metavar="SQL", help="a SELECT over the view events")
    parser.add_argument(
        "--format",
        "-f",
        default=None,
        metavar="NAME",
        help="table, csv, json or parquet (default: from -o's extension: .csv, .json, "
        ".parquet or .txt for a table; else table)",
    )
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="write here (outside the dataset) instead of stdout"
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="stop the query after this many seconds (default 300, or [query] timeout)",
    )
    parser.add_argument(
        "--memory-limit",
        type=_size,
        default=None,
        metavar="SIZE",
        help="memory the query and its result may take, e.g. 2GB or 500MB (default a quarter "
        "of the machine's memory, or [query] memory_limit)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.cli._outputs import check_output_file
    from delegate_lens.dataset import query, write_result
    from delegate_lens.dataset._internal import format_for
    from delegate_lens.fileio import standard_output, write_atomic

    fmt = format_for(args.output, args.format)
    if args.output:
        check_output_file(args.output)
        _check_outside(args.dataset, args.output)
    elif fmt == "parquet":
        raise UsageError("--format parquet needs -o FILE")
    table = query(args.dataset, args.sql, timeout=args.timeout, memory_limit=args.memory_limit)
    binary = fmt == "parquet"
    if args.output:
        write_atomic(args.output, lambda stream: write_result(table, stream, fmt), binary=binary)
    else:
        from delegate_lens.cli._terminal import safe_text

        write_result(table, safe_text(standard_output(), for_people=fmt == "table"), fmt)
    return 0


def _check_outside(dataset: str, output: str) -> None:
    """Refuse an output inside the dataset the query reads (a part, the manifest, or any
    other file of its folder): the next query would read what this one wrote."""
    from delegate_lens.dataset import DatasetStore
    from delegate_lens.fileio import STDOUT

    if output != STDOUT and DatasetStore(dataset).holds(output):
        raise UsageError(
            f"cannot write {output}: it is inside the dataset {dataset} that this query "
            "reads; give an output outside the dataset"
        )
