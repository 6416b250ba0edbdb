"""ETRecord: the ahead-of-time debug artifact, read without torch.

>>> from delegate_lens.etrecord import parse_etrecord
>>> record = parse_etrecord("model.etrecord")            # doctest: +SKIP
>>> graph = record.graph("forward")                      # doctest: +SKIP
>>> [n.op_type for n in graph.nodes_for_handles([1, 2])]  # doctest: +SKIP

See docs/etrecord.md. Importing this package never imports torch; only the live programs
(``ETRecord.edge_dialect_program``, ``.edge_program(method)``, ``.exported_program``,
``.graph_map``) and :func:`generate_etrecord` do. The reference's module
``executorch.devtools.etrecord`` maps to this one (see docs/migrating.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from delegate_lens.etrecord._entries import (
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
from delegate_lens.etrecord._graph import GraphInfo, GraphNode, ModuleFrame, op_type_of
from delegate_lens.etrecord._loading import load_etrecord
from delegate_lens.etrecord._maps import DelegateEntry, Handles, dumps_json, normalize_handles
from delegate_lens.etrecord._record import ETRecord, parse_etrecord
from delegate_lens.etrecord._reference_api import ETRecordStateError
from delegate_lens.etrecord._torch_io import encode_inputs
from delegate_lens.etrecord._writer import build_etrecord, program_entries

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
    "ETRecordStateError",
    "GraphInfo",
    "GraphNode",
    "Handles",
    "ModuleFrame",
    "build_etrecord",
    "dumps_json",
    "encode_inputs",
    "generate_etrecord",
    "load_etrecord",
    "normalize_handles",
    "op_type_of",
    "parse_etrecord",
    "program_entries",
]


def generate_etrecord(
    et_record: str | os.PathLike[str] | BinaryIO,
    edge_dialect_program: object,
    executorch_program: object,
    exported_program: object = None,
    extra_recorded_export_modules: Mapping[str, object] | None = None,
    *,
    representative_inputs: object = None,
) -> Path | None:
    """Build the ETRecord of a lowered model and save it to ``et_record`` (a path, written
    atomically and returned, or a binary file object) — the reference's arguments.

    ``edge_dialect_program`` is the ``EdgeProgramManager`` (from ``to_edge`` or
    ``to_edge_transform_and_lower``), ``executorch_program`` the ``ProgramManager`` from
    its ``to_program()`` / ``to_executorch()`` (or a ``BundledProgram`` made from it: its
    test cases then give the reference outputs and representative inputs),
    ``exported_program`` optionally the ``torch.export`` program before lowering, or a dict
    ``{method: program}`` whose ``forward`` is stored (by default what ``to_edge`` was
    given, chosen the same way). ``extra_recorded_export_modules`` adds programs to the
    record's ``graph_map`` (``{name: program or edge manager}``). ``representative_inputs``
    (ours) are the inputs numeric debugging runs the graph on (``calculate_numeric_gap``),
    stored as the reference stores them; by default the stored program's example inputs,
    ``False`` for none. Imports torch.
    """
    if _from_executorch(edge_dialect_program, executorch_program):  # the bridge writes it
        from delegate_lens._bridge import executorch_bridge

        bridge = executorch_bridge("generate_etrecord with ExecuTorch's managers")
        if extra_recorded_export_modules:
            from delegate_lens.errors import UsageError

            raise UsageError("extra_recorded_export_modules: not with ExecuTorch's managers")
        written: Path | None = bridge.generate_etrecord(
            et_record,
            edge_dialect_program,
            executorch_program,
            exported_program,
            representative_inputs=representative_inputs,
        )
        return written
    import importlib

    _writer = importlib.import_module(f"{__name__}._writer")  # at call time: tests replace it

    bundled = executorch_program if hasattr(executorch_program, "method_test_suites") else None
    manager = executorch_program
    if bundled is not None:
        manager = getattr(bundled, "executorch_program", None)
        if manager is None:
            from delegate_lens.errors import UsageError

            raise UsageError(
                "executorch_program is a BundledProgram made from program bytes; give the "
                "ProgramManager it was made from (or bundle the ProgramManager)"
            )
    record = _writer.build_etrecord(
        edge_dialect_program,
        manager,
        exported_program=exported_program,
        representative_inputs=representative_inputs,
    )
    if bundled is not None:
        record.update_reference_outputs(bundled)
        if representative_inputs is None:
            record.update_representative_inputs(bundled)
    if extra_recorded_export_modules is not None:
        record.add_extra_export_modules(extra_recorded_export_modules)
    return record.save(et_record)


def _from_executorch(*managers: object) -> bool:
    """Whether a manager is real ExecuTorch's (``executorch.exir``'s program managers)."""
    return any(type(m).__module__.startswith("executorch.") for m in managers)
