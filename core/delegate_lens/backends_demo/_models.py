"""The small models ``delegate-lens demo`` runs (torch; deterministic weights)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class TinyMLP(nn.Module):
    """Linear+ReLU (fused by the backend), Linear, tan (decomposed), +1, softmax (portable)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.fc1(x))
        y = torch.tan(self.fc2(y)) + 1.0
        return torch.softmax(y, dim=-1)


class ConvNet(nn.Module):
    """Conv+ReLU twice (fused), tan (decomposed), a portable mean, then Linear+sigmoid."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        y = torch.tan(torch.relu(self.conv2(y)))
        y = y.mean(dim=(2, 3))
        return torch.sigmoid(self.head(y))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, seq: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        mask: torch.Tensor = self.mask  # type: ignore[assignment]
        att = att.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(torch.relu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    """A 2-layer GPT (d=32, 2 heads, 8 tokens, vocab 64): linears on the backend, the rest portable."""

    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 2, seq: int = 8) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList([_Block(dim, heads, seq) for _ in range(2)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.seq = seq

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1])
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def _mlp() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return TinyMLP(), (torch.randn(2, 16),)


def _convnet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return ConvNet(), (torch.randn(1, 3, 16, 16),)


def _gpt() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return TinyGPT(), (torch.randint(0, 64, (1, 8)),)


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
    "mlp": _mlp,
    "convnet": _convnet,
    "gpt": _gpt,
}


def make_model(name: str, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """``(model in eval mode, example inputs)`` for ``name``, with seeded weights."""
    torch.manual_seed(seed)
    model, inputs = MODELS[name]()
    return model.eval(), inputs
