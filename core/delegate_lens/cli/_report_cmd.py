"""`delegate-lens report`: one self-contained HTML page of an ETDump (+ ETRecord).

The page (graph, timeline, tables) is written atomically to ``-o``; its path is printed.
"""

from __future__ import annotations

import argparse

from delegate_lens.cli._inspect_cmd import (
    add_inspector_inputs,
    add_time_scale_arguments,
    check_debug_buffer,
    check_program,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report: delegation graph, timeline, tables",
        description=(
            "Join an ETDump with its ETRecord (optional) and write one HTML file holding the "
            "delegation graph, a timeline of sampled runs and the Inspector's tables. The "
            "file needs no network to view."
        ),
    )
    add_inspector_inputs(parser)
    parser.add_argument(
        "-o", "--output", metavar="OUT", required=True, help="the HTML file to write"
    )
    parser.add_argument("--title", help="page title (default: the ETDump's file name)")
    parser.add_argument(
        "--run",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="also offer run N (index in the ETDump) in the timeline; repeatable",
    )
    add_time_scale_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.cli._inspect_cmd import _one_line_warnings
    from delegate_lens.inspector import TimeScale

    source = TimeScale.coerce(args.source_time_scale)
    target = TimeScale.coerce(args.target_time_scale)
    from delegate_lens.cli._outputs import check_output_file

    out = check_output_file(args.output)
    check_debug_buffer(args.debug_buffer)
    check_program(args.program, args.etrecord)
    with _one_line_warnings():
        from delegate_lens.inspector import Inspector
        from delegate_lens.report import write_report

        inspector = Inspector(
            etdump_path=args.etdump,
            etrecord=args.etrecord,
            debug_buffer_path=args.debug_buffer,
            source_time_scale=source,
            target_time_scale=target,
            program=args.program,
        )
        write_report(inspector, out, title=args.title, runs=args.run)
    from delegate_lens.fileio import standard_output

    print(out, file=standard_output())
    return 0
