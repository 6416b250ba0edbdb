"""delegate-lens plugin: ETRecord graphs and Inspector measurements for Google Model Explorer.

Found by delegate-lens through its entry point ``model_explorer`` (group ``delegate_lens``):
the ``model-explorer`` exporter (:mod:`delegate_lens_model_explorer.plugin`) writes
``graph.json`` (:mod:`~delegate_lens_model_explorer.graph`) and node-data overlays
(:mod:`~delegate_lens_model_explorer.overlays`) into a folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time each loads on first use
    from delegate_lens_model_explorer.graph import build_graph_collection as build_graph_collection
    from delegate_lens_model_explorer.graph import delegate_calls as delegate_calls
    from delegate_lens_model_explorer.overlays import build_overlays as build_overlays
    from delegate_lens_model_explorer.plugin import GRAPH_FILE as GRAPH_FILE
    from delegate_lens_model_explorer.plugin import write_model_explorer as write_model_explorer

__all__ = [
    "GRAPH_FILE",
    "build_graph_collection",
    "build_overlays",
    "delegate_calls",
    "write_model_explorer",
]
__version__ = "0.1.0"

_HOMES = {
    "GRAPH_FILE": "plugin",
    "write_model_explorer": "plugin",
    "build_graph_collection": "graph",
    "delegate_calls": "graph",
    "build_overlays": "overlays",
}


def __getattr__(name: str) -> object:
    # lazy: delegate-lens imports the plugin module at start-up, which must stay cheap
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
