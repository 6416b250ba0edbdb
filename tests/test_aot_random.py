"""Property tests: random small models, random partitions, random backend maps.

Each example exports a random op DAG, tags random disjoint contiguous runs of its operators
(contiguous in execution order, so every partition is valid) for random test backends,
lowers, and checks: every handle of every map belongs to its partition, generated ids are
dense, the lowered program computes what the model does, the program's maps agree with the
partitions, and the maps survive the ETRecord's JSON round trip.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from test_aot_helpers import RecordingBackend, TagPartitioner, registered  # noqa: E402

import delegate_lens as dl  # noqa: E402
from delegate_lens.program import DelegateCallInstruction, deserialize  # noqa: E402

pytestmark = pytest.mark.torch

WIDTH = 6
UNARY = [
    "relu",
    "tanh",
    "sigmoid",
    "neg",
    "linear",
    "layer_norm",
    "softmax",
    "square",
    "swap_halves",  # chunk (a list-returning op) + cat (a list argument)
    "max_scale",  # max.dim: a tuple-returning op with an unused output
]
BINARY = ["add", "mul", "sub"]


class RandomNet(torch.nn.Module):
    """Applies ``ops``: (name, input indexes) over a growing list of values."""

    def __init__(self, ops: list[tuple[str, tuple[int, ...]]], outputs: list[int]) -> None:
        super().__init__()
        self.ops = ops
        self.outputs = outputs
        self.linears = torch.nn.ModuleList(
            torch.nn.Linear(WIDTH, WIDTH) for name, _ in ops if name == "linear"
        )
        self.norms = torch.nn.ModuleList(
            torch.nn.LayerNorm(WIDTH) for name, _ in ops if name == "layer_norm"
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = [x]
        lin = norm = 0
        for name, args in self.ops:
            a = values[args[0]]
            if name == "linear":
                out = self.linears[lin](a)
                lin += 1
            elif name == "layer_norm":
                out = self.norms[norm](a)
                norm += 1
            elif name == "softmax":
                out = a.softmax(-1)
            elif name == "square":
                out = a * a
            elif name == "swap_halves":
                left, right = a.chunk(2, dim=-1)
                out = torch.cat([right, left], dim=-1)
            elif name == "max_scale":
                out = a * a.max(dim=-1, keepdim=True).values
            elif name in BINARY:
                out = getattr(torch, name)(a, values[args[1]])
            else:
                out = getattr(torch, name)(a)
            values.append(out)
        return tuple(values[i] for i in self.outputs)


@st.composite
def models(draw: st.DrawFn) -> RandomNet:
    n = draw(st.integers(2, 7))
    ops: list[tuple[str, tuple[int, ...]]] = []
    for i in range(n):
        name = draw(st.sampled_from(UNARY + BINARY))
        count = 2 if name in BINARY else 1
        args = tuple(draw(st.integers(0, i)) for _ in range(count))
        ops.append((name, args))
    extra = draw(st.lists(st.integers(1, n), max_size=2, unique=True))
    outputs = sorted({n, *extra})
    torch.manual_seed(draw(st.integers(0, 1000)))
    return RandomNet(ops, outputs).eval()


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(model=models(), data=st.data())
def test_random_models_random_partitions(model: RandomNet, data: st.DataObject) -> None:
    x = torch.randn(3, WIDTH)
    exported = torch.export.export(model, (x,))
    edge = dl.to_edge(exported, generate_etrecord=True)
    nodes = [
        n
        for n in edge.exported_program().graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem
    ]
    # the unlowered program runs in the simulated runtime as the model does
    from delegate_lens.runtime import Program

    method = Program.load(edge.to_program().buffer).load_method("forward")
    with torch.no_grad():
        for a, b in zip(method.execute([x]), model(x)):
            torch.testing.assert_close(a, b)

    # cut the operators into runs; each run is left alone or sent to a backend
    assert nodes
    cut_points = st.sets(st.integers(1, max(1, len(nodes) - 1)), max_size=4)
    cuts = sorted(c for c in data.draw(cut_points, label="cuts") if c < len(nodes))
    bounds = [0, *cuts, len(nodes)]
    owner: dict[str, str] = {}
    backends: dict[str, str] = {}
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        choice = data.draw(st.sampled_from([None, "GenBackend", "StrBackend", "FuseBackend"]))
        if choice is None:
            continue
        tag = f"tag{k}"
        backends[tag] = choice
        for node in nodes[lo:hi]:
            owner[node.name] = tag
    plugins = [
        RecordingBackend("GenBackend", "generated"),
        RecordingBackend("StrBackend", "str"),
        RecordingBackend("FuseBackend", "fuse", seed=data.draw(st.integers(0, 99))),
    ]
    partitioner = TagPartitioner(lambda n: owner.get(n.name), backends)
    with registered(*plugins):
        lowered = edge.to_backend(partitioner)
    modules = lowered.lowered_modules()
    assert len(modules) == len(backends)

    # every handle of every map belongs to its partition; generated ids are dense
    handle_of = {n.name: n.meta["debug_handle"] for n in nodes}
    for module in modules:
        partition = {handle_of[name] for name, tag in owner.items() if tag == module.tag}
        assert set(module.debug_handles) == partition
        mapping = module.debug_handle_map or {}
        for handles in mapping.values():
            assert handles and set(handles) <= partition
        if module.backend_id == "GenBackend":
            assert sorted(mapping) == list(range(len(mapping)))
        # fused entries are unions of their nodes' handles
        covered = {h for hs in mapping.values() for h in hs}
        assert covered == partition

    # the lowered program computes what the model does
    want = exported.module()(x)
    got = lowered.exported_program().module()(x)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)

    # program maps: delegate calls map to their partitions, operators to their handle
    pm = lowered.to_program()
    method = deserialize(pm.buffer).method("forward")
    calls = [i for i in method.instructions if isinstance(i, DelegateCallInstruction)]
    assert len(calls) == len(modules)
    # delegate calls run in graph order, as the lowered modules are listed
    call_modules = iter(modules)
    for index, inst in enumerate(method.instructions):
        handles = pm.debug_handle_map["forward"][index]
        assert handles == inst.debug_handles
        if isinstance(inst, DelegateCallInstruction):
            module = next(call_modules)
            assert handles == module.debug_handles
            assert pm.delegate_map["forward"][index] == {
                "name": module.backend_id,
                "delegate_map": module.debug_handle_map or {},
            }
    seen = {h for hs in pm.debug_handle_map["forward"].values() for h in hs}
    assert seen == set(handle_of.values())  # every handle runs

    # the maps survive the ETRecord's JSON (int and str identifiers alike)
    record = dl.ETRecord.from_entries(pm.get_etrecord().entries())
    assert record.debug_handle_map == pm.debug_handle_map
    expected: dict[int, Any] = {
        i: {"name": e["name"], "delegate_map": e["delegate_map"]}
        for i, e in pm.delegate_map["forward"].items()
    }
    assert record.delegate_map["forward"] == expected
    graph = record.graph("forward")
    assert {n.name: n.debug_handle for n in graph.nodes if n.debug_handle is not None} == {
        n.name: n.meta["debug_handle"] for n in nodes
    }


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(model=models(), data=st.data())
def test_arbitrary_subsets_lower_correctly_or_are_refused(
    model: RandomNet, data: st.DataObject
) -> None:
    x = torch.randn(3, WIDTH)
    exported = torch.export.export(model, (x,))
    edge = dl.to_edge(exported)
    names = [
        n.name
        for n in edge.exported_program().graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem
    ]
    chosen = data.draw(st.sets(st.sampled_from(names), min_size=1), label="chosen")
    partitioner = TagPartitioner(lambda n: "t" if n.name in chosen else None, "GenBackend")
    with registered(RecordingBackend("GenBackend", "generated")):
        try:
            lowered = edge.to_backend(partitioner)
        except dl.DelegateLensError as exc:
            assert "cycle" in str(exc)
            event("refused: not convex")
            return
    event("lowered")
    for a, b in zip(lowered.exported_program().module()(x), exported.module()(x)):
        torch.testing.assert_close(a, b)
    (module,) = lowered.lowered_modules()
    assert len([n for n in module.original_module.graph.nodes if n.name in chosen]) == len(chosen)
