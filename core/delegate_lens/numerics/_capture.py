"""Reference intermediate outputs: run the ETRecord's graph on its representative inputs.

The graph is the ATen exported program when the ETRecord stores one and every debug
handle of the edge program can be carried back to it through the nodes' ``from_node``
provenance (as the reference does); otherwise the edge program of ``method``. A
``torch.fx.Interpreter`` runs it and records the output of every ``call_function`` node
that has a debug handle (``getitem`` excepted), keyed by ``(handle,)``, as numpy arrays.

Imports torch: the one-off ahead-of-time step of numeric debugging. The result is an
:class:`~delegate_lens.numerics.AotOutputs`, cached beside the ETRecord on
request, which the Inspector compares without torch.
"""

from __future__ import annotations

import hashlib
import logging
import operator
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import (
    DelegateLensWarning,
    ETRecordFormatError,
    InspectorError,
    NumericGapUsageError,
)
from delegate_lens.etrecord import REPRESENTATIVE_INPUTS, GraphInfo, GraphNode
from delegate_lens.etrecord._internal import to_torch
from delegate_lens.numerics._aot_outputs import CACHE_SUFFIX, AotOutputs

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import torch
    from torch.export import ExportedProgram

    from delegate_lens.etrecord import ETRecord

log = logging.getLogger(__name__)


def _ancestor_ids(provenance: object) -> list[str]:
    """``name.graph_id`` of a node's provenance chain, nearest first (``from_node`` JSON)."""
    out: list[str] = []
    chain = provenance
    while isinstance(chain, list) and chain:
        source = chain[-1]
        if not isinstance(source, dict):
            break
        out.append(f"{source.get('name')}.{source.get('graph_id')}")
        chain = source.get("from_node")
    return out


def aten_debug_handles(
    record: ETRecord, method: str = "forward", *, validate: bool = True
) -> dict[str, int] | None:
    """``{ATen node name: handle}`` carried back from ``method``'s edge program, or None
    when the ETRecord has no ATen program or (with ``validate``) some edge handle has no
    ATen node (torch-free)."""
    aten = record.exported_program_graph()
    graph_id = record.export_graph_id
    if aten is None or graph_id is None:
        return None
    edge: GraphInfo = record.graph(method)
    ancestors: dict[str, int] = {}
    for node in edge.nodes:
        if node.debug_handle is None:
            continue
        for ident in _ancestor_ids(node.from_node):
            ancestors.setdefault(ident, node.debug_handle)
    handles: dict[str, int] = {}
    for node in aten.nodes:
        found = ancestors.get(f"{node.name}.{graph_id}")
        if found is None:
            found = next(
                (ancestors[a] for a in _ancestor_ids(node.from_node) if a in ancestors), None
            )
        if found is not None:
            handles[node.name] = found
    if not handles or (validate and not set(edge.handles) <= set(handles.values())):
        return None
    return handles


def load_inputs(path: str | os.PathLike[str]) -> list[Any]:
    """Inputs from a file: ``.npy`` (one array), ``.npz`` (arrays in file order) or a
    ``torch.save`` file of a list of tensors (``.pt``). InspectorError naming the file."""
    import io

    import numpy as np

    from delegate_lens.fileio import read_input

    data = read_input(path, "inputs file")
    name = os.fspath(path)
    try:
        if name.endswith(".npy"):
            return [np.load(io.BytesIO(data), allow_pickle=False)]
        if name.endswith(".npz"):
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                return [npz[key] for key in npz.files]
        import torch

        loaded = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:
        raise InspectorError(f"{name}: cannot read inputs: {exc}") from None
    return _input_list(loaded, name)


def _input_list(value: object, origin: str) -> list[Any]:
    """One method's inputs: a list of tensors/numbers (a list of such lists: the first)."""
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        return [value]
    if value and all(isinstance(v, (list, tuple)) for v in value):
        return list(value[0])
    return value


def _default_cache(record: ETRecord) -> Path:
    origin = str(record.origin)
    if origin.startswith("<"):
        raise InspectorError(
            "cache=True needs an ETRecord read from a file (to write the cache beside it); "
            "pass cache=PATH instead"
        )
    return Path(origin + CACHE_SUFFIX)


def _key(record: ETRecord, graph: str, inputs: Sequence[object]) -> str:
    digest = hashlib.sha256(graph.encode())
    for name in record.entry_names:
        digest.update(f"{name}:{record.entry_size(name)};".encode())
    for value in inputs:
        tensor = to_torch(value)
        digest.update(repr(getattr(tensor, "shape", tensor)).encode())
        if hasattr(tensor, "numpy"):
            digest.update(tensor.contiguous().numpy().tobytes())
    return digest.hexdigest()


_OWN_GRAPHS = (
    None,
    "exported_program",
    "edge_dialect_exported_program",
    "edge_dialect_graph_module",
)
"""The reference graphs every ETRecord names; any other is a name in its graph_map."""


def _graph_map_name(record: ETRecord, reference_graph: str) -> str:
    """The graph_map entry ``reference_graph`` names (``"<name>"`` meaning
    ``"<name>/forward"``, as the reference looks it up); a :class:`NumericGapUsageError`
    (a ValueError too, as the reference's) when there is none."""
    extra = getattr(record, "graph_map_names", [])
    name = reference_graph if "/" in reference_graph else f"{reference_graph}/forward"
    if name not in extra:
        raise NumericGapUsageError(
            f"reference graph {name!r} not found; available: 'exported_program', "
            f"'edge_dialect_exported_program', or one of graph_map's: {extra}"
        )
    return name


def capture_intermediate_outputs(
    etrecord: object,
    inputs: Sequence[object] | None = None,
    *,
    method: str = "forward",
    reference_graph: str | None = None,
    cache: bool | str | os.PathLike[str] = False,
    disable_debug_handle_validation: bool = False,
) -> AotOutputs:
    """Run the ETRecord's reference graph on ``inputs`` and record every node's output.

    :param etrecord: an ETRecord or the path of one.
    :param inputs: the method's inputs (tensors, numpy arrays, numbers); by default the
        ETRecord's ``representative_inputs``. None there either is an InspectorError
        saying how to give them.
    :param method: the method whose edge program and handles are used.
    :param reference_graph: ``"exported_program"`` (ATen; an error if the handles cannot
        be carried back), ``"edge_dialect_exported_program"``, or None (ATen when
        possible, else edge).
    :param cache: ``True`` keeps the result in ``<etrecord>.numerics.npz``, a path keeps
        it there; a cache made from the same graph and inputs is read instead of running.
    :param disable_debug_handle_validation: use the ATen program even when some edge
        handles have no ATen node (best effort, as the reference's flag of that name).
    """
    from delegate_lens.etrecord import load_etrecord

    record = load_etrecord(etrecord)
    if record is None:
        raise InspectorError("capturing reference outputs needs an ETRecord")
    # a graph_map name is checked first, as the reference does (before the inputs)
    named = None if reference_graph in _OWN_GRAPHS else _graph_map_name(record, reference_graph)
    given = inputs is not None
    if inputs is None:
        try:
            stored = _stored_inputs(record)
        except ETRecordFormatError:
            raise
        if stored is None:
            raise InspectorError(
                f"{record.origin}: the ETRecord has no representative inputs (entry "
                f"{REPRESENTATIVE_INPUTS!r}): pass inputs=[...] (CLI: --inputs FILE), or store "
                "them with generate_etrecord(..., representative_inputs=...)"
            )
        inputs = stored
    inputs = list(inputs)

    handles: dict[str, int] | None = None
    graph = f"edge_dialect_exported_program/{method}"
    if reference_graph == "exported_program" or (
        reference_graph is None and _aten_is_of(record, method)
    ):
        handles = aten_debug_handles(record, method, validate=not disable_debug_handle_validation)
        if handles is not None:
            graph = "exported_program"
        elif reference_graph == "exported_program":  # a ValueError too, as the reference's
            raise NumericGapUsageError(
                f"{record.origin}: cannot use 'exported_program': the ETRecord has none, or "
                "its nodes cannot be traced to every debug handle of the edge program"
            )
    elif named is not None:
        graph = named

    cache_path: Path | None = None
    if cache:
        cache_path = _default_cache(record) if cache is True else Path(os.fspath(cache))
    key = _key(record, graph, inputs)
    if cache_path is not None and cache_path.exists():
        try:
            cached = AotOutputs.load(cache_path)
        except InspectorError as exc:
            warnings.warn(f"{exc}; capturing again", DelegateLensWarning, stacklevel=2)
        else:
            if cached.key == key:
                return cached

    if graph == "exported_program":
        program = record.exported_program  # the reference stores one, the first method's
        info = record.exported_program_graph()
        if info is None:
            raise InspectorError(f"{record.origin}: the ETRecord stores no exported_program")
    elif graph != f"edge_dialect_exported_program/{method}":  # a graph_map program
        program = record._live_program(graph)
        info = record.program_graph(graph)
        handles = {n.name: n.debug_handle for n in info.nodes if n.debug_handle is not None}
    else:
        program = record.edge_program(method)
        info = record.graph(method)
        handles = {n.name: n.debug_handle for n in info.nodes if n.debug_handle is not None}
    assert handles is not None
    try:
        outputs = _run(program, handles, inputs, record.origin)
    except InspectorError as exc:
        if not given and len(list(getattr(record, "methods", ()) or ())) > 1:
            raise InspectorError(
                f"{exc} (method {method!r} of a multi-method ETRecord: its representative "
                "inputs are one method's; pass this method's as inputs=[...])"
            ) from None
        raise
    result = _describe(info, handles, outputs, program, graph, key)
    if cache_path is not None:
        result.save(cache_path)
    return result


def _aten_is_of(record: ETRecord, method: str) -> bool:
    """Whether the ETRecord's one ATen program can be ``method``'s: it is the only method,
    or ``forward`` (a multi-method record stores the ATen program of one method only)."""
    methods = list(getattr(record, "methods", ()) or ())
    return len(methods) <= 1 or method == "forward"


def _stored_inputs(record: ETRecord) -> list[Any] | None:
    if not record.has_representative_inputs:
        return None
    value = record.representative_inputs()
    if value is None:
        return None
    return _input_list(value, record.origin)


def _run(
    program: ExportedProgram, handles: dict[str, int], inputs: Sequence[object], origin: str
) -> dict[str, Any]:
    """``{node name: output}`` of every node named in ``handles``."""
    import torch

    module = program.module()
    captured: dict[str, Any] = {}

    class _Capturer(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            result = super().run_node(n)
            if n.op == "call_function" and n.name in handles and n.target is not operator.getitem:
                captured[n.name] = result
            return result

    args = [to_torch(x) for x in inputs]
    n_placeholders = sum(1 for n in module.graph.nodes if n.op == "placeholder")
    if len(args) != n_placeholders:
        raise InspectorError(
            f"{origin}: the reference graph takes {n_placeholders} input(s), {len(args)} were given"
        )
    try:
        with torch.no_grad():
            _Capturer(module).run(*args)
    except Exception as exc:
        raise InspectorError(
            f"{origin}: running the reference graph on the inputs failed: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    return captured


def _as_numpy(value: object) -> Any:
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.contiguous().numpy().copy()
    if isinstance(value, (list, tuple)):
        return [_as_numpy(v) for v in value]
    if isinstance(value, (bool, int, float)):
        return np.asarray(value)
    return value


def _describe(
    info: GraphInfo,
    handles: dict[str, int],
    captured: Mapping[str, object],
    program: ExportedProgram,
    graph: str,
    key: str,
) -> AotOutputs:
    outputs: dict[tuple[int, ...], Any] = {}
    op_names: dict[tuple[int, ...], list[str]] = {}
    stack_traces: dict[str, str | None] = {}
    order: dict[int, int] = {}
    by_name: dict[str, GraphNode] = info.nodes_by_name  # type: ignore[assignment]
    for position, node in enumerate(program.graph_module.graph.nodes):
        if node.name not in captured:
            continue
        handle = handles[node.name]
        outputs[(handle,)] = _as_numpy(captured[node.name])  # the last node of a handle wins
        op_names.setdefault((handle,), []).append(node.name)
        info_node = by_name.get(node.name)
        stack_traces[node.name] = info_node.stack_trace if info_node else None
        order[handle] = position
    inputs_of = _inputs_of(program, handles)
    graph_outputs = _graph_outputs(program, handles)
    return AotOutputs(graph, outputs, op_names, stack_traces, order, inputs_of, key, graph_outputs)


def _graph_outputs(program: ExportedProgram, handles: dict[str, int]) -> tuple[int | None, ...]:
    """The handle behind each output of the graph, in output order (through ``getitem``
    and other nodes without a handle, when they lead to one handle only)."""
    import torch

    def handle_of(node: object) -> int | None:
        seen: set[int] = set()
        frontier = [node]
        while frontier:
            current = frontier.pop()
            if not isinstance(current, torch.fx.Node):
                continue
            if current.name in handles and current.target is not operator.getitem:
                seen.add(handles[current.name])
            elif current.op == "call_function":
                frontier.extend(current.all_input_nodes)
        return seen.pop() if len(seen) == 1 else None

    output = program.graph_module.graph.output_node()
    leaves: list[object] = []
    torch.fx.node.map_arg(output.args, leaves.append)
    return tuple(handle_of(leaf) for leaf in leaves)


def _inputs_of(program: ExportedProgram, handles: dict[str, int]) -> dict[int, tuple[int, ...]]:
    """``{handle: handles feeding its nodes}``, looking through nodes without a handle."""
    memo: dict[Any, set[int]] = {}

    def sources(node: torch.fx.Node) -> set[int]:
        if node in memo:
            return memo[node]
        memo[node] = set()
        if node.name in handles and node.target is not operator.getitem:
            found = {handles[node.name]}
        else:
            found = set()
            for parent in node.all_input_nodes:
                found |= sources(parent)
        memo[node] = found
        return found

    out: dict[int, set[int]] = {}
    for node in program.graph_module.graph.nodes:
        if node.op != "call_function" or node.name not in handles:
            continue
        handle = handles[node.name]
        parents: Iterable[Any] = node.all_input_nodes
        found = out.setdefault(handle, set())
        for parent in parents:
            found |= sources(parent)
        found.discard(handle)
    return {h: tuple(sorted(v)) for h, v in out.items()}
