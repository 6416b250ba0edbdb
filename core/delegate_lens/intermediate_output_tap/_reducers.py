"""Reducers: what a tap turns its tensor into before it leaves the program.

A :class:`StatReducer` has two faces that compute the same thing:

* ``eager(tensor) -> tensor`` — plain torch, run by the tap operator ahead of time (so the
  tapped program's own outputs already hold the reduced values);
* ``emit(graph, source) -> node`` — the same computation as graph nodes, built by
  :func:`~delegate_lens.intermediate_output_tap.strip_taps_` after lowering, where the
  runtime runs it with its portable kernels (outside every delegate).

Built in: ``FULL_TENSOR`` (the tensor itself) and ``STATS`` (thirteen float32 scalars, see
:data:`STATS_FIELDS`). Both faces of ``STATS`` use the same ATen operators in the same
order, so the runtime's value equals the eager one for the same input tensor.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import attrs
import torch
import torch.fx as fx

EmitFn = Callable[[fx.Graph, fx.Node], fx.Node]
EagerFn = Callable[[torch.Tensor], torch.Tensor]

aten = torch.ops.aten


@attrs.frozen
class StatReducer:
    """A reducer: its ``name`` (stored on each :class:`TapSpec`), the ``fields`` of its 1-D
    result (``()``: the value is a whole tensor), and its two faces ``emit`` and ``eager``
    (see the module text)."""

    name: str
    fields: tuple[str, ...]
    emit: EmitFn
    eager: EagerFn


# --------------------------------------------------------------------------- FULL_TENSOR


def _emit_identity(_graph: fx.Graph, source: fx.Node) -> fx.Node:
    return source


def _eager_identity(tensor: torch.Tensor) -> torch.Tensor:
    # a new tensor: an operator's output may not alias its input
    return tensor.detach().clone()


FULL_TENSOR = StatReducer("FULL_TENSOR", (), _emit_identity, _eager_identity)

# --------------------------------------------------------------------------- STATS

STATS_FIELDS: tuple[str, ...] = (
    "min",
    "max",
    "mean",
    "abs_max",
    "abs_mean",
    "std",
    "rms",
    "l1_norm",
    "l2_norm",
    "nan_count",
    "inf_count",
    "zero_count",
    "p99_abs",
)
"""``STATS`` fields. ``std`` is the population standard deviation, ``sqrt(|E[x²] -
E[x]²|)``; ``rms`` is ``sqrt(E[x²])``; ``p99_abs`` is the k-th largest ``|x|`` with
``k = max(1, ceil(numel / 100))``; the counts are float32."""


def _top_k(numel: int) -> int:
    return max(1, -(-numel // 100))


class _Ops:
    """One recipe, two faces: each method either calls the ATen operator (eager) or adds a
    node calling it (graph)."""

    def __init__(self, graph: fx.Graph | None) -> None:
        self.graph = graph

    def __call__(self, op: object, *args: object, **kwargs: object) -> object:
        if self.graph is None:
            return op(*args, **kwargs)  # type: ignore[operator]
        return self.graph.call_function(op, args, kwargs)  # type: ignore[arg-type]


def _stats(ops: _Ops, x: object, numel: int) -> object:
    # contiguous: the view below flattens it (a transpose's output is strided in eager)
    f = ops(aten._to_copy.default, x, dtype=torch.float32, memory_format=torch.contiguous_format)
    a = ops(aten.abs.default, f)
    sq = ops(aten.pow.Tensor_Scalar, f, 2.0)
    mean = ops(aten.mean.default, f)
    mean_sq = ops(aten.mean.default, sq)
    var = ops(
        aten.abs.default, ops(aten.sub.Tensor, mean_sq, ops(aten.pow.Tensor_Scalar, mean, 2.0))
    )
    k = _top_k(numel)
    top = ops(aten.topk.default, ops(aten.view.default, a, [-1]), k)
    count = lambda mask: ops(  # noqa: E731
        aten.sum.dim_IntList, ops(aten._to_copy.default, mask, dtype=torch.float32), []
    )
    values = [
        ops(aten.amin.default, f),
        ops(aten.amax.default, f),
        mean,
        ops(aten.amax.default, a),
        ops(aten.mean.default, a),
        ops(aten.sqrt.default, var),
        ops(aten.sqrt.default, mean_sq),
        ops(aten.sum.dim_IntList, a, []),
        ops(aten.sqrt.default, ops(aten.sum.dim_IntList, sq, [])),
        count(ops(aten.isnan.default, f)),
        count(ops(aten.isinf.default, f)),
        count(ops(aten.eq.Scalar, f, 0.0)),
        ops(aten.select.int, ops(operator.getitem, top, 0), 0, k - 1),
    ]
    return ops(aten.stack.default, values)


def _emit_stats(graph: fx.Graph, source: fx.Node) -> fx.Node:
    value = source.meta.get("val")
    numel = int(value.numel()) if isinstance(value, torch.Tensor) else 1
    node = _stats(_Ops(graph), source, numel)
    assert isinstance(node, fx.Node)
    return node


def _eager_stats(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.numel() == 0:
        nan = float("nan")
        empty = [nan, nan, nan, nan, nan, nan, nan, 0.0, 0.0, 0.0, 0.0, 0.0, nan]
        return torch.tensor(empty, dtype=torch.float32)
    out = _stats(_Ops(None), tensor.detach(), tensor.numel())
    assert isinstance(out, torch.Tensor)
    return out


STATS = StatReducer("STATS", STATS_FIELDS, _emit_stats, _eager_stats)

_BUILT_IN: dict[str, StatReducer] = {r.name: r for r in (FULL_TENSOR, STATS)}


def get_reducer(name_or_reducer: str | StatReducer) -> StatReducer:
    """A built-in reducer by name, or the given :class:`StatReducer` itself.

    :raises ValueError: an unknown name (the message lists the known ones).
    """
    if isinstance(name_or_reducer, StatReducer):
        return name_or_reducer
    found = _BUILT_IN.get(name_or_reducer) if isinstance(name_or_reducer, str) else None
    if found is None:
        known = ", ".join(sorted(_BUILT_IN))
        raise ValueError(f"unknown reducer {name_or_reducer!r} (known: {known})")
    return found


def register_reducer(reducer: StatReducer) -> None:
    """Make ``reducer`` findable by name: the tap operator and :func:`strip_taps_` find
    reducers by the name the tap node holds.

    :raises ValueError: another reducer already has that name.
    """
    known = _BUILT_IN.setdefault(reducer.name, reducer)
    if known is not reducer:
        raise ValueError(
            f"reducer name {reducer.name!r} is taken by another reducer; give yours its own name"
        )
