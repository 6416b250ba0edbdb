"""The reference comparators' ``preprocessing(mapping)`` step, on our numeric-gap rows.

A :class:`~delegate_lens.numerics.NumericalComparatorBase` subclass may override
``preprocessing``: it gets ``{(aot handles, aot value): (runtime handles, runtime value)}``
with torch tensors (as the reference builds it, one entry per row) and returns the mapping
to compare. Rows whose AOT handles the returned mapping leaves out are dropped; the values
it returns replace the row's and the gap is computed again (imports torch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from delegate_lens.errors import UsageError
from delegate_lens.numerics._comparators import Comparator

GapFn = Callable[[Comparator, object, object, str, list[float]], tuple[list[float], str]]
_Pair = tuple[tuple[int, ...], object]  # (debug handles, value)


def _tensor(value: object) -> object:
    import numpy as np
    import torch

    if isinstance(value, list):
        return [_tensor(v) for v in value]
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return value


def _is_handles(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(h, int) and not isinstance(h, bool) for h in value
    )


def _check(mapping: object, name: str) -> list[tuple[_Pair, _Pair]]:
    if not isinstance(mapping, dict):
        raise UsageError(
            f"comparator {name!r}: preprocessing() must return a dict "
            f"{{(aot handles, aot value): (runtime handles, runtime value)}}, not "
            f"{type(mapping).__name__}"
        )
    items = list(mapping.items())
    for key, value in items:
        for part, what in ((key, "key"), (value, "value")):
            if not (isinstance(part, tuple) and len(part) == 2 and _is_handles(part[0])):
                raise UsageError(
                    f"comparator {name!r}: preprocessing() returned the {what} {part!r}; "
                    "expected (tuple of int debug handles, value)"
                )
    return items


def apply_preprocessing(
    comparator: Comparator, rows: list[dict[str, Any]], threshold: float, gap: GapFn
) -> list[dict[str, Any]]:
    """``rows`` after ``comparator.preprocess`` (see the module text)."""
    assert comparator.preprocess is not None
    kept = [r for r in rows if r["aot_intermediate_output"] is None]  # ambiguous: no gap
    rows = [r for r in rows if r["aot_intermediate_output"] is not None]
    mapping = {
        (tuple(r["aot_debug_handle"]), _tensor(r["aot_intermediate_output"])): (
            tuple(r["runtime_debug_handle"]),
            _tensor(r["runtime_intermediate_output"]),
        )
        for r in rows
    }
    items = _check(comparator.preprocess(mapping), comparator.name)
    same_order = len(items) == len(rows) and all(
        k[0] == tuple(r["aot_debug_handle"]) for (k, _), r in zip(items, rows)
    )
    if same_order:
        pairs = list(zip(rows, items))
    else:
        by_handles: dict[tuple[int, ...], tuple[Any, Any]] = {}
        for key, value in items:
            by_handles.setdefault(key[0], (key, value))
        pairs = [
            (r, by_handles[tuple(r["aot_debug_handle"])])
            for r in rows
            if tuple(r["aot_debug_handle"]) in by_handles
        ]
    out = []
    for row, ((_, aot_value), (_, runtime_value)) in pairs:
        ops = ", ".join(row["aot_ops"])
        theirs: list[float] = []  # the reference's (equal infinities a nan gap)
        gaps, note = gap(comparator, aot_value, runtime_value, ops, theirs)
        row["_reference_gap"] = theirs
        row["aot_intermediate_output"] = aot_value
        row["runtime_intermediate_output"] = runtime_value
        row["gap"] = gaps
        row["note"] = "; ".join(x for x in (row.get("_pairing", ""), note) if x)
        row["diverged"] = any(comparator.diverged(g, threshold) for g in gaps)
        out.append(row)
    return out + kept
