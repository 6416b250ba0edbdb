"""The hook: a ``model-explorer`` exporter on ``dl_exporters``.

``delegate-lens inspect ETDUMP --etrecord R --format model-explorer -o DIR`` writes into
``DIR``: ``graph.json`` (every method of the ETRecord as a Model Explorer graph) and one
node-data file per overlay (see :mod:`delegate_lens_model_explorer.overlays`). View with::

    model-explorer DIR/graph.json --node_data_paths=DIR/latency_p50.json,DIR/delegate.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from delegate_lens import hookimpl
from delegate_lens.errors import UsageError
from delegate_lens.exporters import Exporter

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector

__all__ = ["GRAPH_FILE", "dl_exporters", "write_model_explorer"]

GRAPH_FILE = "graph.json"


def write_model_explorer(inspector: Inspector, folder: Path) -> list[Path]:
    """Write ``graph.json`` and the node-data files of ``inspector`` into ``folder``.

    Returns the paths written, the graph first. Needs an Inspector made with an ETRecord
    (:class:`~delegate_lens.errors.UsageError` otherwise).
    """
    from delegate_lens_model_explorer.graph import build_graph_collection
    from delegate_lens_model_explorer.overlays import build_overlays

    record = inspector.etrecord
    if record is None:
        raise UsageError(
            "format 'model-explorer' draws the ETRecord's graph: give the ETRecord (--etrecord)"
        )
    label = Path(str(record.origin)).name or "delegate-lens"
    collection, graphs = build_graph_collection(record, label)
    written = []
    files = {GRAPH_FILE: collection, **build_overlays(inspector, graphs)}
    for name, document in files.items():
        path = Path(folder) / name
        path.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
        written.append(path)
    return written


@hookimpl
def dl_exporters() -> list[Exporter]:
    """The ``model-explorer`` exporter (writes a folder)."""
    return [
        Exporter(
            "model-explorer",
            "Model Explorer graph.json + node-data overlays (latency, delegate) in a folder",
            write_model_explorer,
            folder=True,
        )
    ]
