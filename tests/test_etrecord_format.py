"""ETRecord archives: round trips, JSON maps with int and str identifiers, graph reading.
Bad input is tested in ``test_etrecord_bad_input.py``."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import VECTORS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delegate_lens.errors import UsageError
from delegate_lens.etrecord import (
    ETRecord,
    ModuleFrame,
    dumps_json,
    op_type_of,
    parse_etrecord,
)
from delegate_lens.etrecord._graph import split_module_stack
from delegate_lens.etrecord._maps import canonical_identifier

MLP = VECTORS / "mlp_xnnpack" / "etrecord.bin"
SUFFIXES = ("_state_dict", "_constants", "_example_inputs")


def node(name: str, target: str, handle: Any = None, **meta: str) -> dict[str, Any]:
    metadata = dict(meta)
    if handle is not None:
        metadata["debug_handle"] = handle if isinstance(handle, str) else str(handle)
    return {"name": name, "target": target, "inputs": [], "outputs": [], "metadata": metadata}


def program(nodes: list[dict[str, Any]]) -> bytes:
    return json.dumps({"graph_module": {"graph": {"nodes": nodes}}}).encode()


def make_entries(
    *,
    methods: dict[str, list[dict[str, Any]]] | None = None,
    debug_handle_map: Any = None,
    delegate_map: Any = None,
    extra: dict[str, bytes] | None = None,
) -> dict[str, bytes]:
    if methods is None:
        methods = {
            "forward": [
                node("aten_linear_default", "torch.ops.aten.linear.default", 1),
                node("aten_relu_default", "aten.relu.default", 2),
            ]
        }
    entries: dict[str, bytes] = {"ETRECORD_V0": b""}
    for method, nodes in methods.items():
        entry = f"edge_dialect_exported_program/{method}"
        entries[entry] = program(nodes)
        for suffix in SUFFIXES:
            entries[entry + suffix] = b"\x00"
    entries["debug_handle_map"] = dumps_json(
        debug_handle_map if debug_handle_map is not None else {"forward": {0: 1, 1: [2]}}
    )
    entries["delegate_map"] = dumps_json(delegate_map if delegate_map is not None else {})
    entries.update(extra or {})
    return entries


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
def test_save_parse_round_trip_keeps_every_entry(name: str, tmp_path: Path) -> None:
    source = VECTORS / name / "etrecord.bin"
    record = parse_etrecord(source)
    saved = record.save(tmp_path / "copy.etrecord")
    again = parse_etrecord(saved)
    assert again.entry_names == record.entry_names
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(saved) as b:
        for info in a.infolist():
            assert a.read(info.filename) == b.read(info.filename)
        assert all(i.compress_type == zipfile.ZIP_STORED for i in b.infolist())
    assert again.debug_handle_map == record.debug_handle_map
    assert again.delegate_map == record.delegate_map
    assert again.graph().nodes == record.graph().nodes
    assert [p.name for p in tmp_path.iterdir()] == ["copy.etrecord"]  # no temp file left


def test_parse_accepts_bytes_and_binary_files() -> None:
    data = MLP.read_bytes()
    from_bytes = parse_etrecord(data)
    with MLP.open("rb") as handle:
        from_file = parse_etrecord(handle)
    from_memoryview = parse_etrecord(memoryview(data))
    for record in (from_bytes, from_file, from_memoryview):
        assert record.methods == ("forward",)
        assert len(record.graph().nodes) == 6
    assert from_file.origin == str(MLP)
    assert from_bytes.origin == "<bytes>"
    assert parse_etrecord(io.BytesIO(data)).origin == "<stream>"
    assert parse_etrecord(from_bytes.to_bytes()).entries() == from_bytes.entries()
    with pytest.raises(TypeError):
        parse_etrecord(io.StringIO("text"))  # type: ignore[arg-type]


def test_from_entries_round_trips_through_a_file(tmp_path: Path) -> None:
    entries = make_entries(
        delegate_map={"forward": {1: {"name": "DemoBackend", "delegate_map": {0: [1], "s": [2]}}}},
        extra={
            "export_graph_id": b"42",
            "instruction_id_to_num_outs_map": b'{"forward": {"1": 2}}',
        },
    )
    record = ETRecord.from_entries(entries)
    assert record.origin == "<entries>"
    path = record.save(tmp_path / "r.etrecord")
    again = parse_etrecord(path)
    assert again.entries() == entries
    assert again.export_graph_id == 42
    assert again.instruction_id_to_num_outs_map == {"forward": {1: 2}}
    assert again.delegate_map == {
        "forward": {1: {"name": "DemoBackend", "delegate_map": {0: (1,), "s": (2,)}}}
    }


def test_save_overwrites_its_own_source(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    shutil.copy(MLP, path)
    record = parse_etrecord(path)
    record.save(path)
    assert parse_etrecord(path).entries() == parse_etrecord(MLP).entries()


def test_failed_save_leaves_the_target_and_no_temp_file(tmp_path: Path) -> None:
    source = tmp_path / "source.bin"
    shutil.copy(MLP, source)
    record = parse_etrecord(source)
    target = tmp_path / "target.bin"
    target.write_bytes(b"previous")
    source.unlink()  # entries are read lazily: saving now fails half-way
    with pytest.raises(FileNotFoundError):
        record.save(target)
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target.bin"]


handle_lists = st.lists(st.integers(min_value=0, max_value=2**31), min_size=1, max_size=5)
handles_as_written = st.one_of(st.integers(min_value=0, max_value=2**31), handle_lists)
identifiers = st.one_of(
    st.integers(min_value=0, max_value=2**31 - 1),
    # str identifiers that do not read as int ones (JSON cannot tell "5" from 5)
    st.text(min_size=1, max_size=12).filter(lambda s: canonical_identifier(s) == s),
)
methods_st = st.sampled_from(["forward", "decode", "prefill"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    debug_map=st.dictionaries(
        methods_st, st.dictionaries(st.integers(0, 10_000), handles_as_written, max_size=6)
    ),
    delegates=st.dictionaries(
        methods_st,
        st.dictionaries(
            st.integers(0, 10_000),
            st.tuples(
                st.text(max_size=10),
                st.dictionaries(
                    identifiers, handle_lists.map(lambda h: sorted(set(h))), max_size=5
                ),
            ),
            max_size=4,
        ),
    ),
)
def test_maps_round_trip_through_json(
    debug_map: dict[str, dict[int, Any]],
    delegates: dict[str, dict[int, tuple[str, dict[Any, list[int]]]]],
) -> None:
    delegate_json = {
        m: {i: {"name": name, "delegate_map": ids} for i, (name, ids) in per.items()}
        for m, per in delegates.items()
    }
    entries = make_entries(
        debug_handle_map=debug_map or {"forward": {}}, delegate_map=delegate_json
    )
    record = parse_etrecord(ETRecord.from_entries(entries).to_bytes())
    for method, per in debug_map.items():
        for iid, handles in per.items():
            written = handles if isinstance(handles, int) else tuple(handles)
            assert record.instruction_handles(method, iid, as_written=True) == written
            tupled = (handles,) if isinstance(handles, int) else tuple(handles)
            assert record.instruction_handles(method, iid) == tupled
            assert record.debug_handle_map[method][iid] == tupled
    for method, per in delegates.items():
        for iid, (name, ids) in per.items():
            assert record.delegate_backend(method, iid) == name
            view = record.delegate_map[method][iid]
            assert view["name"] == name
            assert len(view["delegate_map"]) == len(ids)
            for ident, handles in ids.items():
                # an int identifier matches its decimal key, a str identifier its text
                assert record.delegate_handles(method, iid, ident) == tuple(handles)
                assert record.delegate_handles(method, iid, ident, as_written=True) == tuple(
                    handles
                )
                assert view["delegate_map"][ident] == tuple(handles)
            assert record.delegate_handles(method, iid, "no such id \u2603") is None
    assert record.delegate_handles("no-method", 0, 0) is None


def test_int_and_str_identifier_lookup_rules() -> None:
    entries = make_entries(
        delegate_map={
            "forward": {3: {"name": "B", "delegate_map": {"7": [1], "conv #1": [2], "007": [3]}}}
        }
    )
    record = ETRecord.from_entries(entries)
    assert record.delegate_handles("forward", 3, 7) == (1,)
    assert record.delegate_handles("forward", 3, "7") == (1,)  # same text as the reference
    assert record.delegate_handles("forward", 3, "conv #1") == (2,)
    assert record.delegate_handles("forward", 3, "007") == (3,)
    assert record.delegate_handles("forward", 3, 1) is None  # no substring matching
    assert record.delegate_map["forward"][3]["delegate_map"] == {
        7: (1,),
        "conv #1": (2,),
        "007": (3,),
    }
    with pytest.raises(TypeError):
        record.delegate_handles("forward", 3, True)
    keys = ("0", "12", "-1", "007", "1.0", "\u0661", " 3")
    assert [canonical_identifier(k) for k in keys] == [0, 12, "-1", "007", "1.0", "\u0661", " 3"]


# ---------------------------------------------------------------- graph reading


def test_op_type_prefixes() -> None:
    assert (
        op_type_of("executorch.exir.dialects.edge.ops.aten.linear.default") == "aten.linear.default"
    )
    assert op_type_of("torch.ops.aten.linear.default") == "aten.linear.default"
    assert op_type_of("aten.linear.default") == "aten.linear.default"
    assert (
        op_type_of("torch.ops.higher_order.executorch_call_delegate") == "executorch_call_delegate"
    )
    assert op_type_of("_operator.getitem") == "getitem"
    assert (
        op_type_of("executorch.exir.dialects.edge.ops.dim_order_ops._to_dim_order_copy.default")
        == "dim_order_ops._to_dim_order_copy.default"
    )


def test_module_stack_split_keeps_commas_inside_brackets() -> None:
    text = (
        "L__self__,,__main__.M;"
        "L__self___layers_slice_None__2__None___0,layers.slice(None, 2, None).0,torch.nn.Linear;"
        "L__self___d,d['a,b'],torch.nn.ModuleDict"
    )
    assert split_module_stack(text) == (
        ModuleFrame("L__self__", "", "__main__.M"),
        ModuleFrame(
            "L__self___layers_slice_None__2__None___0",
            "layers.slice(None, 2, None).0",
            "torch.nn.Linear",
        ),
        ModuleFrame("L__self___d", "d['a,b']", "torch.nn.ModuleDict"),
    )
    assert split_module_stack("") == ()
    with pytest.raises(ValueError, match="key,path,type"):
        split_module_stack("only,two")


def test_graph_lookups_and_node_views() -> None:
    nodes = [
        node("a", "torch.ops.aten.add.Tensor", 2, nn_module_stack="L__self__,,M;L__self__l,l,L"),
        node("b", "torch.ops.aten.mul.Tensor", 1, stack_trace="File x"),
        node("c", "torch.ops.aten.sub.Tensor", 2),
        node("d", "torch.ops.aten.sym_size.int"),
    ]
    record = ETRecord.from_entries(make_entries(methods={"forward": nodes, "decode": nodes[:1]}))
    assert record.methods == ("forward", "decode")
    graph = record.graph()
    assert [n.name for n in graph.nodes_for_handles([2, 1, 99])] == ["a", "c", "b"]
    # torch operators in an edge program: named as the reference's Inspector names them
    assert graph.op_types(2) == ["add.Tensor", "sub.Tensor"]
    assert graph.nodes_for_handles(None) == []
    assert graph.handles == (1, 2)
    a, b, c, d = graph.nodes
    assert a.hierarchy_key == "a_"
    assert a.module_hierarchy == {"L__self__": ("", "M"), "L__self__l": ("l", "L")}
    assert a.module_path == "l"
    assert c.module_hierarchy == {} and c.module_path == ""
    assert b.stack_trace == "File x" and a.stack_trace is None
    assert d.debug_handle is None and graph.nodes_by_name["d"] is d
    assert [n.index for n in graph.nodes] == [0, 1, 2, 3]
    assert len(record.graph("decode")) == 1
    with pytest.raises(UsageError, match="no method 'nope'"):
        record.graph("nope")


def test_legacy_layouts_are_read() -> None:
    entries = make_entries(debug_handle_map={"0": 1, "1": [1, 2]})  # no method level
    entries["edge_dialect_exported_program"] = entries.pop("edge_dialect_exported_program/forward")
    for suffix in SUFFIXES:
        entries["edge_dialect_exported_program" + suffix] = entries.pop(
            "edge_dialect_exported_program/forward" + suffix
        )
    record = ETRecord.from_entries(entries)
    assert record.methods == ("forward",)
    assert record.debug_handle_map == {"forward": {0: (1,), 1: (1, 2)}}
    assert record.instruction_id_to_num_outs_map == {}
    assert record.export_graph_id is None
    assert len(record.graph().nodes) == 2
