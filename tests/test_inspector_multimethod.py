"""End to end with two methods: export, lower, program + ETRecord, runs of both methods
traced alternately, and the Inspector linking each run to its own method (the reference
fails on such an ETRecord)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

pytestmark = [pytest.mark.torch]


def test_each_method_s_runs_link_to_that_method() -> None:
    from two_methods import traced_encoder_decoder

    from delegate_lens.inspector import Inspector

    manager, tracer = traced_encoder_decoder(runs=3)
    record = manager.get_etrecord()
    assert set(record.methods) == {"forward", "decode"}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inspector = Inspector(etdump_data=tracer.get_etdump_data(), etrecord=record)
    execute = [b for b in inspector.event_blocks if b.name == "Execute"]
    assert sorted(b.method or "" for b in execute) == ["decode", "forward"]
    for block in execute:
        assert len(block.run_indices) == 3
        graph = record.graph(block.method or "")
        method_ops = {node.op_type for node in graph.nodes}
        kernels = [e for e in block.events if e.name.startswith("native_call_")]
        assert kernels
        for event in kernels:
            assert event.method == block.method
            assert event.op_types and set(event.op_types) <= method_ops
    ops: dict[str, Any] = {
        b.method: sorted({t for e in b.events for t in e.op_types}) for b in execute
    }
    assert "aten.tan.default" in ops["decode"] and "aten.tan.default" not in ops["forward"]
    assert any("linear" in t or "addmm" in t for t in ops["forward"])


def _trace_alternately(programs: dict[str, Any], x: Any, lower: bool) -> tuple[Any, Any]:
    """Program + ETRecord of ``programs`` (lowered to the demo backend when ``lower``), and
    the ETDump of three rounds running every method in turn."""
    import torch

    import delegate_lens as dl
    from delegate_lens.runtime import ETDumpGen, Program

    exported = {name: torch.export.export(m, (x,)) for name, m in programs.items()}
    if lower:
        from delegate_lens.backends_demo._partitioner import DemoPartitioner

        edge = dl.to_edge_transform_and_lower(
            exported, partitioner=[DemoPartitioner([])], generate_etrecord=True
        )
    else:
        edge = dl.to_edge(exported, generate_etrecord=True)
    manager = edge.to_program()
    program = Program.load(manager.buffer)
    tracer = ETDumpGen()
    methods = [program.load_method(name, event_tracer=tracer) for name in programs]
    with torch.no_grad():
        for _ in range(3):
            for method in methods:
                method.execute([x])
    return tracer.get_etdump_data(), manager.get_etrecord()


def test_delegated_methods_link_by_their_delegate_events() -> None:
    """Both methods: one demo-backend delegate call, then softmax; only the events the
    delegate logs (and its Debug Handle Map) tell the runs apart."""
    import torch

    from delegate_lens.inspector import Inspector

    class LinearRelu(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(torch.relu(self.proj(x)), -1)

    class Tan(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(torch.tan(x), -1)

    etdump, record = _trace_alternately(
        {"forward": LinearRelu(), "other": Tan()}, torch.randn(2, 8), lower=True
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inspector = Inspector(etdump_data=etdump, etrecord=record)
    execute = [b for b in inspector.event_blocks if b.name == "Execute"]
    assert [(b.method, b.run_indices) for b in execute] == [
        ("forward", [1, 3, 5]),
        ("other", [2, 4, 6]),
    ]
    for block in execute:
        delegated = [e for e in block.events if e.is_delegated_op]
        assert delegated
        for event in delegated:
            assert event.method == block.method and event.delegate_backend_name == "DemoBackend"
            written = record.delegate_handles(
                block.method, event.instruction_id, event.delegate_debug_identifier
            )
            expected = [written] if isinstance(written, int) else list(written)
            got = event.debug_handles
            assert ([got] if isinstance(got, int) else got) == expected
    tan_ops = {t for e in execute[1].events if e.is_delegated_op for t in e.op_types}
    assert tan_ops == {"aten.tan.default"}
    linear_ops = {t for e in execute[0].events if e.is_delegated_op for t in e.op_types}
    assert "aten.tan.default" not in linear_ops and "aten.relu.default" in linear_ops


def test_methods_the_run_cannot_tell_apart_warn_and_stay_unlinked() -> None:
    import torch

    from delegate_lens.inspector import Inspector, InspectorWarning

    class AddOne(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    class AddTwo(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 2

    etdump, record = _trace_alternately(
        {"forward": AddOne(), "other": AddTwo()}, torch.randn(2, 8), lower=False
    )
    with pytest.warns(
        InspectorWarning, match=r"fits several ETRecord methods \('forward', 'other'\)"
    ):
        inspector = Inspector(etdump_data=etdump, etrecord=record)
    (execute,) = [b for b in inspector.event_blocks if b.name == "Execute"]
    assert execute.method is None and len(execute.run_indices) == 6
    assert all(e.op_types == [] and e.method is None for e in execute.events)
