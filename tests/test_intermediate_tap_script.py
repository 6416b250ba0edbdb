"""A script written against ExecuTorch 1.5.1's API (``executorch.devtools.intermediate_output_tap``
and the flows of its tutorial: the one-shot ``tap_compare``, the step-by-step pipeline with
``strip_taps_`` and the runtime, per-layer selection in a small transformer) runs against
delegate-lens with only its imports changed.

The import changes are the table :data:`IMPORTS`: the XNNPACK partitioner becomes the demo
backend's. ``executorch.runtime`` (``Runtime.get().load_program(path, verification=...)``)
has no face in delegate-lens yet; :data:`RUNTIME_FACE` stands in for it here, five lines over
``delegate_lens.runtime.Program``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("builtin_plugins_only")]

SCRIPT = """
import math
import os
import tempfile

import torch
import torch.utils._pytree as pytree
from torch.export import export

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.devtools.backend_debug import get_delegation_info
from executorch.devtools.intermediate_output_tap import (
    FULL_TENSOR,
    STATS,
    compare_aot_runtime_dataframe,
    select_all,
    select_by_module_class,
    select_by_module_path,
    select_by_op_type,
    strip_taps_,
    tap_compare,
    tap_intermediate_outputs_,
)
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime, Verification


class TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.l2(self.l1(x).relu())


def rules_for_two_layers():
    linear = select_by_op_type("aten.linear.default")
    return [
        (select_all(linear, select_by_module_path("l1")), FULL_TENSOR),
        (select_all(linear, select_by_module_path("l2")), STATS),
    ]


def check(df, specs, expected_taps):
    assert len(specs) == expected_taps, specs
    for _, row in df.iterrows():
        if row["reducer_name"] == "FULL_TENSOR":
            assert row["sqnr_db"] > 30.0, row
        else:
            assert math.isclose(row["aot_mean"], row["rt_mean"], rel_tol=1e-3, abs_tol=1e-5), row


torch.manual_seed(0)
results = {}

# 1. one call
model = TwoLayers()
example_inputs = (torch.randn(2, 8),)
df, specs = tap_compare(
    model, example_inputs, partitioner=[XnnpackPartitioner()], rules=rules_for_two_layers()
)
check(df, specs, 2)
assert {s.reducer_name for s in specs} == {"FULL_TENSOR", "STATS"}
assert "sqnr_db" in df.columns and "aot_min" in df.columns
results["one_call"] = df

# 2. step by step
ep = export(model, example_inputs, strict=True)
ep_t, specs = tap_intermediate_outputs_(ep, rules_for_two_layers())
aot_flat, _ = pytree.tree_flatten(ep_t.module()(*example_inputs))
edge = to_edge_transform_and_lower(ep_t, partitioner=[XnnpackPartitioner()])
strip_taps_(edge)
info = get_delegation_info(edge.exported_program().graph_module)
assert info.num_delegated_subgraphs == 1
summary = info.get_summary()
et_program = edge.to_executorch()
with tempfile.TemporaryDirectory() as temp_dir:
    pte_path = os.path.join(temp_dir, "model.pte")
    et_program.save(pte_path)
    runtime = Runtime.get()
    program = runtime.load_program(pte_path, verification=Verification.Minimal)
    method = program.load_method("forward")
    flat_inputs, _ = pytree.tree_flatten(example_inputs)
    rt_flat = list(method.execute(flat_inputs))
df = compare_aot_runtime_dataframe(specs, aot_flat, rt_flat)
check(df, specs, 2)
results["step_by_step"] = df


# 3. per-layer selection in a small transformer
class RMSNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.wq = torch.nn.Linear(dim, dim, bias=False)
        self.wk = torch.nn.Linear(dim, dim, bias=False)
        self.wv = torch.nn.Linear(dim, dim, bias=False)
        self.wo = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q = self.wq(x).view(b, t, h, d // h).transpose(1, 2)
        k = self.wk(x).view(b, t, h, d // h).transpose(1, 2)
        v = self.wv(x).view(b, t, h, d // h).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // h) ** 0.5, dim=-1)
        return self.wo((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn_norm = RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = torch.nn.Linear(dim, 2 * dim)
        self.w2 = torch.nn.Linear(2 * dim, dim)

    def forward(self, x):
        x = x + self.attention(self.attn_norm(x))
        return x + self.w2(torch.relu(self.w1(self.ffn_norm(x))))


class Transformer(torch.nn.Module):
    def __init__(self, layers=6, dim=16, heads=2, vocab=32):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.tok(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


wanted = (1, 4)
rules = [
    (
        select_all(
            select_by_op_type("aten.linear.default"),
            select_by_module_path(*[f"layers.{i}.attention.wo" for i in wanted]),
        ),
        FULL_TENSOR,
    ),
    (
        select_all(
            select_by_module_class("RMSNorm", output_only=True),
            select_by_module_path(*[f"layers.{i}.*" for i in wanted]),
        ),
        STATS,
    ),
]
df, specs = tap_compare(
    Transformer(), (torch.randint(0, 32, (1, 8)),), partitioner=[XnnpackPartitioner()], rules=rules
)
wo = [s for s in specs if s.reducer_name == "FULL_TENSOR"]
norms = [s for s in specs if s.reducer_name == "STATS"]
assert sorted(s.module_path for s in wo) == ["layers.1.attention.wo", "layers.4.attention.wo"]
assert len(norms) == 4, norms  # two RMSNorms per block, two blocks
check(df, specs, 6)
results["transformer"] = df
"""

IMPORTS = {
    "from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner": (
        "from delegate_lens.backends_demo import DemoPartitioner as XnnpackPartitioner"
    ),
    "from executorch.devtools.backend_debug import get_delegation_info": (
        "from delegate_lens import get_delegation_info"
    ),
    "from executorch.devtools.intermediate_output_tap import (": (
        "from delegate_lens.intermediate_output_tap import ("
    ),
    "from executorch.exir import to_edge_transform_and_lower": (
        "from delegate_lens import to_edge_transform_and_lower"
    ),
    "from executorch.runtime import Runtime, Verification": (
        "from _tap_script_runtime_face import Runtime, Verification"
    ),
}

RUNTIME_FACE = """
import enum
from delegate_lens.runtime import Program

class Verification(enum.Enum):
    Minimal = 0
    InternalConsistency = 1

class Runtime:
    @staticmethod
    def get():
        return Runtime()

    def load_program(self, path, verification=Verification.InternalConsistency):
        return Program.load(path)
"""


def _ported(script: str) -> str:
    lines = script.splitlines()
    changed = 0
    for i, line in enumerate(lines):
        if line in IMPORTS:
            lines[i] = IMPORTS[line]
            changed += 1
    assert changed == len(IMPORTS), "an import line of the table is not in the script"
    ported = "\n".join(lines)
    assert "from executorch" not in ported and "import executorch" not in ported
    return ported


def test_only_import_lines_change() -> None:
    before = SCRIPT.splitlines()
    after = _ported(SCRIPT).splitlines()
    assert len(before) == len(after)
    differing = [(a, b) for a, b in zip(before, after) if a != b]
    assert all(a.startswith("from executorch") for a, _ in differing)
    assert len(differing) == len(IMPORTS)


@pytest.mark.slow
def test_reference_style_script_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    face = types.ModuleType("_tap_script_runtime_face")
    exec(compile(RUNTIME_FACE, "<runtime face>", "exec"), face.__dict__)
    monkeypatch.setitem(sys.modules, face.__name__, face)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__tap_script__"}
    exec(compile(_ported(SCRIPT), "<reference-style tap script>", "exec"), namespace)
    results = namespace["results"]
    assert set(results) == {"one_call", "step_by_step", "transformer"}
    # the step-by-step pipeline and the one call agree on every number
    one, steps = results["one_call"], results["step_by_step"]
    assert list(one.columns) == list(steps.columns)
    for column in one.columns:
        if column.startswith(("aot_", "rt_", "sqnr")):
            assert one[column].fillna(0).tolist() == pytest.approx(
                steps[column].fillna(0).tolist(), rel=1e-6
            ), column
