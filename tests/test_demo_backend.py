"""The demo backend: partitioning, maps (fusion/decomposition), runtime, metadata, links."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from delegate_lens.backends_demo import _metadata as demo_metadata
from delegate_lens.backends_demo._blob import BlobError, DemoBlob, DemoOp, from_bytes, to_bytes

# --------------------------------------------------------------------------- torch-free parts

# a fresh plugin manager with every installed plugin, as for a user
pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")


@given(st.text(max_size=20), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_metadata_round_trip(kernel: str, flops: int, moved: int) -> None:
    data = demo_metadata.encode({"kernel": kernel, "flops": flops, "bytes_moved": moved})
    assert demo_metadata.decode(data) == {"kernel": kernel, "flops": flops, "bytes_moved": moved}
    assert demo_metadata.parse([data, data]) == {
        "kernel": [kernel] * 2,
        "flops": [flops] * 2,
        "bytes_moved": [moved] * 2,
    }


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "truncated"),
        (b"\x02" + bytes(18), "version 2"),
        (b"\x01" + bytes(16) + b"\x05\x00ab", "header says"),
    ],
)
def test_metadata_bad_bytes(data: bytes, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        demo_metadata.decode(data)


def test_blob_round_trip_and_bad_bytes() -> None:
    import numpy as np

    blob = DemoBlob(
        4,
        [0],
        [3],
        {1: np.arange(6, dtype=np.float32).reshape(2, 3)},
        [DemoOp("linear", 0, [0, 1, -1], 3, {"transpose_w": True}, 12, 48)],
        "sum",
        12,
        48,
    )
    data = to_bytes(blob)
    back = from_bytes(data)
    assert back.ops == blob.ops and back.summary_identifier == "sum"
    assert np.array_equal(back.constants[1], blob.constants[1])
    for bad, match in [
        (b"xx", "truncated"),
        (b"NOPE" + data[4:], "magic"),
        (data[:-1], "header says"),
    ]:
        with pytest.raises(BlobError, match=match):
            from_bytes(bad)


def test_plugin_is_built_in_and_answers_only_its_backend() -> None:
    from delegate_lens.pluginmanager import get_plugin_manager

    pm = get_plugin_manager()
    plugin = pm.get_plugin("demo_backend")
    assert plugin is not None and plugin.__name__ == "delegate_lens.backends_demo._plugin"
    assert plugin.dl_runtime_backend(backend_id="Other") is None
    assert plugin.dl_parse_delegate_metadata(backend_id="Other", metadatas=[b""]) is None
    data = pm.hook.dl_encode_delegate_metadata(
        backend_id="DemoBackend", metadata={"kernel": "k", "flops": 1, "bytes_moved": 2}
    )
    assert pm.hook.dl_parse_delegate_metadata(backend_id="DemoBackend", metadatas=[data]) == {
        "kernel": ["k"],
        "flops": [1],
        "bytes_moved": [2],
    }


# --------------------------------------------------------------------------- with torch


def _lower(model: str, identifiers: str = "int") -> tuple[Any, Any, tuple[Any, ...]]:
    import torch

    import delegate_lens as dl
    from delegate_lens.backends_demo import DemoPartitioner
    from delegate_lens.backends_demo._models import make_model

    module, inputs = make_model(model)
    ep = torch.export.export(module, inputs)
    specs = [dl.CompileSpec("identifiers", identifiers.encode())]
    edge = dl.to_edge_transform_and_lower(ep, partitioner=[DemoPartitioner(specs)])
    return module, edge.to_program(), inputs


@pytest.mark.torch
@pytest.mark.parametrize("model", ["mlp", "convnet", "gpt"])
def test_outputs_equal_eager(model: str) -> None:
    import torch

    from delegate_lens.runtime import Program

    module, manager, inputs = _lower(model)
    assert manager.program.delegates, "nothing was delegated"
    assert {d.backend_id for d in manager.program.delegates} == {"DemoBackend"}
    outputs = Program.load(manager.buffer).load_method().execute(list(inputs))
    with torch.no_grad():
        torch.testing.assert_close(outputs[0], module(*inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.torch
@pytest.mark.parametrize("identifiers", ["int", "str"])
def test_maps_show_fusion_decomposition_and_summary(identifiers: str) -> None:
    _, manager, _ = _lower("convnet", identifiers)
    [(iid0, first), *_rest] = sorted(manager.delegate_map["forward"].items())
    dmap = first["delegate_map"]
    assert first["name"] == "DemoBackend"
    idents = list(dmap)
    assert all(isinstance(i, int if identifiers == "int" else str) for i in idents)
    if identifiers == "int":
        assert idents == list(range(len(idents)))  # generated: dense from 0
    # fusion: conv + relu -> one identifier, two handles (twice in the convnet)
    fused = [i for i, h in dmap.items() if len(h) == 2]
    assert len(fused) == 2
    # decomposition: tan -> three identifiers sharing one handle
    by_handles: dict[tuple[int, ...], list[Any]] = {}
    for ident, handles in dmap.items():
        by_handles.setdefault(tuple(handles), []).append(ident)
    assert any(len(v) == 3 and len(k) == 1 for k, v in by_handles.items())
    # the summary identifier covers every handle of the partition
    all_handles = tuple(sorted(manager.debug_handle_map["forward"][iid0]))
    assert tuple(sorted(dmap[idents[-1]])) == all_handles
    if identifiers == "str":
        assert idents[-1] == "DemoBackend/partition"
        assert any(str(i).startswith("conv2d_relu#") for i in fused)
        assert sorted(
            k.split("#")[0]
            for k in by_handles[next(k for k, v in by_handles.items() if len(v) == 3)]
        ) == [
            "tan/cos",
            "tan/div",
            "tan/sin",
        ]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model", "identifiers"), [("convnet", "int"), ("gpt", "str"), ("mlp", "str")]
)
def test_every_logged_identifier_links_back(model: str, identifiers: str) -> None:
    from delegate_lens.etdump import EventKind, loads
    from delegate_lens.pluginmanager import get_plugin_manager
    from delegate_lens.runtime import ETDumpGen, Program

    _, manager, inputs = _lower(model, identifiers)
    clock = itertools.count(0, 7)
    gen = ETDumpGen(debug_buffer_size=1 << 20, clock=lambda: next(clock))
    method = Program.load(manager.buffer).load_method(event_tracer=gen)
    for _ in range(2):
        method.execute(list(inputs))
    delegate_map = manager.delegate_map["forward"]
    pm = get_plugin_manager()
    seen: dict[int, set[Any]] = {}
    for run in loads(gen.get_etdump_data()).run_data[1:]:
        cols = run.columns
        for i in range(len(cols)):
            ident: Any
            if cols.delegate_debug_id_int[i] >= 0:
                ident = int(cols.delegate_debug_id_int[i])
            elif cols.delegate_debug_id_str[i] >= 0:
                ident = cols.string(int(cols.delegate_debug_id_str[i]))
            else:
                continue
            iid = int(cols.instruction_id[i])
            assert iid in delegate_map, f"event {i} of instruction {iid} is not a delegate call"
            assert ident in delegate_map[iid]["delegate_map"], (
                f"identifier {ident!r} not in the map"
            )
            seen.setdefault(iid, set()).add(ident)
            if cols.kind[i] == EventKind.PROFILE:
                parsed = pm.hook.dl_parse_delegate_metadata(
                    backend_id="DemoBackend", metadatas=[cols.metadata(i)]
                )
                assert parsed["kernel"][0].startswith("demo_")
                assert parsed["flops"][0] > 0
    # every identifier of every map was logged
    assert {iid: set(entry["delegate_map"]) for iid, entry in delegate_map.items()} == seen


@pytest.mark.torch
def test_untraced_delegate_runs_and_partitioner_leaves_unsupported_ops() -> None:
    import torch

    import delegate_lens as dl
    from delegate_lens.backends_demo import DemoPartitioner
    from delegate_lens.runtime import Program

    class M(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.exp(torch.sin(x) * 2.0) + torch.cos(x).cumsum(0)

    x = torch.randn(5)
    ep = torch.export.export(M(), (x,))
    edge = dl.to_edge_transform_and_lower(ep, partitioner=[DemoPartitioner()])
    manager = edge.to_program()
    ops = [getattr(i, "op", None) for i in manager.program.methods[0].instructions]
    assert "aten.exp.default" in ops and "aten.sin.default" not in ops
    (out,) = Program.load(manager.buffer).load_method().execute([x])
    torch.testing.assert_close(out, M()(x), rtol=1e-5, atol=1e-5)
