"""The canonical form of the differential suite's results (``calls.py`` and
``calls_surface.py``): plain, comparable Python values, never torch, numpy or pandas objects,
so that the pickles of the two libraries compare with ``==``."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
from collections.abc import Callable
from typing import Any


def _float(value: float) -> Any:
    return ("float", repr(float(value)))


def canon(value: Any) -> Any:
    """``value`` as plain, comparable Python values (no torch, numpy or pandas objects)."""
    if value is None or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return _float(value)
    module = type(value).__module__.split(".")[0]
    if module == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return ("ndarray", str(value.dtype), list(value.shape), _values(value.tolist()))
        if isinstance(value, np.floating):
            return _float(float(value))
        if isinstance(value, (np.integer, np.bool_)):
            return canon(value.item())
    if module == "torch":
        import torch

        if isinstance(value, torch.Tensor):
            return ("tensor", str(value.dtype), list(value.shape), _values(value.tolist()))
        if isinstance(value, torch.dtype):
            return ("dtype", str(value))
    if module == "pandas":
        import pandas as pd

        if isinstance(value, pd.DataFrame):
            return (
                "frame",
                [str(c) for c in value.columns],
                [str(d) for d in value.dtypes],
                [[canon(cell) for cell in row] for row in value.itertuples(index=False)],
            )
        if isinstance(value, pd.Series):
            return ("series", str(value.dtype), [canon(v) for v in value.tolist()])
    if isinstance(value, tuple):
        return ("tuple", [canon(v) for v in value])
    if isinstance(value, list):
        return ("list", [canon(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(canon(k), canon(v)) for k, v in value.items()])
    if hasattr(value, "value") and type(value).__mro__[-2].__name__ == "Enum":
        return ("enum", type(value).__name__, canon(value.value))
    return ("object", type(value).__name__)


def _values(values: Any) -> Any:
    if isinstance(values, list):
        return [_values(v) for v in values]
    if isinstance(values, float):
        return repr(values) if not math.isnan(values) else "nan"
    return values


def raised(exc: BaseException) -> Any:
    return ("raises", type(exc).__name__, [c.__name__ for c in type(exc).__mro__])


def target_name(target: Any) -> str:
    """An operator's qualified name (``aten.linear.default``), whether the graph holds
    ExecuTorch's edge operator (the reference) or torch's own (delegate-lens, which never
    imports executorch: a deliberate difference, docs/migrating.md)."""
    for op in (target, getattr(target, "_op", None)):  # an edge operator wraps torch's
        schema = getattr(op, "_schema", None)
        overload = getattr(op, "_overloadname", None)
        if schema is not None and isinstance(overload, str):
            return f"{schema.name.replace('::', '.')}.{overload}"
    return str(getattr(target, "__name__", target))


def graph_canon(program: Any) -> Any:
    """An ExportedProgram (or GraphModule) as its nodes: op, target, name, args' names."""
    if program is None:
        return None
    if isinstance(program, dict):  # methods: the reference's order comes from a set, so sorted
        return ("methods", [(k, graph_canon(program[k])) for k in sorted(program)])
    module = program.graph_module if hasattr(program, "graph_module") else program
    nodes = [
        (n.op, target_name(n.target), n.name, [str(a) for a in n.args if hasattr(a, "name")])
        for n in module.graph.nodes
    ]
    return ("graph", type(program).__name__, nodes)


def printed(function: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    out = io.StringIO()
    function(*args, file=out, **kwargs)
    return out.getvalue()


def stdout_of(function: Callable[..., Any], *args: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function(*args)
    return out.getvalue()


def fields_canon(value: Any) -> Any:
    """A schema object (a dataclass, or an attrs class: the ETDump's and the bundled
    program's) as its fields, by name, recursively, without its class's name (the
    reference's ``ETDumpFlatCC`` is our ``ETDump``); anything else as ``canon``."""
    names: list[str] | None = None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
    elif hasattr(type(value), "__attrs_attrs__"):
        names = [a.name for a in type(value).__attrs_attrs__]
    if names is not None:
        return ("fields", [(n, fields_canon(getattr(value, n))) for n in names])
    if isinstance(value, (list, tuple)):
        return ("list", [fields_canon(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(canon(k), fields_canon(v)) for k, v in value.items()])
    return canon(value)
