"""The reference's module path ``executorch.devtools.inspector._inspector_utils``, for the
names code written for the reference imports from it: :func:`get_aot_debug_handle_to_op_name_mapping`,
:func:`find_op_names`, :func:`calculate_time_scale_factor`, :func:`is_inference_output_equal`,
:func:`convert_to_float_tensor` (comparators written for the reference import it), ``TimeScale``
and ``compare_results``.

A public module by reason (the reference's path; see ``docs/architecture.md``), though its
name starts with ``_`` as the reference's does. No torch at import: a torch graph is read
by its attributes, and our ETRecord's graphs are read without torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from delegate_lens.errors import UsageError
from delegate_lens.etrecord import ETRecord, GraphInfo
from delegate_lens.inspector._reference_utils import compare_results
from delegate_lens.inspector._timescale import TimeScale, units_per_second
from delegate_lens.inspector.numerical_comparator import DebugHandle

__all__ = [
    "DebugHandle",
    "TimeScale",
    "calculate_time_scale_factor",
    "compare_results",
    "convert_to_float_tensor",
    "find_op_names",
    "get_aot_debug_handle_to_op_name_mapping",
    "is_inference_output_equal",
]


def calculate_time_scale_factor(
    source_time_scale: TimeScale, target_time_scale: TimeScale
) -> float:
    """Units of ``target_time_scale`` per unit of ``source_time_scale`` divided the reference's
    way (units per second of the source over the target's; cycles count as seconds)."""
    return units_per_second(source_time_scale) / units_per_second(target_time_scale)


def find_op_names(
    target_debug_handle: DebugHandle, debug_handle_to_op_names: dict[DebugHandle, list[str]]
) -> list[str]:
    """The names of every entry of ``debug_handle_to_op_names`` whose handles all lie in
    ``target_debug_handle``, in the mapping's order."""
    wanted = set(target_debug_handle)
    return [
        name
        for handles, names in debug_handle_to_op_names.items()
        if set(handles) <= wanted
        for name in names
    ]


def is_inference_output_equal(output1: Any, output2: Any) -> bool:
    """Whether two inference outputs are equal: tensors (or lists of tensors, pairwise)
    by ``torch.equal``, anything else by ``==``."""
    if _is_tensor(output1) and _is_tensor(output2):
        import torch

        return bool(torch.equal(output1, output2))
    if isinstance(output1, list) and isinstance(output2, list):
        import torch

        return all(bool(torch.equal(a, b)) for a, b in zip(output1, output2))
    return bool(output1 == output2)


def convert_to_float_tensor(input_data: Any) -> Any:
    """``input_data`` (a scalar, a torch tensor or a numpy array) as a detached float64
    torch tensor on the CPU (torch imported here), NaN read as 0 (then infinities as the
    largest finite values: ``torch.nan_to_num``'s rule), as comparators written for the
    reference expect it. A sequence is refused (a :class:`~delegate_lens.errors.UsageError`:
    the reference takes none either), as is a value torch cannot convert."""
    import torch

    if isinstance(input_data, (str, bytes, list, tuple)):
        raise UsageError(
            f"convert_to_float_tensor takes a scalar or a tensor, not a {type(input_data).__name__}"
        )
    try:
        tensor = torch.as_tensor(input_data, dtype=torch.float64)
    except Exception as exc:
        raise UsageError(
            f"cannot convert a {type(input_data).__name__} to a tensor: {exc}"
        ) from None
    tensor = tensor.detach().cpu().double()
    if bool(torch.isnan(tensor).any()):
        tensor = torch.nan_to_num(tensor)
    return tensor


def _is_tensor(value: object) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "dtype")


def get_aot_debug_handle_to_op_name_mapping(graph_module: Any) -> dict[DebugHandle, list[str]]:
    """``{(debug_handle,): [node names]}``: the names of the graph's operator nodes by
    debug handle, in graph order, as the reference's function gives them (its
    ``calculate_numeric_gap`` names each row's ``aot_ops`` with it).

    An operator node is a ``call_function`` node with a ``debug_handle`` in its metadata
    whose name does not contain ``getitem``; a handle given as a list keys the tuple of it.

    :param graph_module: a ``torch.fx.GraphModule`` (the reference's argument, e.g.
        ``etrecord.edge_dialect_program.module()``), a ``torch.fx.Graph`` or an
        ``ExportedProgram``; or, without torch, one of our ETRecord's graphs
        (:class:`~delegate_lens.etrecord.GraphInfo`, e.g. ``record.graph("forward")``) or
        an :class:`~delegate_lens.etrecord.ETRecord` (its ``forward`` edge program).
    """
    if isinstance(graph_module, ETRecord):
        graph_module = graph_module.graph("forward")
    if isinstance(graph_module, GraphInfo):
        # a serialized graph's nodes are its call_function nodes
        pairs: Iterable[tuple[Any, str]] = (
            (node.debug_handle, node.name) for node in graph_module.nodes
        )
    else:
        graph = getattr(graph_module, "graph", graph_module)
        nodes = getattr(graph, "nodes", None)
        if nodes is None:
            raise UsageError(
                "get_aot_debug_handle_to_op_name_mapping needs a torch.fx.GraphModule, an "
                f"ExportedProgram or an ETRecord graph, not {type(graph_module).__name__}"
            )
        pairs = ((_handle(node), node.name) for node in nodes if node.op == "call_function")
    mapping: dict[DebugHandle, list[str]] = {}
    for handle, name in pairs:
        if handle is None or "getitem" in name:
            continue
        key = (handle,) if isinstance(handle, int) else tuple(handle)
        mapping.setdefault(key, []).append(name)
    return mapping


def _handle(node: Any) -> Any:
    """A node's debug handle; a node picking one output of another (``getitem``, which a
    graph read back from its serialized form has without metadata) has its producer's."""
    handle = node.meta.get("debug_handle")
    target = getattr(node, "target", None)
    if handle is None and getattr(target, "__name__", "") == "getitem" and node.args:
        producer = node.args[0]
        handle = getattr(producer, "meta", {}).get("debug_handle")
    return handle
