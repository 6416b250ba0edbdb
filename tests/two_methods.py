"""A two-method program (``forward``: Linear + ReLU, ``decode``: tan * 2) lowered to nothing,
with its runs traced alternately: what the multi-method tests share. Needs torch."""

from __future__ import annotations

from typing import Any


def traced_encoder_decoder(runs: int = 3) -> tuple[Any, Any]:
    """``(program manager, ETDumpGen)`` after ``runs`` runs of each method, alternately."""
    import torch

    import delegate_lens as dl
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

    x, y = torch.randn(2, 8), torch.randn(2, 4)
    programs = {
        "forward": torch.export.export(Encoder(), (x,)),
        "decode": torch.export.export(Decoder(), (y,)),
    }
    manager = dl.to_edge(programs, generate_etrecord=True).to_program()
    program = Program.load(manager.buffer)
    tracer = ETDumpGen()
    forward = program.load_method("forward", event_tracer=tracer)
    decode = program.load_method("decode", event_tracer=tracer)
    with torch.no_grad():
        for _ in range(runs):
            forward.execute([x])
            decode.execute([y])
    return manager, tracer
