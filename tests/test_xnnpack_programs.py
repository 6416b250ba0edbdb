"""The XNNPACK plugin (``plugins/xnnpack``) on programs the reference toolchain exports and
runs: the zoo's models on XNNPACK (``tests/zoo``), among them an MLP (``mlp``), a CNN with
pooling and fused activations (``pool_cnn``), a transformer block (``block``: several
partitions around the portable ops XNNPACK leaves), an int8 PT2E-quantized CNN
(``int8_pool_cnn``) and a model split in two partitions by an op XNNPACK does not take
(``split``).

Every operator event must be linked, to handles of its own delegate call, to nodes whose
op types fit its XNNPACK operator type; together they cover every node of the call (the
test kit's ``no-orphan-events`` and ``delegated-nodes-covered``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from conftest import needs_reference
from zoo import ZOO_NAMES, zoo_model

from delegate_lens.cli import main
from delegate_lens.etrecord import parse_etrecord
from delegate_lens.inspector import Inspector

pytest.importorskip("delegate_lens_xnnpack")

MODELS = ("mlp", "pool_cnn", "block", "int8_pool_cnn", "split")
"""The zoo's models (``mlp``; the others are extras, ``zoo.ZOO_EXTRAS``) whose every operator
event is checked here."""

FITS: dict[str, tuple[str, ...]] = {
    "Fully Connected": ("linear", "addmm", "mm"),
    "Convolution": ("convolution",),
    "Max Pooling": ("max_pool2d", "max_pool2d_with_indices"),
    "Average Pooling": ("avg_pool2d",),
    "Static Reshape": ("view_copy", "expand_copy", "_clone_dim_order", "squeeze_copy"),
    "Transpose": (
        "permute_copy",
        "convolution",
        "avg_pool2d",
        "mean",
        "quantize_per_tensor",
        "_to_dim_order_copy",
    ),
    "Mean": ("mean",),
    "Global Average Pooling": ("mean", "avg_pool2d", "adaptive_avg_pool2d"),
    "Copy": ("_clone_dim_order", "clone", "_to_dim_order_copy"),
    "Clamp": ("clamp", "hardtanh", "relu"),
    "Maximum": ("maximum",),
    "Minimum": ("minimum",),
    "Abs": ("abs",),
    "TanH": ("tanh",),
    "Batch Matrix Multiply": ("bmm",),
    "Softmax": ("_softmax",),
    "GELU": ("gelu",),
    "Add": ("add",),
    "Multiply": ("mul",),
    "Sigmoid": ("sigmoid",),
    "Convert": ("quantize_per_tensor", "dequantize_per_tensor"),
}
"""XNNPACK operator type -> the edge ops its node may come from (a layout transpose is
charged with the node it converts for)."""

EXACT = {
    "mlp": [
        {
            "Fully Connected (NC, F32) GEMM #1": [1, 2],
            "Fully Connected (NC, F32) GEMM #2": [3, 4],
            "Add (ND) #1": [5],
        }
    ],
    "split": [
        {"Fully Connected (NC, F32) GEMM #1": [1, 2]},
        {"Fully Connected (NC, F32) GEMM #1": [4], "Sigmoid (NC) #1": [5]},
    ],
}
"""Whole maps of the small models, per delegate call in program order."""


def _xnnpack(name: str) -> Path:
    """The folder of zoo model ``name`` on XNNPACK (the zoo is built on first use)."""
    return zoo_model(name, "xnnpack")


def _inspect(folder: Path, program: bool = True) -> Inspector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", message=".*recovered by plugin")  # an unlinked event
        return Inspector(
            etdump_path=folder / "etdump.etdp",
            etrecord=folder / "etrecord.bin",
            program=folder / "model.pte" if program else None,
        )


def _fits(kind: str, op_types: list[str]) -> bool:
    names = {op.split(".")[-2] for op in op_types if op.count(".") >= 2}
    return any(n in names for n in FITS[kind])


def _weight_dequantize(graph: object, handle: int) -> bool:
    nodes = graph.nodes_for_handles(handle)  # type: ignore[attr-defined]
    return bool(nodes) and all(n.op_type.endswith("dequantize_per_tensor.default") for n in nodes)


RUN_NOTHING = ("dequantize_per_tensor.default", "_clone_dim_order.default")
"""Delegated nodes that make no XNNPACK operator: the weights' dequantize (folded into the
packed weights) and a no-op clone (dropped by the partitioner)."""


def _check_linked(folder: Path) -> int:
    """Every operator event of the program in ``folder`` linked within its own delegate
    call, to nodes that fit its operator type; the calls' nodes covered but those that run
    nothing. The number of delegate calls."""
    inspector = _inspect(folder)
    record = parse_etrecord(folder / "etrecord.bin")
    maps = inspector.recovered_maps
    assert all(m.plugin == "xnnpack" and not m.unlinked for m in maps), [m.unlinked for m in maps]
    for block in inspector.event_blocks:
        calls = record.debug_handle_map[block.method or "forward"]
        for event in block.events:
            if not event.is_delegated_op:
                continue
            ident = str(event.delegate_debug_identifier)
            handles = event.debug_handles
            assert isinstance(handles, list) and handles, ident
            assert set(handles) <= set(calls[event.instruction_id]), ident
            assert _fits(ident.split(" (", 1)[0], event.op_types), (ident, event.op_types)
    for found in maps:
        graph = record.graph(found.method)
        covered = {h for hs in found.handles.values() for h in hs}
        for h in set(record.debug_handle_map[found.method][found.instruction_id]) - covered:
            ops = graph.op_types(h)
            assert ops and all(op.endswith(RUN_NOTHING) for op in ops), (found.instruction_id, h)
    return len(maps)


pytestmark = [needs_reference, pytest.mark.slow]


@pytest.mark.parametrize("name", MODELS)
def test_every_operator_event_is_linked_to_its_own_nodes(name: str) -> None:
    folder = _xnnpack(name)
    inspector = _inspect(folder)
    record = parse_etrecord(folder / "etrecord.bin")
    calls = record.debug_handle_map["forward"]
    maps = inspector.recovered_maps
    assert maps and all(m.plugin == "xnnpack" and not m.unlinked for m in maps)
    assert len(maps) == len(record.delegate_map["forward"])  # every delegate call
    rows = 0
    for block in inspector.event_blocks:
        for event in block.events:
            if not event.is_delegated_op:
                continue
            rows += 1
            ident = str(event.delegate_debug_identifier)
            handles = event.debug_handles
            assert isinstance(handles, list) and handles, ident
            # no-orphan-events: linked, within its own delegate call's handles
            assert set(handles) <= set(calls[event.instruction_id]), ident
            kind = ident.split(" (", 1)[0]
            assert _fits(kind, event.op_types), (ident, event.op_types)
            assert event.module_hierarchy and event.stack_traces, ident
    assert rows == sum(len(m.handles) for m in maps)
    graph = record.graph("forward")
    for found in maps:  # delegated-nodes-covered
        covered = {h for hs in found.handles.values() for h in hs}
        left = set(calls[found.instruction_id]) - covered
        # what runs no operator: the weights' dequantize nodes of the int8 model, folded
        # into XNNPACK's packed weights
        assert all(_weight_dequantize(graph, h) for h in left), (found.instruction_id, left)
        assert bool(left) == (name == "int8_pool_cnn")


@pytest.mark.parametrize("name", sorted(EXACT))
def test_whole_maps_of_the_small_models(name: str) -> None:
    maps = _inspect(_xnnpack(name)).recovered_maps
    assert [{k: list(v) for k, v in m.handles.items()} for m in maps] == EXACT[name]


def test_fused_activations_and_layout_changes() -> None:
    cnn = {
        str(e.delegate_debug_identifier): e.op_types
        for b in _inspect(_xnnpack("pool_cnn")).event_blocks
        for e in b.events
        if e.is_delegated_op
    }
    # relu and hardtanh fused ahead of time into the convolutions' output_min_max
    assert cnn["Convolution (NHWC, F32) IGEMM #1"] == [
        "aten.convolution.default",
        "aten.relu.default",
    ]
    assert cnn["Convolution (NHWC, F32) IGEMM #2"] == [
        "aten.convolution.default",
        "aten.hardtanh.default",
    ]
    # the partitioner's NCHW -> NHWC transpose goes with the conv it feeds, the NHWC -> NCHW
    # one with the pooling it follows
    assert cnn["Transpose (ND, X32) #1"] == cnn["Convolution (NHWC, F32) IGEMM #1"]
    assert cnn["Transpose (ND, X32) #2"] == ["aten.avg_pool2d.default"]
    int8 = {
        str(e.delegate_debug_identifier): e.debug_handles
        for b in _inspect(_xnnpack("int8_pool_cnn")).event_blocks
        for e in b.events
        if e.is_delegated_op
    }
    # a clamp node XNNPACK fuses into the conv before it at runtime
    conv2, convert2 = int8["Convolution (NHWC, QS8) IGEMM #2"], int8["Convert (NC) #2"]
    assert isinstance(conv2, list) and isinstance(convert2, list)
    assert len(conv2) == 2 and conv2[1] == convert2[0]


def test_by_op_type_and_module_split_xnnpack_time(capsys: pytest.CaptureFixture[str]) -> None:
    folder = _xnnpack("block")
    files = [str(folder / "etdump.etdp"), "--etrecord", str(folder / "etrecord.bin")]
    program = ["--program", str(folder / "model.pte")]
    assert main(["inspect", *files, "--by", "op-type", "-f", "json"]) == 0
    before = {r["op_type"]: r for r in json.loads(capsys.readouterr().out)["op_types"]}
    assert main(["inspect", *files, *program, "--by", "op-type", "-f", "json"]) == 0
    after = {r["op_type"]: r for r in json.loads(capsys.readouterr().out)["op_types"]}
    assert any(" #" in k for k in before)
    assert not any(" #" in k for k in after)  # no XNNPACK operator name left as an op type
    assert "aten.gelu.default" in after and "aten._softmax.default" in after
    assert main(["inspect", *files, *program, "--by", "module", "-f", "json"]) == 0
    modules = json.loads(capsys.readouterr().out)
    text = json.dumps(modules)
    assert "attn.qkv" in text and "attn.proj" in text


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_the_zoo_on_xnnpack(name: str) -> None:
    """Every model of the shared zoo (``tests/zoo``) that every backend is built for, lowered
    to XNNPACK (the extras above are checked by the test of every operator event)."""
    assert _check_linked(_xnnpack(name)) >= 1
