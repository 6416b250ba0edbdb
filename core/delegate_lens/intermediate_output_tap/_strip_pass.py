"""After lowering: replace each tap node by its reducer's nodes, outside every delegate.

Run it after partitioning (``to_edge_transform_and_lower`` / ``to_backend``) and before
``to_executorch``: run before partitioning, the reducer's operators could be delegated.
"""

from __future__ import annotations

import torch.fx as fx
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputSpec, TensorArgument

from delegate_lens.errors import UsageError
from delegate_lens.intermediate_output_tap._reducers import get_reducer
from delegate_lens.intermediate_output_tap._tap_pass import find_tap_nodes

# the reducer's nodes share the tap's handle, as the nodes of a decomposed operator do
_COPIED_META = ("debug_handle", "stack_trace", "nn_module_stack")


def _programs(edge_manager: object) -> list[ExportedProgram]:
    if isinstance(edge_manager, ExportedProgram):
        return [edge_manager]
    methods = getattr(edge_manager, "methods", None)
    exported_program = getattr(edge_manager, "exported_program", None)
    if methods is None or not callable(exported_program):
        raise UsageError(
            "strip_taps_: expected an EdgeProgramManager (to_edge_transform_and_lower's "
            f"result) or an ExportedProgram, got {type(edge_manager).__name__}"
        )
    programs = [exported_program(name) for name in methods]
    unlowered = getattr(edge_manager, "unlowered_program", None)
    if callable(unlowered):
        for name in methods:
            program = unlowered(name)
            if all(program is not p for p in programs):
                programs.append(program)
    return programs


def strip_taps_(edge_manager: object) -> None:
    """Replace every tap node of every method of ``edge_manager`` (an
    :class:`~delegate_lens.EdgeProgramManager`, or one ``ExportedProgram``) by its reducer's
    nodes, in place. ``FULL_TENSOR`` taps add nothing: the tapped value itself becomes the
    output. A second call finds nothing to do.

    The new nodes share the tap node's debug handle. The manager's programs before
    lowering (what its ETRecord stores) are stripped the same way, so the ETRecord's graph
    has the operators the runtime runs and the Inspector links their rows.
    """
    for program in _programs(edge_manager):
        _strip(program)


def _fill_values(nodes: list[fx.Node], mode: FakeTensorMode) -> None:
    for node in nodes:
        if "val" in node.meta:
            continue
        args, kwargs = fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
        with mode:
            node.meta["val"] = node.target(*args, **kwargs)  # type: ignore[operator]


def _strip(program: ExportedProgram) -> None:
    gm = program.graph_module
    graph = gm.graph
    taps = find_tap_nodes(gm)
    if not taps:
        return
    for tap in taps:
        source, name = tap.args[0], tap.args[1]
        if not isinstance(source, fx.Node):
            raise UsageError(f"tap node {tap.name} does not read a node ({source!r})")
        reducer = get_reducer(str(name))
        before = set(graph.nodes)
        with graph.inserting_before(tap):
            value = reducer.emit(graph, source)
        added = [n for n in graph.nodes if n not in before]
        mode = detect_fake_mode([source.meta.get("val")]) or FakeTensorMode(
            allow_non_fake_inputs=True
        )
        _fill_values(added, mode)
        for node in added:
            for key in _COPIED_META:
                if key in tap.meta:
                    node.meta[key] = tap.meta[key]
        tap.replace_all_uses_with(value)
        graph.erase_node(tap)
    gm.recompile()
    _rename_outputs(program)


def _rename_outputs(program: ExportedProgram) -> None:
    """Point each tensor output spec at the node that now feeds that output."""
    outputs = program.graph_module.graph.output_node().args[0]
    specs = program.graph_signature.output_specs
    leaves = list(outputs) if isinstance(outputs, tuple | list) else [outputs]
    if len(leaves) != len(specs):
        raise UsageError(
            f"strip_taps_: the graph has {len(leaves)} outputs but its signature "
            f"{len(specs)}; the program was changed after tapping"
        )
    for i, (spec, node) in enumerate(zip(specs, leaves)):
        if (
            isinstance(node, fx.Node)
            and isinstance(spec.arg, TensorArgument)
            and spec.arg.name != node.name
        ):
            specs[i] = OutputSpec(spec.kind, TensorArgument(name=node.name), spec.target)
