"""Our ETRecord writer given real ExecuTorch managers (issue 23, item 5).

``generate_etrecord(path, edge_manager, executorch_manager)`` takes the real
``EdgeProgramManager`` (from ``to_edge`` before lowering, or from
``to_edge_transform_and_lower(..., generate_etrecord=True)``, which keeps the program as it
was before lowering) and the real ``ExecutorchProgramManager`` from ``to_executorch()``,
and writes the ETRecord with delegate-lens's writer: every edge program in the reference's
schema shape, its debug handles, the program's three maps. Both Inspectors read it.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable

from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    from torch.export import ExportedProgram

__all__ = ["EdgeManager", "ProgramManager", "aten_targets", "aten_view", "generate_etrecord"]


@runtime_checkable
class EdgeManager(Protocol):
    """What is read of ExecuTorch's ``EdgeProgramManager``: a method's program."""

    def exported_program(self, method_name: str = ...) -> ExportedProgram: ...


@runtime_checkable
class ProgramManager(Protocol):
    """What is read of ExecuTorch's ``ExecutorchProgramManager``: its methods and maps."""

    @property
    def methods(self) -> Iterable[str]: ...

    @property
    def debug_handle_map(self) -> Mapping[str, Mapping[int, int | Sequence[int]]]: ...

    @property
    def delegate_map(self) -> Mapping[str, Mapping[int, object]]: ...

    @property
    def instruction_id_to_num_outs_map(self) -> Mapping[str, Mapping[int, int]]: ...


def aten_view(program: ExportedProgram) -> ExportedProgram:
    """A copy of a real edge program whose edge-dialect targets are the ATen operators they
    wrap (torch's serializer knows those; the writer names them in the edge form again)."""
    from torch._export.verifier import Verifier

    view = copy.deepcopy(program)
    view._verifiers = [Verifier]  # ATen now: torch's own verifier, not the edge dialect's
    for node in view.graph.nodes:
        inner = getattr(node.target, "_op", None)
        if node.op == "call_function" and inner is not None:
            node.target = inner
    view.graph_module.recompile()
    return view


@contextlib.contextmanager
def aten_targets(program: ExportedProgram) -> Iterator[ExportedProgram]:
    """Inside: ``program``'s edge-dialect targets are the ATen operators they wrap (for
    code written against ATen graphs, e.g. a delegate-lens partitioner); put back after.
    In place, as partitioning must tag the program itself (a copy of a program holding
    fake tensors cannot be made)."""
    swapped = []
    for node in program.graph.nodes:
        inner = getattr(node.target, "_op", None)
        if node.op == "call_function" and inner is not None:
            swapped.append((node, node.target))
            node.target = inner
    try:
        yield program
    finally:
        for node, target in swapped:
            node.target = target


def _has_delegates(program: ExportedProgram) -> bool:
    return any(
        node.op == "call_function" and "call_delegate" in str(node.target)
        for node in program.graph.nodes
    )


def _unlowered(edge_manager: EdgeManager, method: str) -> ExportedProgram:
    program = edge_manager.exported_program(method)
    if not _has_delegates(program):
        return program
    kept = getattr(edge_manager, "_etrecord", None)  # to_edge_transform_and_lower's copy
    before = getattr(kept, "edge_dialect_program", None)
    if isinstance(before, Mapping):
        before = before.get(method)
    if before is None or (method != "forward" and not isinstance(before, Mapping)):
        raise UsageError(
            f"method {method!r} of the edge manager is already lowered: give the "
            "EdgeProgramManager from to_edge() before to_backend(), or lower with "
            "to_edge_transform_and_lower(..., generate_etrecord=True)"
        )
    return before


_TORCH_OPS, _EDGE_OPS = "torch.ops.", "executorch.exir.dialects.edge.ops."


def _edge_targets(document: bytes) -> bytes:
    """Every operator namespace in the edge form, as the reference writes real edge programs
    (the writer does it for ``aten``; real programs also hold e.g. ``dim_order_ops``)."""
    import json

    doc = json.loads(document)
    for node in doc["graph_module"]["graph"]["nodes"]:
        target = node.get("target")
        if isinstance(target, str) and target.startswith(_TORCH_OPS):
            node["target"] = _EDGE_OPS + target[len(_TORCH_OPS) :]
    return json.dumps(doc).encode("utf-8")


def _handles_json(handles: int | Sequence[int]) -> int | list[int]:
    items = [handles] if isinstance(handles, int) else list(handles)
    return items[0] if len(items) == 1 else items


def _not_a_manager(name: str, value: object) -> str:
    return f"{name} is a {type(value).__name__}, not a real ExecuTorch manager"


def _exported(given: object, edge_manager: EdgeManager) -> ExportedProgram | None:
    """The ATen program to store: ``given`` (or a dict's ``forward``), by default the one
    ``to_edge_transform_and_lower(..., generate_etrecord=True)`` kept, if any."""
    from torch.export import ExportedProgram

    if given is None:  # ExecuTorch keeps it on a private attribute of the manager
        given = getattr(getattr(edge_manager, "_etrecord", None), "exported_program", None)
    if isinstance(given, Mapping):
        given = given.get("forward")
    if given is None or isinstance(given, ExportedProgram):
        return given
    raise UsageError(f"exported_program is a {type(given).__name__}, not an ExportedProgram")


def _inputs(given: object, exported: ExportedProgram | None) -> list[object] | None:
    """The representative inputs to store: ``given`` (``False``: none), by default the ATen
    program's example inputs (none when it has keyword inputs)."""
    if given is None and exported is not None:
        args, kwargs = exported.example_inputs or ((), {})
        return None if kwargs or not args else list(args)
    if given is None or given is False:
        return None
    if not isinstance(given, Iterable):
        raise UsageError(f"representative_inputs is a {type(given).__name__}, not a sequence")
    return list(given)


def generate_etrecord(
    et_record: str | os.PathLike[str] | BinaryIO,
    edge_dialect_program: object,
    executorch_program: object,
    exported_program: object = None,
    *,
    representative_inputs: object = None,
) -> Path | None:
    """Write the ETRecord of a model lowered by real ExecuTorch with delegate-lens's writer.

    :param edge_dialect_program: the real ``EdgeProgramManager``.
    :param executorch_program: the real ``ExecutorchProgramManager`` it made.
    :param exported_program: the ATen program given to lowering (by default the one
        ``to_edge_transform_and_lower(..., generate_etrecord=True)`` kept, if any).
    :param representative_inputs: inputs stored for numeric debugging (default: the
        ATen program's example inputs; ``False``: none).
    """
    from delegate_lens.etrecord import (
        DEBUG_HANDLE_MAP,
        DELEGATE_MAP,
        EDGE_PROGRAM_PREFIX,
        EXPORT_GRAPH_ID,
        EXPORTED_PROGRAM,
        MARKER,
        NUM_OUTS_MAP,
        REPRESENTATIVE_INPUTS,
        ETRecord,
        dumps_json,
        program_entries,
    )

    if not isinstance(edge_dialect_program, EdgeManager):
        raise UsageError(_not_a_manager("edge_dialect_program", edge_dialect_program))
    if not isinstance(executorch_program, ProgramManager):
        raise UsageError(_not_a_manager("executorch_program", executorch_program))
    methods = list(executorch_program.methods)
    entries: dict[str, bytes] = {MARKER: b""}
    exported = _exported(exported_program, edge_dialect_program)
    if exported is not None:
        entries.update(program_entries(EXPORTED_PROGRAM, exported))
    if not methods:
        raise UsageError("executorch_program has no methods")
    first: ExportedProgram | None = None
    for method in methods:
        program = aten_view(_unlowered(edge_dialect_program, method))
        first = first if first is not None else program
        name = f"{EDGE_PROGRAM_PREFIX}/{method}"
        written = program_entries(name, program)
        written[name] = _edge_targets(written[name])
        entries.update(written)
    entries[DEBUG_HANDLE_MAP] = dumps_json(
        {
            method: {str(i): _handles_json(h) for i, h in by_id.items()}
            for method, by_id in executorch_program.debug_handle_map.items()
        }
    )
    entries[DELEGATE_MAP] = dumps_json(executorch_program.delegate_map)
    entries[NUM_OUTS_MAP] = dumps_json(executorch_program.instruction_id_to_num_outs_map)
    stored = first if exported is None else exported
    if stored is not None:  # (always: there is a method)
        entries[EXPORT_GRAPH_ID] = str(id(stored.graph)).encode("ascii")
    inputs = _inputs(representative_inputs, exported)
    if inputs is not None:
        from delegate_lens.etrecord import encode_inputs

        entries[REPRESENTATIVE_INPUTS] = encode_inputs(inputs)
    record = ETRecord.from_entries(entries, origin="<generated ETRecord>")
    return record.save(et_record)
