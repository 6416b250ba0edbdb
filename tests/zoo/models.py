"""The zoo's models: small torch modules and their example inputs (run by the reference's
Python; see ``build.py``). Each entry gives the methods (name -> module, inputs) and how to
export them. Torch only; nothing of delegate-lens or executorch is imported here."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

Spec = dict[str, Any]


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
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(self.avg(x), 1))


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        if self.causal:
            mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
            att = att.masked_fill(~mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2, causal: bool = False) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, causal)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int = 32, dim: int = 16, layers: int = 2, tokens: int = 8) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(tokens, dim)
        self.blocks = nn.ModuleList([Block(dim, 2, causal=True) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


class SmallConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3)
        self.conv2 = nn.Conv2d(8, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(torch.relu(self.conv1(x)))


class Linear2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class ChannelsLast(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x.to(memory_format=torch.channels_last))
        return torch.relu(y).contiguous() * 2.0


class MultiOut(nn.Module):
    """A partition with several outputs: ``y`` and ``(y + y) * y`` both leave the delegate."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.sigmoid(self.fc(x))
        z = (y + y) * y
        return y, z.transpose(0, 1)


class Scale(nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x)) * self.factor


class Dynamic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + x[:, :4]


class InfConst(nn.Module):
    """+inf and -inf constants: a clamp to finite bounds, a max with -inf and a masked fill."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.maximum(x, torch.full_like(x, float("-inf")))
        y = torch.clamp(y * 2.0, min=-3.0, max=3.0)
        z = torch.where(x > 0, y, torch.tensor(float("inf")))
        return torch.minimum(z, torch.tensor(4.0)) + torch.abs(y)


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed))


def _plain(factory: Callable[[], nn.Module], *inputs: torch.Tensor) -> Spec:
    torch.manual_seed(0)
    module = factory().eval()
    return {"methods": {"forward": (module, tuple(inputs))}}


def spec(name: str) -> Spec:
    """The methods (``{method: (module, inputs)}``) and export options of zoo model ``name``."""
    if name == "mlp":
        return _plain(MLP, _randn(2, 16))
    if name == "cnn":
        return _plain(CNN, _randn(1, 3, 8, 8))
    if name == "transformer":
        return _plain(Block, _randn(1, 8, 16))
    if name == "gpt":
        return _plain(GPT, torch.randint(0, 32, (1, 8), generator=_g(1)))
    if name == "int8_cnn":
        return {**_plain(SmallConv, _randn(1, 3, 8, 8)), "quantize": True}
    if name == "int8_linear":
        return {**_plain(Linear2, _randn(2, 16)), "quantize": True}
    if name == "channels_last":
        return _plain(ChannelsLast, _randn(1, 3, 6, 6))
    if name == "multi_output":
        return _plain(MultiOut, _randn(4, 8))
    if name == "two_methods":
        torch.manual_seed(0)
        return {
            "methods": {
                "forward": (Scale(2.0).eval(), (_randn(2, 8),)),
                "other": (Scale(-0.5).eval(), (_randn(3, 8, seed=2),)),
            }
        }
    if name == "dynamic":
        return {**_plain(Dynamic, _randn(3, 8)), "dynamic": {"x": {0: (1, 8)}}}
    if name == "inf_constants":
        return _plain(InfConst, _randn(2, 6))
    if name == "bundled":
        return {**_plain(MLP, _randn(2, 16, seed=3)), "bundled": True}
    raise KeyError(name)


NAMES = (
    "mlp",
    "cnn",
    "transformer",
    "gpt",
    "int8_cnn",
    "int8_linear",
    "channels_last",
    "multi_output",
    "two_methods",
    "dynamic",
    "inf_constants",
    "bundled",
)
BACKENDS = ("xnnpack", "portable")
