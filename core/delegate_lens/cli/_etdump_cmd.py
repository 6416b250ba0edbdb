"""`delegate-lens etdump`: convert ETDump files to and from JSON, and summarize them."""

from __future__ import annotations

import argparse
import json

from delegate_lens.errors import ETDumpFormatError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "etdump",
        help="read, write and summarize ETDump files",
        description="Read, write and summarize ETDump files (the runtime's binary trace).",
    )
    sub = parser.add_subparsers(dest="etdump_command", metavar="ACTION")
    sub.required = True

    to_json = sub.add_parser("to-json", help="print the strict JSON view of an ETDump")
    to_json.add_argument("file", help="ETDump file (.etdp), size-prefixed or not")
    to_json.add_argument("--compact", action="store_true", help="no indentation")
    to_json.set_defaults(func=_to_json)

    from_json = sub.add_parser("from-json", help="write an ETDump from its JSON view")
    from_json.add_argument("json_file", metavar="JSON", help="JSON file as printed by to-json")
    from_json.add_argument("-o", "--output", required=True, help="ETDump file to write")
    from_json.set_defaults(func=_from_json)

    summary = sub.add_parser("summary", help="runs, event counts, time span, allocators")
    summary.add_argument("file", help="ETDump file (.etdp)")
    summary.add_argument(
        "--top", type=_count, default=40, metavar="N", help="names to list (default 40)"
    )
    summary.set_defaults(func=_summary)


def _count(text: str) -> int:
    """A number >= 0 (argparse reports anything else as a one-line usage error)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _to_json(args: argparse.Namespace) -> int:
    from delegate_lens.etdump import load, write_json
    from delegate_lens.fileio import standard_output

    write_json(load(args.file), standard_output(), compact=args.compact)
    return 0


def _from_json(args: argparse.Namespace) -> int:
    from delegate_lens.etdump import dumps, from_json
    from delegate_lens.fileio import note_input, write_bytes_atomic

    with open(args.json_file, encoding="utf-8") as f:
        note_input(args.json_file)
        try:
            obj = json.load(f)
        except json.JSONDecodeError as exc:
            raise ETDumpFormatError(
                f"{args.json_file}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        except RecursionError:
            raise ETDumpFormatError(
                f"{args.json_file}: not an ETDump JSON view (arrays or objects nested too deeply)"
            ) from None
        except UnicodeDecodeError as exc:
            raise ETDumpFormatError(
                f"{args.json_file}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                f"at byte offset {exc.start})"
            ) from None
    try:
        data = dumps(from_json(obj))
    except ETDumpFormatError as exc:
        raise ETDumpFormatError(f"{args.json_file}: {exc}") from None
    write_bytes_atomic(args.output, data)
    return 0


def _summary(args: argparse.Namespace) -> int:
    from delegate_lens.cli._terminal import escape_controls
    from delegate_lens.etdump import format_summary, load, summarize
    from delegate_lens.fileio import standard_output

    text = format_summary(summarize(load(args.file)), title=args.file, top=args.top)
    print(escape_controls(text), file=standard_output())
    return 0
