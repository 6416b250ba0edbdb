"""The reference's module path ``executorch.devtools.inspector._inspector_utils``, for the
name code written for the reference imports from it: :func:`get_aot_debug_handle_to_op_name_mapping`.

A public module by reason (the reference's path; see ``docs/architecture.md``), though its
name starts with ``_`` as the reference's does. No torch at import: a torch graph is read
by its attributes, and our ETRecord's graphs are read without torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from delegate_lens.errors import UsageError
from delegate_lens.etrecord import ETRecord, GraphInfo
from delegate_lens.inspector.numerical_comparator import DebugHandle

__all__ = ["DebugHandle", "get_aot_debug_handle_to_op_name_mapping"]


def get_aot_debug_handle_to_op_name_mapping(graph_module: Any) -> dict[DebugHandle, list[str]]:
    """``{(debug_handle,): [node names]}``: the names of the graph's operator nodes by
    debug handle, in graph order, as the reference's function gives them (its
    ``calculate_numeric_gap`` names each row's ``aot_ops`` with it).

    An operator node is a ``call_function`` node with a ``debug_handle`` in its metadata
    whose name does not contain ``getitem``; a handle given as a list keys the tuple of it.

    :param graph_module: a ``torch.fx.GraphModule`` (the reference's argument, e.g.
        ``etrecord.edge_dialect_program.module()``), a ``torch.fx.Graph`` or an
        ``ExportedProgram``; or, without torch, one of our ETRecord's graphs
        (:class:`~delegate_lens.etrecord.GraphInfo`, e.g. ``record.graph("forward")``) or
        an :class:`~delegate_lens.etrecord.ETRecord` (its ``forward`` edge program).
    """
    if isinstance(graph_module, ETRecord):
        graph_module = graph_module.graph("forward")
    if isinstance(graph_module, GraphInfo):
        # a serialized graph's nodes are its call_function nodes
        pairs: Iterable[tuple[Any, str]] = (
            (node.debug_handle, node.name) for node in graph_module.nodes
        )
    else:
        graph = getattr(graph_module, "graph", graph_module)
        nodes = getattr(graph, "nodes", None)
        if nodes is None:
            raise UsageError(
                "get_aot_debug_handle_to_op_name_mapping needs a torch.fx.GraphModule, an "
                f"ExportedProgram or an ETRecord graph, not {type(graph_module).__name__}"
            )
        pairs = (
            (node.meta.get("debug_handle"), node.name)
            for node in nodes
            if node.op == "call_function"
        )
    mapping: dict[DebugHandle, list[str]] = {}
    for handle, name in pairs:
        if handle is None or "getitem" in name:
            continue
        key = (handle,) if isinstance(handle, int) else tuple(handle)
        mapping.setdefault(key, []).append(name)
    return mapping
