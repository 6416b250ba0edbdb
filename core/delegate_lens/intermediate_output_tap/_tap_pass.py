"""Insert taps: each selected node's value, through the tap operator, becomes one more user
output of the program. Outputs are only ever appended, so a tap's index in the flat outputs
holds from the tapped program through lowering, stripping and the runtime."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
import torch.fx as fx
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind, OutputSpec, TensorArgument

from delegate_lens.intermediate_output_tap._op import TAP_OP, is_tap_node
from delegate_lens.intermediate_output_tap._reducers import (
    STATS,
    StatReducer,
    get_reducer,
    register_reducer,
)
from delegate_lens.intermediate_output_tap._selectors import (
    NodeSelector,
    module_entries,
    select_all_call_function,
)
from delegate_lens.intermediate_output_tap._spec import TapSpec

TapRule = tuple[NodeSelector, "str | StatReducer"]
"""One ``(selector, reducer)`` pair; the reducer is a :class:`StatReducer` or its name."""

_PROVENANCE = ("stack_trace", "nn_module_stack", "from_node", "source_fn_stack")


def _rules(rules: Sequence[TapRule] | TapRule | None) -> list[tuple[NodeSelector, StatReducer]]:
    if rules is None:
        given: Sequence[TapRule] = [(select_all_call_function(), STATS)]
    elif isinstance(rules, tuple) and len(rules) == 2 and callable(rules[0]):
        given = [rules]  # one (selector, reducer) pair
    else:
        given = list(rules)
    if not given:
        raise ValueError(
            "tap_intermediate_outputs_: rules is empty; give (selector, reducer) pairs"
        )
    out: list[tuple[NodeSelector, StatReducer]] = []
    for i, rule in enumerate(given):
        if not (isinstance(rule, tuple | list) and len(rule) == 2 and callable(rule[0])):
            raise ValueError(
                f"tap_intermediate_outputs_: rule {i} is {rule!r}, expected a (selector, "
                "reducer) pair"
            )
        reducer = get_reducer(rule[1])
        register_reducer(reducer)
        out.append((rule[0], reducer))
    return out


def _tappable(node: fx.Node) -> bool:
    """A node whose value is one tensor (multi-output operators are tapped through the
    ``getitem`` nodes that pick their outputs)."""
    return node.op == "call_function" and isinstance(node.meta.get("val"), torch.Tensor)


def _fake_value(reducer: StatReducer, value: torch.Tensor) -> torch.Tensor | None:
    """The tap's value on the source's fake tensor (None if the reducer cannot say; a
    retrace fills it in then)."""
    try:
        out = reducer.eager(value)
    except Exception:  # a user reducer may need real data; the value is only a hint
        return None
    return out if isinstance(out, torch.Tensor) else None


def _module_of(node: fx.Node) -> tuple[str | None, str | None]:
    entries = module_entries(node)
    if not entries:
        return None, None
    _, path, cls = entries[-1]
    return path, cls


def _extend_out_spec(ep: ExportedProgram, count: int) -> None:
    """Let the root call signature's output structure hold ``count`` more leaves (a retrace,
    as ``to_edge`` does, unflattens the outputs with it)."""
    for entry in ep._module_call_graph:
        if entry.fqn != "" or entry.signature is None:
            continue
        signature = entry.signature
        old = pytree.tree_unflatten([None] * signature.out_spec.num_leaves, signature.out_spec)
        extra = (None,) * count
        new = (*old, *extra) if type(old) is tuple else (old, *extra)
        signature.out_spec = pytree.tree_structure(new)
        # unnamed: the retrace renames nodes; the verifier skips empty names
        signature.outputs.extend(TensorArgument(name="") for _ in range(count))
        return


def tap_intermediate_outputs_(
    ep: ExportedProgram,
    rules: Sequence[TapRule] | TapRule | None = None,
    *,
    max_taps: int | None = None,
    error_on_empty: bool = True,
) -> tuple[ExportedProgram, list[TapSpec]]:
    """Tap ``ep`` in place: every node a rule selects gets a tap whose value is appended to
    the program's outputs. Returns ``ep`` and the taps' :class:`TapSpec` list.

    :param rules: ``(selector, reducer)`` pairs, or one pair; each node takes the reducer of
        the first rule selecting it. Default: every ``call_function`` node with ``STATS``.
        Only nodes producing one tensor are tapped (tap a multi-output operator through
        its ``getitem`` nodes); tap nodes are never tapped again.
    :param max_taps: stop after this many taps (graph order).
    :param error_on_empty: when nothing is selected, raise ``ValueError`` (default) or warn
        and return ``(ep, [])``.
    :raises ValueError: empty or malformed rules, an unknown reducer name, nothing tapped.
    """
    chosen = _rules(rules)
    if max_taps is not None and max_taps < 0:
        raise ValueError(f"tap_intermediate_outputs_: max_taps must be >= 0, got {max_taps}")
    graph = ep.graph_module.graph
    output_node = graph.output_node()
    n_outputs = len(pytree.tree_leaves(output_node.args[0]))
    taps: list[fx.Node] = []
    specs: list[TapSpec] = []
    for node in list(graph.nodes):
        if max_taps is not None and len(taps) >= max_taps:
            break
        if not _tappable(node) or is_tap_node(node):
            continue
        reducer = next((red for select, red in chosen if select(node)), None)
        if reducer is None:
            continue
        with graph.inserting_after(node):
            tap = graph.call_function(TAP_OP, (node, reducer.name))
        for key in _PROVENANCE:
            if key in node.meta:
                tap.meta[key] = node.meta[key]
        tap.meta["val"] = _fake_value(reducer, node.meta["val"])
        path, cls = _module_of(node)
        specs.append(
            TapSpec(
                node_name=node.name,
                op_target=str(node.target),
                output_index=n_outputs + len(taps),
                reducer_name=reducer.name,
                fields=reducer.fields,
                stack_trace=node.meta.get("stack_trace"),
                module_path=path,
                module_class=cls,
            )
        )
        taps.append(tap)
    if not taps:
        message = (
            "tap_intermediate_outputs_: no rule selected any node; check the selectors "
            "(or pass error_on_empty=False to go on without taps)"
        )
        if error_on_empty:
            raise ValueError(message)
        warnings.warn(message, UserWarning, stacklevel=2)
        return ep, []
    old = output_node.args[0]
    leaves = list(old) if isinstance(old, tuple | list) else [old]
    output_node.args = (tuple(leaves + taps),)
    ep.graph_signature.output_specs.extend(
        OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(name=tap.name), None) for tap in taps
    )
    _extend_out_spec(ep, len(taps))
    ep.graph_module.recompile()
    return ep, specs


def find_tap_nodes(gm: fx.GraphModule) -> list[fx.Node]:
    """The tap nodes of a graph module, in graph order."""
    return [node for node in gm.graph.nodes if is_tap_node(node)]
