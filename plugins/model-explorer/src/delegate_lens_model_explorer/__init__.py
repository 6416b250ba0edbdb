"""delegate-lens plugin: ETRecord graphs and Inspector measurements for Google Model Explorer.

Found by delegate-lens through its entry point ``model_explorer`` (group ``delegate_lens``):
the ``model-explorer`` exporter (:mod:`delegate_lens_model_explorer.plugin`) writes
``graph.json`` (:mod:`~delegate_lens_model_explorer.graph`) and node-data overlays
(:mod:`~delegate_lens_model_explorer.overlays`) into a folder.
"""

from __future__ import annotations

from delegate_lens_model_explorer.graph import build_graph_collection, delegate_calls
from delegate_lens_model_explorer.overlays import build_overlays
from delegate_lens_model_explorer.plugin import GRAPH_FILE, write_model_explorer

__all__ = [
    "GRAPH_FILE",
    "build_graph_collection",
    "build_overlays",
    "delegate_calls",
    "write_model_explorer",
]
__version__ = "0.1.0"
