"""The delegation graph of each ETRecord method: operator nodes, data edges, one cluster per
delegate call, fused groups and decompositions, per-node measures and the rows of each node.

* Nodes are the graph's operator nodes (placeholders and outputs are not nodes of the
  serialized graph); edges join the node producing a tensor to each node reading it.
* A **cluster** is a delegate call instruction of ``delegate_map[method]``: the nodes whose
  debug handles ``debug_handle_map[method][instruction]`` lists.
* A **fused group** is a delegate identifier mapped to several (not all) handles of its
  cluster; a **decomposition** is a handle that several identifiers map to.
* **Measures** per node (``{name: {node: value}}``), from the Inspector's one attribution
  of time in the main block of the method (the one with the most runs): ``p50`` is the
  median over runs of the time charged to the node (a kernel to the node of the op it ran,
  a delegate's event to the nodes its map gives it; a fused event's time shows whole on
  each node of its group, never split); ``share`` is its total over the block's
  denominator (``Method::execute``). Wrappers (``OPERATOR_CALL``, ``DELEGATE_CALL``) are
  never added. More measures (e.g. a numeric gap) come as extra maps keyed by node name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.etdump import FRAMEWORK_EVENTS
from delegate_lens.etrecord import normalize_handles
from delegate_lens.inspector import node_samples
from delegate_lens.report._tables import RowIds, _num

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord
    from delegate_lens.inspector import BlockTable, Inspector


Measures = Mapping[str, Mapping[str, float]]


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


def _edges(record: ETRecord, method: str, index_of: Mapping[str, int]) -> list[list[int]]:
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
    return [list(e) for e in sorted(edges)]


def _main_table(inspector: Inspector, method: str, single: bool) -> BlockTable | None:
    tables = [
        t
        for t in inspector.tables
        if t.method == method or (single and any(link.method == method for link in t.links))
    ]
    if not tables and single:
        tables = [t for t in inspector.tables if any(link.op_types for link in t.links)]
    return max(tables, key=lambda t: (t.n_runs, t.n_rows), default=None)


def method_graph(
    inspector: Inspector, method: str, row_ids: RowIds, extra_measures: Measures | None = None
) -> dict[str, Any]:
    """The graph data of one method (see the module docstring)."""
    record = inspector.etrecord
    graph = record.graph(method)
    nodes = graph.nodes
    index_of = {node.name: i for i, node in enumerate(nodes)}
    handle_map = record.debug_handle_map.get(method, {})
    clusters: list[dict[str, Any]] = []
    cluster_of: dict[int, int] = {}  # node index -> cluster index
    group_of: dict[int, int] = {}
    groups: list[dict[str, Any]] = []
    decomposed: dict[int, list[Any]] = {}
    for instruction, entry in sorted(record.delegate_entries.get(method, {}).items()):
        handles = set(handle_map.get(instruction, ()))
        for ident_handles in entry.identifiers.values():
            handles.update(normalize_handles(ident_handles))
        members = [i for i, n in enumerate(nodes) if n.debug_handle in handles]
        c = len(clusters)
        clusters.append(
            {
                "id": f"c{c}",
                "instruction_id": instruction,
                "backend": entry.name,
                "nodes": members,
                "identifiers": len(entry.identifiers),
            }
        )
        for i in members:
            cluster_of.setdefault(i, c)
        per_handle: dict[int, list[Any]] = {}
        for key, ident_handles in entry.identifiers.items():
            hs = set(normalize_handles(ident_handles))
            if len(hs) == 1:
                per_handle.setdefault(next(iter(hs)), []).append(key)
            if 1 < len(hs) < len(handles):
                group_nodes = [i for i in members if nodes[i].debug_handle in hs]
                g = len(groups)
                groups.append(
                    {"id": f"g{g}", "cluster": c, "identifier": key, "nodes": group_nodes}
                )
                for i in group_nodes:
                    group_of.setdefault(i, g)
        for h, keys in per_handle.items():
            if len(keys) > 1:  # several identifiers of this handle alone: a decomposition
                for i in members:
                    if nodes[i].debug_handle == h:
                        decomposed[i] = keys

    # rows of each node and the measures
    node_rows: dict[int, list[int]] = {}
    by_handle: dict[int, list[int]] = {}
    for i, node in enumerate(nodes):
        if node.debug_handle is not None:
            by_handle.setdefault(node.debug_handle, []).append(i)
    single = len(record.methods) == 1
    for table in inspector.tables:
        for j, link in enumerate(table.links):
            if link.method not in (method, None) or link.debug_handles is None:
                continue
            if table.keys[j].name in FRAMEWORK_EVENTS:
                continue  # the handles of instruction 0, as the reference: not the node's
            if link.method is None and not single:
                continue
            for i in _nodes_of(link.debug_handles, by_handle):
                node_rows.setdefault(i, []).append(row_ids.of(table.index, j))
    p50: dict[str, float] = {}
    share: dict[str, float] = {}
    main = _main_table(inspector, method, single)
    if main is not None:
        attribution = inspector.get_attribution()[main.index]
        whole = float(np.sum(attribution.run_samples))
        for name, times in node_samples(main, attribution).items():
            p50[name] = _num(float(np.median(times))) or 0.0
            share[name] = (_num(float(np.sum(times)) / whole) or 0.0) if whole > 0 else 0.0
    measures: dict[str, Mapping[str, float]] = {"p50": p50, "share": share}
    for name, values in (extra_measures or {}).items():
        measures[name] = {str(k): float(v) for k, v in values.items()}

    out_nodes = []
    for i, node in enumerate(nodes):
        out_nodes.append(
            {
                "name": node.name,
                "op": node.op_type,
                "handle": node.debug_handle,
                "module": [[f.path, f.type] for f in node.module_stack if f.path],
                "trace": node.stack_trace,
                "cluster": cluster_of.get(i),
                "group": group_of.get(i),
                "decomposed": decomposed.get(i),
                "rows": node_rows.get(i, []),
            }
        )
    return {
        "method": method,
        "nodes": out_nodes,
        "edges": _edges(record, method, index_of),
        "clusters": clusters,
        "groups": groups,
        "measures": measures,
        "main_block": None if main is None else main.index,
    }


def _nodes_of(handles: int | list[int], by_handle: Mapping[int, list[int]]) -> list[int]:
    out: list[int] = []
    for h in [handles] if isinstance(handles, int) else handles:
        for i in by_handle.get(h, ()):
            if i not in out:
                out.append(i)
    return out


def delegation_summary(graph: Mapping[str, Any]) -> dict[str, Any]:
    """Per op type: nodes inside delegate clusters and outside (the columns of
    :func:`delegate_lens.aot._delegation_info.get_delegation_info`), and totals."""
    by_op: dict[str, list[int]] = {}
    for node in graph["nodes"]:
        counts = by_op.setdefault(node["op"], [0, 0])
        counts[0 if node["cluster"] is not None else 1] += 1
    backends: dict[str, int] = {}
    for cluster in graph["clusters"]:
        backends[cluster["backend"]] = backends.get(cluster["backend"], 0) + 1
    rows = [[op, d, n] for op, (d, n) in sorted(by_op.items())]
    return {
        "columns": [
            "op_type",
            "occurrences_in_delegated_graphs",
            "occurrences_in_non_delegated_graphs",
        ],
        "rows": rows,
        "total": [sum(r[1] for r in rows), sum(r[2] for r in rows)],
        "num_delegated_subgraphs": len(graph["clusters"]),
        "backends": backends,
    }
