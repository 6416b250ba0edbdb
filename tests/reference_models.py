"""Small models made by the reference toolchain (ExecuTorch 1.5.1) for the numerics tests:
run as a script with the reference's Python (``conftest.REFERENCE_PYTHON``), never imported
by the tests. ``python reference_models.py OUT [NAME ...]`` writes, per model, a folder
``OUT/NAME`` with ``model.pte``, ``etrecord.bin`` (the reference's ETRecord, with the example
inputs as representative inputs), ``etdump.etdp`` and ``debug.bin`` (one traced run of every
method by the real runtime), ``inputs.pt`` (``{method: inputs}``) and ``info.json``: the largest difference of the run's outputs
from eager torch, and what the reference's ``Inspector.calculate_numeric_gap`` gave (rows,
or the error's class and message).

Models: ``two_outputs`` (``y = linear(x); return y, (y + y) * y`` on XNNPACK: one partition,
two outputs), ``attention`` (an attention block on XNNPACK: a partition whose two outputs
are ``[1, 2, 8, 16]`` and ``[1, 2, 16, 8]``, and a ``_clone_dim_order``), ``two_methods``
(``forward`` and ``decode``, on XNNPACK), ``channels_last`` (a conv in channels-last,
portable: dim-order ops run in the runtime), ``int8_linear`` (PT2E int8, per-channel
weights, on XNNPACK).
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import torch


class TwoOutputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.linear(x)
        return y, (y + y) * y


class Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.k = torch.nn.Linear(32, 32), torch.nn.Linear(32, 32)
        self.v, self.o = torch.nn.Linear(32, 32), torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(1, 8, 2, 16).transpose(1, 2)
        k = self.k(x).view(1, 8, 2, 16).transpose(1, 2)
        v = self.v(x).view(1, 8, 2, 16).transpose(1, 2)
        s = torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1)
        return self.o((s @ v).transpose(1, 2).reshape(1, 8, 32))


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


class Decoder(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tan(x) * 2.0 + x


class ChannelsLast(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x.to(memory_format=torch.channels_last))
        return torch.relu(y).contiguous() * 2.0


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 8), torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def _xnnpack() -> list[Any]:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    return [XnnpackPartitioner()]


def _quantized(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.nn.Module:
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True)
    )
    prepared = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
    prepared(*inputs)
    return convert_pt2e(prepared)


def _int8_linear() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    inputs = (torch.randn(2, 16),)
    return _quantized(Linear().eval(), inputs), inputs


def _models() -> dict[str, Any]:
    torch.manual_seed(0)
    return {
        "two_outputs": lambda: ({"forward": (TwoOutputs(), (torch.randn(2, 4),))}, _xnnpack()),
        "attention": lambda: ({"forward": (Attention(), (torch.randn(1, 8, 32),))}, _xnnpack()),
        "two_methods": lambda: (
            {
                "forward": (Encoder(), (torch.randn(2, 8),)),
                "decode": (Decoder(), (torch.randn(2, 4),)),
            },
            _xnnpack(),
        ),
        "channels_last": lambda: ({"forward": (ChannelsLast(), (torch.randn(1, 3, 8, 8),))}, []),
        "int8_linear": lambda: ({"forward": _int8_linear()}, _xnnpack()),
    }


def _value(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return {"shape": list(x.shape)}
    if isinstance(x, (list, tuple)):
        return [_value(v) for v in x]
    return repr(x)


def _gaps(folder: Path) -> Any:
    from executorch.devtools import Inspector

    try:
        inspector = Inspector(
            etdump_path=str(folder / "etdump.etdp"),
            etrecord=str(folder / "etrecord.bin"),
            debug_buffer_path=str(folder / "debug.bin"),
        )
        frame = inspector.calculate_numeric_gap("MSE")
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)[:500]}
    rows = []
    for _, row in frame.iterrows():
        rows.append(
            {
                "aot_debug_handle": list(row["aot_debug_handle"]),
                "aot_ops": list(row["aot_ops"]),
                "runtime_ops": list(row["runtime_ops"]),
                "gap": [None if math.isnan(g) else g for g in row["gap"]],
                "aot": _value(row["aot_intermediate_output"]),
                "runtime": _value(row["runtime_intermediate_output"]),
            }
        )
    return {"rows": rows}


def build(name: str, out: Path) -> None:
    from executorch.exir import to_edge_transform_and_lower
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    methods, partitioner = _models()[name]()
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    programs = {m: torch.export.export(model, inputs) for m, (model, inputs) in methods.items()}
    edge = to_edge_transform_and_lower(programs, partitioner=partitioner, generate_etrecord=True)
    program = edge.to_executorch()
    (folder / "model.pte").write_bytes(program.buffer)
    record = program.get_etrecord()
    record.update_representative_inputs([list(methods["forward"][1])])
    record.save(str(folder / "etrecord.bin"))
    torch.save({m: list(inputs) for m, (_, inputs) in methods.items()}, str(folder / "inputs.pt"))
    module = _load_for_executorch_from_buffer(
        program.buffer, enable_etdump=True, debug_buffer_size=1 << 20
    )
    worst = 0.0
    for method, (model, inputs) in methods.items():
        got = module.run_method(method, inputs)
        with torch.no_grad():
            expected = model(*inputs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for a, b in zip(got, expected):
            worst = max(worst, float((a - b).abs().max()))
    module.write_etdump_result_to_file(str(folder / "etdump.etdp"), str(folder / "debug.bin"))
    info = {"eager_max_abs_diff": worst, "methods": list(methods), "reference_gaps": _gaps(folder)}
    (folder / "info.json").write_text(json.dumps(info, indent=1))


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    names = argv[1:] or list(_models())
    for name in names:
        with contextlib.redirect_stdout(sys.stderr):
            build(name, out)
        print(name, "ok")


if __name__ == "__main__":
    main(sys.argv[1:])
