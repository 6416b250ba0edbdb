"""Reading every reference vector's ETRecord, checked against the reference Inspector's answers."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import VECTORS

from delegate_lens.etrecord import ETRecord, parse_etrecord

ALL_VECTORS = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable", "gpt_portable_big")
RESERVED = {"Method::init", "Program::load_method", "Method::execute"}

# What each vector's ETRecord holds (counted from the archives' JSON).
EXPECTED_SHAPE = {
    "mlp_xnnpack": {"nodes": 6, "handles": (1, 2, 3, 4, 5), "delegates": {1: "XnnpackBackend"}},
    "conv_xnnpack": {"nodes": 5, "handles": (1, 2, 3, 4, 5), "delegates": {0: "XnnpackBackend"}},
    "gpt_portable": {"nodes": 193, "handles": tuple(range(1, 103)), "delegates": {}},
    "gpt_portable_big": {"nodes": 193, "handles": tuple(range(1, 103)), "delegates": {}},
}


def _path(name: str) -> Path:
    return VECTORS / name / "etrecord.bin"


@pytest.fixture(scope="module", params=ALL_VECTORS)
def vector(request: pytest.FixtureRequest) -> tuple[str, ETRecord, dict[str, Any]]:
    name = request.param
    expected = json.loads((VECTORS / name / "expected.json").read_text())
    return name, parse_etrecord(_path(name)), expected


def test_methods_nodes_handles(vector: tuple[str, ETRecord, dict[str, Any]]) -> None:
    name, record, _ = vector
    shape = EXPECTED_SHAPE[name]
    assert record.methods == ("forward",)
    graph = record.graph("forward")
    assert len(graph.nodes) == shape["nodes"]
    assert graph.handles == shape["handles"]
    assert {iid: e.name for iid, e in record.delegate_entries["forward"].items()} == shape[
        "delegates"
    ]
    assert record.has_exported_program
    assert not record.has_reference_outputs
    assert not record.has_representative_inputs
    assert isinstance(record.export_graph_id, int) and record.export_graph_id > 0
    # every node of an edge program carries a handle, an op type and a module stack
    for node in graph.nodes:
        assert node.debug_handle is not None
        assert node.op_type.count(".") >= 2
        assert not node.op_type.startswith(("executorch.", "torch."))
        assert node.module_stack and node.module_stack[0].path == ""
        assert node.stack_trace


def test_maps_match_the_raw_json(vector: tuple[str, ETRecord, dict[str, Any]]) -> None:
    name, record, _ = vector
    with zipfile.ZipFile(_path(name)) as archive:
        raw = json.loads(archive.read("debug_handle_map"))
        raw_delegates = json.loads(archive.read("delegate_map"))
        raw_outs = json.loads(archive.read("instruction_id_to_num_outs_map"))
        graph_id = int(archive.read("export_graph_id"))
    written = record.debug_handle_map_as_written
    assert set(written) == set(raw)
    for method, per in raw.items():
        assert {str(k): v for k, v in written[method].items()} == {
            k: (tuple(v) if isinstance(v, list) else v) for k, v in per.items()
        }
        for key, value in per.items():
            handles = record.debug_handle_map[method][int(key)]
            assert handles == ((value,) if isinstance(value, int) else tuple(value))
    for method, per in raw_delegates.items():
        for key, body in per.items():
            view = record.delegate_map[method][int(key)]
            assert view["name"] == body["name"]
            assert len(view["delegate_map"]) == len(body["delegate_map"])
    assert {
        m: {str(k): v for k, v in per.items()}
        for m, per in record.instruction_id_to_num_outs_map.items()
    } == raw_outs
    assert record.export_graph_id == graph_id


def _rows(expected: dict[str, Any]) -> list[dict[str, Any]]:
    return [event for block in expected["blocks"] for event in block["events"]]


def test_op_types_and_module_hierarchy_follow_the_reference(
    vector: tuple[str, ETRecord, dict[str, Any]],
) -> None:
    """For every reference row with debug handles: op types are the nodes of each handle
    (handles in the order given, nodes in graph order), keys are node name + '_'."""
    _, record, expected = vector
    graph = record.graph()
    checked = 0
    for row in _rows(expected):
        if row["debug_handles"] is None or row["name"] in RESERVED:
            continue
        nodes = graph.nodes_for_handles(row["debug_handles"])
        assert [n.op_type for n in nodes] == row["op_types"]
        assert graph.op_types(row["debug_handles"]) == row["op_types"]
        hierarchy = {n.hierarchy_key: n.module_hierarchy for n in nodes}
        assert list(hierarchy) == list(row["module_hierarchy"])
        assert {
            k: {key: list(v) for key, v in value.items()} for k, value in hierarchy.items()
        } == row["module_hierarchy"]
        assert any(n.stack_trace for n in nodes) == row["has_stack_traces"]
        checked += 1
    assert checked >= 3


def test_instruction_handles_give_the_reference_debug_handles(
    vector: tuple[str, ETRecord, dict[str, Any]],
) -> None:
    """Non-delegated rows' debug_handles are the debug_handle_map values as written."""
    _, record, expected = vector
    written = set()
    for handles in record.debug_handle_map_as_written["forward"].values():
        written.add(json.dumps(list(handles) if isinstance(handles, tuple) else handles))
    for row in _rows(expected):
        if row["debug_handles"] is not None and not row["is_delegated_op"]:
            assert json.dumps(row["debug_handles"]) in written


def test_delegated_rows_without_mapping_find_no_handles() -> None:
    """mlp_xnnpack: XNNPACK wrote an empty Debug Handle Map, so its delegated (string id)
    events have no handles, as the reference reports."""
    record = parse_etrecord(_path("mlp_xnnpack"))
    expected = json.loads((VECTORS / "mlp_xnnpack" / "expected.json").read_text())
    delegated = [r for r in _rows(expected) if r["is_delegated_op"]]
    assert delegated
    for row in delegated:
        assert row["debug_handles"] is None
        assert row["delegate_backend_name"] == record.delegate_backend("forward", 1)
        assert record.delegate_handles("forward", 1, row["delegate_debug_identifier"]) is None


def test_reading_metadata_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import delegate_lens\n"
        "from delegate_lens import parse_etrecord\n"
        f"r = parse_etrecord({str(_path('gpt_portable'))!r})\n"
        "g = r.graph('forward')\n"
        "assert len(g.nodes) == 193\n"
        "r.debug_handle_map; r.delegate_map; r.validate()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
