"""`delegate-lens numerics`: where does the runtime's output leave the reference graph?

Compares every intermediate output of the run (ETDump + debug buffer) with the output of
the same operators in the ETRecord's reference graph run on its representative inputs
(or ``--inputs``), and highlights the first divergence with its source line. Only the
capture of the reference outputs imports torch (skip it with ``--aot-outputs``).

Exit status 0, or 1 with ``--fail-on-divergence`` when an output diverged (so CI can gate
on it), 2 on bad input — including a debug buffer that gives no output to compare (empty,
truncated or another run's).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import IO, TYPE_CHECKING

from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from delegate_lens.numerics import Unmatched

_FORMATS = ("table", "json", "csv")
EXIT_DIVERGENCE = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "numerics",
        help="compare intermediate outputs with the reference graph; find the first divergence",
        description=(
            "Compare every intermediate output the run logged (ETDump + debug buffer) with "
            "the reference graph of the ETRecord run on its representative inputs, and name "
            "the operator where the gap first appears."
        ),
    )
    parser.add_argument("etdump", metavar="ETDUMP", help="ETDump file (.etdp)")
    parser.add_argument("--etrecord", metavar="R", required=True, help="ETRecord of the model")
    from delegate_lens.cli._inspect_cmd import add_program_argument

    add_program_argument(parser)
    parser.add_argument(
        "--debug-buffer", metavar="B", required=True, help="debug buffer of the run"
    )
    parser.add_argument(
        "--distance",
        default="MSE",
        metavar="NAME",
        help="comparator: MSE (default), L1, SNR, cosine, or one a plugin adds",
    )
    parser.add_argument(
        "--threshold", type=float, metavar="X", help="gap beyond which a row diverged"
    )
    parser.add_argument(
        "--format", "-f", choices=_FORMATS, default="table", help="output format (default: table)"
    )
    parser.add_argument(
        "--fail-on-divergence",
        action="store_true",
        help="exit 1 when an output diverged (to gate CI, as compare and verify do)",
    )
    parser.add_argument(
        "--inputs",
        metavar="FILE",
        help="inputs for the reference graph (.npy, .npz or torch.save .pt) when the "
        "ETRecord has no representative inputs",
    )
    parser.add_argument(
        "--aot-outputs", metavar="NPZ", help="reference outputs cached earlier (no torch)"
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="keep the reference outputs in R.numerics.npz and reuse them",
    )
    parser.add_argument(
        "--reference-graph",
        choices=("exported_program", "edge_dialect_exported_program"),
        help="graph to run (default: the ATen program when its handles map back, else edge)",
    )
    parser.add_argument("--method", metavar="M", help="method to compare (default: forward)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.cli._inspect_cmd import _one_line_warnings, check_debug_buffer

    if args.output:
        from delegate_lens.cli._outputs import check_output_file

        check_output_file(args.output)
    check_debug_buffer(args.debug_buffer)  # as inspect: before the reference runs
    with _one_line_warnings():
        from delegate_lens.inspector import Inspector

        inputs = None
        if args.inputs:
            from delegate_lens.numerics import load_inputs

            inputs = load_inputs(args.inputs)
        inspector = Inspector(
            etdump_path=args.etdump,
            etrecord=args.etrecord,
            debug_buffer_path=args.debug_buffer,
            program=args.program,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = inspector.calculate_numeric_gap(
                args.distance,
                reference_graph=args.reference_graph,
                inputs=inputs,
                aot_outputs=args.aot_outputs,
                cache=bool(args.cache),
                threshold=args.threshold,
                method=args.method,
                as_dataframe=False,
            )
        if len(table) == 0:  # comparing nothing is not a pass
            raise UsageError(_nothing_compared(args, table.unmatched))
        for w in caught:  # said once we know there is a table to show
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)

        def write(stream: IO[str]) -> None:
            if args.format == "json":
                table.write_json(stream)
            elif args.format == "csv":
                table.write_csv(stream)
            else:
                table.write_table(stream)

        from delegate_lens.fileio import standard_output, write_atomic

        if args.output:
            write_atomic(args.output, write)
        else:
            write(standard_output())
    if args.fail_on_divergence and any(row["diverged"] for row in table):
        return EXIT_DIVERGENCE
    return 0


def _nothing_compared(args: argparse.Namespace, unmatched: Sequence[Unmatched]) -> str:
    """Why no row was compared, in one line."""
    gone = [u for u in unmatched if u.side == "runtime" and "unavailable" in u.reason]
    if gone:
        size = Path(args.debug_buffer).stat().st_size
        return (
            f"{args.debug_buffer}: no output compared: the debug buffer ({size} bytes) holds "
            f"none of the {len(gone)} logged output(s) (empty, truncated or another run's?)"
        )
    if unmatched:
        first = unmatched[0]
        return (
            f"{args.etdump}: no output compared: {len(unmatched)} output(s) unmatched, e.g. "
            f"{first.side} handles {list(first.debug_handles)}: {first.reason}"
        )
    return f"{args.etdump}: no output compared: nothing in the run matches the reference graph"
