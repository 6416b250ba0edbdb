"""Property tests: random programs run like eager torch, traced or not; random models lowered
to the demo backend equal eager and every event they log links back through the map."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from delegate_lens.program import (  # noqa: E402
    MethodData,
    OperatorInstruction,
    ProgramData,
    TensorValue,
    serialize,
)
from delegate_lens.runtime import ETDumpGen, Program  # noqa: E402

# torch; a fresh plugin manager with every installed plugin, as for a user
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]

_UNARY = {
    "aten.relu.default": torch.relu,
    "aten.sin.default": torch.sin,
    "aten.neg.default": torch.neg,
}
_BINARY = {"aten.add.Tensor": torch.add, "aten.mul.Tensor": torch.mul, "aten.sub.Tensor": torch.sub}


@st.composite
def programs(draw: st.DrawFn) -> tuple[ProgramData, list[Any], list[tuple[str, list[int]]]]:
    """A random DAG of elementwise ops over 1-3 inputs and a constant, as a program."""
    n_inputs = draw(st.integers(1, 3))
    const = torch.arange(4, dtype=torch.float32) / 4
    values: list[Any] = [TensorValue("float32", (4,)) for _ in range(n_inputs)]
    values.append(TensorValue("float32", (4,), const.numpy().tobytes()))
    steps = []
    insts = []
    for _ in range(draw(st.integers(1, 12))):
        avail = len(values)
        if draw(st.booleans()):
            op = draw(st.sampled_from(sorted(_UNARY)))
            args = [draw(st.integers(0, avail - 1))]
        else:
            op = draw(st.sampled_from(sorted(_BINARY)))
            args = [draw(st.integers(0, avail - 1)), draw(st.integers(0, avail - 1))]
        values.append(TensorValue("float32", (4,)))
        insts.append(OperatorInstruction(op, args, [len(values) - 1]))
        steps.append((op, args))
    outputs = sorted(set(draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=3))))
    method = MethodData("forward", list(range(n_inputs)), outputs, values, insts)
    return ProgramData([method]), [const], steps


def _eager(
    inputs: list[Any], const: Any, steps: list[tuple[str, list[int]]], outputs: tuple[int, ...]
) -> list[Any]:
    env = [*inputs, const]
    for op, args in steps:
        fn = _UNARY.get(op) or _BINARY[op]
        env.append(fn(*(env[a] for a in args)))
    return [env[i] for i in outputs]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_programs_equal_eager_traced_or_not(case: Any, seed: int) -> None:
    from delegate_lens.etdump import loads

    data, (const,), steps = case
    method_data = data.methods[0]
    gen = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(4, generator=gen) for _ in method_data.inputs]
    program = Program.load(serialize(data))
    expected = _eager(inputs, const, steps, method_data.outputs)
    clock = itertools.count(0, 3)
    tracer = ETDumpGen(debug_buffer_size=1 << 16, clock=lambda: next(clock))
    for method in (program.load_method(), program.load_method(event_tracer=tracer)):
        got = method.execute(inputs)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            assert torch.equal(a, b)
    runs = loads(tracer.get_etdump_data()).run_data
    assert [r.name for r in runs] == ["Default", "Execute"]
    cols = runs[1].columns
    n = len(steps)
    assert int((cols.kind == 1).sum()) == 2 * n + 1  # native_call + OPERATOR_CALL each, + execute
    assert int((cols.kind == 3).sum()) == n + len(method_data.outputs)
    starts, ends = cols.start_time.astype("int64"), cols.end_time.astype("int64")
    assert (ends >= starts).all()


_OPS = ["linear", "linear_relu", "relu", "sin", "cos", "tan", "sigmoid", "add", "mul", "exp"]


class RandomNet(torch.nn.Module):
    def __init__(self, ops: list[tuple[str, int]]) -> None:
        super().__init__()
        self.ops = ops
        self.linears = torch.nn.ModuleList(torch.nn.Linear(6, 6) for _ in ops)

    def forward(self, x: Any) -> Any:
        values = [x]
        for i, (op, src) in enumerate(self.ops):
            a = values[src % len(values)]
            if op == "linear":
                y = self.linears[i](a)
            elif op == "linear_relu":
                y = torch.relu(self.linears[i](a))
            elif op in ("add", "mul"):
                b = values[(src + 1) % len(values)]
                y = a + b if op == "add" else a * b
            elif op == "tan":
                y = torch.tan(a * 0.1)  # mul(scalar) + tan, away from the poles
            else:
                y = getattr(torch, op)(a)
            values.append(y)
        return values[-1]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 10)), min_size=1, max_size=6),
    st.sampled_from(["int", "str"]),
)
def test_random_models_on_the_demo_backend(ops: list[tuple[str, int]], identifiers: str) -> None:
    import delegate_lens as dl
    from delegate_lens.backends_demo import DemoPartitioner
    from delegate_lens.etdump import loads

    torch.manual_seed(0)
    module = RandomNet(ops).eval()
    x = torch.randn(2, 6)
    ep = torch.export.export(module, (x,))
    partitioner = DemoPartitioner([dl.CompileSpec("identifiers", identifiers.encode())])
    manager = dl.to_edge_transform_and_lower(ep, partitioner=[partitioner]).to_program()
    tracer = ETDumpGen()
    (out,) = Program.load(manager.buffer).load_method(event_tracer=tracer).execute([x])
    with torch.no_grad():
        # NaN only where eager gives NaN too (exp of exp overflows, sin(inf) is NaN)
        torch.testing.assert_close(out, module(x), rtol=1e-5, atol=1e-5, equal_nan=True)
    dmap = manager.delegate_map.get("forward", {})
    cols = loads(tracer.get_etdump_data()).run_data[1].columns
    logged = 0
    for i in range(len(cols)):
        ident = int(cols.delegate_debug_id_int[i])
        if ident < 0 and cols.delegate_debug_id_str[i] >= 0:
            ident = cols.string(int(cols.delegate_debug_id_str[i]))  # type: ignore[assignment]
        if ident == -1:
            continue
        logged += 1
        entry = dmap[int(cols.instruction_id[i])]
        assert ident in entry["delegate_map"]
    assert logged == sum(len(e["delegate_map"]) for e in dmap.values())
