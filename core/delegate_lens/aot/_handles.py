"""Decompose an exported program to core ATen and give every operator node a debug handle.

One handle per *source* operator of the exported program: the nodes a decomposition makes
from one operator share its handle. Handles are found through ``node.meta["from_node"]``
(the provenance torch.export records on every node it rewrites): the entry of a decomposed
node's provenance chain that lives in the source graph names its source operator.
Handles are numbered ``1, 2, 3, ...`` in order of first appearance in the edge graph.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

import torch
from torch.export import ExportedProgram

if TYPE_CHECKING:
    from torch.export.decomp_utils import CustomDecompTable

from delegate_lens.etrecord._internal import quiet_torch

DEBUG_HANDLE = "debug_handle"


def source_name(node: torch.fx.Node, graph_id: int) -> str | None:
    """The name of the node of graph ``graph_id`` that ``node`` was made from, if recorded."""
    pending: list[Any] = list(node.meta.get("from_node") or ())
    seen = 0
    while pending and seen < 10_000:  # provenance chains are short; guard against cycles
        seen += 1
        source = pending.pop()
        if getattr(source, "graph_id", None) == graph_id:
            return str(source.name)
        pending.extend(getattr(source, "from_node", None) or ())
    return None


def _is_getitem(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is operator.getitem


def assign_debug_handles(
    graph: torch.fx.Graph,
    source_of: Callable[[torch.fx.Node], Hashable | None] | None = None,
    start: int = 1,
) -> dict[int, list[torch.fx.Node]]:
    """Set ``meta["debug_handle"]`` on every ``call_function`` node of ``graph``.

    :param source_of: ``node -> hashable key or None``; nodes with the same key share a
        handle (``None``: a handle of its own). Without it every operator gets its own.
    :returns: ``{handle: nodes}``.
    """
    by_key: dict[Hashable, int] = {}
    groups: dict[int, list[torch.fx.Node]] = {}
    next_handle = start
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if _is_getitem(node) and isinstance(node.args[0], torch.fx.Node):
            parent = node.args[0].meta.get(DEBUG_HANDLE)
            if isinstance(parent, int):
                node.meta[DEBUG_HANDLE] = parent
                groups[parent].append(node)
                continue
        key = source_of(node) if source_of is not None else None
        handle = by_key.get(key) if key is not None else None
        if handle is None:
            handle = next_handle
            next_handle += 1
            if key is not None:
                by_key[key] = handle
        node.meta[DEBUG_HANDLE] = handle
        groups.setdefault(handle, []).append(node)
    return groups


def _decomp_table(preserve: Iterable[object]) -> CustomDecompTable:
    table = torch.export.default_decompositions()
    for op in preserve:
        overloads = [op] if isinstance(op, torch._ops.OpOverload) else []
        if isinstance(op, torch._ops.OpOverloadPacket):
            overloads = [getattr(op, name) for name in op.overloads()]
        for overload in overloads:
            if overload in table:
                table.pop(overload)
    return table


def decompose_with_handles(
    program: ExportedProgram, preserve: Iterable[object] = ()
) -> ExportedProgram:
    """Run the core-ATen decompositions (keeping ``preserve`` ops whole) and set handles."""
    graph_id = id(program.graph)
    sources = {
        node.name
        for node in program.graph.nodes
        if node.op == "call_function" and not _is_getitem(node)
    }
    with quiet_torch():
        edge = program.run_decompositions(_decomp_table(preserve))

    def source_of(node: torch.fx.Node) -> str | None:
        name = source_name(node, graph_id)
        return name if name in sources else None

    assign_debug_handles(edge.graph, source_of)
    return edge
