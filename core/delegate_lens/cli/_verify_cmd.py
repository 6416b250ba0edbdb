"""`delegate-lens verify PROGRAM.bpte`: run every bundled test case and check its outputs.

One line per test case (method, index, max abs/rel error, PASS/FAIL), then a summary.
Exit status: 0 all passed, 1 any failed, 2 bad input (one ``error:`` line).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from delegate_lens.errors import BundledProgramError, UsageError

if TYPE_CHECKING:
    from delegate_lens.bundled_program import BundledProgram


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="run the test cases of a bundled program (.bpte) and check their outputs",
        description=(
            "Load a bundled program, run every test case of every method test suite in the "
            "simulated runtime (a real ExecuTorch program: in the real runtime, in a child "
            "process, so that a crash of the runtime is one error line) and compare the "
            "outputs with the expected ones. Prints one line per test case; exits 1 if any "
            "fails."
        ),
    )
    parser.add_argument("bundled_program", metavar="PROGRAM.bpte", help="the bundled program")
    parser.add_argument("--etdump", metavar="OUT", help="write an ETDump of the runs")
    parser.add_argument(
        "--debug-buffer",
        metavar="OUT",
        help="also log intermediate outputs and write the debug buffer (needs --etdump)",
    )
    parser.add_argument(
        "--debug-buffer-size",
        type=int,
        default=16 << 20,
        metavar="BYTES",
        help="debug buffer size with --debug-buffer (default: 16 MiB)",
    )
    parser.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance (1e-5)")
    parser.add_argument("--atol", type=float, default=1e-8, help="absolute tolerance (1e-8)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.debug_buffer and not args.etdump:
        raise UsageError("--debug-buffer needs --etdump")
    if not (args.rtol >= 0 and args.atol >= 0):
        raise UsageError(f"--rtol and --atol must be >= 0, got {args.rtol} and {args.atol}")
    if args.debug_buffer_size < 0:
        raise UsageError(f"--debug-buffer-size must be >= 0, got {args.debug_buffer_size}")
    from delegate_lens.cli._outputs import check_output_files

    check_output_files(args.etdump, args.debug_buffer)  # before running every case
    from delegate_lens.bundled_program import BundledProgram

    bundled = BundledProgram.load(args.bundled_program)
    if not bundled.is_delegate_lens_program:  # a real ExecuTorch program: the bridge runs it
        return _verify_real(args, bundled)
    try:
        data = bundled.program  # a clear error when the program is not ours
    except BundledProgramError as exc:
        raise BundledProgramError(f"{args.bundled_program}: {exc}") from None
    from delegate_lens.runtime import (
        ETDumpGen,
        Program,
        load_bundled_input,
        verify_method_outputs,
    )

    tracer = None
    if args.etdump:
        tracer = ETDumpGen(debug_buffer_size=args.debug_buffer_size if args.debug_buffer else 0)
    from delegate_lens.fileio import standard_output

    out = standard_output()
    program = Program(data, args.bundled_program)
    total = failed = 0
    for suite in bundled.method_test_suites:
        method = program.load_method(suite.method_name, event_tracer=tracer)
        for index in range(len(suite.test_cases)):
            load_bundled_input(method, bundled, index)
            method.execute()
            result = verify_method_outputs(method, bundled, index, rtol=args.rtol, atol=args.atol)
            print(result.line(), file=out, flush=False)
            total += 1
            failed += not result.passed
    if tracer is not None:
        tracer.write(args.etdump, args.debug_buffer)
    print(f"{total - failed} of {total} test case(s) passed", file=out)
    return 1 if failed else 0


def _verify_real(args: argparse.Namespace, bundled: BundledProgram) -> int:
    """Run the cases on the real ExecuTorch runtime (the executorch extra), in a child
    process: a crash of the runtime is one error line, and nothing is printed or written.
    Same output as for our own programs."""
    from delegate_lens._bridge import executorch_bridge

    what = f"verify of {args.bundled_program} (its program is an ExecuTorch .pte)"
    results = executorch_bridge(what).verify(
        args.bundled_program,
        bundled=bundled,
        rtol=args.rtol,
        atol=args.atol,
        etdump=args.etdump,
        debug_buffer=args.debug_buffer,
        debug_buffer_size=args.debug_buffer_size,
    )
    from delegate_lens.fileio import standard_output

    out = standard_output()
    for result in results:
        print(result.line(), file=out, flush=False)
    failed = sum(not r.passed for r in results)
    print(f"{len(results) - failed} of {len(results)} test case(s) passed", file=out)
    return 1 if failed else 0
