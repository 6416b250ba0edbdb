"""``Inspector.calculate_numeric_gap``: where does the runtime's output leave the reference?

1. Reference outputs: an :class:`~delegate_lens.numerics.AotOutputs` given,
   read from a cache, or captured from the ETRecord with torch (the only step that needs
   it; :mod:`delegate_lens.numerics._capture`).
2. Runtime outputs: the debug values of the first run of the method's block, one entry per
   row that has operators and values; a backend's values pass through its
   ``dl_intermediate_output`` hook first (dequantization, layout). A ``DELEGATE_CALL`` whose
   handles are covered by values its backend logged per operation is left out (as the
   reference does); rows without values take no part (unlike the reference, where a summary
   row without values swallows the per-op rows it overlaps).
3. Matching (as the reference): entries with the same handles keep the last one run;
   overlapping handle sets merge (connected components, the later entry's handles last and
   its value kept); each merged entry is compared with the AOT output of its last handle.
   Entries and AOT outputs left without a counterpart are listed, never dropped silently.
4. Gaps with a comparator (``dl_numerical_comparators``), ``diverged`` against a threshold,
   and ``first_divergence``: diverged while no row feeding it (graph data flow) diverged.

numpy only: importing this module never imports torch.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import InspectorError, NumericGapUsageError
from delegate_lens.numerics._aot_outputs import AotOutputs
from delegate_lens.numerics._comparators import Comparator, resolve_comparator, torch_reductions
from delegate_lens.numerics._divergence import mark_first_divergence
from delegate_lens.numerics._pairing import pair_outputs
from delegate_lens.numerics._runtime_entries import (
    Entry,
    runtime_intermediate_outputs,
    tables_of,
    warn,
)
from delegate_lens.numerics._table import NumericGapTable, Unmatched

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector


def _float(value: object) -> npt.NDArray[np.float64] | None:
    if value is None:
        return None
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if np.isnan(array).any():
        array = np.nan_to_num(array, nan=0.0, posinf=np.inf, neginf=-np.inf)
    return array


def _gap(
    comparator: Comparator,
    aot: object,
    runtime: object,
    ops: str,
    reference_gaps: list[float] | None = None,
) -> tuple[list[float], str]:
    """Gaps of one pair (one per element of a list), and a note on what was off.

    Equal infinities on both sides are no gap here; the reference's gaps (where they are
    nan, or inf) are appended to ``reference_gaps`` when it is given."""
    pairs: list[tuple[Any, Any]]
    if isinstance(aot, list):
        runtime_list = runtime if isinstance(runtime, list) else [runtime]
        if len(runtime_list) != len(aot):
            warn(
                f"numeric gap of {ops}: the reference gives {len(aot)} outputs, the runtime "
                f"{len(runtime_list)}; compared the first {min(len(aot), len(runtime_list))}"
            )
        pairs = list(zip(aot, runtime_list))
    else:
        pairs = [(aot, runtime[-1] if isinstance(runtime, list) and runtime else runtime)]
    gaps: list[float] = []
    theirs: list[float] = []  # the reference's gaps (of the pairs compared)
    notes: list[str] = []
    for a_raw, r_raw in pairs:
        a, r = _float(a_raw), _float(r_raw)
        if a is None or r is None:
            notes.append("value not numeric")
            gaps.append(math.nan)
            theirs.append(math.nan)
            continue
        if a.shape != r.shape:
            if a.size != r.size:
                warn(
                    f"numeric gap of {ops}: shapes disagree (reference {list(a.shape)}, "
                    f"runtime {list(r.shape)}); gap is nan"
                )
                notes.append(f"shapes disagree: {list(a.shape)} vs {list(r.shape)}")
                gaps.append(math.nan)
                theirs.append(_broadcast_gap(comparator, a, r, ops))  # torch broadcasts
                continue
            notes.append(f"runtime shape {list(r.shape)} reshaped to {list(a.shape)}")
            r = r.reshape(a.shape)
        same = a == r  # equal infinities (masked scores) are no gap, not nan
        if np.isfinite(a[same]).all():
            gaps.append(_compare(comparator, a, r, ops))
            theirs.append(gaps[-1])
            continue
        theirs.append(_compare(comparator, a, r, ops) if reference_gaps is not None else 0.0)
        gaps.append(_compare(comparator, np.where(same, 0.0, a), np.where(same, 0.0, r), ops))
    if reference_gaps is not None:
        reference_gaps.extend(theirs)
    return gaps, "; ".join(notes)


def _broadcast_gap(comparator: Comparator, a: Any, r: Any, ops: str) -> float:
    """The reference's gap of two shapes that disagree: broadcast (nan if they cannot)."""
    try:
        a, r = np.broadcast_arrays(a, r)
    except ValueError:
        return math.nan
    return _compare(comparator, a, r, ops)


def _compare(comparator: Comparator, a: Any, r: Any, ops: str) -> float:
    try:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            return float(comparator.compare(a, r))
    except Exception as exc:
        raise InspectorError(
            f"comparator {comparator.name!r} failed on {ops}: {type(exc).__name__}: {exc}"
        ) from None


def _resolve_aot(
    inspector: Inspector,
    aot_outputs: AotOutputs | str | os.PathLike[str] | None,
    inputs: Sequence[object] | None,
    reference_graph: str | None,
    cache: bool | str | os.PathLike[str],
    method: str,
    disable_validation: bool,
) -> AotOutputs:
    if isinstance(aot_outputs, AotOutputs):
        return aot_outputs
    if aot_outputs is not None:
        return AotOutputs.load(aot_outputs)
    if inspector.etrecord is None:
        raise InspectorError(
            "calculate_numeric_gap needs an ETRecord (etrecord=...) with representative "
            "inputs, or aot_outputs=..."
        )
    from delegate_lens.numerics._capture import capture_intermediate_outputs  # torch

    return capture_intermediate_outputs(
        inspector.etrecord,
        inputs,
        method=method,
        reference_graph=reference_graph,
        cache=cache,
        disable_debug_handle_validation=disable_validation,
    )


AotSource = AotOutputs | str | os.PathLike[str] | None


def calculate_numeric_gap(
    inspector: Inspector,
    distance: object = "MSE",
    *,
    inputs: Sequence[object] | Mapping[str, Sequence[object]] | None = None,
    aot_outputs: AotSource | Mapping[str, AotSource] = None,
    reference_graph: str | None = None,
    cache: bool | str | os.PathLike[str] = False,
    threshold: float | None = None,
    method: str | None = None,
    disable_debug_handle_validation: bool = False,
    reference_pairing: bool = False,
    reference_reductions: bool = False,
) -> NumericGapTable:
    """See :meth:`delegate_lens.Inspector.calculate_numeric_gap`.

    ``reference_pairing``: the outputs of a partition with several are paired as the
    reference pairs them (with the outputs of its handle set's last handles, in output
    order), for the reference's frame; by default each with the output it is.

    ``reference_reductions``: the built-in comparators reduce with torch (imported), as the
    reference's do, for the reference's frame (its tensors need torch anyway): its gaps to
    the last bit; by default with numpy.

    One method per call, unless ``method`` is None and ``inputs`` (or ``aot_outputs``) is
    a mapping by method name: then every method of the run with intermediate outputs and
    inputs in the mapping is compared, their rows one table (``method`` column). A method
    of the run left out is said in a warning and listed in ``unmatched``, never dropped
    silently.
    """
    from delegate_lens.numerics._comparators import NumericalComparatorBase

    if aot_outputs is None and inspector.etrecord is None:
        # said first: without it no row has a method or an operator to compare
        raise NumericGapUsageError(
            "calculate_numeric_gap needs the program's ETRecord, with representative inputs: "
            "Inspector(..., etrecord=...) (CLI: --etrecord), or reference outputs already "
            "captured (aot_outputs=...)"
        )
    if isinstance(distance, NumericalComparatorBase) and distance.inspector is None:
        distance.inspector = inspector  # as the reference hands it the Inspector
    comparator = resolve_comparator(distance)
    if threshold is None:
        threshold = comparator.default_threshold
    default = method or _method_of(inspector, method)
    by_method = isinstance(inputs, Mapping) or isinstance(aot_outputs, Mapping)
    run_methods = [default]
    if method is None and by_method:
        logged = dict.fromkeys(t.method for t in inspector.tables if t.debug_data and t.method)
        run_methods = [m for m in logged if m == default or _given(inputs, aot_outputs, m)]
    tables = []
    with torch_reductions(reference_reductions):
        for name in run_methods:
            tables.append(
                _method_gap(
                    inspector,
                    comparator,
                    float(threshold),
                    _pick(inputs, name, default),
                    _pick(aot_outputs, name, default),
                    reference_graph,
                    cache if name == default else False,  # one cache file: the default's
                    name,
                    disable_debug_handle_validation,
                    reference_pairing,
                )
            )
    table = tables[0]
    for other in tables[1:]:
        table.rows.extend(other.rows)
        table.unmatched.extend(other.unmatched)
    if len(tables) > 1:
        graphs = dict.fromkeys(t.reference_graph for t in tables)
        table.reference_graph = ", ".join(graphs)
    if method is None:
        table.unmatched.extend(_other_methods(inspector, run_methods))
    return table


def _given(inputs: object, aot_outputs: object, method: str) -> bool:
    return any(isinstance(v, Mapping) and v.get(method) is not None for v in (inputs, aot_outputs))


def _pick(value: Any, method: str, default: str) -> Any:
    """``method``'s part of a mapping by method; a value that is not one is the default
    method's."""
    if isinstance(value, Mapping):
        return value.get(method)
    return value if method == default else None


def _method_gap(
    inspector: Inspector,
    comparator: Comparator,
    threshold: float,
    inputs: Sequence[object] | None,
    aot_outputs: AotSource,
    reference_graph: str | None,
    cache: bool | str | os.PathLike[str],
    chosen_method: str,
    disable_debug_handle_validation: bool,
    reference_pairing: bool = False,
) -> NumericGapTable:
    """The gap table of one method."""
    entries, unmatched = runtime_intermediate_outputs(inspector, chosen_method)
    aot = _resolve_aot(
        inspector,
        aot_outputs,
        inputs,
        reference_graph,
        cache,
        chosen_method,
        disable_debug_handle_validation,
    )
    if not aot.outputs:
        raise InspectorError(
            "the reference graph produced no intermediate outputs (no node with a debug handle)"
        )
    covered: set[int] = set()
    rows: list[dict[str, Any]] = []
    for entry in entries:
        present = [h for h in entry.handles if (h,) in aot.outputs]
        covered.update(entry.handles)
        label = ", ".join(map(str, entry.identifiers)) or ", ".join(entry.names)
        if not present:
            unmatched.append(
                Unmatched(
                    "runtime",
                    entry.handles,
                    entry.names,
                    f"no reference output for handles {list(entry.handles)}",
                    entry.identifiers,
                )
            )
            continue
        aot_ops = [n for h in dict.fromkeys(entry.handles) for n in aot.op_names.get((h,), [])]
        for last, runtime_value, pairing in _targets(
            entry, aot, unmatched, label, reference_pairing
        ):
            if runtime_value is None:
                warn(
                    f"numeric gap of {', '.join(aot_ops)} ({label}): the runtime value is "
                    "unavailable (debug buffer missing or truncated); row left out"
                )
                unmatched.append(
                    Unmatched(
                        "runtime",
                        entry.handles,
                        entry.names,
                        "runtime value unavailable (debug buffer missing or truncated)",
                        entry.identifiers,
                    )
                )
                continue
            aot_value = None if last is None else aot.outputs[(last,)]
            theirs: list[float] = []
            if aot_value is None:  # an ambiguous pairing: no gap, said in the note
                gaps, note = [math.nan], ""
            else:
                gaps, note = _gap(
                    comparator, aot_value, runtime_value, f"{', '.join(aot_ops)} ({label})", theirs
                )
            rows.append(
                {
                    "aot_debug_handle": entry.handles,
                    "aot_ops": aot_ops,
                    "aot_intermediate_output": aot_value,
                    "runtime_ops": list(entry.names),
                    "runtime_debug_handle": entry.handles,
                    "runtime_intermediate_output": runtime_value,
                    "gap": gaps,
                    "stacktraces": {n: aot.stack_traces.get(n) for n in aot_ops},
                    "delegate_backend": entry.backend,
                    "delegate_identifiers": list(entry.identifiers),
                    "diverged": aot_value is not None
                    and any(comparator.diverged(g, threshold) for g in gaps),
                    "first_divergence": False,
                    "note": "; ".join(x for x in (pairing, note) if x),
                    "method": chosen_method,
                    "_reference_runtime_ops": list(entry.reference_names),
                    "_reference_gap": theirs or gaps,
                    "_order": aot.order.get(
                        entry.handles[-1] if last is None or reference_pairing else last, 0
                    ),
                    "_reference_aot_ops": _graph_ordered_ops(entry.handles, aot),
                    "_handles": set(h for h in entry.handles if (h,) in aot.outputs),
                    "_pairing": pairing,
                }
            )
    for handles, _ in aot.outputs.items():
        if handles[0] not in covered:
            unmatched.append(
                Unmatched(
                    "aot",
                    handles,
                    list(aot.op_names.get(handles, [])),
                    "no runtime output logged for this handle",
                )
            )
    if comparator.preprocess is not None:
        from delegate_lens.numerics._preprocess import apply_preprocessing

        rows = apply_preprocessing(comparator, rows, threshold, _gap)
    rows.sort(key=lambda r: r["_order"])
    mark_first_divergence(rows, aot)
    for row in rows:
        del row["_order"], row["_handles"], row["_pairing"]
    return NumericGapTable(
        rows, unmatched, comparator.name, float(threshold), comparator.higher_is_better, aot.graph
    )


def _graph_ordered_ops(handles: Sequence[int], aot: AotOutputs) -> list[str]:
    """The reference's ``aot_ops``: the names of the handles' nodes in graph order."""
    ordered = sorted(dict.fromkeys(handles), key=lambda h: aot.order.get(h, 0))
    return [n for h in ordered for n in aot.op_names.get((h,), [])]


def _targets(
    entry: Entry,
    aot: AotOutputs,
    unmatched: list[Unmatched],
    label: str,
    reference_pairing: bool = False,
) -> list[tuple[int | None, object, str]]:
    """``(reference handle, runtime value, pairing note)`` for each output of ``entry`` to
    compare: a partition's several outputs paired by position and shape
    (:mod:`delegate_lens.numerics._pairing`; handle None when ambiguous), else output ``i``
    from the end with the AOT output of the ``i``-th last handle (as the reference)."""
    count = entry.num_outputs
    several = count > 1 and len(entry.handles) > 1 and len(entry.value) >= count
    if several and not reference_pairing:
        outputs = list(entry.value[-count:])
        return [
            (p.handle, outputs[p.index], p.note)
            for p in pair_outputs(entry.handles, outputs, aot, label)
        ]
    targets: list[tuple[int | None, object, str]] = []
    for i in range(max(1, min(count, len(entry.handles)))):
        last = entry.handles[-(i + 1)] if i < len(entry.handles) else None
        if last is None or (last,) not in aot.outputs:
            unmatched.append(
                Unmatched(
                    "runtime",
                    entry.handles,
                    entry.names,
                    f"output {i} from the end: its handle {last} has no reference output",
                    entry.identifiers,
                )
            )
            continue
        targets.append((last, _pick_runtime(entry, i, aot.outputs[(last,)]), ""))
    return targets


def _pick_runtime(entry: Entry, i: int, aot_value: object) -> object:
    """The runtime value compared with output ``i`` from the end.

    One output against several values of a multi-output operator (e.g. the reference's
    single ``layer_norm`` against the runtime's ``native_layer_norm`` out, mean, rstd): the
    one of the same shape, then of the same dtype, else the last (as the reference does).
    """
    values = entry.value
    if not values:
        return None
    if i >= len(values):
        return values[-1]
    # a delegate call's values start with its arguments: only its outputs are candidates
    tail = values[-entry.num_outputs :] if entry.backend is not None else values
    single = min(entry.num_outputs, len(entry.handles)) == 1
    if len(tail) > 1 and isinstance(aot_value, np.ndarray) and single:
        same = [v for v in tail if isinstance(v, np.ndarray) and v.shape == aot_value.shape]
        if len(same) > 1:
            same = [v for v in same if v.dtype == aot_value.dtype]
        if len(same) == 1:
            return same[0]
    return values[-(i + 1)]


def _other_methods(inspector: Inspector, compared: Sequence[str]) -> list[Unmatched]:
    """The methods with intermediate outputs not ``compared``, each said in a warning and
    listed as unmatched (each method needs its own inputs: the ETRecord's are one method's)."""
    others = list(
        dict.fromkeys(
            t.method
            for t in inspector.tables
            if t.debug_data and t.method and t.method not in compared
        )
    )
    if not others:
        return []
    names = ", ".join(repr(m) for m in others)
    done = ", ".join(repr(m) for m in compared)
    warn(
        f"the run logged intermediate outputs of methods {done} and {names}; compared {done} "
        "only: give each method's inputs, inputs={method: [...]}, or call "
        "calculate_numeric_gap(method=..., inputs=[...]) per method"
    )
    return [
        Unmatched(
            "runtime",
            (),
            [str(m)],
            f"method {m!r} not compared: no inputs for it (inputs={{{m!r}: [...]}})",
        )
        for m in others
    ]


def _method_of(inspector: Inspector, method: str | None) -> str:
    _, chosen = tables_of(inspector, method)
    return chosen or "forward"
