"""Torch-free view of a serialized program's graph (the JSON of torch.export's serializer).

Each node of ``graph_module.graph.nodes`` carries ``name``, ``target`` (a dotted op name)
and ``metadata``, a str -> str map with ``debug_handle`` (decimal text), ``stack_trace``,
``nn_module_stack`` (``key,path,type`` triples joined by ``;``, outermost first) and
``from_node`` (JSON provenance). This module reads exactly that, without torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import attrs

from delegate_lens.errors import ETRecordFormatError

# Longest first: the first matching prefix is stripped from a node's target.
_TARGET_PREFIXES = (
    "executorch.exir.dialects.backend.ops.",
    "executorch.exir.dialects.edge.ops.",
    "torch.ops.higher_order.",
    "torch.ops.",
    "_operator.",
    "operator.",
)


def op_type_of(target: str) -> str:
    """The op type of a serialized target, its dialect prefix stripped.

    ``executorch.exir.dialects.edge.ops.aten.linear.default``, ``torch.ops.aten.linear.default``
    and ``aten.linear.default`` all give ``aten.linear.default``.
    """
    for prefix in _TARGET_PREFIXES:
        if target.startswith(prefix):
            return target[len(prefix) :]
    return target


def _edge_op_type(target: str) -> str:
    """The op type of a node of an edge program, as the reference names it (its target's
    ``__name__``): an edge operator by its qualified name (``aten.add.Tensor``), a torch
    operator left in the graph without its namespace (``torch.ops.aten.scalar_tensor.default``
    -> ``scalar_tensor.default``)."""
    if target.startswith("torch.ops.") and not target.startswith("torch.ops.higher_order."):
        parts = target.split(".")
        if len(parts) == 5:  # torch.ops.<namespace>.<op>.<overload>
            return f"{parts[3]}.{parts[4]}"
    return op_type_of(target)


class ModuleFrame(NamedTuple):
    """One level of a node's module stack: the tracer's key, the attribute path, the type."""

    key: str
    path: str
    type: str


def _split_frame(text: str) -> list[str]:
    """Split ``key,path,type`` at top-level commas (paths may hold ``[...]`` / ``(...)``)."""
    parts: list[str] = []
    start = depth = 0
    for i, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def split_module_stack(text: str) -> tuple[ModuleFrame, ...]:
    """Parse an ``nn_module_stack`` metadata string (as torch.export's deserializer does).

    Raises ValueError naming the malformed frame.
    """
    if not text:
        return ()
    frames = []
    for item in text.split(";"):
        parts = _split_frame(item)
        if len(parts) != 3:
            raise ValueError(f"module stack frame {item!r} is not 'key,path,type'")
        frames.append(ModuleFrame(*parts))
    return tuple(frames)


@attrs.frozen(eq=True)
class GraphNode:
    """One operator node of a serialized graph."""

    name: str
    target: str
    op_type: str
    debug_handle: int | None
    stack_trace: str | None
    module_stack: tuple[ModuleFrame, ...]
    index: int
    """Position of the node in the graph (0-based)."""
    metadata: Mapping[str, str] = attrs.field(repr=False, eq=False, hash=False)
    """All metadata as written (str -> str)."""

    @property
    def hierarchy_key(self) -> str:
        """The name the reference Inspector keys ``stack_traces``/``module_hierarchy`` by:
        the node's name followed by ``_``."""
        return self.name + "_"

    @property
    def module_hierarchy(self) -> dict[str, tuple[str, str]]:
        """The module stack as the reference holds it: ``{key: (path, type)}``.

        Empty when the node has no module stack (as torch.export's deserializer does).
        """
        return {frame.key: (frame.path, frame.type) for frame in self.module_stack}

    @property
    def module_path(self) -> str:
        """Dotted attribute path of the innermost module ("" for the root module)."""
        return self.module_stack[-1].path if self.module_stack else ""

    @property
    def from_node(self) -> Any:
        """The node's provenance (parsed ``from_node`` JSON), or None."""
        text = self.metadata.get("from_node")
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None


@attrs.frozen(eq=False)
class GraphInfo:
    """The nodes of one serialized program, with lookups by handle and by name."""

    method: str
    entry: str
    nodes: tuple[GraphNode, ...]
    nodes_by_handle: Mapping[int, tuple[GraphNode, ...]] = attrs.field(repr=False)
    """``{debug_handle: nodes with that handle, in graph order}``."""
    nodes_by_name: Mapping[str, GraphNode] = attrs.field(repr=False)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def handles(self) -> tuple[int, ...]:
        """Every debug handle of the graph, ascending."""
        return tuple(sorted(self.nodes_by_handle))

    def nodes_for_handles(self, handles: int | Iterable[int] | None) -> list[GraphNode]:
        """Nodes of the given handles, in the order the reference Inspector lists them:
        handle by handle in the order given, and for each handle its nodes in graph order.
        Unknown handles contribute nothing."""
        if handles is None:
            return []
        if isinstance(handles, int):
            handles = (handles,)
        out: list[GraphNode] = []
        for handle in handles:
            out.extend(self.nodes_by_handle.get(handle, ()))
        return out

    def op_types(self, handles: int | Iterable[int] | None) -> list[str]:
        """Op types of :meth:`nodes_for_handles`, in the same order."""
        return [node.op_type for node in self.nodes_for_handles(handles)]


def _debug_handle(raw: object, where: str) -> int | None:
    if raw is None:
        return None
    if type(raw) is str and raw.isdigit() and raw.isascii():  # the usual case, fast
        return int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if text.isascii() and (text.isdigit() or (text[:1] == "-" and text[1:].isdigit())):
            return int(text)
    raise ETRecordFormatError(f"{where}: debug_handle {raw!r:.60} is not an integer")


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise ETRecordFormatError(f"{where}: expected a JSON object, got {kind}")
    return value


def parse_graph(document: object, method: str, entry: str, origin: str) -> GraphInfo:
    """Build a GraphInfo from a parsed serialized-program document.

    ``entry`` (the archive entry) and ``origin`` (the file) name the source in errors.
    """
    where = f"{origin}: entry {entry!r}"
    edge = entry.startswith("edge_dialect_exported_program")
    doc = _object(document, where)
    graph_module = _object(doc.get("graph_module"), f"{where}: 'graph_module'")
    graph = _object(graph_module.get("graph"), f"{where}: 'graph_module.graph'")
    raw_nodes = graph.get("nodes")
    if not isinstance(raw_nodes, list):
        raise ETRecordFormatError(f"{where}: 'graph_module.graph.nodes' is not a list")

    stacks: dict[str, tuple[ModuleFrame, ...]] = {}
    nodes: list[GraphNode] = []
    by_handle: dict[int, list[GraphNode]] = {}
    by_name: dict[str, GraphNode] = {}
    for index, raw in enumerate(raw_nodes):
        here = f"{where}: node {index}"
        item = _object(raw, here)
        name = item.get("name")
        target = item.get("target")
        if not isinstance(name, str):
            raise ETRecordFormatError(f"{here}: 'name' is not a string")
        here = f"{where}: node {name!r}"
        if not isinstance(target, str):
            raise ETRecordFormatError(f"{here}: 'target' is not a string")
        metadata = item.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            raise ETRecordFormatError(f"{here}: 'metadata' is not a JSON object")
        handle = _debug_handle(metadata.get("debug_handle"), here)
        stack_text = metadata.get("nn_module_stack") or ""
        if not isinstance(stack_text, str):
            raise ETRecordFormatError(f"{here}: 'nn_module_stack' is not a string")
        stack = stacks.get(stack_text)
        if stack is None:
            try:
                stack = split_module_stack(stack_text)
            except ValueError as exc:
                raise ETRecordFormatError(f"{here}: nn_module_stack: {exc}") from None
            stacks[stack_text] = stack
        trace = metadata.get("stack_trace") or None
        if trace is not None and not isinstance(trace, str):
            raise ETRecordFormatError(f"{here}: 'stack_trace' is not a string")
        node = GraphNode(
            name=name,
            target=target,
            op_type=_edge_op_type(target) if edge else op_type_of(target),
            debug_handle=handle,
            stack_trace=trace,
            module_stack=stack,
            index=index,
            metadata=metadata,
        )
        nodes.append(node)
        by_name.setdefault(name, node)
        if handle is not None:
            by_handle.setdefault(handle, []).append(node)
    return GraphInfo(
        method=method,
        entry=entry,
        nodes=tuple(nodes),
        nodes_by_handle={h: tuple(ns) for h, ns in by_handle.items()},
        nodes_by_name=by_name,
    )
