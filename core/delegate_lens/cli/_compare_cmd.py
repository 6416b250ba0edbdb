"""`delegate-lens compare BASE NEW`: which rows got faster or slower between two ETDumps.

Exit status 0 when no row is significantly slower beyond the threshold, 1 when one is (so
CI can gate on it), 2 on bad input, including two ETDumps that do not look like one program
(fewer than ``--min-matched`` of the operator rows matched; ``--allow-unmatched`` compares
anyway) and a comparison that tested no row (every matched row has too few samples: a gate
that tests nothing does not pass). ``-o`` writes atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    from delegate_lens.compare import CompareResult

EXIT_REGRESSION = 1
_FORMATS = ("table", "json", "csv", "markdown")
_TESTS = ("median-ci", "mannwhitney")


def parse_fraction(text: str, what: str) -> float:
    """``"5%"`` or ``"0.05"`` -> 0.05, strictly between 0 and 1."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(
            f"{what} must be a fraction or a percentage (0.05 or 5%), got {text!r}"
        ) from None
    if not 0.0 < value < 1.0:
        raise UsageError(f"{what} must be between 0 and 1 (0% and 100%), got {text!r}")
    return value


def parse_share(text: str, what: str) -> float:
    """``"50%"`` or ``"0.5"`` -> 0.5, from 0 to 1 inclusive."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(
            f"{what} must be a share or a percentage (0.5 or 50%), got {text!r}"
        ) from None
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"{what} must be from 0 to 1 (0% to 100%), got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two ETDumps row by row: faster, slower or no significant change",
        description=(
            "Match the rows of two ETDumps by identity (delegate backend + identifier, "
            "operator instruction + debug handles, else name and occurrence), compare their "
            "samples (median delta and ratio with a confidence interval) and summarize per "
            "block and per delegate backend. Exit 1 when any row is significantly slower "
            "beyond the threshold."
        ),
    )
    parser.add_argument("base", metavar="BASE", help="the ETDump before the change")
    parser.add_argument("new", metavar="NEW", help="the ETDump after the change")
    parser.add_argument("--base-etrecord", metavar="ETRECORD", help="ETRecord of BASE")
    parser.add_argument("--new-etrecord", metavar="ETRECORD", help="ETRecord of NEW")
    parser.add_argument(
        "--etrecord",
        metavar="ETRECORD",
        help="one ETRecord for both sides (same program, e.g. a runtime change)",
    )
    parser.add_argument("--base-program", metavar="MODEL.pte", help="program of BASE")
    parser.add_argument("--new-program", metavar="MODEL.pte", help="program of NEW")
    parser.add_argument(
        "--program",
        metavar="MODEL.pte",
        help="one program for both sides: delegates the ETRecords leave unmapped get the map "
        "a plugin recovers from it (e.g. XNNPACK with delegate-lens-xnnpack)",
    )
    parser.add_argument(
        "--threshold",
        default="5%",
        metavar="FRACTION",
        help="smallest change of a median that counts, as 5%% or 0.05 (default: 5%%)",
    )
    parser.add_argument(
        "--alpha",
        default="0.05",
        metavar="ALPHA",
        help="significance level (default: 0.05)",
    )
    parser.add_argument(
        "--test",
        choices=_TESTS,
        default="median-ci",
        help="median-ci: the medians' confidence intervals (default); mannwhitney: "
        "Mann-Whitney U test (needs the 'stats' extra, SciPy)",
    )
    parser.add_argument(
        "--min-samples",
        type=int,
        default=3,
        metavar="N",
        help="rows with fewer samples on a side get no verdict (default: 3)",
    )
    parser.add_argument(
        "--min-matched",
        default="50%",
        metavar="SHARE",
        help="give no verdict (exit 2) when fewer of the operator rows match, as 50%% or "
        "0.5 (default: 50%%)",
    )
    parser.add_argument(
        "--allow-unmatched",
        action="store_true",
        help="give verdicts however few rows match (same as --min-matched 0)",
    )
    parser.add_argument(
        "--format",
        "-f",
        choices=_FORMATS,
        default="table",
        help="output format (default: table)",
    )
    parser.add_argument(
        "--samples", action="store_true", help="json: also list every sample of both sides"
    )
    parser.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    threshold = parse_fraction(args.threshold, "--threshold")
    alpha = parse_fraction(args.alpha, "--alpha")
    min_matched = 0.0 if args.allow_unmatched else parse_share(args.min_matched, "--min-matched")
    if args.min_samples < 2:
        raise UsageError(f"--min-samples must be at least 2, got {args.min_samples}")
    if args.etrecord is not None and (args.base_etrecord or args.new_etrecord):
        raise UsageError("give --etrecord or --base-etrecord/--new-etrecord, not both")
    if args.program is not None and (args.base_program or args.new_program):
        raise UsageError("give --program or --base-program/--new-program, not both")
    if args.output:
        target = Path(args.output)
        if not target.parent.is_dir():
            raise UsageError(f"cannot write {args.output}: folder {target.parent} does not exist")
        if target.is_dir():
            raise UsageError(f"cannot write {args.output}: it is a folder; give a file name")
    from delegate_lens.cli._inspect_cmd import _one_line_warnings
    from delegate_lens.compare import compare, write_result

    with _one_line_warnings():
        result = compare(
            args.base,
            args.new,
            base_etrecord=args.etrecord or args.base_etrecord,
            new_etrecord=args.etrecord or args.new_etrecord,
            threshold=threshold,
            alpha=alpha,
            test=args.test,
            min_samples=args.min_samples,
            min_matched=min_matched,
            base_program=args.program or args.base_program,
            new_program=args.program or args.new_program,
        )
    untested = _untested(result, args, alpha)
    if untested is not None:  # a gate that tests nothing does not pass
        raise UsageError(untested)
    from delegate_lens.fileio import standard_output, write_atomic

    if args.output:
        write_atomic(
            args.output, lambda stream: write_result(result, stream, args.format, args.samples)
        )
    else:
        write_result(result, standard_output(), args.format, args.samples)
    return EXIT_REGRESSION if result.has_regression else 0


def _untested(result: CompareResult, args: argparse.Namespace, alpha: float) -> str | None:
    """Why no row got a verdict (every one has too few samples, or none matched), in one
    line; None when some row was tested."""
    from delegate_lens.compare import TOO_FEW

    if any(row.verdict != TOO_FEW for row in result.rows):
        return None
    where = f"{args.base} and {args.new}: no verdict"
    if not result.rows:
        return f"{where}: no row is in both ETDumps, so none could be tested"
    import numpy as np

    most = max(
        min(int(np.isfinite(row.base_samples).sum()), int(np.isfinite(row.new_samples).sum()))
        for row in result.rows
    )
    need = f"--min-samples {args.min_samples}"
    if args.test == "median-ci":
        from delegate_lens.compare._internal import interval_samples

        need += f"; a median's interval at --alpha {alpha:g} needs {interval_samples(alpha)}"
    lower = "lower --min-samples" if most < args.min_samples else "raise --alpha"
    return (
        f"{where}: none of the {len(result.rows)} matched row(s) has enough samples to test "
        f"(at most {most} on a side; {need}); record more runs, or {lower}"
    )
