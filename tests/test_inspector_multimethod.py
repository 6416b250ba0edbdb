"""End to end with two methods: export, lower, program + ETRecord, runs of both methods
traced alternately, and the Inspector linking each run to its own method (the reference
fails on such an ETRecord)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

pytestmark = [pytest.mark.torch]


def test_each_method_s_runs_link_to_that_method() -> None:
    import torch

    import delegate_lens as dl
    from delegate_lens.inspector import Inspector
    from delegate_lens.runtime import ETDumpGen, Program

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.proj(x))

    class Decoder(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tan(x) * 2.0

    x = torch.randn(2, 8)
    y = torch.randn(2, 4)
    programs = {
        "forward": torch.export.export(Encoder(), (x,)),
        "decode": torch.export.export(Decoder(), (y,)),
    }
    edge = dl.to_edge(programs, generate_etrecord=True)
    manager = edge.to_program()
    record = manager.get_etrecord()
    assert set(record.methods) == {"forward", "decode"}

    program = Program.load(manager.buffer)
    tracer = ETDumpGen()
    forward = program.load_method("forward", event_tracer=tracer)
    decode = program.load_method("decode", event_tracer=tracer)
    with torch.no_grad():
        for _ in range(3):
            forward.execute([x])
            decode.execute([y])

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
