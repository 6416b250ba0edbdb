"""`delegate-lens inspect`: the Inspector's tables of an ETDump (+ ETRecord) in any format.

Formats come from the ``dl_exporters`` hook (built-ins: table, json, tsv, csv,
chrome-trace, perfetto; plugins may add more); the help texts list them from the same
registry when they are shown. ``-o`` writes atomically (temporary file, then rename);
without it the output goes to stdout. Warnings print as one ``warning:`` line each.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from delegate_lens.errors import DelegateLensError, PluginError, UsageError

if TYPE_CHECKING:
    from typing import IO

    from delegate_lens.exporters import Exporter
    from delegate_lens.inspector import Inspector


def add_time_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """``--source-time-scale`` and ``--target-time-scale``, as every Inspector command takes."""
    parser.add_argument(
        "--source-time-scale",
        default="ns",
        metavar="UNIT",
        help="unit of the runtime's clock: ns, us, ms, s or cycles (default ns)",
    )
    parser.add_argument(
        "--target-time-scale",
        default="ms",
        metavar="UNIT",
        help="unit of the reported times (default ms)",
    )


def add_inspector_inputs(parser: argparse.ArgumentParser, *, debug_buffer: bool = True) -> None:
    """``ETDUMP``, ``--etrecord R`` and (unless told not to) ``--debug-buffer B``: the files
    every command that builds an Inspector reads."""
    parser.add_argument("etdump", metavar="ETDUMP", help="ETDump file (.etdp)")
    parser.add_argument("--etrecord", metavar="R", help="ETRecord file of the same model")
    add_program_argument(parser)
    if debug_buffer:
        parser.add_argument(
            "--debug-buffer", metavar="B", help="debug buffer holding the debug events' tensors"
        )


def add_program_argument(parser: argparse.ArgumentParser) -> None:
    """``--program MODEL.pte``: the program that ran, for delegates whose Debug Handle Map
    a plugin recovers from it (``dl_recover_delegate_map``)."""
    parser.add_argument(
        "--program",
        metavar="MODEL.pte",
        help="the program that ran: delegates the ETRecord leaves unmapped get the map a "
        "plugin recovers from it (e.g. XNNPACK with delegate-lens-xnnpack); needs --etrecord",
    )


def check_program(program: str | None, etrecord: str | None) -> None:
    """``--program`` goes with an ETRecord (its graph gives the linked rows their nodes)."""
    if program is not None and etrecord is None:
        raise UsageError(
            "--program links delegate events to the ETRecord's graph: give --etrecord too"
        )


def format_names() -> str:
    """The names ``inspect --format`` takes, from the exporters' registry (``table`` first,
    the default); the built-in ones when a plugin is broken (running a command says how)."""
    try:
        from delegate_lens.exporters import get_exporters

        names = list(get_exporters())
    except DelegateLensError:
        from delegate_lens.builtins.exporters import BUILTIN_EXPORTERS

        names = [exporter.name for exporter in BUILTIN_EXPORTERS]
    return ", ".join(sorted(names, key=lambda name: (name != "table", name)))


class _FormatNames:
    """:func:`format_names` as a help text's ``%(formats)s``, worked out only when a help
    is shown: building the parser stays cheap and loads no plugin."""

    def __str__(self) -> str:
        return format_names()


def check_debug_buffer(path: str | None) -> None:
    """Refuse a ``--debug-buffer`` file that is empty: given on purpose, it holds no value
    the run logged (a buffer never written, or cut off): a :class:`UsageError` naming it, the
    same for every command that reads one (``inspect``, ``report``, ``numerics``). A
    missing or unreadable file is left to the Inspector, which names it."""
    if path is None:
        return
    import os
    import stat

    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_size == 0:
        raise UsageError(
            f"--debug-buffer {path}: the debug buffer is empty (0 bytes); give the buffer "
            "the run wrote with this ETDump"
        )


def _list_formats_in_help(action: argparse.Action) -> None:
    """Give ``action``'s help its ``%(formats)s``: argparse fills a help's ``%(name)s``
    from its action's attributes when it shows it."""
    vars(action)["formats"] = _FormatNames()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="link an ETDump's events to operators (formats: %(formats)s)",
        description=(
            "Join an ETDump (runtime events) with an ETRecord (graph and debug maps) and "
            "write the Inspector's tables."
        ),
    )
    _list_formats_in_help(subparsers._choices_actions[-1])  # the line in the top-level help
    add_inspector_inputs(parser)
    fmt = parser.add_argument(
        "--format",
        "-f",
        default="table",
        metavar="NAME",
        help="output format: %(formats)s (default: table)",
    )
    _list_formats_in_help(fmt)
    parser.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    add_time_scale_arguments(parser)
    parser.add_argument(
        "--by",
        choices=("event", "op-type", "module", "module-type"),
        default="event",
        help="event: one row per event (default); op-type: time per op type; module: time "
        "rolled up by module hierarchy; module-type: per module class (attention vs MLP); "
        "each with count, time per run, total, share of Method::execute and p50 (formats "
        "table, json, csv)",
    )
    parser.add_argument(
        "--depth",
        type=int,
        metavar="N",
        help="with --by module/module-type: cut module paths at depth N (1: the model's "
        "children, e.g. its layers; 2: their submodules); default: whole paths",
    )
    parser.set_defaults(func=_run)


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: IO[str] | None = None,
        line: str | None = None,
    ) -> None:
        text = str(message).strip().splitlines()
        from delegate_lens.cli._terminal import escape_controls

        shown = f"warning: {text[0] if text else category.__name__}"
        print(escape_controls(shown), file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.exporters import get_exporters
    from delegate_lens.inspector import TimeScale

    exporters = get_exporters()
    exporter: Any
    if args.depth is not None and args.depth < 1:
        raise UsageError(f"--depth must be at least 1, got {args.depth}")
    if args.by != "event":
        from delegate_lens.cli._summary_view import summary_exporter

        exporter = summary_exporter(args.by, args.format, args.depth)
    elif args.depth is not None:
        raise UsageError("--depth goes with --by module or --by module-type")
    else:
        exporter = exporters.get(args.format)
    if exporter is None:
        if not exporters:
            raise UsageError(
                f"unknown format {args.format!r}: no exporter plugin is loaded (is the "
                "built-in 'exporters' plugin blocked with -p no:exporters?)"
            )
        raise UsageError(
            f"unknown format {args.format!r} (formats: {', '.join(sorted(exporters))})"
        )
    source = TimeScale.coerce(args.source_time_scale)
    target = TimeScale.coerce(args.target_time_scale)
    if exporter.folder and not args.output:
        raise UsageError(
            f"format {exporter.name!r} writes several files: give a folder with -o DIR"
        )
    check_debug_buffer(args.debug_buffer)
    check_program(args.program, args.etrecord)
    from delegate_lens.fileio import standard_output

    stdout = standard_output()
    if exporter.binary:
        from delegate_lens.cli._terminal import refuse_binary_on_terminal

        refuse_binary_on_terminal(exporter.name, args.output, stdout)
    if args.output:
        folder = Path(args.output).parent
        if not folder.is_dir():
            raise UsageError(f"cannot write {args.output}: folder {folder} does not exist")
        if exporter.folder:
            if Path(args.output).exists() and not Path(args.output).is_dir():
                raise UsageError(
                    f"cannot write {args.output}: format {exporter.name!r} writes a folder "
                    "and this is a file"
                )
        elif Path(args.output).is_dir():
            raise UsageError(f"cannot write {args.output}: it is a folder; give a file name")
    from delegate_lens.cli._terminal import delayed_progress, rich_console

    console = rich_console(stdout) if exporter.name == "table" and not args.output else None
    with _one_line_warnings():
        from delegate_lens.inspector import Inspector

        with delayed_progress(console) as progress:
            progress.step(f"inspecting {Path(args.etdump).name}")
            inspector = Inspector(
                etdump_path=args.etdump,
                etrecord=args.etrecord,
                debug_buffer_path=args.debug_buffer,
                source_time_scale=source,
                target_time_scale=target,
                program=args.program,
            )
            if console is not None:
                progress.step("formatting the table")
                cells = _table_cells(inspector)
        if console is not None:
            _print_rich_table(console, cells)
        elif args.output:
            _write_atomic(Path(args.output), exporter, inspector)
        elif exporter.binary:
            _export(exporter, inspector, stdout.buffer)
        else:
            from delegate_lens.cli._terminal import safe_text

            _export(exporter, inspector, safe_text(stdout, for_people=exporter.name == "table"))
    return 0


def _export(exporter: Any, inspector: Any, stream: IO[Any] | Path) -> None:
    """Run an exporter; a failure of its own (a bug in a plugin's exporter) becomes a
    :class:`PluginError` naming the exporter and its function instead of a traceback."""
    try:
        exporter.write(inspector, stream)
    except (DelegateLensError, OSError, UnicodeError):
        raise  # our errors and file errors already read well on one line
    except Exception as exc:
        write = exporter.write
        where = f"{getattr(write, '__module__', '?')}.{getattr(write, '__qualname__', '?')}"
        raise PluginError(
            f"exporter {exporter.name!r} ({where}) failed: {type(exc).__name__}: {exc}"
        ) from exc


def _write_atomic(target: Path, exporter: Exporter, inspector: Inspector) -> None:
    from delegate_lens.fileio import write_atomic, write_folder_atomic

    if exporter.folder:
        write_folder_atomic(target, lambda folder: _export(exporter, inspector, folder))
        return

    write_atomic(
        target, lambda stream: _export(exporter, inspector, stream), binary=exporter.binary
    )


def _table_cells(inspector: Inspector) -> tuple[list[str], list[list[str]]]:
    from delegate_lens.exporters import table_cells, terminal_width
    from delegate_lens.fileio import standard_output
    from delegate_lens.inspector import table_input

    width = terminal_width(standard_output())
    return table_cells(table_input(inspector), width=width, view=True)


def _print_rich_table(console: object, cells: tuple[list[str], list[list[str]]]) -> None:
    """The ``table`` format on a terminal: the same table with colour (rich)."""
    from delegate_lens.cli._terminal import write_rich_table
    from delegate_lens.exporters import stat_columns

    headers, body = cells
    # the terminal view names the column "delegated" and marks its rows "yes"
    column = headers.index("delegated" if "delegated" in headers else "is_delegated_op")
    write_rich_table(
        console,
        headers,
        body,
        right=stat_columns(headers),
        delegated=[row[column] in ("True", "yes") for row in body],
    )
