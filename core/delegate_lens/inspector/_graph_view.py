"""The Inspector's view of its ETRecord's graphs (:meth:`Inspector.graph_view`): per method,
the operator nodes, the data edges between them, the delegate calls and the Inspector's rows
linked to each node, as plain values. A view of the graph (the HTML report, say) reads this
instead of the ETRecord's maps.

* Nodes are the graph's operator nodes (placeholders and outputs are not nodes of the
  serialized graph); an edge joins the node producing a tensor to each node reading it.
* A delegate call is an instruction of ``delegate_map[method]``: its handles are those
  ``debug_handle_map[method][instruction]`` lists and those of its identifiers; its nodes are
  the nodes of those handles.
* A node's rows are the rows of the Inspector's tables whose debug handles name it (the
  framework rows, which carry instruction 0's handles as the reference's do, are left out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from delegate_lens.etdump import FRAMEWORK_EVENTS
from delegate_lens.etrecord import ModuleFrame, normalize_handles

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord
    from delegate_lens.inspector._tables import BlockTable


@attrs.frozen
class NodeView:
    """One operator node of a method's graph, with the Inspector's rows linked to it."""

    name: str
    op_type: str
    debug_handle: int | None
    module_stack: tuple[ModuleFrame, ...]
    """Outermost first, the root module included (its path is ``""``)."""
    stack_trace: str | None
    rows: tuple[tuple[int, int], ...]
    """``(block index, row)`` of each linked row, in table order."""


@attrs.frozen
class DelegateCallView:
    """One delegate call instruction of a method, and the nodes it swallowed."""

    instruction_id: int
    backend: str
    handles: tuple[int, ...]
    """Every debug handle of the call, ascending."""
    nodes: tuple[int, ...]
    """Indices of the call's nodes in :attr:`MethodGraph.nodes`, in graph order."""
    identifiers: tuple[tuple[str, tuple[int, ...]], ...]
    """Each delegate identifier (its key as written) and its debug handles, in map order."""


@attrs.frozen
class MethodGraph:
    """The graph of one ETRecord method."""

    method: str
    nodes: tuple[NodeView, ...]
    edges: tuple[tuple[int, int], ...]
    """``(producer, consumer)`` node indices, sorted."""
    delegate_calls: tuple[DelegateCallView, ...]
    """By instruction."""


@attrs.frozen
class GraphView:
    """Every method's graph of the ETRecord an Inspector joins (see the module docstring)."""

    origin: str
    """The ETRecord's file (or ``<entries>``)."""
    methods: tuple[MethodGraph, ...]


def tensor_names(arg: object) -> Iterable[str]:
    """Names of the tensors an argument of a serialized node refers to (``as_tensor``,
    ``as_tensors``, optional tensors, nested lists)."""
    if isinstance(arg, dict):
        for key, value in arg.items():
            if key == "as_tensor" and isinstance(value, dict) and "name" in value:
                yield str(value["name"])
            elif isinstance(value, (dict, list)):
                yield from tensor_names(value)
    elif isinstance(arg, list):
        for item in arg:
            yield from tensor_names(item)


def _edges(
    record: ETRecord, method: str, index_of: Mapping[str, int]
) -> tuple[tuple[int, int], ...]:
    from delegate_lens.etrecord._internal import load_json

    entry = record.graph(method).entry
    doc = load_json(record.entry(entry), f"{record.origin}: entry {entry!r}")
    raw_nodes = doc["graph_module"]["graph"]["nodes"]
    producer: dict[str, int] = {}
    for raw in raw_nodes:
        i = index_of.get(raw.get("name"))
        if i is None:
            continue
        for name in tensor_names(raw.get("outputs", [])):
            producer[name] = i
    edges: set[tuple[int, int]] = set()
    for raw in raw_nodes:
        j = index_of.get(raw.get("name"))
        if j is None:
            continue
        inputs = raw.get("inputs")
        for inp in inputs if isinstance(inputs, list) else ():
            for name in tensor_names(inp.get("arg") if isinstance(inp, dict) else inp):
                i = producer.get(name)
                if i is not None and i != j:
                    edges.add((i, j))
    return tuple(sorted(edges))


def _delegate_calls(record: ETRecord, method: str) -> tuple[DelegateCallView, ...]:
    nodes = record.graph(method).nodes
    handle_map = record.debug_handle_map.get(method, {})
    calls = []
    for instruction, entry in sorted(record.delegate_entries.get(method, {}).items()):
        identifiers = tuple(
            (key, normalize_handles(handles)) for key, handles in entry.identifiers.items()
        )
        handles = set(handle_map.get(instruction, ()))
        for _, ident_handles in identifiers:
            handles.update(ident_handles)
        members = tuple(i for i, n in enumerate(nodes) if n.debug_handle in handles)
        calls.append(
            DelegateCallView(instruction, entry.name, tuple(sorted(handles)), members, identifiers)
        )
    return tuple(calls)


def _node_rows(
    record: ETRecord, method: str, tables: list[BlockTable]
) -> dict[int, list[tuple[int, int]]]:
    """Node index -> ``(block, row)`` of the rows linked to it."""
    by_handle: dict[int, list[int]] = {}
    for i, node in enumerate(record.graph(method).nodes):
        if node.debug_handle is not None:
            by_handle.setdefault(node.debug_handle, []).append(i)
    single = len(record.methods) == 1
    out: dict[int, list[tuple[int, int]]] = {}
    for table in tables:
        for j, link in enumerate(table.links):
            if link.method not in (method, None) or link.debug_handles is None:
                continue
            if table.keys[j].name in FRAMEWORK_EVENTS:
                continue  # the handles of instruction 0, as the reference: not the node's
            if link.method is None and not single:
                continue
            handles = link.debug_handles
            seen: list[int] = []
            for h in [handles] if isinstance(handles, int) else handles:
                for i in by_handle.get(h, ()):
                    if i not in seen:
                        seen.append(i)
            for i in seen:
                out.setdefault(i, []).append((table.index, j))
    return out


def method_graph(record: ETRecord, method: str, tables: list[BlockTable]) -> MethodGraph:
    """The view of ``method``'s graph, its nodes linked to the rows of ``tables``."""
    graph = record.graph(method)
    rows = _node_rows(record, method, tables)
    nodes = tuple(
        NodeView(
            node.name,
            node.op_type,
            node.debug_handle,
            node.module_stack,
            node.stack_trace,
            tuple(rows.get(i, ())),
        )
        for i, node in enumerate(graph.nodes)
    )
    index_of = {node.name: i for i, node in enumerate(graph.nodes)}
    return MethodGraph(
        method, nodes, _edges(record, method, index_of), _delegate_calls(record, method)
    )


def graph_view(record: ETRecord, tables: list[BlockTable]) -> GraphView:
    """Every method's :class:`MethodGraph`, in the ETRecord's method order."""
    return GraphView(
        record.origin, tuple(method_graph(record, method, tables) for method in record.methods)
    )
