"""delegate_lens.intermediate_output_tap without a backend: selectors, reducers, the tap
pass and the strip pass behave as the reference's (ExecuTorch 1.5.1's
``executorch.devtools.intermediate_output_tap``), and where it crashes we do not."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.torch

torch = pytest.importorskip("torch")

from torch.export.graph_signature import OutputKind  # noqa: E402

from delegate_lens.errors import UsageError  # noqa: E402
from delegate_lens.intermediate_output_tap import (  # noqa: E402
    FULL_TENSOR,
    STATS,
    StatReducer,
    find_tap_nodes,
    get_reducer,
    is_tap_node,
    select_all,
    select_all_call_function,
    select_any,
    select_by_module_class,
    select_by_module_path,
    select_by_op_type,
    select_not,
    strip_taps_,
    tap_intermediate_outputs_,
)


class _Inner(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: Any) -> Any:
        return self.linear(x).relu()


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Inner()
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x: Any) -> Any:
        return self.head(self.inner(x))


class _MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 8)
        self.l3 = torch.nn.Linear(8, 4)

    def forward(self, x: Any) -> Any:
        return self.l3(self.l2(self.l1(x).relu()).relu())


class _Rich(torch.nn.Module):
    """Two inputs, a mutated buffer, two outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(4, 4)
        self.l2 = torch.nn.Linear(4, 2)
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x: Any, y: Any) -> Any:
        z = self.l1(x + y)
        self.running.add_(z.sum(dim=0))
        return self.l2(z), z.sum()


class _Split(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        a, b = torch.split(x, 2, dim=1)
        return a * 2 + b


LINEAR = (select_by_op_type("aten.linear.default"), FULL_TENSOR)


def _calls(module: Any, *inputs: Any) -> tuple[Any, list[Any]]:
    torch.manual_seed(0)
    ep = torch.export.export(module, inputs)
    return ep, [n for n in ep.graph.nodes if n.op == "call_function"]


def _mlp() -> Any:
    torch.manual_seed(0)
    return torch.export.export(_MLP(), (torch.randn(2, 8),))


def _user_outputs(ep: Any) -> int:
    return sum(s.kind == OutputKind.USER_OUTPUT for s in ep.graph_signature.output_specs)


# --------------------------------------------------------------------------- selectors


@pytest.fixture(scope="module")
def outer_nodes() -> list[Any]:
    return _calls(_Outer(), torch.randn(2, 4))[1]


def _targets(nodes: list[Any], selector: Any) -> list[str]:
    return [str(n.target) for n in nodes if selector(n)]


def test_select_all_call_function_leaves_out_getitem() -> None:
    _, nodes = _calls(_Split(), torch.randn(2, 4))
    chosen = _targets(nodes, select_all_call_function())
    assert "getitem" in {getattr(n.target, "__name__", "") for n in nodes}
    assert not any("getitem" in t for t in chosen)
    assert len(chosen) == len(nodes) - 2  # the two getitems
    everything = select_all_call_function(exclude=())
    assert len(_targets(nodes, everything)) == len(nodes)
    without_mul = select_all_call_function(exclude=("getitem", "aten.mul.Tensor"))
    assert "aten.mul.Tensor" not in _targets(nodes, without_mul)


def test_select_by_op_type_matches_suffixes(outer_nodes: list[Any]) -> None:
    chosen = _targets(outer_nodes, select_by_op_type("aten.linear.default", "relu.default"))
    assert sorted(chosen) == ["aten.linear.default"] * 2 + ["aten.relu.default"]
    with pytest.raises(ValueError):
        select_by_op_type()


def test_select_by_module_path_output_only(outer_nodes: list[Any]) -> None:
    terminal = _targets(outer_nodes, select_by_module_path("inner"))
    assert terminal == ["aten.relu.default"]  # the value leaving `inner`
    inside = _targets(outer_nodes, select_by_module_path("inner*", output_only=False))
    assert sorted(inside) == ["aten.linear.default", "aten.relu.default"]
    assert _targets(outer_nodes, select_by_module_path("inner.linear")) == ["aten.linear.default"]
    with pytest.raises(ValueError):
        select_by_module_path()


def test_select_by_module_path_several_patterns_is_or(outer_nodes: list[Any]) -> None:
    both = select_by_module_path("inner.*", "head")
    a, b = select_by_module_path("inner.*"), select_by_module_path("head")
    assert [both(n) for n in outer_nodes] == [a(n) or b(n) for n in outer_nodes]
    assert any(both(n) for n in outer_nodes)


def test_select_by_module_class(outer_nodes: list[Any]) -> None:
    assert _targets(outer_nodes, select_by_module_class("_Inner")) == ["aten.relu.default"]
    inside = select_by_module_class("_Inner", output_only=False)
    assert sorted(_targets(outer_nodes, inside)) == ["aten.linear.default", "aten.relu.default"]
    linears = _targets(outer_nodes, select_by_module_class("Linear"))
    assert linears == ["aten.linear.default"] * 2
    assert _targets(outer_nodes, select_by_module_class("NoSuchClass")) == []
    with pytest.raises(ValueError):
        select_by_module_class()


def test_combinators_and_lambdas(outer_nodes: list[Any]) -> None:
    a = select_by_op_type("aten.linear.default")
    b = lambda n: str(n.target).endswith("relu.default")  # noqa: E731  a lambda is a selector
    for n in outer_nodes:
        assert select_any(a, b)(n) == (a(n) or b(n))
        assert select_all(a, b)(n) == (a(n) and b(n))
        assert select_not(a)(n) == (not a(n))
        assert select_any()(n) is False
        assert select_all()(n) is True


# --------------------------------------------------------------------------- reducers


def test_get_reducer() -> None:
    assert get_reducer("STATS") is STATS
    assert get_reducer("FULL_TENSOR") is FULL_TENSOR
    custom = StatReducer("CUSTOM_X", ("a",), lambda g, n: n, lambda t: t)
    assert get_reducer(custom) is custom
    with pytest.raises(ValueError, match="NOPE"):
        get_reducer("NOPE")
    assert FULL_TENSOR.fields == ()
    assert STATS.fields[:3] == ("min", "max", "mean") and len(STATS.fields) == 13


def _numpy_stats(x: np.ndarray[Any, Any]) -> dict[str, float]:
    """The STATS fields computed independently, in float64."""
    f = x.astype(np.float64).reshape(-1)
    finite = f[np.isfinite(f)] if np.isfinite(f).all() else f
    a = np.abs(finite)
    k = max(1, math.ceil(f.size / 100))
    return {
        "min": float(finite.min()),
        "max": float(finite.max()),
        "mean": float(finite.mean()),
        "abs_max": float(a.max()),
        "abs_mean": float(a.mean()),
        "std": float(finite.std()),
        "rms": float(np.sqrt((finite**2).mean())),
        "l1_norm": float(a.sum()),
        "l2_norm": float(np.sqrt((finite**2).sum())),
        "zero_count": float((f == 0).sum()),
        "p99_abs": float(np.sort(a)[::-1][k - 1]),
    }


@given(st.lists(st.one_of(st.floats(-100, 100, width=32), st.just(0.0)), min_size=1, max_size=300))
@settings(max_examples=60, deadline=None)
def test_stats_eager_matches_an_independent_computation(values: list[float]) -> None:
    x = np.array(values, dtype=np.float32)
    got = dict(zip(STATS.fields, STATS.eager(torch.from_numpy(x)).tolist()))
    want = _numpy_stats(x)
    scale = max(1.0, float(np.abs(x).max()))
    for field, expected in want.items():
        tol = 1e-5 * scale * (x.size if field in ("l1_norm",) else 1) + 1e-6
        if field == "std":  # E[x^2] - E[x]^2 in float32 loses digits to cancellation
            tol = math.sqrt(4e-7 * scale * scale) + 1e-6
        assert got[field] == pytest.approx(expected, rel=1e-4, abs=tol), field
    assert got["nan_count"] == 0.0 and got["inf_count"] == 0.0


def test_stats_counts_nan_inf_zero_and_full_tensor_is_a_copy() -> None:
    t = torch.tensor([1.0, float("nan"), 2.0, float("inf"), 0.0, -float("inf"), 0.0])
    stats = dict(zip(STATS.fields, STATS.eager(t).tolist()))
    assert (stats["nan_count"], stats["inf_count"], stats["zero_count"]) == (1.0, 2.0, 2.0)
    ints = torch.arange(-3, 5, dtype=torch.int32)
    assert STATS.eager(ints).dtype == torch.float32
    assert STATS.eager(ints)[0].item() == -3.0
    x = torch.randn(2, 3)
    copy = FULL_TENSOR.eager(x)
    assert torch.equal(copy, x) and copy.data_ptr() != x.data_ptr()


# --------------------------------------------------------------------------- tap pass


def test_one_tap_per_selected_node_appended_after_the_outputs() -> None:
    ep = _mlp()
    before = _user_outputs(ep)
    same, specs = tap_intermediate_outputs_(ep, LINEAR)
    assert same is ep  # in place, as the reference
    assert len(specs) == 3 == len(find_tap_nodes(ep.graph_module))
    assert all(is_tap_node(n) for n in find_tap_nodes(ep.graph_module))
    assert _user_outputs(ep) == before + 3
    assert [s.output_index for s in specs] == [before, before + 1, before + 2]
    assert [(s.module_path, s.module_class) for s in specs] == [
        ("l1", "Linear"),
        ("l2", "Linear"),
        ("l3", "Linear"),
    ]
    assert {s.op_target for s in specs} == {"aten.linear.default"}
    assert all(s.reducer_name == "FULL_TENSOR" and s.fields == () for s in specs)
    assert all(s.stack_trace for s in specs)


def test_tapped_program_outputs_the_reduced_intermediates() -> None:
    torch.manual_seed(0)
    model = _MLP()
    x = torch.randn(2, 8)
    seen: dict[str, Any] = {}
    for name in ("l1", "l2", "l3"):
        getattr(model, name).register_forward_hook(
            lambda _m, _i, out, name=name: seen.__setitem__(name, out.detach())
        )
    ep = torch.export.export(model, (x,))
    ep, specs = tap_intermediate_outputs_(
        ep,
        [(select_by_module_path("l2"), STATS), (select_by_op_type("linear.default"), FULL_TENSOR)],
    )
    with torch.no_grad():
        out = ep.module()(x)
        expected = model(x)
    torch.testing.assert_close(out[0], expected)
    by_path = {s.module_path: s for s in specs}
    assert by_path["l2"].reducer_name == "STATS"
    torch.testing.assert_close(out[by_path["l1"].output_index], seen["l1"])
    torch.testing.assert_close(out[by_path["l3"].output_index], seen["l3"])
    torch.testing.assert_close(out[by_path["l2"].output_index], STATS.eager(seen["l2"]))


def test_default_rules_are_stats_on_every_call_function() -> None:
    ep = _mlp()
    _, specs = tap_intermediate_outputs_(ep)
    calls = [n for n in ep.graph.nodes if n.op == "call_function" and not is_tap_node(n)]
    assert len(specs) == len(calls) == 5
    assert all(s.reducer_name == "STATS" and s.fields == STATS.fields for s in specs)


def test_first_matching_rule_wins() -> None:
    ep = _mlp()
    _, specs = tap_intermediate_outputs_(
        ep,
        [
            (select_by_op_type("aten.linear.default"), FULL_TENSOR),
            (select_all_call_function(), "STATS"),
        ],
    )
    reducers = {(s.op_target, s.reducer_name) for s in specs}
    assert reducers == {("aten.linear.default", "FULL_TENSOR"), ("aten.relu.default", "STATS")}


def test_max_taps_keeps_the_first_in_graph_order() -> None:
    ep = _mlp()
    _, specs = tap_intermediate_outputs_(ep, LINEAR, max_taps=2)
    assert [s.module_path for s in specs] == ["l1", "l2"]
    assert len(find_tap_nodes(ep.graph_module)) == 2
    with pytest.raises(ValueError, match="max_taps"):
        tap_intermediate_outputs_(_mlp(), LINEAR, max_taps=-1)


def test_taps_are_not_tapped_again() -> None:
    ep = _mlp()
    _, first = tap_intermediate_outputs_(ep)
    _, second = tap_intermediate_outputs_(ep)
    assert len(second) == len(first)
    assert second[0].output_index == first[-1].output_index + 1


def test_nothing_selected_raises_or_warns() -> None:
    ep = _mlp()
    before = list(ep.graph_signature.output_specs)
    nothing = (select_by_op_type("aten.does.not.exist"), FULL_TENSOR)
    with pytest.raises(ValueError, match="error_on_empty"):
        tap_intermediate_outputs_(ep, nothing)
    with pytest.warns(UserWarning, match="no rule selected"):
        same, specs = tap_intermediate_outputs_(ep, nothing, error_on_empty=False)
    assert same is ep and specs == []
    assert list(ep.graph_signature.output_specs) == before
    with pytest.raises(ValueError, match="rules is empty"):
        tap_intermediate_outputs_(ep, [])
    with pytest.raises(ValueError, match="rule 0"):
        tap_intermediate_outputs_(ep, ["linear"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown reducer"):
        tap_intermediate_outputs_(ep, (select_all_call_function(), "MEDIAN"))


def test_structure_with_buffer_mutation_and_two_outputs_is_kept() -> None:
    ep = torch.export.export(_Rich(), (torch.randn(3, 4), torch.randn(3, 4)))
    from delegate_lens.aot._handles import quiet_torch

    with quiet_torch():
        ep = ep.run_decompositions({})  # the buffer mutation becomes an output
    kinds_in = [(s.kind, s.target) for s in ep.graph_signature.input_specs]
    outs = [(s.kind, s.target) for s in ep.graph_signature.output_specs]
    assert OutputKind.BUFFER_MUTATION in {k for k, _ in outs}
    _, specs = tap_intermediate_outputs_(ep, LINEAR)
    assert len(specs) == 2
    assert [(s.kind, s.target) for s in ep.graph_signature.input_specs] == kinds_in
    after = [(s.kind, s.target) for s in ep.graph_signature.output_specs]
    assert after[: len(outs)] == outs
    assert [k for k, _ in after[len(outs) :]] == [OutputKind.USER_OUTPUT] * 2
    # output indices count the flat outputs (the buffer mutation included), as the runtime's
    assert [s.output_index for s in specs] == [len(outs), len(outs) + 1]


def test_multi_output_operators_are_tapped_through_their_getitems() -> None:
    """The reference puts a tap on the split itself (a list), which fails when the program
    runs; here the split's outputs are tapped."""
    ep = torch.export.export(_Split(), (torch.randn(2, 4),))
    _, specs = tap_intermediate_outputs_(ep, (select_all_call_function(exclude=()), FULL_TENSOR))
    assert "aten.split.Tensor" not in {s.op_target for s in specs}
    assert sum("getitem" in s.op_target for s in specs) == 2
    x = torch.randn(2, 4)
    out = ep.module()(x)
    a, b = torch.split(x, 2, dim=1)
    got = {s.node_name: out[s.output_index] for s in specs if "getitem" in s.op_target}
    torch.testing.assert_close(sorted(got.items())[0][1], a)
    torch.testing.assert_close(sorted(got.items())[1][1], b)


def test_a_custom_reducer_works_end_to_end_by_name() -> None:
    """The reference looks reducers up by name among its built-ins only, so a custom one
    fails when the tapped program runs; here it is registered when a rule uses it."""
    aten = torch.ops.aten
    max_only = StatReducer(
        "TEST_MAX_ONLY",
        ("max",),
        lambda graph, src: graph.call_function(
            aten.view.default, (graph.call_function(aten.amax.default, (src,)), [1])
        ),
        lambda t: t.detach().amax().reshape(1),
    )
    ep = _mlp()
    x = torch.randn(2, 8)
    _, specs = tap_intermediate_outputs_(ep, (select_by_module_path("l3"), max_only))
    out = ep.module()(x)
    assert out[specs[0].output_index].shape == (1,)
    strip_taps_(ep)
    assert find_tap_nodes(ep.graph_module) == []
    torch.testing.assert_close(ep.module()(x)[specs[0].output_index], out[specs[0].output_index])
    other = StatReducer("TEST_MAX_ONLY", ("max",), max_only.emit, max_only.eager)
    with pytest.raises(ValueError, match="taken"):
        tap_intermediate_outputs_(_mlp(), (select_by_module_path("l3"), other))


# --------------------------------------------------------------------------- strip pass


def _tapped_edge(reducer: Any) -> tuple[Any, list[Any]]:
    import delegate_lens as dl

    ep, specs = tap_intermediate_outputs_(
        _mlp(), (select_by_op_type("aten.linear.default"), reducer)
    )
    return dl.to_edge(ep), specs


def test_strip_full_tensor_outputs_the_sources_themselves() -> None:
    edge, specs = _tapped_edge(FULL_TENSOR)
    program = edge.exported_program()
    sources = {tap.args[0].name for tap in find_tap_nodes(program.graph_module)}
    assert len(sources) == len(specs) == 3
    n_nodes = len(program.graph.nodes)
    strip_taps_(edge)
    assert find_tap_nodes(program.graph_module) == []
    outputs = program.graph.output_node().args[0]
    assert {n.name for n in outputs[1:]} == sources
    assert len(program.graph.nodes) == n_nodes - 3  # nothing added: no copy, no clone
    names = [s.arg.name for s in program.graph_signature.output_specs]
    assert names == [n.name for n in outputs]


def test_strip_stats_adds_the_reducer_with_the_taps_handle() -> None:
    edge, specs = _tapped_edge(STATS)
    program = edge.exported_program()
    handles = {t.meta["debug_handle"] for t in find_tap_nodes(program.graph_module)}
    assert len(handles) == 3
    before = set(program.graph.nodes)
    strip_taps_(edge)
    strip_taps_(edge)  # nothing left: a no-op
    assert find_tap_nodes(program.graph_module) == []
    reducer_nodes = [n for n in program.graph.nodes if n not in before]
    assert {str(n.target) for n in reducer_nodes} >= {"aten.amin.default", "aten.stack.default"}
    # as the nodes of a decomposed operator: they share the tap's handle
    assert {n.meta["debug_handle"] for n in reducer_nodes} == handles
    assert all(n.meta.get("stack_trace") for n in reducer_nodes)
    assert all("val" in n.meta for n in reducer_nodes)
    x = torch.randn(2, 8)
    tapped = _mlp()
    tap_intermediate_outputs_(tapped, (select_by_op_type("aten.linear.default"), STATS))
    # the stripped program computes what the tapped one does
    with torch.no_grad():
        want = tapped.module()(x)
        got = program.module()(x)
    for s in specs:
        torch.testing.assert_close(got[s.output_index], want[s.output_index])


def test_strip_rejects_what_is_not_a_program() -> None:
    with pytest.raises(UsageError, match="EdgeProgramManager"):
        strip_taps_(object())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strip_taps_(_mlp())  # an untapped program: nothing to do
