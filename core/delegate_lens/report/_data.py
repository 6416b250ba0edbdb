"""The report's data model: everything the page shows, computed here from the Inspector's
face (its tables, its graph view, its one attribution of time) as one JSON-able dict (the
page only draws it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from delegate_lens.exporters import json_value
from delegate_lens.report._graph import delegation_summary, method_graph
from delegate_lens.report._tables import (
    RowIds,
    block_shares,
    module_tree,
    row_columns,
    top_operators,
)
from delegate_lens.report._timeline import timeline_runs

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector


REPORT_FORMAT = 1
_MAX_METADATA_CHARS = 2000


def _row_metadata(inspector: Inspector, row_ids: RowIds) -> dict[str, Any]:
    """Parsed delegate metadata of the first sample of each delegate-logged row."""
    out: dict[str, Any] = {}
    for table in inspector.tables:
        for j, key in enumerate(table.keys):
            if key.identifier is None:
                continue
            raws, parsed = inspector.row_metadata(table, j)
            if not raws:
                continue
            if isinstance(parsed, list) and parsed is not raws and parsed:
                value: Any = parsed[0]
            elif isinstance(parsed, dict):
                n = len(raws)
                value = {
                    k: (v[0] if isinstance(v, list) and len(v) == n else v)
                    for k, v in parsed.items()
                }
            else:
                value = raws[0].hex()
            text = json_value(value)
            if len(str(text)) > _MAX_METADATA_CHARS:
                text = str(text)[:_MAX_METADATA_CHARS] + "…"
            out[str(row_ids.of(table.index, j))] = text
    return out


def build_report_data(
    inspector: Inspector,
    *,
    title: str | None = None,
    extra_measures: Mapping[str, Mapping[str, float]] | None = None,
    runs: Iterable[int] = (),
) -> dict[str, Any]:
    """The report's data (see docs/report.md): ``meta``, ``blocks``, ``rows`` (columnar),
    ``metadata``, ``top_operators``, ``shares``, ``modules``, ``graphs`` (one per ETRecord method,
    empty without an ETRecord), ``summary`` and ``timeline``.

    ``extra_measures`` adds node colourings to the graph: ``{measure name: {node name:
    value}}`` (e.g. a numeric gap per node). ``runs``: indices of ETDump runs the timeline
    offers besides its samples (first, fastest, median, slowest, last of each block).
    """
    row_ids = RowIds(inspector.tables)
    view = inspector.graph_view()
    graphs: list[dict[str, Any]] = []
    if view is not None:
        single = len(view.methods) == 1
        graphs = [
            method_graph(inspector, graph, single, row_ids, extra_measures)
            for graph in view.methods
        ]
    fc = inspector.file_columns
    return {
        "format": REPORT_FORMAT,
        "meta": {
            "title": title or (inspector.etdump_path.name if inspector.etdump_path else "ETDump"),
            "etdump": str(inspector.etdump_path) if inspector.etdump_path else None,
            "etrecord": None if view is None else view.origin,
            "unit": inspector.target_time_scale.value,
            "runs": len(fc.run_names),
            "events": len(fc),
        },
        "blocks": [
            {
                "index": t.index,
                "name": t.name,
                "method": t.method,
                "runs": t.n_runs,
                "first_row": row_ids.offset[t.index],
                "n_rows": t.n_rows,
            }
            for t in inspector.tables
        ],
        "rows": row_columns(inspector),
        "metadata": _row_metadata(inspector, row_ids),
        "top_operators": top_operators(inspector),
        "shares": block_shares(inspector),
        "modules": module_tree(inspector),
        "graphs": graphs,
        "summary": [delegation_summary(g) for g in graphs],
        "timeline": timeline_runs(inspector, row_ids, runs),
    }
