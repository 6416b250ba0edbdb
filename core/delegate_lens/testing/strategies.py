"""Hypothesis strategies for a backend author's property tests (needs the ``testing`` extra).

Every strategy is built from hypothesis primitives, so every example shrinks:

* :func:`debug_handles` — a sorted tuple of debug handles (one map entry's value);
* :func:`delegate_mappings` — valid Debug Handle Maps (int or str identifiers, fused
  entries holding several handles, decomposed handles appearing in several entries);
* :func:`models` — small random :class:`GeneratedModel` modules with example inputs, built
  from an op set the backend supports (:data:`OPS`), with shapes that always run;
* :func:`graphs` — the same, exported (``torch.export.ExportedProgram``);
* :func:`partitions` — disjoint runs of a graph's operators, contiguous in execution order
  (so every partition is valid), as ``{node name: tag}``;
* :func:`etdump_runs` — ETDumps whose runs hold operator and delegate calls, delegate
  events nested inside their ``DELEGATE_CALL``;
* :func:`metadata` — structured delegate metadata values for a backend.

torch is imported only when a model is drawn.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from delegate_lens.backend import INT_IDENTIFIER_MAX

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

    from delegate_lens.etdump import ETDump

__all__ = [
    "BINARY_OPS",
    "OPS",
    "GeneratedModel",  # noqa: F822 (made on first use by __getattr__)
    "debug_handles",
    "delegate_mappings",
    "etdump_runs",
    "graphs",
    "identifiers",
    "metadata",
    "models",
    "partitions",
]

# op name -> expression of its output, from input values ``{a}`` (and ``{b}``); ``{m}`` is
# the op's own sub-module (a Linear or LayerNorm made in op order, so seeds give weights)
_EXPRESSIONS: dict[str, str] = {
    "relu": "torch.relu({a})",
    "sigmoid": "torch.sigmoid({a})",
    "tanh": "torch.tanh({a})",
    "neg": "torch.neg({a})",
    "sin": "torch.sin({a})",
    "cos": "torch.cos({a})",
    "exp": "torch.exp({a})",
    "tan": "torch.tan({a} * 0.1)",  # mul(scalar) + tan, away from the poles
    "square": "{a} * {a}",
    "softmax": "{a}.softmax(-1)",
    "linear": "self.{m}({a})",
    "linear_relu": "torch.relu(self.{m}({a}))",  # a fusion candidate
    "layer_norm": "self.{m}({a})",
    "swap_halves": "torch.cat({a}.chunk(2, dim=-1)[::-1], dim=-1)",  # list result and argument
    "max_scale": "{a} * {a}.max(dim=-1, keepdim=True).values",  # tuple result, one part unused
    "add": "{a} + {b}",
    "mul": "{a} * {b}",
    "sub": "{a} - {b}",
}
_MODULES = {"linear": "Linear({w}, {w})", "linear_relu": "Linear({w}, {w})"}
_MODULES["layer_norm"] = "LayerNorm({w})"

OPS: tuple[str, ...] = tuple(_EXPRESSIONS)
"""Every op :func:`models` knows."""
BINARY_OPS: frozenset[str] = frozenset({"add", "mul", "sub"})


def _source(
    ops: Sequence[tuple[str, tuple[int, ...]]], outputs: Sequence[int], width: int
) -> tuple[str, str]:
    """``(__init__ body, forward source)`` of a generated model."""
    init = [
        f"self.m{i} = torch.nn.{_MODULES[name].format(w=width)}"
        for i, (name, _) in enumerate(ops)
        if name in _MODULES
    ]
    lines = ["def forward(self, v0):"]
    for i, (name, args) in enumerate(ops):
        a = f"v{args[0]}"
        b = f"v{args[1]}" if len(args) > 1 else a
        lines.append(f"    v{i + 1} = " + _EXPRESSIONS[name].format(a=a, b=b, m=f"m{i}"))
    result = ", ".join(f"v{o}" for o in outputs)
    lines.append(f"    return ({result},)" if len(outputs) > 1 else f"    return {result}")
    return "\n".join(init), "\n".join(lines)


def _model_class() -> type[torch.nn.Module]:
    import torch

    class _GeneratedModel(torch.nn.Module):
        def __init__(
            self,
            ops: Sequence[tuple[str, Sequence[int]]],
            outputs: Sequence[int] | None = None,
            width: int = 6,
            batch: int = 2,
            seed: int = 0,
        ) -> None:
            super().__init__()
            unknown = sorted({name for name, _ in ops} - set(OPS))
            if unknown or not ops:
                raise ValueError(
                    f"GeneratedModel: unknown ops {unknown}"
                    if unknown
                    else "GeneratedModel needs at least one op"
                )
            self.op_list = [(str(name), tuple(int(a) for a in args)) for name, args in ops]
            self.outputs = list(outputs) if outputs else [len(ops)]
            self.width, self.batch, self.seed = width, batch, seed
            for i, (name, args) in enumerate(self.op_list):
                if not args or any(not 0 <= a <= i for a in args):
                    raise ValueError(f"GeneratedModel: op {i} ({name}) reads {args}, not 0..{i}")
            torch.manual_seed(seed)
            init, forward = _source(self.op_list, self.outputs, width)
            for line in init.splitlines():  # self.mI = torch.nn.X(...)
                attr, expr = line.split(" = ", 1)
                setattr(self, attr[5:], eval(expr, {"torch": torch}))
            namespace: dict[str, Any] = {"torch": torch}
            exec(compile(forward, f"<GeneratedModel seed={seed}>", "exec"), namespace)
            self._forward = namespace["forward"]
            gen = torch.Generator().manual_seed(seed)
            self.example_inputs = (torch.randn(batch, width, generator=gen),)

        def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
            return self._forward(self, x)

        def __repr__(self) -> str:
            return (
                f"GeneratedModel(ops={self.op_list!r}, outputs={self.outputs!r}, "
                f"width={self.width}, batch={self.batch}, seed={self.seed})"
            )

        def to_source(self) -> str:
            """Standalone Python building the same model (same weights) and inputs."""
            init, forward = _source(self.op_list, self.outputs, self.width)
            body = "".join(f"        {line}\n" for line in init.splitlines())
            fwd = "".join(f"    {line}\n" for line in forward.splitlines())
            return (
                "import torch\n\n\nclass Model(torch.nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n"
                f"        torch.manual_seed({self.seed})\n{body}\n{fwd}\n\n"
                "model = Model().eval()\n"
                f"inputs = (torch.randn({self.batch}, {self.width}, "
                f"generator=torch.Generator().manual_seed({self.seed})),)\n"
            )

    _GeneratedModel.__name__ = _GeneratedModel.__qualname__ = "GeneratedModel"
    return _GeneratedModel


_CLASS: list[type[torch.nn.Module]] = []


def __getattr__(name: str) -> type[torch.nn.Module]:
    if name == "GeneratedModel":  # a torch.nn.Module subclass: made on first use
        if not _CLASS:
            _CLASS.append(_model_class())
        return _CLASS[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@st.composite
def _op_lists(
    draw: st.DrawFn, ops: Sequence[str], min_ops: int, max_ops: int
) -> tuple[list[tuple[str, tuple[int, ...]]], list[int]]:
    n = draw(st.integers(min_ops, max_ops))
    chosen: list[tuple[str, tuple[int, ...]]] = []
    for i in range(n):
        name = draw(st.sampled_from(ops))
        count = 2 if name in BINARY_OPS else 1
        # most ops read the latest value (chains shrink towards it), some reach back
        args = tuple(i - draw(st.integers(0, i)) for _ in range(count))
        chosen.append((name, args))
    extra = draw(st.lists(st.integers(1, n), max_size=2, unique=True))
    return chosen, sorted({n, *extra})


def models(
    ops: Iterable[str] | None = None,
    *,
    min_ops: int = 1,
    max_ops: int = 6,
    width: int = 6,
    batch: int = 2,
) -> st.SearchStrategy[torch.nn.Module]:
    """Random :class:`GeneratedModel` modules (in eval mode) over ``ops`` (default :data:`OPS`).

    Each has ``example_inputs`` (one ``[batch, width]`` float tensor), a ``repr`` that
    rebuilds it and ``to_source()`` printing it as standalone code.
    """
    names = tuple(OPS if ops is None else ops)
    unknown = sorted(set(names) - set(OPS))
    if unknown or not names:
        raise ValueError(f"models(ops=...): unknown ops {unknown}; known: {', '.join(OPS)}")
    if width % 2:
        raise ValueError("models(width=...) must be even (swap_halves splits it)")

    def build(
        case: tuple[tuple[list[tuple[str, tuple[int, ...]]], list[int]], int],
    ) -> torch.nn.Module:
        (chosen, outputs), seed = case
        cls = __getattr__("GeneratedModel")
        return cls(chosen, outputs, width, batch, seed).eval()

    return st.tuples(_op_lists(names, min_ops, max_ops), st.integers(0, 1000)).map(build)


def graphs(ops: Iterable[str] | None = None, **kwargs: int) -> st.SearchStrategy[ExportedProgram]:
    """:func:`models` exported with ``torch.export.export`` (an ``ExportedProgram``);
    ``kwargs`` are those of :func:`models` (``min_ops``, ``max_ops``, ``width``, ``batch``)."""

    def export(model: torch.nn.Module) -> ExportedProgram:
        import torch

        return torch.export.export(model, tuple(getattr(model, "example_inputs", ())))

    return models(ops, **kwargs).map(export)


def _op_nodes(graph: object) -> list[torch.fx.Node]:
    fx_graph: Any = getattr(graph, "graph", graph)  # ExportedProgram, GraphModule or Graph
    return [
        n
        for n in fx_graph.nodes
        if n.op == "call_function" and getattr(n.target, "__name__", "") != "getitem"
    ]


@st.composite
def partitions(
    draw: st.DrawFn, graph: object, *, max_partitions: int = 4, tags: Sequence[str] | None = None
) -> dict[str, str]:
    """Disjoint runs of ``graph``'s operators, contiguous in execution order: ``{node name: tag}``.

    ``graph`` is an ``ExportedProgram``, ``GraphModule`` or ``Graph``; runs are cut at random
    points and each run is left out or given its own tag (``tag0``, ``tag1``, ... or drawn
    from ``tags``). ``operator.getitem`` nodes are never tagged.
    """
    nodes = _op_nodes(graph)
    if not nodes:
        return {}
    cut_points = st.sets(st.integers(1, max(1, len(nodes) - 1)), max_size=max_partitions)
    cuts = sorted(c for c in draw(cut_points, label="cuts") if c < len(nodes))
    bounds = [0, *cuts, len(nodes)]
    owner: dict[str, str] = {}
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if not draw(st.booleans(), label=f"run {k} delegated"):
            continue
        tag = draw(st.sampled_from(list(tags)), label="tag") if tags else f"tag{k}"
        for node in nodes[lo:hi]:
            owner[node.name] = tag
    return owner


def debug_handles(
    handles: Collection[int] | None = None, *, max_handle: int = 1000, max_size: int = 4
) -> st.SearchStrategy[tuple[int, ...]]:
    """A non-empty sorted tuple of distinct debug handles (one map entry's value).

    Drawn from ``handles`` (e.g. a partition's) when given, else from ``0..max_handle``.
    """
    element = st.sampled_from(sorted(handles)) if handles else st.integers(0, max_handle)
    return st.lists(element, min_size=1, max_size=max_size, unique=True).map(
        lambda hs: tuple(sorted(hs))
    )


def identifiers(kind: str = "any") -> st.SearchStrategy[int | str]:
    """Delegate debug identifiers: ``"int"`` (0..int32 max), ``"str"`` (non-empty) or ``"any"``."""
    ints = st.integers(0, INT_IDENTIFIER_MAX)
    # printable Latin text (a plain code-point range: no Unicode tables to build)
    strs = st.text(st.characters(min_codepoint=33, max_codepoint=0x24F), min_size=1, max_size=12)
    if kind == "int":
        return ints
    if kind == "str":
        return strs
    if kind == "any":
        return st.one_of(ints, strs)
    raise ValueError(f"identifiers(kind={kind!r}): expected 'int', 'str' or 'any'")


def delegate_mappings(
    handles: Collection[int] | None = None,
    *,
    identifiers_kind: str = "any",
    min_size: int = 1,
    max_size: int = 8,
) -> st.SearchStrategy[dict[int | str, tuple[int, ...]]]:
    """Valid Debug Handle Maps ``{identifier: sorted tuple of handles}``.

    Entries with several handles are fused operators; a handle in several entries is a
    decomposed one. With ``handles`` (a partition's), every entry draws from them.
    ``identifiers_kind`` is ``"int"``, ``"str"`` or ``"any"`` (one map mixes both).
    """
    entry = st.tuples(identifiers(identifiers_kind), debug_handles(handles))
    return st.lists(entry, min_size=min_size, max_size=max_size, unique_by=lambda e: e[0]).map(dict)


def metadata(backend_id: str) -> st.SearchStrategy[object]:
    """Structured delegate metadata values ``backend_id`` logs.

    Taken from the backend's :class:`~delegate_lens.testing.BackendProfile` (its
    ``metadata`` strategy, from ``dl_testing_profile``); raw ``bytes`` otherwise (bytes are
    stored as they are, without ``dl_encode_delegate_metadata``).
    """
    from delegate_lens.testing._profile import backend_profile

    profile = backend_profile(backend_id)
    if profile.metadata is not None:
        strategy: st.SearchStrategy[object] = profile.metadata()
        return strategy
    return st.binary(max_size=64)


@st.composite
def etdump_runs(
    draw: st.DrawFn,
    delegate_map: Mapping[int | str, object] | None = None,
    *,
    max_runs: int = 3,
    max_instructions: int = 5,
) -> ETDump:
    """An :class:`~delegate_lens.etdump.ETDump` of ``Execute`` runs (one shape, repeated).

    Each instruction is an ``OPERATOR_CALL`` or a ``DELEGATE_CALL`` preceded by the
    delegate events it logged (identifiers from ``delegate_map`` when given), whose times
    lie inside the call's and never run backwards.
    """
    from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData

    ids = sorted(delegate_map, key=str) if delegate_map else None
    ident_st = st.sampled_from(ids) if ids else identifiers()
    shape = draw(
        st.lists(
            st.one_of(st.none(), st.lists(ident_st, min_size=1, max_size=4)),
            min_size=1,
            max_size=max_instructions,
        )
    )
    runs = []
    for _ in range(draw(st.integers(1, max_runs))):
        clock = draw(st.integers(0, 2**40))
        events = []
        for iid, delegated in enumerate(shape):
            start = clock
            if delegated:
                for ident in delegated:
                    s = clock + draw(st.integers(0, 50))
                    e = s + draw(st.integers(0, 500))
                    clock = e
                    kwargs: dict[str, Any] = (
                        {"delegate_debug_id_int": ident}
                        if isinstance(ident, int)
                        else {"delegate_debug_id_str": ident}
                    )
                    events.append(
                        Event(
                            profile_event=ProfileEvent(
                                chain_index=0,
                                instruction_id=iid,
                                start_time=s,
                                end_time=e,
                                **kwargs,
                            )
                        )
                    )
            clock += draw(st.integers(0, 50))
            name = "DELEGATE_CALL" if delegated else "OPERATOR_CALL"
            events.append(
                Event(
                    profile_event=ProfileEvent(
                        name=name,
                        chain_index=0,
                        instruction_id=iid,
                        start_time=start,
                        end_time=clock,
                    )
                )
            )
        runs.append(RunData(name="Execute", events=events))
    return ETDump(run_data=runs)
