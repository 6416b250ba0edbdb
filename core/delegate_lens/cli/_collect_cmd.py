"""`delegate-lens collect`: ETDumps (files, folders, globs) into a Parquet dataset.

Files already in the dataset (same content hash) are skipped; a bad file is reported on
stderr (``warning: skipped …``) and skipped. Exit 0 when something was collected or was
already there; 2 when the arguments are bad or no file could be collected.
``collect --check -o D`` checks a dataset (exit 1 when something is wrong), ``--repair``
drops what is damaged (see :mod:`delegate_lens.dataset._check`).
"""

from __future__ import annotations

import argparse
import math
import sys


def _megabytes(text: str) -> float:
    """A size in MB: a finite number > 0 (argparse reports anything else as a one-line
    usage error)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of MB > 0, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "collect",
        help="collect ETDumps (files, folders, globs) into a Parquet dataset",
        description=(
            "Read ETDumps into a Parquet dataset, one row per profile event (see docs/fleet.md). "
            "Incremental: files already collected are skipped by content hash."
        ),
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="ETDump file, folder or glob")
    parser.add_argument(
        "-o", "--output", required=True, metavar="DATASET", help="dataset folder or URI (s3://…)"
    )
    parser.add_argument(
        "--etrecord", metavar="R", help="ETRecord of every ETDump (default: a sidecar, if any)"
    )
    parser.add_argument(
        "--program",
        metavar="MODEL.pte",
        help="the program every ETDump ran: delegates their ETRecord leaves unmapped get the "
        "map a plugin recovers from it (e.g. XNNPACK with delegate-lens-xnnpack)",
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="label every collected event (repeatable; wins over a labels.json sidecar)",
    )
    parser.add_argument("--engine", default="local", metavar="NAME", help="local (default) or dask")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes that collect, this one included (default 1)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a Dask scheduler (tcp://host:8786) for --engine dask",
    )
    parser.add_argument(
        "--batch-mb",
        type=_megabytes,
        default=64.0,
        metavar="MB",
        help="ETDump MB per part (default 64)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    parser.add_argument(
        "--check",
        action="store_true",
        help="check the dataset -o names (damaged parts, files stored twice); exit 1 if not ok",
    )
    parser.add_argument(
        "--repair",
        action="store_true",
        help="drop what --check finds damaged or stored twice; name the files to collect again",
    )
    parser.set_defaults(func=_run)


def _check(args: argparse.Namespace) -> int:
    from delegate_lens.cli._terminal import escape_controls
    from delegate_lens.dataset._internal import check_dataset, format_check
    from delegate_lens.errors import UsageError
    from delegate_lens.fileio import standard_output

    if args.paths:
        raise UsageError("--check and --repair take no PATH: they check the dataset -o names")
    check = check_dataset(args.output, repair=args.repair)
    standard_output().write(escape_controls(format_check(check)))
    return 0 if check.ok or args.repair else 1


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.dataset import collect
    from delegate_lens.dataset._internal import parse_labels
    from delegate_lens.errors import UsageError

    if args.check or args.repair:
        return _check(args)
    if not args.paths:
        raise UsageError("collect: give the ETDumps to collect (PATH ...)")

    labels = parse_labels(args.label)
    report = collect(
        args.paths,
        args.output,
        labels=labels,
        etrecord=args.etrecord,
        program=args.program,
        engine=args.engine,
        workers=args.workers,
        scheduler=args.scheduler,
        batch_bytes=max(1, int(args.batch_mb * (1 << 20))),
        progress=not args.quiet,
    )
    from delegate_lens.cli._terminal import escape_controls

    for failed in report.failed:
        print(escape_controls(f"warning: skipped {failed.error}"), file=sys.stderr)
    if not args.quiet:
        print(report.summary(), file=sys.stderr)
    if report.failed and not report.collected and not report.skipped:
        raise UsageError(f"nothing collected: all {len(report.failed)} file(s) failed")
    return 0
