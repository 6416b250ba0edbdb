"""Placing XNNPACK's operator events on the XNNGraph nodes that made them.

ExecuTorch's XNNPACK profiler names each operator event ``<operator type> #k`` (``k``
counting the operators of that type in the delegate, from 1), and XNNPACK runs its
operators in the order of the graph's nodes. Some nodes make no operator of their own
(XNNPACK fuses a clamp into the node before it), and the type names say less than the node
kinds (a ``Conv2d`` and a ``DepthwiseConv2d`` both make ``Convolution`` operators). So the
events are aligned with the nodes by kind, in order: of every alignment pairing the most
events with nodes of a kind that makes their type, an event is linked only when **all** of
them pair it with the same node; otherwise it stays unlinked, with the reason. A wrong link
is never made to fill a gap.

What a linked event covers:

* its node's debug handle; a node without one (a layout transpose the partitioner
  inserted, handle 0 or 0xFFFF) covers what the node it converts for covers (the node
  whose output it reads, else the node that reads its output): its layout change is
  charged with it;
* a clamp node fused into it by XNNPACK (a clamp with no event of its own that reads the
  node's output);
* what ExecuTorch folded into it ahead of time, found in the ETRecord's graph right after
  the node's own and carried by no XNNGraph node: a batch norm (folded into a
  convolution's weights), then an activation (``relu``, ``hardtanh``, ``clamp``) when the
  node has ``output_min_max``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from delegate_lens_xnnpack.graph import XNode

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

EVENT = re.compile(r"^(?P<type>.+) #(?P<count>[1-9][0-9]*)$")
"""An operator event's name: the operator type, then ``#k``."""

NO_HANDLE = (0, 0xFFFF, 0xFFFFFFFF)
"""Debug handles that name no graph node (layout transposes the partitioner inserted)."""

_UNARY = {
    "Abs": "Abs",
    "Ceiling": "Ceiling",
    "Clamp": "Clamp",
    "Convert": "Convert",
    "ELU": "ELU",
    "Exp": "Exp",
    "Floor": "Floor",
    "Hardswish": "HardSwish",
    "LeakyReLU": "LeakyReLU",
    "Log": "Log",
    "Negate": "Negate",
    "ReciprocalSquareRoot": "Reciprocal Square Root",
    "Sigmoid": "Sigmoid",
    "Square": "Square",
    "SquareRoot": "Square Root",
    "Tanh": "TanH",
    "Sin": "Sine",
    "Cos": "Cosine",
}
_BINARY = {
    "Add": "Add",
    "Div": "Divide",
    "Multiply": "Multiply",
    "Subtract": "Subtract",
    "Minimum": "Minimum",
    "Maximum": "Maximum",
    "PReLU": "PReLU",
}
_CONCAT = {"Concatenate", "Copy"}

KIND_TYPES: dict[str, frozenset[str]] = {
    **{kind: frozenset({name}) for kind, name in _UNARY.items()},
    **{kind: frozenset({name}) for kind, name in _BINARY.items()},
    "FullyConnected": frozenset({"Fully Connected"}),
    "Conv2d": frozenset({"Convolution"}),
    "DepthwiseConv2d": frozenset({"Convolution"}),
    "ConvTranspose2d": frozenset({"Deconvolution"}),
    "BatchMatrixMultiply": frozenset({"Batch Matrix Multiply"}),
    "Softmax": frozenset({"Softmax"}),
    "StaticTranspose": frozenset({"Transpose"}),
    "StaticReshape": frozenset({"Static Reshape", "Copy"}),
    "StaticSlice": frozenset({"Slice"}),
    "StaticConstantPad": frozenset({"Constant Pad"}),
    "StaticResizeBilinear2D": frozenset({"Resize Bilinear"}),
    "AvgPooling2d": frozenset({"Average Pooling"}),
    "MaxPooling2d": frozenset({"Max Pooling"}),
    "ArgMaxPooling2d": frozenset({"Argmax Pooling"}),
    "GlobalAvgPooling2d": frozenset({"Global Average Pooling", "Mean"}),
    "Gelu": frozenset({"GELU", "ApproxGELU"}),
    "Copy": frozenset({"Copy"}),
    "ScaledDotProductAttention": frozenset({"Scaled Dot Product Attention"}),
    **{f"Concatenate{n}": frozenset(_CONCAT) for n in (2, 3, 4, 5)},
}
"""Node kind -> the operator types (names before their ``(layout, datatype)``) its
operators are logged under, from XNNPACK's operator-type strings and real runs."""

_ACTIVATIONS = ("relu", "hardtanh", "clamp", "relu6")
_FOLDS_INTO = frozenset({"Conv2d", "DepthwiseConv2d", "ConvTranspose2d", "FullyConnected", "Add"})
"""Node kinds ExecuTorch folds a following batch norm or activation into."""


def operator_type(identifier: object) -> str | None:
    """The operator type of an event name (``"Fully Connected"`` of ``"Fully Connected
    (NC, F32) GEMM #2"``), or None when it is not an operator event."""
    if not isinstance(identifier, str):
        return None
    match = EVENT.match(identifier)
    if match is None:
        return None
    name = match.group("type")
    return name.split(" (", 1)[0].strip() or None


@attrs.frozen
class Alignment:
    """Events placed on nodes: identifier -> handles, and identifier -> why not."""

    handles: dict[int | str, tuple[int, ...]]
    unlinked: dict[int | str, str]
    nodes: dict[int | str, int] = attrs.field(factory=dict)
    """identifier -> the index of the node it was placed on."""


def _tables(compat: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Prefix (``f[i, j]``: events[:i] with nodes[:j]) and suffix (``b[i, j]``: events[i:]
    with nodes[j:]) tables of the largest number of pairs, a row at a time with numpy (the
    best count never falls as a prefix grows: a running maximum along the row)."""
    import numpy as np  # here, not at import: loading the plugin (every command) stays numpy-free

    e, n = compat.shape
    f = np.zeros((e + 1, n + 1), dtype=np.int32)
    for i in range(1, e + 1):
        g = f[i - 1].copy()
        g[1:] = np.maximum(g[1:], f[i - 1, :-1] + compat[i - 1])
        f[i] = np.maximum.accumulate(g)
    b = np.zeros((e + 1, n + 1), dtype=np.int32)
    for i in range(e - 1, -1, -1):
        g = b[i + 1].copy()
        g[:-1] = np.maximum(g[:-1], b[i + 1, 1:] + compat[i])
        b[i] = np.maximum.accumulate(g[::-1])[::-1]
    return f, b


def certain_pairs(
    compat: npt.NDArray[np.bool_] | list[list[bool]],
) -> tuple[dict[int, int], dict[int, str]]:
    """Event -> node pairs common to every maximum alignment, and event -> why not for the
    others (``compat[i][j]``: node ``j`` makes operators of event ``i``'s type)."""
    import numpy as np

    fits = np.asarray(compat, dtype=bool)
    e = len(fits)
    fits = fits.reshape(e, -1) if e else fits.reshape(0, 0)
    n = fits.shape[1]
    if e == n and bool(np.diagonal(fits).all()):
        return {i: i for i in range(e)}, {}  # one to one: the only full alignment
    f, b = _tables(fits)
    best = int(f[e, n])
    pairs: dict[int, int] = {}
    reasons: dict[int, str] = {}
    for i in range(e):
        options = np.flatnonzero(fits[i] & (f[i, :-1] + 1 + b[i + 1, 1:] == best))
        skippable = bool((f[i] + b[i + 1] == best).any())
        if not fits[i].any():
            reasons[i] = "no node of the delegate's graph makes operators of its type"
        elif options.size == 0:
            reasons[i] = "the nodes that make its type are taken by the events around it"
        elif options.size > 1 or skippable:
            count = options.size + (1 if skippable else 0)
            reasons[i] = f"ambiguous: {count} placements fit the order of the events"
        else:
            pairs[i] = int(options[0])
    return pairs, reasons


def _valid(handle: int, handles: set[int] | None) -> bool:
    if handle in NO_HANDLE:
        return False
    return handles is None or handle in handles


def _served(node: XNode, nodes: Sequence[XNode], handles: set[int] | None) -> XNode | None:
    """The node a handle-less node (a layout transpose, an output conversion) converts for:
    the one whose output it reads, else the first that reads its output, through other
    handle-less nodes of such a chain."""
    seen = {node.index}
    here: XNode | None = node
    while here is not None and here.inputs:  # upstream: who made what it reads
        here = next((o for o in nodes if o.output == here.inputs[0] and o.output >= 0), None)
        if here is None or here.index in seen:
            break
        if _valid(here.debug_handle, handles):
            return here
        seen.add(here.index)
    here = node
    while here is not None and here.output >= 0:  # downstream: who reads what it makes
        here = next((o for o in nodes if here.output in o.inputs), None)
        if here is None or here.index in seen:
            break
        if _valid(here.debug_handle, handles):
            return here
        seen.add(here.index)
    return None


def _op_name(node: object) -> str:
    op = str(getattr(node, "op_type", ""))
    return op.split(".")[1] if op.count(".") >= 2 else op


def _fused_ahead(node: XNode, graph: object, missing: set[int]) -> list[int]:
    """The handles of the graph nodes folded into ``node`` ahead of time, which no XNNGraph
    node carries: right after its own nodes in the graph, a batch norm (folded into a
    convolution's weights), then, when it has ``output_min_max``, an activation."""
    if graph is None or not missing or node.kind not in _FOLDS_INTO:
        return []
    by_handle: Mapping[int, Sequence[object]] = getattr(graph, "nodes_by_handle", {})
    own = by_handle.get(node.debug_handle, ())
    if not own:
        return []
    at: dict[int, tuple[int, str]] = {}  # graph position -> (handle, op) of missing nodes
    for handle in missing:
        for candidate in by_handle.get(handle, ()):
            at[int(getattr(candidate, "index", -1))] = (handle, _op_name(candidate))
    found: list[int] = []
    position = max(int(getattr(n, "index", -1)) for n in own) + 1
    allowed = (
        "_native_batch_norm_legit_no_training",
        *(_ACTIVATIONS if node.has_output_min_max else ()),
    )
    while position in at and at[position][1] in allowed:
        handle, op = at[position]
        if handle not in found:
            found.append(handle)
        if op in _ACTIVATIONS:
            break  # one activation, the last fold
        allowed = tuple(a for a in allowed if a != op)
        position += 1
    return found


def align(
    identifiers: Iterable[int | str],
    nodes: Sequence[XNode],
    handles: Iterable[int] | None = None,
    graph: object = None,
) -> Alignment:
    """Place each operator event (in the order logged) on the node that made it.

    :param identifiers: the delegate's identifiers, in the order the run logged them.
    :param nodes: the XNNGraph's nodes, in graph order.
    :param handles: the delegate call's debug handles (the ETRecord's), or None.
    :param graph: the ETRecord's graph of the method (for activations fused ahead of
        time), or None.
    """
    import numpy as np

    known = None if handles is None else {int(h) for h in handles}
    events: list[tuple[int | str, str]] = []
    unlinked: dict[int | str, str] = {}
    for ident in identifiers:
        kind = operator_type(ident)
        if kind is None:
            unlinked[ident] = "not an XNNPACK operator event ('<operator type> #k')"
        else:
            events.append((ident, kind))
    if known is not None:
        stray = sorted({n.debug_handle for n in nodes if n.debug_handle not in NO_HANDLE} - known)
        if stray:
            why = (
                f"the program's delegate does not match the ETRecord: its nodes carry "
                f"handle(s) {stray[:5]} that the delegate call does not have"
            )
            return Alignment({}, {**unlinked, **{ident: why for ident, _ in events}})
    rows: dict[str, npt.NDArray[np.bool_]] = {}  # one row per operator type
    for _, t in events:
        if t not in rows:
            rows[t] = np.array([t in KIND_TYPES.get(n.kind, ()) for n in nodes], dtype=bool)
    compat = np.array([rows[t] for _, t in events], dtype=bool).reshape(len(events), len(nodes))
    pairs, reasons = certain_pairs(compat) if events else ({}, {})
    placed = set(pairs.values())
    carried = {n.debug_handle for n in nodes}
    missing = set() if known is None else known - carried
    linked: dict[int | str, tuple[int, ...]] = {}
    on_node: dict[int | str, int] = {}
    serving: dict[int | str, XNode] = {}
    for i, (ident, _kind) in enumerate(events):
        if i not in pairs:
            unlinked[ident] = reasons.get(i, "not placed")
            continue
        node = nodes[pairs[i]]
        on_node[ident] = node.index
        if not _valid(node.debug_handle, known):
            served = _served(node, nodes, known)
            if served is None:
                unlinked[ident] = (
                    f"its node ({node.kind} #{node.index}) has no debug handle and converts "
                    "for no node that has one"
                )
                del on_node[ident]
            else:
                serving[ident] = served
            continue
        found = [node.debug_handle]
        after = nodes[node.index + 1] if node.index + 1 < len(nodes) else None
        if (
            after is not None
            and after.kind == "Clamp"
            and after.index not in placed
            and node.output >= 0
            and after.inputs[:1] == (node.output,)
            and _valid(after.debug_handle, known)
            and after.debug_handle not in found
        ):
            found.append(after.debug_handle)  # a clamp XNNPACK fused into it
        found.extend(h for h in _fused_ahead(node, graph, missing) if h not in found)
        linked[ident] = tuple(found)
    # a layout conversion covers what the event of the node it converts for covers (its
    # fused activation too), else that node's own handle
    events_of = {index: ident for ident, index in on_node.items() if ident in linked}
    for ident, served in serving.items():
        owner = events_of.get(served.index)
        linked[ident] = linked[owner] if owner is not None else (served.debug_handle,)
    ordered = {ident: linked[ident] for ident, _kind in events if ident in linked}
    return Alignment(ordered, unlinked, on_node)
