"""``delegate-lens check-backend NAME``: the conformance suite of ``delegate_lens.testing``."""

from __future__ import annotations

import argparse
from typing import Any

EXIT_FINDINGS = 1


def _whole(text: str, low: int, why: str = "") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}{why}")
    return value


def _count(text: str) -> int:
    return _whole(text, 0)


def _examples(text: str) -> int:
    return _whole(text, 1, " (checking no model is not a pass)")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check-backend",
        help="run the conformance suite on a backend (exit 1 on any finding)",
        description=(
            "Lower generated models through a backend's plugins, run them traced, read back "
            "ETDump + ETRecord and check every rule of the debug contract. Exit 0 when all "
            "pass, 1 on any finding, 2 on bad input. Load an uninstalled backend with -p MODULE."
        ),
    )
    parser.add_argument(
        "backend", metavar="NAME", nargs="?", help="the backend id, e.g. DemoBackend"
    )
    parser.add_argument(
        "--executorch-partitioner",
        metavar="MODULE:NAME",
        help="check a real ExecuTorch partitioner instead of NAME (the executorch extra)",
    )
    parser.add_argument(
        "--max-examples",
        type=_examples,
        default=None,
        metavar="N",
        help="models hypothesis generates, at least 1 (default: 20)",
    )
    parser.add_argument("--seed", type=_count, default=0, help="hypothesis seed (default: 0)")
    parser.add_argument(
        "--mutants",
        action="store_true",
        help=(
            "instead of the conformance run, make mutant backends of NAME (one planted bug "
            "each) and print which rules kill each; exit 1 when one survives"
        ),
    )
    parser.add_argument(
        "--format",
        "-f",
        choices=("table", "json"),
        default="table",
        help="output format (default: table)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.testing import DEFAULT_MAX_EXAMPLES, check_backend

    examples = DEFAULT_MAX_EXAMPLES if args.max_examples is None else args.max_examples
    if args.mutants:
        return _run_mutants(args)
    if args.executorch_partitioner is not None or args.backend is None:
        report = _check_real(args, examples)
    else:
        report = check_backend(args.backend, max_examples=examples, seed=args.seed)
    from delegate_lens.fileio import standard_output

    print(report.to_json() if args.format == "json" else report.to_table(), file=standard_output())
    return 0 if report.ok else EXIT_FINDINGS


def _check_real(args: argparse.Namespace, examples: int) -> Any:
    """``--executorch-partitioner``: the suite on real ExecuTorch, through the bridge."""
    from delegate_lens._bridge import executorch_bridge
    from delegate_lens.errors import UsageError

    if (args.backend is None) == (args.executorch_partitioner is None):
        raise UsageError("give a backend NAME or --executorch-partitioner MODULE:NAME (one)")
    bridge = executorch_bridge("check-backend --executorch-partitioner")
    return bridge.check_backend(args.executorch_partitioner, max_examples=examples, seed=args.seed)


def _run_mutants(args: argparse.Namespace) -> int:
    """``--mutants``: the mutation score of the rules on NAME's mutants."""
    from delegate_lens.errors import UsageError
    from delegate_lens.fileio import standard_output
    from delegate_lens.testing.mutants import mutation_score

    if args.backend is None or args.executorch_partitioner is not None:
        raise UsageError("--mutants needs a backend NAME (not --executorch-partitioner)")
    score = mutation_score(args.backend)
    print(score.to_json() if args.format == "json" else score.to_table(), file=standard_output())
    return 0 if score.ok else EXIT_FINDINGS
