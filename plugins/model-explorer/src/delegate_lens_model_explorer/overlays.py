"""The Inspector's measurements as Model Explorer node-data files (``ModelNodeData`` JSON).

Each overlay is one file ``{graph id: GraphNodeData}`` (graph id = method name) whose
``results`` map node ids to ``{"value": ...}``, as Model Explorer's ``node_data_builder``
writes them; ``model-explorer graph.json --node_data_paths=a.json,b.json`` shows them.

Which time a node gets: every row of the method's first linked block whose debug handles
include the node's handle is a candidate; the most specific rows win (fewest handles, so a
delegate's own event beats the delegate call around it). Their p50 / average are summed.
A row covering several nodes (a fused kernel) shows its whole time on each of them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from delegate_lens_model_explorer.graph import DELEGATE_COLORS, MethodGraph

__all__ = ["NodeTimes", "build_overlays", "node_times", "numeric_gaps"]

GRADIENT = [
    {"stop": 0, "bgColor": "#fff5f0"},
    {"stop": 0.5, "bgColor": "#fc9272"},
    {"stop": 1, "bgColor": "#cb181d"},
]
"""White to red: the slowest (or farthest off) node stands out."""

EXECUTE = "Method::execute"

NodeTimes = dict[str, tuple[float, float]]
"""Node id -> (p50, avg) in the Inspector's target time scale."""


def _handles(value: int | list[int] | None) -> tuple[int, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, int) else tuple(value)


def _table_of(inspector: Any, method: str) -> Any:
    for table in inspector.tables:
        if table.method == method:
            return table
    return None


def node_times(inspector: Any, graph: MethodGraph) -> tuple[NodeTimes, float | None]:
    """Per-node (p50, avg) of ``graph``'s method, and the run's p50 (``Method::execute``)."""
    table = _table_of(inspector, graph.method)
    if table is None:
        return {}, None
    p50s = table.stats[1]
    avgs = table.stats[3]
    best: dict[int, tuple[int, list[int]]] = {}  # handle -> (cover size, rows)
    run: float | None = None
    for row, (key, link) in enumerate(zip(table.keys, table.links)):
        if not math.isfinite(float(p50s[row])):
            continue
        if key.name == EXECUTE and key.identifier is None:
            run = float(p50s[row]) if run is None else max(run, float(p50s[row]))
            continue
        handles = _handles(link.debug_handles)
        size = len(handles)
        for handle in handles:
            current = best.get(handle)
            if current is None or size < current[0]:
                best[handle] = (size, [row])
            elif size == current[0]:
                current[1].append(row)
    out: NodeTimes = {}
    for node_id, node in graph.op_nodes.items():
        if node.debug_handle is None or node.debug_handle not in best:
            continue
        rows = best[node.debug_handle][1]
        out[node_id] = (float(np.sum(p50s[rows])), float(np.sum(avgs[rows])))
    return out, run


def numeric_gaps(inspector: Any) -> dict[str, float] | None:
    """``{node name: largest numeric gap}`` from ``inspector.calculate_numeric_gap()``, or
    None when the Inspector holds no debug data or the reference outputs were not captured.

    An exporter stays torch-free and quick: the gaps come from the reference outputs cached
    beside the ETRecord (``<etrecord>.numerics.npz``, written by ``delegate-lens numerics
    --cache`` or ``calculate_numeric_gap(cache=True)``); without that cache there is no
    ``numeric_gap`` overlay. Accepts the reference's table (a DataFrame or rows with
    ``aot_ops`` — node names — and ``gap`` — one number or one per output).
    """
    from pathlib import Path

    from delegate_lens.errors import DelegateLensError, DelegateLensWarning
    from delegate_lens.inspector.aot_outputs import CACHE_SUFFIX

    method = getattr(inspector, "calculate_numeric_gap", None)
    record = inspector.etrecord
    if method is None or record is None or not any(t.debug_data for t in inspector.tables):
        return None
    cache = Path(str(getattr(record, "origin", "<memory>")) + CACHE_SUFFIX)
    if not cache.is_file():
        return None
    try:
        result = method(aot_outputs=cache)
    except DelegateLensError as exc:  # a stale or foreign cache, outputs that disagree, ...
        warnings.warn(
            f"model-explorer: no numeric_gap overlay: {exc}", DelegateLensWarning, stacklevel=2
        )
        return None
    rows: Iterable[Mapping[str, Any]] = (
        result.to_dict("records") if hasattr(result, "to_dict") else result
    )
    gaps: dict[str, float] = {}
    for row in rows:
        gap = _largest(row.get("gap"))
        if gap is None:
            continue
        ops = row.get("aot_ops") or ()
        for name in [ops] if isinstance(ops, str) else ops:
            name = str(name)
            gaps[name] = max(gap, gaps.get(name, gap))
    return gaps


def _largest(value: Any) -> float | None:
    values = np.asarray(value, dtype=np.float64).ravel() if value is not None else None
    if values is None or values.size == 0 or not np.isfinite(values).any():
        return None
    return float(np.nanmax(values))


def _graph_data(name: str, results: dict[str, Any], *, gradient: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "results": results}
    if gradient:
        data["gradient"] = GRADIENT
    return data


def build_overlays(inspector: Any, graphs: list[MethodGraph]) -> dict[str, dict[str, Any]]:
    """``{file name: ModelNodeData JSON}`` for every overlay with data.

    ``latency_p50.json``, ``latency_avg.json`` and ``share_of_run.json`` need a profiled
    block linked to a method; ``delegate.json`` needs delegate calls; ``numeric_gap.json``
    an Inspector with ``calculate_numeric_gap`` and debug data.
    """
    unit = inspector.target_time_scale.value
    p50: dict[str, Any] = {}
    avg: dict[str, Any] = {}
    share: dict[str, Any] = {}
    delegate: dict[str, Any] = {}
    identifier: dict[str, Any] = {}
    gap: dict[str, Any] = {}
    gaps = numeric_gaps(inspector)
    for graph in graphs:
        times, run = node_times(inspector, graph)
        if times:
            p50[graph.method] = _graph_data(
                f"p50 latency ({unit})", {k: {"value": v[0]} for k, v in times.items()}
            )
            avg[graph.method] = _graph_data(
                f"average latency ({unit})", {k: {"value": v[1]} for k, v in times.items()}
            )
            if run:
                share[graph.method] = _graph_data(
                    "share of run p50 (%)",
                    {k: {"value": round(100.0 * v[0] / run, 4)} for k, v in times.items()},
                )
        if graph.node_calls:
            backends = list(dict.fromkeys(call.backend for call in graph.node_calls.values()))
            results: dict[str, Any] = {}
            for node_id, call in graph.node_calls.items():
                color = DELEGATE_COLORS[backends.index(call.backend) % len(DELEGATE_COLORS)]
                results[node_id] = {"value": call.namespace, "bgColor": color}
            delegate[graph.method] = {
                **_graph_data("delegate call", results, gradient=False),
                "showExpandedSummaryOnGroupNode": True,
            }
            ids = {
                node_id: ",".join(call.identifiers_of(graph.op_nodes[node_id].debug_handle))
                for node_id, call in graph.node_calls.items()
            }
            if any(ids.values()):
                identifier[graph.method] = _graph_data(
                    "delegate debug identifiers",
                    {k: {"value": v} for k, v in ids.items() if v},
                    gradient=False,
                )
        if gaps:
            gap_results = {k: {"value": gaps[k]} for k in graph.op_nodes if k in gaps}
            if gap_results:
                gap[graph.method] = _graph_data("numeric gap (largest per node)", gap_results)
    files = {
        "latency_p50.json": p50,
        "latency_avg.json": avg,
        "share_of_run.json": share,
        "delegate.json": delegate,
        "delegate_identifier.json": identifier,
        "numeric_gap.json": gap,
    }
    return {name: data for name, data in files.items() if data}
