"""The XNNPACK plugin on the reference vectors (programs, ETDumps and ETRecords made by
ExecuTorch 1.5.1): the blob reader, the placing of events on nodes, and what the Inspector
and the CLI show with ``--program`` and without."""

from __future__ import annotations

import json
import runpy
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from delegate_lens_xnnpack import align, read_xnodes
from delegate_lens_xnnpack.graph import XNode

from delegate_lens.cli import main
from delegate_lens.errors import ProgramFormatError
from delegate_lens.etrecord import parse_etrecord
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import reset_plugin_manager
from delegate_lens.program import read_delegates

REPO = Path(__file__).resolve().parents[3]

MLP_MAP = {
    "Fully Connected (NC, F32) GEMM #1": [1, 2],
    "Fully Connected (NC, F32) GEMM #2": [3, 4],
    "Add (ND) #1": [5],
}
"""linear + relu (fused ahead of time into the node's output_min_max), twice, then add."""
CONV_MAP = {
    "Transpose (ND, X32) #1": [1, 2],  # the input's layout change, for the first conv
    "Convolution (NHWC, F32) IGEMM #1": [1, 2],
    "Convolution (NHWC, F32) IGEMM #2": [3, 4],
    "Transpose (ND, X32) #2": [3, 4],  # the output's layout change, from the second conv
}
OP_TYPES = {
    "Fully Connected (NC, F32) GEMM #1": ["aten.linear.default", "aten.relu.default"],
    "Add (ND) #1": ["dim_order_ops._to_dim_order_copy.default", "aten.add.Tensor"],
    "Convolution (NHWC, F32) IGEMM #2": ["aten.convolution.default", "aten.relu.default"],
}


@pytest.fixture(scope="module")
def vectors_dir() -> Path:
    folder: Path = runpy.run_path(str(REPO / "tests" / "data" / "vectors" / "unpack.py"))[
        "unpack"
    ]()
    return folder


@pytest.fixture(autouse=True)
def fresh_plugins() -> Iterator[None]:
    reset_plugin_manager()
    yield
    reset_plugin_manager()


def _files(vectors_dir: Path, name: str) -> tuple[str, str, str]:
    folder = vectors_dir / name
    return (str(folder / "etdump.etdp"), str(folder / "etrecord.bin"), str(folder / "model.pte"))


def _delegate_rows(inspector: Inspector) -> dict[str, object]:
    return {
        str(e.delegate_debug_identifier): e
        for block in inspector.event_blocks
        for e in block.events
        if e.is_delegated_op
    }


# --------------------------------------------------------------------------- reading


def test_program_delegates_of_the_reference_programs(vectors_dir: Path) -> None:
    mlp = read_delegates(vectors_dir / "mlp_xnnpack" / "model.pte")
    conv = read_delegates(vectors_dir / "conv_xnnpack" / "model.pte")
    assert mlp.methods == ("forward",)
    assert [(d.method, d.instruction_id, d.backend_id, d.location) for d in mlp.delegates] == [
        ("forward", 1, "XnnpackBackend", "segment")
    ]
    assert [d.instruction_id for d in conv.delegates] == [0]
    assert mlp.at("forward", 1) is mlp.delegates[0]
    assert mlp.at("forward", 0) is None
    # the instruction ids are those the ETRecord keys its delegate calls by
    assert set(
        parse_etrecord(vectors_dir / "mlp_xnnpack" / "etrecord.bin").delegate_map["forward"]
    ) == {1}


def test_xnodes_of_the_reference_blobs(vectors_dir: Path) -> None:
    mlp = read_delegates(vectors_dir / "mlp_xnnpack" / "model.pte").delegates[0]
    conv = read_delegates(vectors_dir / "conv_xnnpack" / "model.pte").delegates[0]
    assert [(n.kind, n.debug_handle, n.has_output_min_max) for n in read_xnodes(mlp.processed)] == [
        ("FullyConnected", 1, True),
        ("FullyConnected", 3, True),
        ("Add", 5, False),
    ]
    nodes = read_xnodes(conv.processed)
    assert [n.kind for n in nodes] == ["StaticTranspose", "Conv2d", "Conv2d", "StaticTranspose"]
    # the partitioner's layout transposes carry no graph node's handle; their value ids
    # chain them to the convolutions
    assert nodes[0].debug_handle == nodes[3].debug_handle == 0xFFFF
    assert nodes[1].inputs[0] == nodes[0].output
    assert nodes[3].inputs[0] == nodes[2].output


def test_damaged_blobs_are_errors_naming_the_field(vectors_dir: Path) -> None:
    blob = bytes(read_delegates(vectors_dir / "mlp_xnnpack" / "model.pte").delegates[0].processed)
    with pytest.raises(ProgramFormatError, match="not an XNNPACK blob"):
        read_xnodes(b"\0" * 64, "blob X")
    (fb_offset,) = struct.unpack_from("<I", blob, 10)
    with pytest.raises(ProgramFormatError, match="overruns"):
        read_xnodes(blob[: fb_offset + 40], "blob X")
    with pytest.raises(ProgramFormatError, match="blob X"):
        read_xnodes(blob[:fb_offset] + blob[fb_offset : fb_offset + 8] + b"\xff" * 200, "blob X")


def test_a_pte_that_is_not_a_program(tmp_path: Path) -> None:
    bad = tmp_path / "x.pte"
    bad.write_bytes(b"\0" * 64)
    with pytest.raises(ProgramFormatError, match="not a program"):
        read_delegates(bad)


# --------------------------------------------------------------------------- placing


def _nodes(*kinds: tuple[str, int]) -> list[XNode]:
    return [XNode(i, kind, handle) for i, (kind, handle) in enumerate(kinds)]


def test_one_event_per_node_in_order() -> None:
    nodes = _nodes(("FullyConnected", 1), ("StaticReshape", 2), ("Softmax", 3))
    found = align(
        ["Fully Connected (NC, F32) GEMM #1", "Static Reshape (NC) #1", "Softmax (NC, F32) #1"],
        nodes,
    )
    assert found.handles == {
        "Fully Connected (NC, F32) GEMM #1": (1,),
        "Static Reshape (NC) #1": (2,),
        "Softmax (NC, F32) #1": (3,),
    }
    assert found.unlinked == {}


def test_a_node_without_an_operator_is_skipped_by_kind() -> None:
    # the second Add made no operator: the Add event is placed by kind, not by position
    nodes = _nodes(("FullyConnected", 1), ("Clamp", 2), ("Add", 3))
    found = align(["Fully Connected (NC, F32) GEMM #1", "Add (ND) #1"], nodes)
    assert found.handles == {"Fully Connected (NC, F32) GEMM #1": (1,), "Add (ND) #1": (3,)}


def test_a_clamp_fused_by_xnnpack_joins_its_producer() -> None:
    nodes = [
        XNode(0, "Conv2d", 1, inputs=(0, 5, 6), output=1),
        XNode(1, "Clamp", 2, inputs=(1,), output=2),
        XNode(2, "Clamp", 3, inputs=(9,), output=3),  # reads another value: not fused
    ]
    found = align(["Convolution (NHWC, F32) IGEMM #1"], nodes)
    assert found.handles == {"Convolution (NHWC, F32) IGEMM #1": (1, 2)}


def test_ambiguous_events_stay_unlinked_with_a_reason() -> None:
    # after the FC, one Transpose event and two Transpose nodes that could have made it
    nodes = _nodes(("FullyConnected", 2), ("StaticTranspose", 1), ("StaticTranspose", 3))
    found = align(["Fully Connected (NC, F32) GEMM #1", "Transpose (ND, X32) #1"], nodes)
    assert found.handles == {"Fully Connected (NC, F32) GEMM #1": (2,)}
    assert "ambiguous" in found.unlinked["Transpose (ND, X32) #1"]
    # the order alone decides where it can: a Transpose before the FC is the first node
    nodes = _nodes(("StaticTranspose", 1), ("FullyConnected", 2), ("StaticTranspose", 3))
    found = align(["Transpose (ND, X32) #1", "Fully Connected (NC, F32) GEMM #1"], nodes)
    assert found.handles["Transpose (ND, X32) #1"] == (1,)


def test_an_event_of_a_kind_the_graph_lacks_stays_unlinked() -> None:
    nodes = _nodes(("FullyConnected", 1))
    found = align(["Fully Connected (NC, F32) GEMM #1", "Softmax (NC, F32) #1", "odd"], nodes)
    assert found.handles == {"Fully Connected (NC, F32) GEMM #1": (1,)}
    assert "no node" in found.unlinked["Softmax (NC, F32) #1"]
    assert "not an XNNPACK operator event" in found.unlinked["odd"]


def test_a_program_of_another_model_links_nothing() -> None:
    nodes = _nodes(("FullyConnected", 7))
    found = align(["Fully Connected (NC, F32) GEMM #1"], nodes, handles=[1, 2])
    assert found.handles == {}
    assert "does not match the ETRecord" in found.unlinked["Fully Connected (NC, F32) GEMM #1"]


# --------------------------------------------------------------------------- the Inspector


@pytest.mark.parametrize(
    ("name", "expected"), [("mlp_xnnpack", MLP_MAP), ("conv_xnnpack", CONV_MAP)]
)
def test_every_operator_row_is_linked(
    vectors_dir: Path, name: str, expected: dict[str, list[int]]
) -> None:
    etdump, etrecord, program = _files(vectors_dir, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MLP's debug events without their buffer
        inspector = Inspector(etdump_path=etdump, etrecord=etrecord, program=program)
    rows = _delegate_rows(inspector)
    assert {k: e.debug_handles for k, e in rows.items()} == expected
    for key, event in rows.items():
        assert event.op_types, key
        assert event.module_hierarchy and event.stack_traces, key
        assert all(event.stack_traces.values()), key
        if key in OP_TYPES:
            assert event.op_types == OP_TYPES[key]
    (recovered,) = inspector.recovered_maps
    assert recovered.plugin == "xnnpack"
    assert recovered.backend_id == "XnnpackBackend"
    assert recovered.unlinked == {}
    assert {k: list(v) for k, v in recovered.handles.items()} == expected
    # every node of the delegate call is covered by an operator's handles
    record = parse_etrecord(etrecord)
    call = record.debug_handle_map["forward"][recovered.instruction_id]
    assert {h for hs in expected.values() for h in hs} == set(call)


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack"])
def test_without_the_program_nothing_changes(vectors_dir: Path, name: str) -> None:
    etdump, etrecord, program = _files(vectors_dir, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = Inspector(etdump_path=etdump, etrecord=etrecord)
        given = Inspector(etdump_path=etdump, etrecord=etrecord, program=program)
    assert plain.recovered_maps == []
    expected = json.loads((vectors_dir / name / "expected.json").read_text())
    for block, want in zip(plain.event_blocks, expected["blocks"], strict=True):
        for event, row in zip(block.events, want["events"], strict=True):
            assert event.op_types == row["op_types"]
            assert event.debug_handles == row["debug_handles"]
    # with it, only the delegate's operator rows change
    for a, b in zip(plain.event_blocks, given.event_blocks, strict=True):
        for x, y in zip(a.events, b.events, strict=True):
            if not x.is_delegated_op:
                assert (x.op_types, x.debug_handles, x.module_hierarchy) == (
                    y.op_types,
                    y.debug_handles,
                    y.module_hierarchy,
                )


def test_the_etrecord_map_wins_and_other_backends_are_left_alone(vectors_dir: Path) -> None:
    from delegate_lens import get_plugin_manager, hookimpl

    asked: list[str] = []

    class Other:
        @hookimpl
        def dl_recover_delegate_map(self, backend_id: str) -> None:
            asked.append(backend_id)

    get_plugin_manager().register(Other(), name="other")
    etdump, etrecord, program = _files(vectors_dir, "conv_xnnpack")
    inspector = Inspector(etdump_path=etdump, etrecord=etrecord, program=program)
    assert asked == ["XnnpackBackend"]  # once per delegate call, not per row
    assert inspector.recovered_maps[0].plugin == "xnnpack"


def test_by_op_type_splits_xnnpack_time_by_its_operators(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etdump, etrecord, program = _files(vectors_dir, "conv_xnnpack")
    assert main(["inspect", etdump, "--etrecord", etrecord, "--by", "op-type", "-f", "json"]) == 0
    before = json.loads(capsys.readouterr().out)
    args = ["inspect", etdump, "--etrecord", etrecord, "--program", program]
    assert main([*args, "--by", "op-type", "-f", "json"]) == 0
    after = json.loads(capsys.readouterr().out)
    keys_before = {r["op_type"]: r for r in before["op_types"]}
    keys_after = {r["op_type"]: r for r in after["op_types"]}
    # without the program: XNNPACK's operator names stand as op types, and most of its time
    # is unattributed
    assert "Convolution (NHWC, F32) IGEMM #1" in keys_before
    assert not any("(NHWC" in k or "(ND" in k for k in keys_after)
    group = keys_after["aten.convolution.default + aten.relu.default"]
    assert group["count"] == 4  # two convolutions and their two layout changes, per run
    unattributed = "XnnpackBackend (unattributed)"
    assert keys_after[unattributed]["total_time"] == keys_before[unattributed]["total_time"]
    logged = sum(r["total_time"] for k, r in keys_before.items() if "(N" in k)
    assert group["total_time"] == pytest.approx(logged)
    assert keys_after["aten.tan.default"] == keys_before["aten.tan.default"]


def test_cli_program_needs_an_etrecord(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etdump, _etrecord, program = _files(vectors_dir, "conv_xnnpack")
    with pytest.raises(SystemExit) as stop:
        main(["inspect", etdump, "--program", program])
    assert stop.value.code == 2
    assert "--etrecord" in capsys.readouterr().err


def test_cli_bad_program_is_one_line(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etdump, etrecord, _program = _files(vectors_dir, "conv_xnnpack")
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"garbage" * 10)
    with pytest.raises(SystemExit) as stop:
        main(["inspect", etdump, "--etrecord", etrecord, "--program", str(bad)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.pte" in err[0]


def test_every_view_uses_the_recovered_map(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etdump, etrecord, program = _files(vectors_dir, "conv_xnnpack")
    given = ["--etrecord", etrecord, "--program", program]
    assert main(["inspect", etdump, *given, "-f", "json"]) == 0
    rows = [
        e
        for b in json.loads(capsys.readouterr().out)["blocks"]
        for e in b["events"]
        if e.get("is_delegated_op")
    ]
    assert rows and all(e["op_types"] for e in rows)
    trace = tmp_path / "trace.json"
    assert main(["inspect", etdump, *given, "-f", "chrome-trace", "-o", str(trace)]) == 0
    assert "aten.convolution.default" in trace.read_text()
    pandas = pytest.importorskip("pandas")
    frame = Inspector(etdump_path=etdump, etrecord=etrecord, program=program).to_dataframe()
    assert isinstance(frame, pandas.DataFrame)
    delegated = frame[frame["is_delegated_op"]]
    assert all(len(ops) for ops in delegated["op_types"])
    pytest.importorskip("pyarrow")
    dataset = tmp_path / "dataset"
    assert main(["collect", etdump, *given, "-o", str(dataset), "-q"]) == 0
    import pyarrow.dataset as pads

    table = pads.dataset(dataset, format="parquet", exclude_invalid_files=True).to_table(
        columns=["event_name", "op_types", "debug_handles", "module_path"]
    )
    collected = {r["event_name"]: r for r in table.to_pylist()}
    conv = collected["Convolution (NHWC, F32) IGEMM #2"]
    assert conv["debug_handles"] == [3, 4] and conv["module_path"] == "c2"
    assert conv["op_types"] == ["aten.convolution.default", "aten.relu.default"]
