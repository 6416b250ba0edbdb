"""Reading XNNPACK's delegate blob: its header, then the XNNGraph FlatBuffer's nodes.

Written from ExecuTorch 1.5.1's ``backends/xnnpack/serialization/schema.fbs`` (file
identifier ``XN01``) and the blob layout of its serializer. The blob starts with a
30-byte header:

====== ====== =====================================================
bytes  type   what
====== ====== =====================================================
0-4    -      zeros (so the magic sits where a bare FlatBuffer's identifier would)
4-8    magic  ``XH00``
8-10   u16    the header's length
10-14  u32    offset of the XNNGraph FlatBuffer
14-18  u32    its size
18-22  u32    offset of the constant data
22-30  u64    its size
====== ====== =====================================================

A blob without the header (``XN01`` at bytes 4-8) is the FlatBuffer itself. Of the graph,
only what places operators is read: each ``XNode``'s kind (the member of the
``XNodeUnion``), its ``debug_handle``, whether it has an ``output_min_max`` (a fused
activation), and the input and output value ids of the kinds whose tables start with them.
"""

from __future__ import annotations

import struct

import attrs

from delegate_lens.errors import ProgramFormatError
from delegate_lens.program import FlatBuffer, FlatTable

HEADER_MAGIC = b"XH00"
GRAPH_IDENTIFIER = b"XN01"
_HEADER = struct.Struct("<4s4sHIIIQ")

NODE_KINDS: tuple[str, ...] = (
    "Add",
    "FullyConnected",
    "Softmax",
    "Sigmoid",
    "StaticTranspose",
    "Clamp",
    "Conv2d",
    "Div",
    "StaticResizeBilinear2D",
    "StaticConstantPad",
    "AvgPooling2d",
    "Minimum",
    "DepthwiseConv2d",
    "MaxPooling2d",
    "Multiply",
    "Subtract",
    "Floor",
    "Convert",
    "GlobalAvgPooling2d",
    "StaticReshape",
    "ArgMaxPooling2d",
    "SquareRoot",
    "Ceiling",
    "Hardswish",
    "LeakyReLU",
    "Maximum",
    "Negate",
    "Square",
    "ELU",
    "Abs",
    "PReLU",
    "Concatenate2",
    "Concatenate3",
    "Concatenate4",
    "StaticSlice",
    "ScaledDotProductAttention",
    "BatchMatrixMultiply",
    "Concatenate5",
    "ConvTranspose2d",
    "ReciprocalSquareRoot",
    "Log",
    "Gelu",
    "Tanh",
    "Exp",
    "Sin",
    "Copy",
    "Cos",
)
"""The members of the schema's ``XNodeUnion`` in order (member ``k`` is ``NODE_KINDS[k - 1]``),
without the ``XNN`` prefix."""

_ONE_IN = ("input_id", "output_id")
_TWO_IN = ("input1_id", "input2_id", "output_id")
# (slot of the first id, names) for the kinds whose value ids tell a fused activation
_IDS: dict[str, tuple[int, tuple[str, ...]]] = {
    **{k: (0, _TWO_IN) for k in ("Add", "Div", "Minimum", "Maximum", "Multiply", "Subtract")},
    **{k: (0, _TWO_IN) for k in ("PReLU", "BatchMatrixMultiply")},
    **{k: (0, _ONE_IN) for k in ("Softmax", "Sigmoid", "Clamp", "Floor", "Convert")},
    **{k: (0, _ONE_IN) for k in ("GlobalAvgPooling2d", "SquareRoot", "Ceiling", "Hardswish")},
    **{k: (0, _ONE_IN) for k in ("Negate", "Square", "Abs", "ReciprocalSquareRoot", "Log")},
    **{k: (0, _ONE_IN) for k in ("Gelu", "Tanh", "Exp", "Sin", "Copy", "Cos")},
    "FullyConnected": (0, ("input1_id", "filter_id", "bias_id", "output_id")),
    **{k: (15, ("input1_id", "filter_id", "bias_id", "output_id")) for k in ("Conv2d",)},
    "DepthwiseConv2d": (15, ("input1_id", "filter_id", "bias_id", "output_id")),
    "ConvTranspose2d": (15, ("input1_id", "filter_id", "bias_id", "output_id")),
    "AvgPooling2d": (10, _ONE_IN),
    "MaxPooling2d": (10, _ONE_IN),
    "StaticTranspose": (2, _ONE_IN),
    "StaticReshape": (2, _ONE_IN),
    "StaticResizeBilinear2D": (2, _ONE_IN),
    "StaticSlice": (3, _ONE_IN),
    "StaticConstantPad": (3, _ONE_IN),
    "LeakyReLU": (1, _ONE_IN),
    "ELU": (1, _ONE_IN),
}


@attrs.frozen
class XNode:
    """One node of an XNNGraph.

    :param index: its position among the graph's nodes.
    :param kind: the union member without ``XNN`` (``"FullyConnected"``, ``"Conv2d"``).
    :param debug_handle: the debug handle of the edge node it was made from (0: none).
    :param has_output_min_max: whether it carries an ``output_min_max`` (an activation
        fused ahead of time).
    :param inputs: the value ids it reads (empty for kinds not read here).
    :param output: the value id it writes (-1 when not read here).
    """

    index: int
    kind: str
    debug_handle: int
    has_output_min_max: bool = False
    inputs: tuple[int, ...] = ()
    output: int = -1


def _ids(table: FlatTable, kind: str) -> tuple[tuple[int, ...], int]:
    spec = _IDS.get(kind)
    if spec is None:
        return (), -1
    first, names = spec
    values = [table.integer(first + i, "uint", name) for i, name in enumerate(names)]
    return tuple(values[:-1]), values[-1]


def graph_buffer(blob: bytes | memoryview, origin: str) -> FlatBuffer:
    """The XNNGraph FlatBuffer of a delegate blob (after its header when it has one)."""
    data = memoryview(blob)
    if len(data) >= _HEADER.size and bytes(data[4:8]) == HEADER_MAGIC:
        _zeros, _magic, length, fb_offset, fb_size, _const_off, _const_size = _HEADER.unpack_from(
            data, 0
        )
        if length < _HEADER.size:
            raise ProgramFormatError(f"{origin}: XNNPACK header length {length} is too short")
        if fb_offset + fb_size > len(data) or fb_size < 8:
            raise ProgramFormatError(
                f"{origin}: XNNPACK header: graph of {fb_size} bytes at offset {fb_offset} "
                f"overruns the {len(data)}-byte blob"
            )
        data = data[fb_offset : fb_offset + fb_size]
    buffer = FlatBuffer(data, origin)
    if buffer.identifier() != GRAPH_IDENTIFIER:
        raise ProgramFormatError(
            f"{origin}: not an XNNPACK blob (neither the {HEADER_MAGIC.decode()} header nor "
            f"the {GRAPH_IDENTIFIER.decode()} graph identifier)"
        )
    return buffer


def read_xnodes(blob: bytes | memoryview, origin: str = "XNNPACK blob") -> list[XNode]:
    """The nodes of an XNNPACK delegate blob, in graph order. A damaged blob is a
    :class:`~delegate_lens.errors.ProgramFormatError` naming ``origin`` and the field."""
    root = graph_buffer(blob, origin).root(GRAPH_IDENTIFIER, "graph")
    nodes = []
    for i, table in enumerate(root.tables(1, "xnodes")):
        member, body = table.union(0, "xnode_union")
        if not 1 <= member <= len(NODE_KINDS):
            raise ProgramFormatError(
                f"{origin}: {table.path}.xnode_union: unknown node kind {member} (this reader "
                f"knows {len(NODE_KINDS)})"
            )
        kind = NODE_KINDS[member - 1]
        inputs, output = _ids(body, kind) if body is not None else ((), -1)
        nodes.append(
            XNode(
                index=i,
                kind=kind,
                debug_handle=table.integer(2, "uint", "debug_handle"),
                has_output_min_max=table.table(3, "output_min_max") is not None,
                inputs=inputs,
                output=output,
            )
        )
    return nodes
