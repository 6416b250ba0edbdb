"""Export small models to XNNPACK with the reference toolchain and run them with ETDump.

Run as a script in a subprocess (it imports torch and executorch, which the plugin and its
tests never do): ``python xnnpack_models.py OUT_DIR [NAME ...]`` writes, per model,
``OUT_DIR/NAME/{model.pte, etrecord.bin, etdump.etdp}``. The names are those of
:data:`MODELS`. Merging with the shared zoo (``tests/zoo/``): see this plugin's README.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

RUNS = 3


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc2(torch.relu(self.fc1(x)))) + 1.0


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.act2 = nn.Hardtanh(0.0, 6.0)
        self.pool2 = nn.AvgPool2d(2)
        self.head = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(torch.relu(self.conv1(x)))
        x = self.pool2(self.act2(self.conv2(x)))
        return self.head(torch.flatten(x, 1))


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / (d // self.heads) ** 0.5), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.attn = Attention(d, heads)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.out(torch.nn.functional.gelu(self.fc(x)))


class Split(nn.Module):
    """Two XNNPACK partitions: an operator XNNPACK does not take sits between them."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        y = torch.cumsum(y, dim=1)
        return torch.sigmoid(self.b(y))


def _float(model: nn.Module, example: tuple[torch.Tensor, ...]) -> Any:
    return torch.export.export(model.eval(), example)


def _int8(model: nn.Module, example: tuple[torch.Tensor, ...]) -> Any:
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    graph = torch.export.export(model.eval(), example).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(graph, quantizer)
    prepared(*example)
    return torch.export.export(convert_pt2e(prepared), example)


MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...], str]] = {
    "mlp": (MLP, (4, 16), "float"),
    "cnn": (CNN, (1, 3, 16, 16), "float"),
    "block": (Block, (1, 8, 32), "float"),
    "int8": (CNN, (1, 3, 16, 16), "int8"),
    "split": (Split, (2, 8), "float"),
}


def build(name: str, out: Path) -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    make, shape, kind = MODELS[name]
    torch.manual_seed(0)
    model = make()
    example = (torch.randn(*shape),)
    exported = (_int8 if kind == "int8" else _float)(model, example)
    manager = to_edge_transform_and_lower(
        exported, partitioner=[XnnpackPartitioner()], generate_etrecord=True
    )
    program = manager.to_executorch()
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pte").write_bytes(program.buffer)
    program.get_etrecord().save(str(folder / "etrecord.bin"))
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    module = _load_for_executorch_from_buffer(program.buffer, enable_etdump=True)
    for _ in range(RUNS):
        module.run_method("forward", example)
    module.write_etdump_result_to_file(str(folder / "etdump.etdp"), None)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    for name in argv[1:] or list(MODELS):
        build(name, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
