"""The Inspector's measurements as Model Explorer node-data files (``ModelNodeData`` JSON).

Each overlay is one file ``{graph id: GraphNodeData}`` (graph id = method name) whose
``results`` map node ids to ``{"value": ...}``, as Model Explorer's ``node_data_builder``
writes them; ``model-explorer graph.json --node_data_paths=a.json,b.json`` shows them.

Which time a node gets comes from the Inspector's one attribution of time
(``Inspector.get_attribution()``), in the method's first linked block: a kernel
is charged to the one node of the op it ran (where two nodes of that op share its debug
handle, program order tells which), a delegate's event to the nodes its map gives it,
wrappers (``OPERATOR_CALL``, ``DELEGATE_CALL``) never; a fused event shows its whole time on
each node of its group (unsplit). p50 and average are over the block's runs of the node's
time per run; the share is its time over ``Method::execute``'s, all runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from delegate_lens_model_explorer.graph import DELEGATE_COLORS, JsonObject, MethodGraph

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector

__all__ = ["NodeTimes", "build_overlays", "node_times", "numeric_gaps"]

GRADIENT = [
    {"stop": 0, "bgColor": "#fff5f0"},
    {"stop": 0.5, "bgColor": "#fc9272"},
    {"stop": 1, "bgColor": "#cb181d"},
]
"""White to red: the slowest (or farthest off) node stands out."""

NodeTimes = dict[str, tuple[float, float, float]]
"""Node id -> (p50, average, share of the block's denominator) in the Inspector's target
time scale."""


def node_times(inspector: Inspector, graph: MethodGraph) -> tuple[NodeTimes, str | None]:
    """Per-node times of ``graph``'s method, from the Inspector's one attribution of time
    (its first block linked to the method), and what the shares divide by (None: no block).
    """
    from delegate_lens.inspector import node_samples

    for table, attribution in zip(inspector.tables, inspector.get_attribution(), strict=True):
        if table.method != graph.method:
            continue
        whole = float(np.sum(attribution.run_samples))
        out: NodeTimes = {}
        for name, times in node_samples(table, attribution).items():
            if name not in graph.op_nodes:
                continue
            share = float(np.sum(times)) / whole if whole > 0 else 0.0
            out[name] = (float(np.median(times)), float(np.mean(times)), share)
        return out, attribution.denominator
    return {}, None


def numeric_gaps(inspector: Inspector) -> dict[str, float] | None:
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
    from delegate_lens.numerics import CACHE_SUFFIX

    record = inspector.etrecord
    if record is None or not any(t.debug_data for t in inspector.tables):
        return None
    cache = Path(record.origin + CACHE_SUFFIX)
    if not cache.is_file():
        return None
    try:
        result = inspector.calculate_numeric_gap(aot_outputs=cache, as_dataframe=False)
    except DelegateLensError as exc:  # a stale or foreign cache, outputs that disagree, ...
        warnings.warn(
            f"model-explorer: no numeric_gap overlay: {exc}", DelegateLensWarning, stacklevel=2
        )
        return None
    rows: Iterable[Mapping[str, object]] = (
        result.to_dict("records") if hasattr(result, "to_dict") else result
    )
    gaps: dict[str, float] = {}
    for row in rows:
        gap = _largest(row.get("gap"))
        if gap is None:
            continue
        ops = row.get("aot_ops") or ()
        for op in [ops] if isinstance(ops, str) else ops if isinstance(ops, Iterable) else ():
            name = str(op)
            gaps[name] = max(gap, gaps.get(name, gap))
    return gaps


def _largest(value: object) -> float | None:
    values = np.asarray(value, dtype=np.float64).ravel() if value is not None else None
    if values is None or values.size == 0 or not np.isfinite(values).any():
        return None
    return float(np.nanmax(values))


def _graph_data(name: str, results: Mapping[str, object], *, gradient: bool = True) -> JsonObject:
    data: JsonObject = {"name": name, "results": results}
    if gradient:
        data["gradient"] = GRADIENT
    return data


def build_overlays(inspector: Inspector, graphs: list[MethodGraph]) -> dict[str, JsonObject]:
    """``{file name: ModelNodeData JSON}`` for every overlay with data.

    ``latency_p50.json``, ``latency_avg.json`` and ``share_of_run.json`` need a profiled
    block linked to a method; ``delegate.json`` needs delegate calls; ``numeric_gap.json``
    an Inspector with ``calculate_numeric_gap`` and debug data.
    """
    unit = inspector.target_time_scale.value
    p50: JsonObject = {}
    avg: JsonObject = {}
    share: JsonObject = {}
    delegate: JsonObject = {}
    identifier: JsonObject = {}
    gap: JsonObject = {}
    gaps = numeric_gaps(inspector)
    for graph in graphs:
        times, denominator = node_times(inspector, graph)
        if times:
            p50[graph.method] = _graph_data(
                f"p50 latency ({unit})", {k: {"value": v[0]} for k, v in times.items()}
            )
            avg[graph.method] = _graph_data(
                f"average latency ({unit})", {k: {"value": v[1]} for k, v in times.items()}
            )
            if denominator:
                share[graph.method] = _graph_data(
                    f"share of run (% of {denominator}, all runs)",
                    {k: {"value": round(100.0 * v[2], 4)} for k, v in times.items()},
                )
        if graph.node_calls:
            backends = list(dict.fromkeys(call.backend for call in graph.node_calls.values()))
            results: JsonObject = {}
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
