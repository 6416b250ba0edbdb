"""Intermediate taps through the demo backend: values computed inside a delegate that logs
nothing come out of the simulated runtime equal to eager, and show where a lossy kernel
starts to diverge; ``tap_compare`` does it in one call."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("builtin_plugins_only")]

torch = pytest.importorskip("torch")
import torch.utils._pytree as pytree  # noqa: E402

import delegate_lens as dl  # noqa: E402
from delegate_lens.aot._lowering import is_delegate_call, lowered_modules  # noqa: E402
from delegate_lens.backends_demo import DemoPartitioner  # noqa: E402
from delegate_lens.intermediate_output_tap import (  # noqa: E402
    FULL_TENSOR,
    STATS,
    find_tap_nodes,
    select_all_call_function,
    select_by_op_type,
    strip_taps_,
    tap_compare,
    tap_intermediate_outputs_,
)
from delegate_lens.runtime import Program  # noqa: E402

SILENT = dl.CompileSpec("debug_outputs", b"none")  # the delegate logs no intermediate output
FP16_TAN = [
    SILENT,
    dl.CompileSpec("precision", b"fp16"),
    dl.CompileSpec("precision_kernels", b"sin,cos,div"),  # tan's three kernels only
]


class _Net(torch.nn.Module):
    """Everything but the softmax runs on the demo backend (tan as sin/cos/div)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.fc1(x))
        t = torch.tan(self.fc2(h))
        return torch.softmax(t + 1.0, dim=-1)

    def intermediates(self, x: Any) -> dict[str, Any]:
        """Eager values by operator, in graph order."""
        with torch.no_grad():
            a = self.fc1(x)
            h = torch.relu(a)
            b = self.fc2(h)
            t = torch.tan(b)
            return {"linear": a, "relu": h, "linear_1": b, "tan": t, "add": t + 1.0}


def _net() -> tuple[_Net, tuple[Any, ...]]:
    torch.manual_seed(0)
    return _Net().eval(), (torch.randn(4, 16),)


def _run(model: _Net, inputs: tuple[Any, ...], rules: Any, specs: Any = (SILENT,)) -> Any:
    ep = torch.export.export(model, inputs)
    ep, taps = tap_intermediate_outputs_(ep, rules)
    with torch.no_grad():
        aot = pytree.tree_leaves(ep.module()(*inputs))
    edge = dl.to_edge_transform_and_lower(ep, partitioner=[DemoPartitioner(list(specs))])
    strip_taps_(edge)
    program = edge.exported_program()
    runtime = Program.load(edge.to_executorch().buffer).load_method().execute(list(inputs))
    return taps, aot, runtime, program


def _outer_ops(program: Any) -> set[str]:
    return {
        str(n.target)
        for n in program.graph.nodes
        if n.op == "call_function" and not is_delegate_call(n) and "getitem" not in str(n.target)
    }


@pytest.mark.parametrize("reducer", [FULL_TENSOR, STATS], ids=lambda r: r.name)
def test_taps_inside_a_silent_delegate_equal_eager(reducer: Any) -> None:
    model, inputs = _net()
    rules = (select_all_call_function(), reducer)
    taps, aot, runtime, program = _run(model, inputs, rules)
    # every tapped operator ran inside the delegate: the outer graph has only the softmax
    # (and, for STATS, the reducers' operators), no linear / relu / tan / add
    [lowered] = lowered_modules(program.graph_module)
    assert lowered.backend_id == "DemoBackend"
    assert not {"aten.linear.default", "aten.relu.default", "aten.tan.default"} & _outer_ops(
        program
    )
    assert find_tap_nodes(program.graph_module) == []
    eager = model.intermediates(*inputs)
    by_name = {t.node_name: t for t in taps}
    assert set(eager) <= set(by_name)
    for name, value in eager.items():
        spec = by_name[name]
        want = value if reducer is FULL_TENSOR else STATS.eager(value)
        got = runtime[spec.output_index]
        assert got.shape == want.shape, name
        # the demo backend computes in float64 and stores float32: last-digit differences
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=name)
        torch.testing.assert_close(aot[spec.output_index], want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(runtime[0], model(*inputs), rtol=1e-5, atol=1e-5)


def test_taps_show_where_a_lossy_kernel_diverges() -> None:
    """fp16 tan inside the delegate: the taps before it agree with eager, from tan on they
    do not; the delegate logs nothing, the taps need nothing from it."""
    model, inputs = _net()
    df, taps = tap_compare(
        model,
        inputs,
        [DemoPartitioner(FP16_TAN)],
        rules=(select_by_op_type("linear.default", "relu.default", "tan.default"), FULL_TENSOR),
    )
    sqnr = dict(zip(df["node_name"], df["sqnr_db"]))
    assert list(sqnr) == ["linear", "relu", "linear_1", "tan"]
    assert min(sqnr["linear"], sqnr["relu"], sqnr["linear_1"]) > 120  # float32 rounding
    assert 30 < sqnr["tan"] < 90  # fp16 rounding
    assert [t.output_index for t in taps] == [1, 2, 3, 4]


def test_tap_compare_stats_columns_and_values() -> None:
    model, inputs = _net()
    df, taps = tap_compare(
        model, inputs, [DemoPartitioner([SILENT])], rules=(select_by_op_type("relu.default"), STATS)
    )
    # torch.relu is no module: it ran in the root module (path "")
    assert len(taps) == 1 and (taps[0].module_path, taps[0].module_class) == ("", "_Net")
    fixed = ["node_name", "module_path", "module_class", "op_target", "reducer_name"]
    assert list(df.columns[:6]) == [*fixed, "output_index"]
    assert list(df.columns[6:]) == [f"{side}_{f}" for f in STATS.fields for side in ("aot", "rt")]
    row = df.iloc[0]
    relu = model.intermediates(*inputs)["relu"]
    assert row["aot_zero_count"] == row["rt_zero_count"] == float((relu == 0).sum())
    assert row["rt_max"] == pytest.approx(float(relu.max()), rel=1e-6)


def test_tap_compare_without_partitioner_matches_exactly() -> None:
    """Without delegation the portable kernels are torch's own: equal to the last bit."""
    model, inputs = _net()
    df, _ = tap_compare(model, inputs, rules=(select_all_call_function(), STATS))
    for field in STATS.fields:
        assert (df[f"aot_{field}"].fillna(-1) == df[f"rt_{field}"].fillna(-1)).all(), field


def test_two_methods_are_stripped() -> None:
    model, inputs = _net()
    programs = {}
    for name in ("forward", "other"):
        ep = torch.export.export(model, inputs)
        tap_intermediate_outputs_(ep, (select_by_op_type("tan.default"), STATS))
        programs[name] = ep
    edge = dl.to_edge_transform_and_lower(programs, partitioner=[DemoPartitioner([SILENT])])
    assert all(find_tap_nodes(edge.exported_program(m).graph_module) for m in edge.methods)
    strip_taps_(edge)
    assert not any(find_tap_nodes(edge.exported_program(m).graph_module) for m in edge.methods)
    loaded = Program.load(edge.to_executorch().buffer)
    tan = model.intermediates(*inputs)["tan"]
    for name in ("forward", "other"):
        out = loaded.load_method(name).execute(list(inputs))
        torch.testing.assert_close(out[1], STATS.eager(tan), rtol=1e-5, atol=1e-5)


def test_inspector_links_every_model_row_of_a_tapped_program() -> None:
    """The ETRecord's graph is stripped too: the reducer's operators link to it like a
    decomposed operator's (without that, the Inspector found the ETRecord's tap where the
    runtime ran amin, stack, ... and left the rows unlinked with a warning)."""
    import itertools
    import warnings

    from delegate_lens.inspector import Inspector
    from delegate_lens.runtime import ETDumpGen

    model, inputs = _net()
    ep = torch.export.export(model, inputs)
    tap_intermediate_outputs_(ep, (select_by_op_type("tan.default"), STATS))
    edge = dl.to_edge_transform_and_lower(
        ep, partitioner=[DemoPartitioner([SILENT])], generate_etrecord=True
    )
    unlowered_taps = len(find_tap_nodes(edge.unlowered_program().graph_module))
    strip_taps_(edge)
    manager = edge.to_executorch()
    clock = itertools.count(0, 7)
    gen = ETDumpGen(clock=lambda: next(clock))
    Program.load(manager.buffer).load_method(event_tracer=gen).execute(list(inputs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inspector = Inspector(etdump_data=gen.get_etdump_data(), etrecord=manager.get_etrecord())
    [execute] = [b for b in inspector.event_blocks if b.name == "Execute"]
    ops = {e.name: e.op_types for e in execute.events}
    assert ops["native_call__softmax.out"] == ["aten._softmax.default"]
    assert "aten.stack.default" in ops["native_call_stack.out"]
    assert unlowered_taps == 1 and not find_tap_nodes(edge.unlowered_program().graph_module)
