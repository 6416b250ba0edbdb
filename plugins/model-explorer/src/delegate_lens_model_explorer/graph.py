"""An ETRecord's programs as Model Explorer graph JSON (a ``GraphCollection``).

One graph per method of the ETRecord (``graph id`` = method name), built from the
serialized edge program without torch:

- one node per operator node (``id`` = the node's name, ``label`` = the op's short name),
  one per graph input tensor (``label`` ``input``) and one ``output`` node;
- ``incomingEdges`` from the tensors each node reads (``as_tensor`` / ``as_tensors``
  arguments), with input and output positions;
- ``namespace`` = the node's module path (``layers.0.attn`` -> ``layers/0/attn``), under a
  group ``<backend>[call <instruction>]`` when a delegate call swallowed the node (its
  debug handle is in the call's entry of the ETRecord's debug handle map or delegate map);
- node ``attrs``: target, op type, debug handle, module path and type, stack trace and the
  delegate (backend, instruction id, identifiers); group attributes for each delegate call.

The shape follows Model Explorer's ``graph_builder`` dataclasses (``GraphCollection`` ->
``Graph`` -> ``GraphNode`` with ``KeyValue`` attrs, ``IncomingEdge`` and ``MetadataItem``);
the JSON is built directly so that writing it needs no Model Explorer install.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping

import attrs

from delegate_lens.errors import ETRecordFormatError
from delegate_lens.etrecord import ETRecord, GraphInfo, GraphNode, normalize_handles

__all__ = [
    "DelegateCall",
    "JsonObject",
    "MethodGraph",
    "build_graph_collection",
    "build_method_graph",
    "delegate_calls",
    "short_label",
]

JsonObject = dict[str, object]
"""A JSON object as built here (and as the ETRecord's graph JSON is read)."""

DELEGATE_COLORS = ("#c8e6c9", "#bbdefb", "#ffe0b2", "#e1bee7", "#ffcdd2", "#b2ebf2")
"""Background colours of delegate groups (and delegate overlay values), one per backend."""


@attrs.frozen
class DelegateCall:
    """One delegate call instruction: its backend and the debug handles it swallowed."""

    method: str
    instruction_id: int
    backend: str
    handles: frozenset[int]
    identifiers: dict[str, tuple[int, ...]] = attrs.field(eq=False)
    """The backend's debug identifiers (JSON key text) and their handles."""

    def identifiers_of(self, handle: int | None) -> list[str]:
        """The identifiers (JSON key text) whose handles include ``handle``."""
        return [key for key, handles in self.identifiers.items() if handle in handles]

    @property
    def namespace(self) -> str:
        """The group Model Explorer draws around the call's operators."""
        return f"{self.backend}[call {self.instruction_id}]"


@attrs.frozen
class MethodGraph:
    """One method's Model Explorer graph and what the overlays need to address its nodes."""

    method: str
    graph: JsonObject
    """The ``Graph`` JSON object."""
    op_nodes: dict[str, GraphNode]
    """Operator node id -> the ETRecord's node."""
    node_calls: dict[str, DelegateCall]
    """Operator node id -> the delegate call that swallowed it."""


def short_label(op_type: str) -> str:
    """The op's name without namespace and overload: ``aten.linear.default`` -> ``linear``."""
    parts = op_type.split(".")
    if len(parts) >= 3:
        return parts[-2]
    if len(parts) == 2:
        return parts[1] if parts[1] not in ("default", "Tensor") else parts[0]
    return op_type


def delegate_calls(record: ETRecord, method: str) -> list[DelegateCall]:
    """The delegate calls of ``method`` in instruction order, from the ETRecord's maps."""
    debug_map = record.debug_handle_map.get(method, {})
    calls = []
    for iid, entry in sorted(record.delegate_entries.get(method, {}).items()):
        handles = set(debug_map.get(iid, ()))
        identifiers = {key: normalize_handles(value) for key, value in entry.identifiers.items()}
        for value in identifiers.values():
            handles.update(value)
        calls.append(DelegateCall(method, iid, entry.name, frozenset(handles), identifiers))
    return calls


def _kv(key: str, value: object) -> dict[str, str]:
    return {"key": key, "value": str(value)}


def _tensor_names(value: object) -> Iterator[str]:
    """Tensor names an argument (or output) refers to, in order."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "as_tensor" and isinstance(item, dict):
                name = item.get("name")
                if isinstance(name, str):
                    yield name
            elif key == "as_tensors" and isinstance(item, list):
                for tensor in item:
                    if isinstance(tensor, dict) and isinstance(tensor.get("name"), str):
                        yield tensor["name"]
            else:
                yield from _tensor_names(item)
    elif isinstance(value, list):
        for item in value:
            yield from _tensor_names(item)


def _shape(tensor_values: Mapping[str, object], name: str) -> str | None:
    meta = tensor_values.get(name)
    if not isinstance(meta, dict) or not isinstance(meta.get("sizes"), list):
        return None
    dims = []
    for size in meta["sizes"]:
        value = size.get("as_int") if isinstance(size, dict) else None
        dims.append(str(value) if isinstance(value, int) else "?")
    return "[" + ",".join(dims) + "]"


def _module_namespace(node: GraphNode) -> str:
    return node.module_path.replace(".", "/")


def build_method_graph(record: ETRecord, method: str) -> MethodGraph:
    """The Model Explorer ``Graph`` of one method of ``record`` (an ETRecord)."""
    info: GraphInfo = record.graph(method)
    where = f"{record.origin}: entry {info.entry!r}"
    try:
        document = json.loads(record.entry(info.entry))
        raw_graph = document["graph_module"]["graph"]
        raw_nodes = raw_graph["nodes"]
    except (ValueError, KeyError, TypeError) as exc:  # parse_graph read it already
        raise ETRecordFormatError(f"{where}: cannot read the graph: {exc}") from None
    tensor_values = raw_graph.get("tensor_values") or {}
    calls = delegate_calls(record, method)
    call_of_handle: dict[int, DelegateCall] = {}
    for delegate_call in calls:
        for handle in delegate_call.handles:
            call_of_handle.setdefault(handle, delegate_call)

    producers: dict[str, tuple[str, int]] = {}  # tensor name -> (node id, output index)
    nodes: list[JsonObject] = []
    used_ids = {node.name for node in info.nodes}
    for name in _tensor_names(raw_graph.get("inputs", [])):
        if name in producers:
            continue
        node_id = name if name not in used_ids else f"input:{name}"
        used_ids.add(node_id)
        producers[name] = (node_id, 0)
        attrs_ = [_kv("tensor", name)]
        nodes.append(
            {
                "id": node_id,
                "label": "input",
                "namespace": "",
                "attrs": attrs_,
                "outputsMetadata": _outputs_metadata([name], tensor_values),
            }
        )
    for node, raw in zip(info.nodes, raw_nodes):
        outputs = list(_tensor_names(raw.get("outputs", [])))
        for index, name in enumerate(outputs):
            producers.setdefault(name, (node.name, index))

    op_nodes: dict[str, GraphNode] = {}
    node_calls: dict[str, DelegateCall] = {}
    for node, raw in zip(info.nodes, raw_nodes):
        call = call_of_handle.get(node.debug_handle) if node.debug_handle is not None else None
        namespace = _module_namespace(node)
        if call is not None:
            namespace = call.namespace + ("/" + namespace if namespace else "")
            node_calls[node.name] = call
        op_nodes[node.name] = node
        nodes.append(
            {
                "id": node.name,
                "label": short_label(node.op_type),
                "namespace": namespace,
                "attrs": _node_attrs(node, call),
                "incomingEdges": _incoming(raw.get("inputs", []), producers),
                "outputsMetadata": _outputs_metadata(
                    list(_tensor_names(raw.get("outputs", []))), tensor_values
                ),
            }
        )
    output_id = "output"
    while output_id in used_ids:
        output_id += "_"
    nodes.append(
        {
            "id": output_id,
            "label": "output",
            "namespace": "",
            "incomingEdges": _incoming(
                [{"arg": out} for out in raw_graph.get("outputs", [])], producers
            ),
        }
    )
    graph: JsonObject = {"id": method, "nodes": nodes}
    if calls:
        graph["groupNodeAttributes"] = {
            call.namespace: {
                "backend": call.backend,
                "instruction_id": str(call.instruction_id),
                "debug_handles": ",".join(str(h) for h in sorted(call.handles)),
                "identifiers": str(len(call.identifiers)),
            }
            for call in calls
        }
        backends = list(dict.fromkeys(call.backend for call in calls))
        graph["groupNodeConfigs"] = [
            {
                "namespaceRegex": "^" + re.escape(backend) + r"\[call \d+\]$",
                "backgroundColor": DELEGATE_COLORS[i % len(DELEGATE_COLORS)],
            }
            for i, backend in enumerate(backends)
        ]
    return MethodGraph(method, graph, op_nodes, node_calls)


def _node_attrs(node: GraphNode, call: DelegateCall | None) -> list[dict[str, str]]:
    out = [_kv("target", node.target), _kv("op_type", node.op_type)]
    if node.debug_handle is not None:
        out.append(_kv("debug_handle", node.debug_handle))
    if node.module_stack:
        out.append(_kv("module_path", node.module_path or "<root>"))
        out.append(_kv("module_type", node.module_stack[-1].type))
    if node.stack_trace:
        out.append(_kv("stack_trace", node.stack_trace))
    if call is not None:
        out.append(_kv("delegate_backend", call.backend))
        out.append(_kv("delegate_instruction_id", call.instruction_id))
        identifiers = call.identifiers_of(node.debug_handle)
        if identifiers:
            out.append(_kv("delegate_debug_identifiers", ",".join(identifiers)))
    return out


def _incoming(
    inputs: Iterable[object], producers: dict[str, tuple[str, int]]
) -> list[dict[str, str]]:
    edges = []
    position = 0
    for item in inputs:
        arg = item.get("arg", item) if isinstance(item, dict) else item
        for name in _tensor_names(arg):
            source = producers.get(name)
            if source is not None:
                edges.append(
                    {
                        "sourceNodeId": source[0],
                        "sourceNodeOutputId": str(source[1]),
                        "targetNodeInputId": str(position),
                    }
                )
            position += 1
    return edges


def _outputs_metadata(names: list[str], tensor_values: Mapping[str, object]) -> list[JsonObject]:
    items: list[JsonObject] = []
    for index, name in enumerate(names):
        kvs = [_kv("tensor_name", name)]
        shape = _shape(tensor_values, name)
        if shape is not None:
            kvs.append(_kv("shape", shape))
        items.append({"id": str(index), "attrs": kvs})
    return items


def build_graph_collection(record: ETRecord, label: str) -> tuple[JsonObject, list[MethodGraph]]:
    """The ``GraphCollection`` JSON of every method of ``record``, and the method graphs."""
    graphs = [build_method_graph(record, method) for method in record.methods]
    return {"label": label, "graphs": [g.graph for g in graphs]}, graphs
