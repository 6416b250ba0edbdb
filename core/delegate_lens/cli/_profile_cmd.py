"""``delegate-lens profile MODEL.pte``: run a real ExecuTorch program with ETDump, then the
Inspector, in one call (the ``executorch`` extra; see ``docs/executorch.md``).

Without ``-o`` the Inspector's table is printed; with ``-o DIR`` the ETDump, debug buffer,
table, ``report.html`` and numeric gaps are written there (all or none) and listed.
"""

from __future__ import annotations

import argparse

from delegate_lens.errors import UsageError


def _runs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="run a real ExecuTorch program (.pte) with ETDump and inspect it (executorch extra)",
        description=(
            "Run a method of a real ExecuTorch program on the real runtime with ETDump (and a "
            "debug buffer with --debug), then join it with its ETRecord in the Inspector. "
            "Inputs: --inputs FILE (.npy: one input; .npz: the inputs in archive order, names "
            "unused; or a torch.save .pt of a tensor or a list), --bundled P.bpte (its first "
            "test case), or the ETRecord's representative inputs. The program is checked "
            "first. The runtime runs in a child process: a crash of it (a damaged program) is "
            "one error line, and nothing is written. Needs: pip install "
            "'delegate-lens[executorch]'."
        ),
    )
    parser.add_argument("program", metavar="MODEL.pte", help="the ExecuTorch program")
    parser.add_argument("--etrecord", metavar="R", help="the program's ETRecord")
    given = parser.add_mutually_exclusive_group()
    given.add_argument(
        "--inputs", metavar="FILE", help="inputs file: .npy, .npz or torch.save (.pt)"
    )
    given.add_argument("--bundled", metavar="P.bpte", help="take the inputs from a bundled program")
    parser.add_argument("--runs", type=_runs, default=1, metavar="N", help="executions (default 1)")
    parser.add_argument(
        "--debug", action="store_true", help="also log intermediate outputs (debug buffer)"
    )
    parser.add_argument("--method", default="forward", help="the method to run (default forward)")
    parser.add_argument("-o", "--output", metavar="DIR", help="write every file into this folder")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens._bridge import executorch_bridge
    from delegate_lens.fileio import standard_output

    bridge = executorch_bridge("delegate-lens profile")
    if not args.method:
        raise UsageError("--method must not be empty")
    inspector = bridge.profile(
        args.program,
        etrecord=args.etrecord,
        inputs=args.inputs,
        bundled=args.bundled,
        runs=args.runs,
        debug=args.debug,
        output_dir=args.output,
        method=args.method,
    )
    if args.output:
        from pathlib import Path

        for path in sorted(Path(args.output).iterdir()):
            if path.name in bridge.profile_files:
                print(path, file=standard_output())
        return 0
    from delegate_lens.exporters import get_exporters

    get_exporters()["table"].write(inspector, standard_output())
    return 0
