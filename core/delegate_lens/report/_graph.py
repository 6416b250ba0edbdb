"""The delegation graph of each ETRecord method, from the Inspector's graph view
(:meth:`Inspector.graph_view`: nodes, data edges, delegate calls, the rows of each node) and
its one attribution of time: one cluster per delegate call, fused groups and
decompositions, per-node measures.

* A **cluster** is a delegate call: the nodes of its debug handles.
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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.inspector import node_samples
from delegate_lens.report._tables import RowIds, _num

if TYPE_CHECKING:
    from delegate_lens.inspector import BlockTable, Inspector, MethodGraph


Measures = Mapping[str, Mapping[str, float]]


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
    inspector: Inspector,
    graph: MethodGraph,
    single: bool,
    row_ids: RowIds,
    extra_measures: Measures | None = None,
) -> dict[str, Any]:
    """The graph data of one method (see the module docstring); ``single``: the ETRecord
    has this method alone."""
    nodes = graph.nodes
    clusters: list[dict[str, Any]] = []
    cluster_of: dict[int, int] = {}  # node index -> cluster index
    group_of: dict[int, int] = {}
    groups: list[dict[str, Any]] = []
    decomposed: dict[int, list[Any]] = {}
    for c, call in enumerate(graph.delegate_calls):
        clusters.append(
            {
                "id": f"c{c}",
                "instruction_id": call.instruction_id,
                "backend": call.backend,
                "nodes": list(call.nodes),
                "identifiers": len(call.identifiers),
            }
        )
        for i in call.nodes:
            cluster_of.setdefault(i, c)
        per_handle: dict[int, list[Any]] = {}
        for key, ident_handles in call.identifiers:
            hs = set(ident_handles)
            if len(hs) == 1:
                per_handle.setdefault(next(iter(hs)), []).append(key)
            if 1 < len(hs) < len(call.handles):
                group_nodes = [i for i in call.nodes if nodes[i].debug_handle in hs]
                g = len(groups)
                groups.append(
                    {"id": f"g{g}", "cluster": c, "identifier": key, "nodes": group_nodes}
                )
                for i in group_nodes:
                    group_of.setdefault(i, g)
        for h, keys in per_handle.items():
            if len(keys) > 1:  # several identifiers of this handle alone: a decomposition
                for i in call.nodes:
                    if nodes[i].debug_handle == h:
                        decomposed[i] = keys

    p50: dict[str, float] = {}
    share: dict[str, float] = {}
    main = _main_table(inspector, graph.method, single)
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
                "rows": [row_ids.of(block, row) for block, row in node.rows],
            }
        )
    return {
        "method": graph.method,
        "nodes": out_nodes,
        "edges": [list(e) for e in graph.edges],
        "clusters": clusters,
        "groups": groups,
        "measures": measures,
        "main_block": None if main is None else main.index,
    }


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
