"""Write the ETRecord of a lowered model (contract B, writer part); imports torch.

The managers come from the lowering flow (:mod:`delegate_lens.aot`), which sits above this
package: they are used by their attributes, never imported.

Entries, as the reference writes them (see ``docs/etrecord.md``):

* ``ETRECORD_V0`` — empty marker;
* ``edge_dialect_exported_program/<method>`` (+ ``_state_dict``, ``_constants``,
  ``_example_inputs``) — each method's edge program *before lowering* (every operator node
  and its handle visible), written by torch.export's serializer; torch's serializer drops
  ``node.meta["debug_handle"]``, so it is added to each node's ``metadata`` as decimal text
  next to ``stack_trace``, ``nn_module_stack``, ``torch_fn`` and ``from_node``;
* ``exported_program`` (+ artifacts) — the ATen program given to ``to_edge`` (or the
  ``exported_program`` argument), when there is one;
* ``debug_handle_map``, ``delegate_map``, ``instruction_id_to_num_outs_map`` — JSON keyed by
  method then instruction id (a single handle is written as an int, several as a list);
* ``export_graph_id`` — ``id()`` of the exported program's graph, the ``graph_id`` at the
  root of every node's ``from_node`` provenance.

Reference compatibility: torch 2.13 writes serializer schema 8.20, while the reference
toolchain reads its own copy of schema 5.4 and refuses newer documents. Unless asked not
to, each program document is written in the 5.4 shape when nothing is lost by it: the
fields 5.4 lacks are dropped (``torch_version``, ``guards_code``, the graph module's empty
``metadata`` / ``treespec_namedtuple_fields``, empty ``sym_float_values``, each node's
``is_hop_single_tensor_return``, each named argument's ``kind``, ``forward_arg_names``)
and ``as_optional_tensor`` arguments become ``as_tensor`` / ``as_none``; edge programs
name ATen targets in the reference's edge-dialect form; a non-finite float argument
(``masked_fill(mask, -inf)``), which torch writes as the string ``"-Infinity"``, is written
as the reference's serializer writes it, JSON's ``-Infinity`` / ``Infinity`` / ``NaN``
(the reference's deserializer hands a string on to the operator as it is). A document using
anything 5.4 cannot express (symbolic floats, complex values, guards, ...) is written as
torch made it. torch's own deserializer (and so :meth:`ETRecord.edge_dialect_program`)
reads both shapes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    from torch.export import ExportedProgram

    from delegate_lens.aot import EdgeProgramManager, ProgramManager
    from delegate_lens.etrecord._record import ETRecord


REFERENCE_SCHEMA = {"major": 5, "minor": 4}
_PROGRAM_MANAGER = ("methods", "debug_handle_map", "delegate_map", "instruction_id_to_num_outs_map")
_NEW_ARGUMENT_KINDS = frozenset(
    {
        "as_sym_float",
        "as_sym_floats",
        "as_complex",
        "as_nested_tensors",
        "as_int_lists",
        "as_string_to_argument",
        "as_float_lists",
    }
)


_ATEN_TARGET = "torch.ops.aten."
_EDGE_TARGET = "executorch.exir.dialects.edge.ops."


class _Unrepresentable(Exception):
    pass


def _downgrade_arguments(value: object) -> None:
    """Rewrite argument unions in place; raise _Unrepresentable on a 5.4-less kind."""
    if isinstance(value, dict):
        if "as_optional_tensor" in value and len(value) == 1:
            inner = value.pop("as_optional_tensor")
            if not isinstance(inner, dict) or len(inner) != 1:
                raise _Unrepresentable("as_optional_tensor")
            value.update(inner)
        if _NEW_ARGUMENT_KINDS.intersection(value):
            raise _Unrepresentable(sorted(_NEW_ARGUMENT_KINDS.intersection(value))[0])
        for item in value.values():
            _downgrade_arguments(item)
    elif isinstance(value, list):
        for item in value:
            _downgrade_arguments(item)


_NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
"""torch's spelling of a non-finite float (a string) -> the float."""


def _non_finite_floats(value: object) -> None:
    """Replace torch's non-finite float strings by floats, in place, where the schema has a
    float (``as_float``, each of ``as_floats``): JSON dumps them as ``-Infinity`` etc."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "as_float" and isinstance(item, str):
                value[key] = _NON_FINITE.get(item, item)
            elif key == "as_floats" and isinstance(item, list):
                value[key] = [_NON_FINITE.get(x, x) if isinstance(x, str) else x for x in item]
            else:
                _non_finite_floats(item)
    elif isinstance(value, list):
        for item in value:
            _non_finite_floats(item)


def _drop_empty(obj: dict[str, object], key: str) -> None:
    if obj.get(key):
        raise _Unrepresentable(key)
    obj.pop(key, None)


def reference_document(
    document: Mapping[str, object], *, edge_dialect: bool = False
) -> dict[str, Any] | None:
    """``document`` (a torch.export JSON program) in the reference's schema 5.4 shape, or
    ``None`` when it uses something 5.4 cannot express. ``document`` is not modified.

    ``edge_dialect``: also name ATen targets as the reference's edge programs do
    (``executorch.exir.dialects.edge.ops.aten.add.Tensor``), which is what makes the
    reference's tools report op types as ``aten.add.Tensor``; our reader (and its lazy torch
    deserialization) maps them back.
    """
    doc = json.loads(json.dumps(document))
    try:
        doc.pop("torch_version", None)
        _drop_empty(doc, "guards_code")
        doc.setdefault("dialect", "")
        gm = doc["graph_module"]
        _drop_empty(gm, "metadata")
        _drop_empty(gm, "treespec_namedtuple_fields")
        graph = gm["graph"]
        _drop_empty(graph, "sym_float_values")
        for node in graph["nodes"]:
            node.pop("is_hop_single_tensor_return", None)
            target = node.get("target")
            if edge_dialect and isinstance(target, str) and target.startswith(_ATEN_TARGET):
                node["target"] = _EDGE_TARGET + target[len("torch.ops.") :]
            for named in node.get("inputs", ()):
                named.pop("kind", None)
        for entry in gm.get("module_call_graph") or ():
            signature = entry.get("signature")
            if isinstance(signature, dict):
                signature.pop("forward_arg_names", None)
        for spec in gm.get("signature", {}).get("output_specs", ()):
            if "parameter_mutation" in spec:
                raise _Unrepresentable("parameter_mutation")
        _downgrade_arguments(gm)
        _non_finite_floats(gm)
    except (_Unrepresentable, KeyError, TypeError, AttributeError):
        return None
    doc["schema_version"] = dict(REFERENCE_SCHEMA)
    return doc


def _handles_json(handles: tuple[int, ...]) -> int | list[int]:
    return handles[0] if len(handles) == 1 else list(handles)


def program_entries(
    name: str, program: ExportedProgram, *, reference_compatible: bool = True
) -> dict[str, bytes]:
    """The four serializer artifacts of ``program`` under entry ``name`` (handles added;
    in the reference's schema shape when ``reference_compatible`` and nothing is lost)."""
    from torch._export.serde.serialize import serialize

    from delegate_lens.etrecord._entries import ARTIFACT_SUFFIXES
    from delegate_lens.etrecord._torch_io import quiet_torch

    with quiet_torch():
        artifact = serialize(program)
    handles = {
        node.name: node.meta["debug_handle"]
        for node in program.graph.nodes
        if isinstance(node.meta.get("debug_handle"), int)
    }
    document = json.loads(artifact.exported_program)
    if handles:
        for node in document["graph_module"]["graph"]["nodes"]:
            handle = handles.get(node.get("name"))
            if handle is None:
                continue
            old = node.get("metadata") or {}
            meta = {k: v for k, v in old.items() if k != "from_node"}
            meta["debug_handle"] = str(handle)
            if "from_node" in old:
                meta["from_node"] = old["from_node"]
            node["metadata"] = meta
    if reference_compatible:
        from delegate_lens.etrecord._entries import EDGE_PROGRAM_PREFIX

        edge = name.startswith(EDGE_PROGRAM_PREFIX + "/")
        document = reference_document(document, edge_dialect=edge) or document
    suffix_data = (artifact.state_dict, artifact.constants, artifact.example_inputs)
    out = {name: json.dumps(document).encode("utf-8")}
    for suffix, data in zip(ARTIFACT_SUFFIXES, suffix_data):
        out[name + suffix] = bytes(data)
    return out


def _aten_program(programs: Mapping[str, object]) -> Any:
    """The one ATen program an ETRecord stores, from ``{method: program}``: ``forward``'s
    (as the reference picks it), else the only one; None for several without ``forward``."""
    if "forward" in programs:
        return programs["forward"]
    if len(programs) == 1:
        return next(iter(programs.values()))
    return None


def build_etrecord(
    edge_manager: EdgeProgramManager,
    program_manager: ProgramManager,
    exported_program: ExportedProgram | Mapping[str, ExportedProgram] | None = None,
    *,
    reference_compatible: bool = True,
    representative_inputs: object = None,
) -> ETRecord:
    """The ETRecord of ``program_manager`` (made by ``edge_manager.to_program()``).

    :param exported_program: the ATen program before ``to_edge``, or a dict
        ``{method: program}`` (its ``forward`` is stored, or its only program); by default
        the program(s) ``to_edge`` was given, chosen the same way.
    :param reference_compatible: write program documents the reference toolchain's
        ``parse_etrecord`` reads (see the module docstring); ``False`` keeps torch's.
    :param representative_inputs: the inputs numeric debugging runs the graph on (a
        sequence of tensors / arrays / numbers), stored as the reference does
        (``representative_inputs``, ``torch.save`` of the list); by default the example
        inputs of the stored ATen program (when it has positional inputs only); ``False``
        stores none.
    """
    from delegate_lens.etrecord._entries import (
        DEBUG_HANDLE_MAP,
        DELEGATE_MAP,
        EDGE_PROGRAM_PREFIX,
        EXPORT_GRAPH_ID,
        EXPORTED_PROGRAM,
        MARKER,
        NUM_OUTS_MAP,
    )
    from delegate_lens.etrecord._maps import dumps_json
    from delegate_lens.etrecord._record import ETRecord

    # duck-typed: the ETRecord package sits below the lowering flow that makes these
    if not all(hasattr(edge_manager, a) for a in ("methods", "unlowered_program")):
        raise UsageError(
            "edge_manager must be the EdgeProgramManager from to_edge / "
            f"to_edge_transform_and_lower, not {type(edge_manager).__name__}"
        )
    if not all(hasattr(program_manager, a) for a in _PROGRAM_MANAGER):
        raise UsageError(
            "program_manager must be the ProgramManager from EdgeProgramManager.to_program(), "
            f"not {type(program_manager).__name__}"
        )
    missing = sorted(set(program_manager.methods) - set(edge_manager.methods))
    if missing:
        raise UsageError(
            f"the program has methods {missing} that the edge manager does not "
            f"(edge methods: {edge_manager.methods})"
        )
    entries: dict[str, bytes] = {MARKER: b""}
    if exported_program is None:
        exported_program = _aten_program(edge_manager.source_programs)
    elif isinstance(exported_program, Mapping):
        exported_program = _aten_program(exported_program)
    if exported_program is not None:
        from torch.export import ExportedProgram

        if not isinstance(exported_program, ExportedProgram):
            raise UsageError(
                "exported_program must be a torch.export.ExportedProgram or a dict "
                f"{{method: ExportedProgram}}, not {type(exported_program).__name__}"
            )
        entries.update(
            program_entries(
                EXPORTED_PROGRAM, exported_program, reference_compatible=reference_compatible
            )
        )
    for method in program_manager.methods:
        program = edge_manager.unlowered_program(method)
        written = program_entries(
            f"{EDGE_PROGRAM_PREFIX}/{method}", program, reference_compatible=reference_compatible
        )
        clash = sorted(set(written) & set(entries))
        if clash:  # e.g. methods "a" and "a_constants": one entry name for two things
            raise UsageError(
                f"method {method!r} cannot be stored: its entry {clash[0]!r} is already used "
                f"by another method (methods: {program_manager.methods})"
            )
        entries.update(written)
    debug_handle_map = {
        method: {str(i): _handles_json(h) for i, h in by_instruction.items()}
        for method, by_instruction in program_manager.debug_handle_map.items()
    }
    entries[DEBUG_HANDLE_MAP] = dumps_json(debug_handle_map)
    # dumps_json writes int keys as text and tuples as lists, as the reference does
    entries[DELEGATE_MAP] = dumps_json(program_manager.delegate_map)
    entries[NUM_OUTS_MAP] = dumps_json(program_manager.instruction_id_to_num_outs_map)
    if exported_program is not None:
        graph_id = id(exported_program.graph)
    else:
        first = edge_manager.unlowered_program(program_manager.methods[0])
        graph_id = id(first.graph)
    entries[EXPORT_GRAPH_ID] = str(graph_id).encode("ascii")
    inputs = _representative_inputs(representative_inputs, exported_program)
    if inputs is not None:
        from delegate_lens.etrecord._entries import REPRESENTATIVE_INPUTS
        from delegate_lens.etrecord._torch_io import encode_inputs

        entries[REPRESENTATIVE_INPUTS] = encode_inputs(inputs)
    record = ETRecord.from_entries(entries, origin="<generated ETRecord>")
    record._graph_map_given = False  # as the reference's flow: no graph_map until extras
    # the live programs, so that record.edge_dialect_program / .exported_program give back
    # the objects the record was made from (as the reference's record holds them)
    for method in program_manager.methods:
        record._torch_programs[f"{EDGE_PROGRAM_PREFIX}/{method}"] = edge_manager.unlowered_program(
            method
        )
    if exported_program is not None:
        record._torch_programs[EXPORTED_PROGRAM] = exported_program
    return record


def _representative_inputs(given: object, exported_program: object) -> list[Any] | None:
    if given is False:
        return None
    if given is not None:
        if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
            raise UsageError(
                "representative_inputs must be a sequence of inputs (tensors, arrays, "
                f"numbers), not {type(given).__name__}"
            )
        return list(given)
    example = getattr(exported_program, "example_inputs", None)
    if not example:
        return None
    args, kwargs = example
    return None if kwargs else list(args)
