"""Lower tagged partitions of an edge program to delegate backends.

Each partition (the nodes a partitioner tagged with one ``node.meta["delegation_tag"]``)
becomes its own ``ExportedProgram`` whose nodes keep their debug handles. It is handed to
the ``dl_preprocess`` hook, its Debug Handle Map goes through ``dl_delegate_mapping``, and
the partition is replaced in the outer graph by one ``executorch_call_delegate`` node (the
higher-order operator torch ships for this) holding a :class:`LoweredBackendModule`,
followed by one ``getitem`` per partition output.

Parameters, buffers and constants used by a partition move into the partition's program
(its ``state_dict``/``constants``): the backend owns them, as in ExecuTorch. They stay in
the outer program only while some node outside a partition still uses them.
"""

from __future__ import annotations

import copy
import heapq
import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree
from torch._higher_order_ops.executorch_call_delegate import executorch_call_delegate
from torch.export import ExportedProgram

if TYPE_CHECKING:
    import pluggy
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)

from delegate_lens.backend import (
    DELEGATION_TAG,
    CompileSpec,
    DelegateMap,
    DelegationSpec,
    PreprocessResult,
    as_int,
    is_iterable,
    partition_handles,
)
from delegate_lens.errors import MappingError, PluginError, UsageError


class LoweredBackendModule(torch.nn.Module):
    """One lowered partition (the class name is the one torch.export's verifier knows).

    :ivar backend_id: the backend that compiled it.
    :ivar processed_bytes: the backend's blob.
    :ivar compile_specs: the :class:`delegate_lens.CompileSpec` list it was made with.
    :ivar debug_handle_map: the backend's Debug Handle Map (``{identifier: handles}``) or
        ``None``.
    :ivar original_module: the partition as an ``ExportedProgram`` (nodes keep handles).
    :ivar tag: the partition's delegation tag.
    """

    def __init__(
        self,
        backend_id: str,
        processed_bytes: bytes,
        compile_specs: list[CompileSpec],
        debug_handle_map: DelegateMap | None,
        original_module: ExportedProgram,
        tag: str,
    ) -> None:
        super().__init__()
        self.backend_id = backend_id
        self.processed_bytes = processed_bytes
        self.compile_specs = compile_specs
        self.debug_handle_map = debug_handle_map
        self.original_module = original_module
        self.tag = tag

    @property
    def debug_handles(self) -> tuple[int, ...]:
        """Every debug handle of the partition, sorted."""
        return tuple(sorted(partition_handles(self.original_module)))

    def extra_repr(self) -> str:
        return (
            f"backend_id={self.backend_id!r}, tag={self.tag!r}, {len(self.processed_bytes)} bytes"
        )


def is_delegate_call(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is executorch_call_delegate


def lowered_module_of(node: torch.fx.Node) -> LoweredBackendModule:
    """The lowered module a delegate call node calls."""
    attr = node.args[0]
    if not isinstance(attr, torch.fx.Node) or attr.op != "get_attr":
        raise UsageError(f"delegate call {node.name} has no lowered module argument")
    module: Any = node.graph.owning_module
    for part in str(attr.target).split("."):
        module = getattr(module, part)
    if not isinstance(module, LoweredBackendModule):
        raise UsageError(f"delegate call {node.name}: {attr.target} is not a lowered module")
    return module


# --------------------------------------------------------------------------- partitions


def _collect_partitions(graph: torch.fx.Graph) -> dict[str, list[torch.fx.Node]]:
    parts: dict[str, list[torch.fx.Node]] = {}
    for node in graph.nodes:
        tag = node.meta.get(DELEGATION_TAG)
        if tag is None or node.op != "call_function":
            continue
        if node.target is operator.getitem:
            continue  # follows its producer
        if is_delegate_call(node):
            raise UsageError(f"node {node.name} is already a delegate call; cannot tag it {tag!r}")
        parts.setdefault(str(tag), []).append(node)
    # getitems of a partition node belong to the partition; keep graph order
    position = {node: i for i, node in enumerate(graph.nodes)}
    for nodes in parts.values():
        members = set(nodes)
        extra = [
            user
            for node in nodes
            for user in node.users
            if user.target is operator.getitem and user not in members
        ]
        nodes.extend(extra)
        nodes.sort(key=position.__getitem__)
    return parts


def _stable_toposort(graph: torch.fx.Graph, what: str) -> None:
    """Reorder ``graph`` topologically, keeping the current order where it is valid."""
    nodes = list(graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    missing = {node: len(node.all_input_nodes) for node in nodes}
    ready = [index[n] for n, k in missing.items() if k == 0]
    heapq.heapify(ready)
    order: list[torch.fx.Node] = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for user in node.users:
            missing[user] -= 1
            if missing[user] == 0:
                heapq.heappush(ready, index[user])
    if len(order) != len(nodes):
        raise UsageError(
            f"{what} is not a valid partition: nodes outside it both use its results and "
            "feed it (merging it into one delegate call would make a cycle)"
        )
    previous = graph._root  # the sentinel before the first node
    for node in order:
        if previous.next is not node:
            previous.append(node)
        previous = node
    graph.lint()


def placeholder_specs(ep: ExportedProgram) -> dict[torch.fx.Node, InputSpec]:
    """Each placeholder's input spec, matched by position (names can drift: a copied graph
    renames a placeholder such as ``input`` to ``input_1``); tensor args take the node's name.
    """
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    specs = list(ep.graph_signature.input_specs)
    if len(placeholders) != len(specs):
        raise UsageError(
            f"the program has {len(placeholders)} placeholders but {len(specs)} input specs"
        )
    out: dict[torch.fx.Node, InputSpec] = {}
    for node, spec in zip(placeholders, specs):
        if isinstance(spec.arg, TensorArgument) and spec.arg.name != node.name:
            spec = InputSpec(spec.kind, TensorArgument(node.name), spec.target, spec.persistent)
        out[node] = spec
    return out


def state_of(ep: ExportedProgram, spec: InputSpec) -> tuple[str, object]:
    """``("state_dict" | "constants", tensor)`` for a parameter/buffer/constant input."""
    target = str(spec.target)
    if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and target in ep.state_dict:
        return "state_dict", ep.state_dict[target]
    if target in ep.constants:
        return "constants", ep.constants[target]
    raise UsageError(f"input {spec.arg.name} ({target}) has no stored value")


def _partition_program(
    ep: ExportedProgram,
    tag: str,
    nodes: list[torch.fx.Node],
    inputs: list[torch.fx.Node],
    outputs: list[torch.fx.Node],
) -> tuple[ExportedProgram, list[torch.fx.Node]]:
    """The partition as its own ExportedProgram; returns it and its activation inputs."""
    specs = placeholder_specs(ep)
    state_inputs = [n for n in inputs if n in specs and specs[n].kind != InputKind.USER_INPUT]
    act_inputs = [n for n in inputs if n not in state_inputs]
    for node in act_inputs:
        if not isinstance(node.meta.get("val"), torch.Tensor):
            raise UsageError(
                f"partition {tag!r}: input {node.name} is not a tensor; only tensors may "
                "cross a delegate boundary"
            )
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    input_specs: list[InputSpec] = []
    state_dict: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    for node in state_inputs:
        placeholder = graph.placeholder(node.name)
        placeholder.meta = copy.copy(node.meta)
        env[node] = placeholder
        spec = specs[node]
        input_specs.append(
            InputSpec(spec.kind, TensorArgument(placeholder.name), spec.target, spec.persistent)
        )
        where, value = state_of(ep, spec)
        (state_dict if where == "state_dict" else constants)[str(spec.target)] = value
    for node in act_inputs:
        placeholder = graph.placeholder(node.name)
        placeholder.meta = {"val": node.meta["val"]}
        for key in ("tensor_meta", "stack_trace", "nn_module_stack"):
            if key in node.meta and node.op == "placeholder":
                placeholder.meta[key] = node.meta[key]
        env[node] = placeholder
        input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(placeholder.name), None))
    for node in nodes:
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in outputs))
    output_specs = [
        OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(env[n].name), None) for n in outputs
    ]
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    in_spec = pytree.tree_flatten((tuple(range(len(act_inputs))), {}))[1]
    out_spec = pytree.tree_flatten(tuple(range(len(outputs))))[1]
    program = ExportedProgram(
        root=gm,
        graph=gm.graph,
        graph_signature=ExportGraphSignature(input_specs, output_specs),
        state_dict=state_dict,
        range_constraints={},
        module_call_graph=[
            ModuleCallEntry(
                "", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec, out_spec=out_spec)
            )
        ],
        constants=constants,
        verifiers=list(ep.verifiers),
    )
    return program, act_inputs


def _boundary(
    graph: torch.fx.Graph, nodes: list[torch.fx.Node]
) -> tuple[list[torch.fx.Node], list[torch.fx.Node]]:
    members = set(nodes)
    order = {node: i for i, node in enumerate(graph.nodes)}
    inputs = {arg for node in nodes for arg in node.all_input_nodes if arg not in members}
    outputs = {
        node
        for node in nodes
        if any(user not in members for user in node.users)
        and not (
            node.target is not operator.getitem
            and isinstance(node.meta.get("val"), (tuple, list))
            and all(user.target is operator.getitem for user in node.users)
        )
    }
    for node in outputs:
        if not isinstance(node.meta.get("val"), torch.Tensor):
            raise UsageError(
                f"partition node {node.name} is used outside its partition but is not a "
                "tensor; only tensors may cross a delegate boundary"
            )
    return sorted(inputs, key=order.__getitem__), sorted(outputs, key=order.__getitem__)


def _outside(members: set[torch.fx.Node]) -> Callable[[torch.fx.Node], bool]:
    """A ``replace_all_uses_with`` filter: only users outside ``members``."""

    def keep(user: torch.fx.Node) -> bool:
        return user not in members

    return keep


def _normalize_map(backend_id: str, result: PreprocessResult) -> DelegateMap | None:
    """The backend's map with plain-int handles (numpy integers converted), each entry a
    sorted tuple without duplicates; anything that is not a debug handle is a MappingError
    here rather than a broken ETRecord later."""
    raw = result.debug_handle_map
    if raw is None:
        return None
    out: DelegateMap = {}
    for identifier, handles in raw.items():
        if not isinstance(identifier, str):
            number = as_int(identifier)
            identifier = number if number is not None else identifier  # validator rejects
        single = as_int(handles)
        if single is not None:
            out[identifier] = (single,)
            continue
        if not is_iterable(handles):
            raise MappingError(
                f"backend {backend_id!r}: delegate debug identifier {identifier!r} maps to "
                f"{handles!r}, expected debug handles"
            )
        found: set[int] = set()
        for handle in handles:
            value = as_int(handle)
            if value is None:
                raise MappingError(
                    f"backend {backend_id!r}: delegate debug identifier {identifier!r}: "
                    f"debug handle {handle!r} is not an int"
                )
            found.add(value)
        out[identifier] = tuple(sorted(found))
    return out


def _preprocess(
    pm: pluggy.PluginManager | None, spec: DelegationSpec, program: ExportedProgram
) -> tuple[PreprocessResult, DelegateMap | None]:
    specs = list(spec.compile_specs)
    from delegate_lens import hooks

    result = hooks.preprocess(spec.backend_id, program, specs, pm=pm)
    if result is None:
        raise PluginError(
            f"no plugin preprocesses backend {spec.backend_id!r} (no dl_preprocess "
            "implementation returned a result; is the backend's plugin installed?)"
        )
    if not isinstance(result, PreprocessResult):
        raise PluginError(
            f"backend {spec.backend_id!r}: dl_preprocess returned {type(result).__name__}, "
            "expected a delegate_lens.PreprocessResult"
        )
    mapping = _normalize_map(spec.backend_id, result)
    hooks.delegate_mapping(spec.backend_id, program, mapping, pm=pm)
    return result, mapping


def lower_partitions(
    ep: ExportedProgram,
    partition_tags: Mapping[str, DelegationSpec],
    pm: pluggy.PluginManager | None,
) -> tuple[ExportedProgram, list[LoweredBackendModule]]:
    """Lower every tagged partition of ``ep`` (a copy the caller owns; it is modified)."""
    gm = ep.graph_module
    graph = gm.graph
    parts = _collect_partitions(graph)
    unknown = sorted(set(parts) - set(partition_tags))
    if unknown:
        raise UsageError(
            f"nodes are tagged {unknown} but the partition result has no DelegationSpec for "
            f"them (known tags: {sorted(partition_tags)})"
        )
    lowered: list[LoweredBackendModule] = []
    for tag, spec in partition_tags.items():
        nodes = parts.get(tag)
        if not nodes:
            continue
        inputs, outputs = _boundary(graph, nodes)
        program, act_inputs = _partition_program(ep, tag, nodes, inputs, outputs)
        result, mapping = _preprocess(pm, spec, program)
        module = LoweredBackendModule(
            spec.backend_id,
            bytes(result.processed_bytes),
            list(spec.compile_specs),
            mapping,
            program,
            tag,
        )
        index = 0
        while hasattr(gm, f"lowered_module_{index}"):
            index += 1
        name = f"lowered_module_{index}"
        gm.add_module(name, module)
        position = {node: i for i, node in enumerate(graph.nodes)}
        members = set(nodes)
        last = max(nodes, key=position.__getitem__)
        with graph.inserting_after(last):
            attr = graph.get_attr(name)
        with graph.inserting_after(attr):
            call = graph.call_function(executorch_call_delegate, (attr, *act_inputs))
        call.meta["val"] = tuple(n.meta["val"] for n in outputs)
        call.meta["debug_handles"] = module.debug_handles
        cursor = call
        for k, out in enumerate(outputs):
            with graph.inserting_after(cursor):
                item = graph.call_function(operator.getitem, (call, k))
            item.meta["val"] = out.meta["val"]
            for key in ("tensor_meta",):
                if key in out.meta:
                    item.meta[key] = out.meta[key]
            out.replace_all_uses_with(item, delete_user_cb=_outside(members))
            cursor = item
        for node in reversed(nodes):
            graph.erase_node(node)
        _stable_toposort(graph, f"partition {tag!r}")
        lowered.append(module)
    return _rebuild(ep), lowered


def _rebuild(ep: ExportedProgram) -> ExportedProgram:
    """A new ExportedProgram for the rewritten graph: drop unused state inputs."""
    gm = ep.graph_module
    graph = gm.graph
    specs = placeholder_specs(ep)
    for node, spec in list(specs.items()):
        if node.users or spec.kind == InputKind.USER_INPUT:
            continue
        mutated = any(
            o.kind == OutputKind.BUFFER_MUTATION and o.target == spec.target
            for o in ep.graph_signature.output_specs
        )
        if mutated:
            continue
        del specs[node]
        graph.erase_node(node)
    gm.recompile()
    output_node = graph.output_node()
    out_args = pytree.tree_leaves(output_node.args[0])
    output_specs: list[OutputSpec] = []
    for out_spec, arg in zip(ep.graph_signature.output_specs, out_args):
        if isinstance(out_spec.arg, TensorArgument) and isinstance(arg, torch.fx.Node):
            out_spec = OutputSpec(out_spec.kind, TensorArgument(arg.name), out_spec.target)
        output_specs.append(out_spec)
    input_specs = list(specs.values())
    kept_targets = {str(s.target) for s in input_specs if s.target is not None}
    state_dict = {k: v for k, v in ep.state_dict.items() if k in kept_targets}
    constants = {k: v for k, v in ep.constants.items() if k in kept_targets}
    return ExportedProgram(
        root=gm,
        graph=gm.graph,
        graph_signature=ExportGraphSignature(input_specs, output_specs),
        state_dict=state_dict,
        range_constraints=ep.range_constraints,
        module_call_graph=copy.deepcopy(ep.module_call_graph),
        example_inputs=ep.example_inputs,
        constants=constants,
        verifiers=list(ep.verifiers),
    )


def lowered_modules(graph_module: torch.fx.GraphModule) -> list[LoweredBackendModule]:
    return [lowered_module_of(n) for n in graph_module.graph.nodes if is_delegate_call(n)]
