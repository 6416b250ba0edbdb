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
    def __init__(self, sizes: tuple[int, int, int] = (16, 32, 8)) -> None:
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class ChannelsLast(nn.Module):
    def __init__(self, padding: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=padding)

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


class PoolCNN(nn.Module):
    """Max and average pooling, and a ReLU and a Hardtanh XNNPACK fuses into the convolutions."""

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


class PlainBlock(nn.Module):
    """A transformer block without layer norms: attention and a GELU MLP (d=32, 4 heads)."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.attn = Attention(dim, heads, causal=False)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.out(torch.nn.functional.gelu(self.fc(x)))


class Split(nn.Module):
    """Two XNNPACK partitions: an operator XNNPACK does not take (cumsum) sits between them."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        y = torch.cumsum(y, dim=1)
        return torch.sigmoid(self.b(y))


class TwoOutputs(nn.Module):
    """One partition, two outputs: ``y`` and ``(y + y) * y``."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.linear(x)
        return y, (y + y) * y


class SeparateQKV(nn.Module):
    """Attention with separate q, k, v, o projections (d=32, 2 heads of 16, 8 tokens): its
    partition's outputs include ``[1, 2, 8, 16]`` and ``[1, 2, 16, 8]``, and a
    ``_clone_dim_order``."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k = nn.Linear(32, 32), nn.Linear(32, 32)
        self.v, self.o = nn.Linear(32, 32), nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(1, 8, 2, 16).transpose(1, 2)
        k = self.k(x).view(1, 8, 2, 16).transpose(1, 2)
        v = self.v(x).view(1, 8, 2, 16).transpose(1, 2)
        s = torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1)
        return self.o((s @ v).transpose(1, 2).reshape(1, 8, 32))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


class Decoder(nn.Module):
    """Portable ops only: XNNPACK takes no ``tan``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tan(x) * 2.0 + x


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed))


def _plain(factory: Callable[[], nn.Module], *inputs: torch.Tensor) -> Spec:
    torch.manual_seed(0)
    module = factory().eval()
    return {"methods": {"forward": (module, tuple(inputs))}}


def _module_first(factory: Callable[[], nn.Module], *shapes: tuple[int, ...]) -> Spec:
    """The module, then its inputs, both from torch's global seed 0 (the values these
    models had in the test builders they came from)."""
    torch.manual_seed(0)
    module = factory().eval()
    return {"methods": {"forward": (module, tuple(torch.randn(*s) for s in shapes))}}


def _extra(name: str) -> Spec:
    """The models built for one test module's facts (``EXTRAS``)."""
    if name == "pool_cnn":
        return _module_first(PoolCNN, (1, 3, 16, 16))
    if name == "int8_pool_cnn":
        return {**_module_first(PoolCNN, (1, 3, 16, 16)), "quantize": True}
    if name == "block":
        return _module_first(PlainBlock, (1, 8, 32))
    if name == "split":
        return _module_first(Split, (2, 8))
    listed = {"representative_inputs": "program_inputs", "reference_gaps": True}
    if name == "two_outputs":
        return {**_module_first(TwoOutputs, (2, 4)), **listed}
    if name == "separate_qkv":
        return {**_module_first(SeparateQKV, (1, 8, 32)), **listed}
    if name == "encode_decode":
        torch.manual_seed(0)
        encoder = Encoder().eval()
        encode = (encoder, (torch.randn(2, 8),))
        decode = (Decoder().eval(), (torch.randn(2, 4),))
        return {"methods": {"forward": encode, "decode": decode}, **listed}
    if name == "channels_last_unpadded":
        return {**_module_first(lambda: ChannelsLast(padding=0), (1, 3, 8, 8)), **listed}
    if name == "int8_per_channel":
        torch.manual_seed(0)
        inputs = (torch.randn(2, 16),)
        module = Linear2((16, 8, 4)).eval()
        return {"methods": {"forward": (module, inputs)}, "quantize": "per_channel", **listed}
    raise KeyError(name)


def spec(name: str) -> Spec:
    """The methods (``{method: (module, inputs)}``) and export options of zoo model ``name``:
    ``quantize`` (PT2E int8 with the XNNPACK quantizer, symmetric: ``True``, or
    ``"per_channel"`` for per-channel weights), ``dynamic`` (``{arg: {dim: (lo, hi)}}``),
    ``bundled`` (run from a bundled program), ``representative_inputs`` (``"program_inputs"``:
    the ETRecord holds ``[forward's inputs]``, one program input, whatever the methods; by
    default a one-method model's holds its inputs' list, a several-method one's none) and
    ``reference_gaps`` (the manifest records what the reference's
    ``Inspector.calculate_numeric_gap("MSE")`` gives)."""
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
    return _extra(name)


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
"""The models built on every backend of ``BACKENDS``, which the differential suite measures."""
BACKENDS = ("xnnpack", "portable")
EXTRAS = {
    "pool_cnn": ("xnnpack",),
    "int8_pool_cnn": ("xnnpack",),
    "block": ("xnnpack",),
    "split": ("xnnpack",),
    "two_outputs": ("xnnpack",),
    "separate_qkv": ("xnnpack",),
    "encode_decode": ("xnnpack",),
    "int8_per_channel": ("xnnpack",),
    "channels_last_unpadded": ("portable",),
}
"""Models a test module needs for facts of its own (``tests/test_xnnpack_programs.py``,
``tests/test_numerics_reference_models.py``), each with the backends it is built for; listed
apart (``extras`` in the zoo's top manifest), so the differential suite does not measure
them."""
