"""Property tests of the graph view: handle lookups and module stacks against simple models."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.etrecord import ETRecord, ModuleFrame, dumps_json
from delegate_lens.etrecord._graph import split_module_stack

_ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
# paths as torch writes them: dotted names, indexing and calls whose commas sit in brackets
_path = st.one_of(
    st.just(""),
    st.lists(_ident, min_size=1, max_size=3).map(".".join),
    st.tuples(_ident, st.integers(0, 9), st.integers(0, 9)).map(
        lambda t: f"{t[0]}.slice({t[1]}, {t[2]}, None)"
    ),
    st.tuples(_ident, _ident).map(lambda t: f"{t[0]}['{t[1]},x']"),
)
_type = st.lists(_ident, min_size=1, max_size=4).map(".".join)
_frames = st.lists(st.builds(ModuleFrame, key=_ident, path=_path, type=_type), max_size=4)


@settings(max_examples=200, deadline=None)
@given(frames=_frames)
def test_module_stack_round_trips_through_torch_text_form(frames: list[ModuleFrame]) -> None:
    text = ";".join(f"{f.key},{f.path},{f.type}" for f in frames)  # torch's serializer
    assert split_module_stack(text) == tuple(frames)


_graph_nodes = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(1, 12)),  # debug handle
        st.sampled_from(["aten.add.Tensor", "aten.mul.Tensor", "aten.view_copy.default"]),
        _frames,
    ),
    min_size=0,
    max_size=40,
)


def _document(nodes: list[tuple[int | None, str, list[ModuleFrame]]]) -> bytes:
    out: list[dict[str, Any]] = []
    for i, (handle, op, frames) in enumerate(nodes):
        metadata = {"nn_module_stack": ";".join(f"{f.key},{f.path},{f.type}" for f in frames)}
        if handle is not None:
            metadata["debug_handle"] = str(handle)
        target = ("executorch.exir.dialects.edge.ops." if i % 2 else "torch.ops.") + op
        out.append({"name": f"n{i}", "target": target, "metadata": metadata})
    return json.dumps({"graph_module": {"graph": {"nodes": out}}}).encode()


@settings(max_examples=150, deadline=None)
@given(nodes=_graph_nodes, query=st.lists(st.integers(0, 14), max_size=8))
def test_handle_lookups_match_a_linear_scan(
    nodes: list[tuple[int | None, str, list[ModuleFrame]]], query: list[int]
) -> None:
    entries = {
        "ETRECORD_V0": b"",
        "edge_dialect_exported_program/forward": _document(nodes),
        "edge_dialect_exported_program/forward_state_dict": b"",
        "edge_dialect_exported_program/forward_constants": b"",
        "edge_dialect_exported_program/forward_example_inputs": b"",
        "debug_handle_map": dumps_json({"forward": {}}),
        "delegate_map": dumps_json({}),
    }
    graph = ETRecord.from_entries(entries).graph()
    assert [n.name for n in graph.nodes] == [f"n{i}" for i in range(len(nodes))]
    # an edge program's op types are the reference's (its targets' __name__): an edge
    # operator's qualified name; a torch operator left in it without its namespace
    assert [n.op_type for n in graph.nodes] == [
        op if i % 2 or op.count(".") != 2 else op.split(".", 1)[1]
        for i, (_, op, _) in enumerate(nodes)
    ]
    assert [n.debug_handle for n in graph.nodes] == [h for h, _, _ in nodes]
    assert [list(n.module_stack) for n in graph.nodes] == [frames for _, _, frames in nodes]
    # the reference order: handle by handle as asked, nodes of a handle in graph order
    expected = [f"n{i}" for h in query for i, (handle, _, _) in enumerate(nodes) if handle == h]
    assert [n.name for n in graph.nodes_for_handles(query)] == expected
    assert graph.handles == tuple(sorted({h for h, _, _ in nodes if h is not None}))
    for node in graph.nodes:
        if node.module_stack:
            assert node.module_path == node.module_stack[-1].path
            assert list(node.module_hierarchy) == list(
                dict.fromkeys(f.key for f in node.module_stack)
            )
