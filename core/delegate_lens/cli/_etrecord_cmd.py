"""`delegate-lens etrecord show FILE`: what an ETRecord holds, read without torch."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord, GraphInfo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "etrecord",
        help="show what an ETRecord holds (methods, nodes, debug handles, delegate maps)",
        description="Read an ETRecord without torch and show what it holds.",
    )
    actions = parser.add_subparsers(dest="etrecord_action", metavar="ACTION")
    actions.required = True
    show = actions.add_parser(
        "show",
        help="summarize an ETRecord",
        description="Summarize an ETRecord: methods, nodes, debug handles, delegate maps.",
    )
    show.add_argument("file", metavar="FILE", help="the ETRecord (zip archive)")
    show.add_argument(
        "--method", help="show only this method (default: every method)", default=None
    )
    show.add_argument(
        "--nodes",
        action="store_true",
        help="list every node with its debug handle, op type and module path",
    )
    show.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from delegate_lens.errors import UsageError
    from delegate_lens.etrecord import parse_etrecord
    from delegate_lens.fileio import standard_output

    record = parse_etrecord(args.file)
    methods = record.methods
    if args.method is not None:
        if args.method not in methods:
            raise UsageError(
                f"{args.file}: no method {args.method!r} (methods: {', '.join(methods)})"
            )
        methods = (args.method,)
    for method in methods:  # parse first: a broken graph is one error line, no half summary
        record.graph(method)
    record.exported_program_graph()
    write_summary(record, methods, nodes=args.nodes, out=standard_output())
    return 0


def _handle_range(handles: tuple[int, ...]) -> str:
    if not handles:
        return "none"
    return f"{len(handles)} ({handles[0]}..{handles[-1]})"


def write_summary(record: ETRecord, methods: tuple[str, ...], *, nodes: bool, out: TextIO) -> None:
    """The human-readable summary printed by ``etrecord show``."""
    size = sum(record.entry_size(name) for name in record.entry_names)
    print(f"ETRecord {record.origin}", file=out)
    print(f"  entries:          {len(record.entry_names)} ({size:,} bytes)", file=out)
    graph_id = record.export_graph_id
    print(f"  export graph id:  {graph_id if graph_id is not None else '-'}", file=out)
    print(f"  methods:          {', '.join(record.methods)}", file=out)
    aten = record.exported_program_graph()
    aten_text = f"yes ({len(aten)} nodes)" if aten is not None else "no"
    print(f"  ATen program:     {aten_text}", file=out)
    extras = [
        label
        for label, present in (
            ("reference outputs", record.has_reference_outputs),
            ("representative inputs", record.has_representative_inputs),
        )
        if present
    ]
    print(f"  numeric data:     {', '.join(extras) if extras else 'none'}", file=out)
    for method in methods:
        _write_method(record, method, nodes=nodes, out=out)


def _write_method(record: ETRecord, method: str, *, nodes: bool, out: TextIO) -> None:
    from delegate_lens.etrecord._internal import canonical_identifier

    graph = record.graph(method)
    print(f"\nmethod {method}", file=out)
    print(f"  nodes:            {len(graph)}", file=out)
    print(f"  debug handles:    {_handle_range(graph.handles)}", file=out)
    instructions = record.debug_handle_map.get(method, {})
    print(f"  instructions with debug handles: {len(instructions)}", file=out)
    num_outs = record.instruction_id_to_num_outs_map.get(method, {})
    if num_outs:
        print(f"  instructions with output counts: {len(num_outs)}", file=out)
    delegates = record.delegate_entries.get(method, {})
    print(f"  delegate calls:   {len(delegates)}", file=out)
    for instruction_id, entry in sorted(delegates.items()):
        handles = instructions.get(instruction_id, ())
        print(
            f"    instruction {instruction_id}: backend {entry.name or '?'}, "
            f"{len(entry.identifiers)} identifier(s), {len(handles)} handle(s)",
            file=out,
        )
        for key, mapped in entry.identifiers.items():
            shown = mapped if isinstance(mapped, int) else ", ".join(map(str, mapped))
            # int identifiers (canonical decimal keys) as ints, str identifiers quoted
            print(f"      {canonical_identifier(key)!r} -> {shown}", file=out)
    top = Counter(node.op_type for node in graph.nodes).most_common(8)
    if top:
        print("  most used op types:", file=out)
        for op_type, count in top:
            print(f"    {count:>5}  {op_type}", file=out)
    if nodes:
        _write_nodes(graph, out)


def _write_nodes(graph: GraphInfo, out: TextIO) -> None:
    rows = [
        (
            str(node.debug_handle) if node.debug_handle is not None else "-",
            node.op_type,
            node.name,
            node.module_path or "(root)",
        )
        for node in graph.nodes
    ]
    from delegate_lens._texttable import align_columns

    header = ("handle", "op type", "node", "module path")
    print("  nodes:", file=out)
    for text in align_columns([header, *rows], right={0}):
        print(f"    {text}", file=out)
