"""`delegate-lens demo`: the whole pipeline on an embedded model, no files needed.

export -> lower to the demo backend -> program + ETRecord -> N traced runs ->
``OUT/{program.dlp, program.bpte, etrecord.bin, etdump.etdp, debug.bin}`` -> the
Inspector's table (``program.bpte`` bundles the program with test cases for
``delegate-lens verify``).
"""

from __future__ import annotations

import argparse
import functools
from typing import TYPE_CHECKING

from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

_MODELS = ("mlp", "convnet", "gpt")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the whole pipeline on a small embedded model with the demo backend",
        description=(
            "Export a small model, lower it to the demo backend (DemoBackend), write the "
            "program, its ETRecord and a bundled program with test cases (program.bpte, "
            "for delegate-lens verify), run it N times with ETDump tracing and print the "
            "Inspector's table of the runs."
        ),
    )
    parser.add_argument("--model", choices=_MODELS, default="mlp", help="model (default: mlp)")
    parser.add_argument(
        "--runs", type=int, default=10, metavar="N", help="traced runs (default: 10)"
    )
    parser.add_argument(
        "--out",
        default="delegate-lens-demo",
        metavar="DIR",
        help="output folder (default: ./delegate-lens-demo)",
    )
    parser.add_argument(
        "--identifiers",
        choices=("int", "str"),
        default="int",
        help="delegate debug identifiers: generated ints (default) or readable strings",
    )
    parser.add_argument(
        "--debug-buffer-size",
        type=int,
        default=4 << 20,
        metavar="BYTES",
        help="debug buffer for intermediate outputs (default: 4 MiB; 0 = none)",
    )
    parser.add_argument(
        "--no-table", action="store_true", help="do not print the Inspector's table"
    )
    parser.add_argument(
        "--precision",
        choices=("exact", "fp16", "int8"),
        default="exact",
        help="the demo backend's numerics (compile spec 'precision'; default: exact)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="numeric debugging: compare every op's output with the reference graph and "
        "print the gaps (needs a debug buffer)",
    )
    parser.add_argument(
        "--slowdown",
        metavar="OP:FACTOR",
        help="run the demo backend's ops of OP FACTOR times (e.g. tan:20; OP as the tables "
        "show it: an operator like tan or aten.tan.default, a kernel like sin, or a delegate "
        "identifier): a known regression to try 'delegate-lens compare' on",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.runs < 1:
        raise UsageError(f"--runs must be at least 1, got {args.runs}")
    if args.debug_buffer_size < 0:
        raise UsageError(f"--debug-buffer-size must be >= 0, got {args.debug_buffer_size}")
    if args.debug and args.debug_buffer_size == 0:
        raise UsageError("--debug needs a debug buffer (--debug-buffer-size > 0)")
    if args.slowdown is not None:  # its form now; its op once the model is lowered
        from delegate_lens.backends_demo._internal import parse_slowdown_value

        try:
            parse_slowdown_value(args.slowdown)
        except ValueError as exc:
            raise UsageError(f"--slowdown: {exc}") from None
    import torch

    from delegate_lens.backends_demo._internal import run_demo
    from delegate_lens.fileio import standard_output

    out = standard_output()
    # tiny kernels on a shared machine: one intra-op thread gives steadier timings
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = run_demo(
            model=args.model,
            runs=args.runs,
            out_dir=args.out,
            identifiers=args.identifiers,
            debug_buffer_size=args.debug_buffer_size,
            echo=functools.partial(print, file=out),
            table_file=out,
            show_table=not args.no_table,
            precision=args.precision,
            numerics=args.debug,
            slowdown=args.slowdown,
        )
    finally:
        torch.set_num_threads(threads)
    print(f"done in {result.seconds:.1f} s; files in {result.out_dir}/", file=out)
    print(f"report: {_write_report(result.paths, result.out_dir)}", file=out)
    return 0


def _write_report(paths: Mapping[str, Path], out_dir: Path) -> Path:
    """``OUT/report.html`` of the demo's files (see ``delegate-lens report``)."""
    from delegate_lens.inspector import Inspector
    from delegate_lens.report import write_report

    buffer = paths.get("debug_buffer")
    inspector = Inspector(
        etdump_path=paths["etdump"],
        etrecord=paths["etrecord"],
        debug_buffer_path=buffer if buffer is not None and buffer.is_file() else None,
    )
    return write_report(inspector, out_dir / "report.html", title="delegate-lens demo")
