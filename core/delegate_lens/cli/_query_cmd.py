"""`delegate-lens query`: SQL over a collected dataset (DuckDB; the view is ``events``)."""

from __future__ import annotations

import argparse
import sys

from delegate_lens.errors import UsageError


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
    parser.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.cli._outputs import check_output_file
    from delegate_lens.dataset._query import format_for, query, write_result
    from delegate_lens.fileio import write_atomic

    fmt = format_for(args.output, args.format)
    if args.output:
        check_output_file(args.output)
    elif fmt == "parquet":
        raise UsageError("--format parquet needs -o FILE")
    table = query(args.dataset, args.sql)
    binary = fmt == "parquet"
    if args.output:
        write_atomic(args.output, lambda stream: write_result(table, stream, fmt), binary=binary)
    else:
        from delegate_lens.cli._terminal import safe_text

        write_result(table, safe_text(sys.stdout, for_people=fmt == "table"), fmt)
    return 0
