"""ETRecord: the ahead-of-time debug artifact, read without torch.

>>> from delegate_lens.etrecord import parse_etrecord
>>> record = parse_etrecord("model.etrecord")            # doctest: +SKIP
>>> graph = record.graph("forward")                      # doctest: +SKIP
>>> [n.op_type for n in graph.nodes_for_handles([1, 2])]  # doctest: +SKIP

See docs/etrecord.md. Importing this package never imports torch; only
``ETRecord.edge_dialect_program()``, ``ETRecord.exported_program`` and
:func:`generate_etrecord` do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from delegate_lens.etrecord.entries import (
    ARTIFACT_SUFFIXES,
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    EDGE_PROGRAM_PREFIX,
    EXPORT_GRAPH_ID,
    EXPORTED_PROGRAM,
    MARKER,
    NUM_OUTS_MAP,
    REFERENCE_OUTPUTS,
    REPRESENTATIVE_INPUTS,
)
from delegate_lens.etrecord.graph import GraphInfo, GraphNode, ModuleFrame, op_type_of
from delegate_lens.etrecord.loading import load_etrecord
from delegate_lens.etrecord.maps import DelegateEntry, Handles, dumps_json
from delegate_lens.etrecord.record import ETRecord, parse_etrecord

__all__ = [
    "ARTIFACT_SUFFIXES",
    "DEBUG_HANDLE_MAP",
    "DELEGATE_MAP",
    "EDGE_PROGRAM_PREFIX",
    "EXPORTED_PROGRAM",
    "EXPORT_GRAPH_ID",
    "MARKER",
    "NUM_OUTS_MAP",
    "REFERENCE_OUTPUTS",
    "REPRESENTATIVE_INPUTS",
    "DelegateEntry",
    "ETRecord",
    "GraphInfo",
    "GraphNode",
    "Handles",
    "ModuleFrame",
    "dumps_json",
    "generate_etrecord",
    "load_etrecord",
    "op_type_of",
    "parse_etrecord",
]


def generate_etrecord(
    path: str | os.PathLike[str],
    edge_manager: Any,
    program_manager: Any,
    exported_program: Any = None,
    representative_inputs: Any = None,
) -> Path:
    """Build the ETRecord of a lowered model and save it to ``path`` (atomically).

    ``edge_manager`` is the ``EdgeProgramManager`` (from ``to_edge`` or
    ``to_edge_transform_and_lower``), ``program_manager`` the ``ProgramManager`` from its
    ``to_program()``, ``exported_program`` optionally the ``torch.export`` program before
    lowering, or a dict ``{method: program}`` whose ``forward`` is stored (by default what
    ``to_edge`` was given, chosen the same way). ``representative_inputs`` are the inputs
    numeric debugging runs the graph on (``Inspector.calculate_numeric_gap``), stored as
    the reference stores them; by default the stored program's example inputs, ``False``
    for none. Imports torch.
    """
    from delegate_lens.aot.etrecord_writer import build_etrecord

    record = build_etrecord(
        edge_manager,
        program_manager,
        exported_program=exported_program,
        representative_inputs=representative_inputs,
    )
    return record.save(path)
