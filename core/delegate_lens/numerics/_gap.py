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
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from delegate_lens.errors import InspectorError, InspectorWarning, UsageError
from delegate_lens.etdump import FRAMEWORK_EVENTS
from delegate_lens.numerics._aot_outputs import AotOutputs
from delegate_lens.numerics._comparators import Comparator, resolve_comparator
from delegate_lens.numerics._table import NumericGapTable, Unmatched

if TYPE_CHECKING:
    from delegate_lens.inspector import BlockTable, Inspector

Handles = tuple[int, ...]


class _Entry:
    """One runtime output: a row's handles and debug values (or a merge of several)."""

    __slots__ = ("backend", "handles", "identifiers", "names", "num_outputs", "rank", "value")

    def __init__(
        self,
        handles: Handles,
        value: Sequence[object],
        num_outputs: int,
        rank: tuple[int, int],
        name: str,
        backend: str | None,
        identifier: object,
    ) -> None:
        self.handles = handles
        self.value = value
        self.num_outputs = num_outputs
        self.rank = rank
        self.names = [name]
        self.backend = backend
        self.identifiers = [] if identifier is None else [identifier]


def _warn(message: str) -> None:
    warnings.warn(message, InspectorWarning, stacklevel=4)


def _tables_of(inspector: Inspector, method: str | None) -> tuple[list[BlockTable], str | None]:
    tables = [t for t in inspector.tables if t.debug_data]
    if not tables:
        raise InspectorError(
            "the ETDump holds no intermediate outputs: run with a debug buffer "
            "(ETDumpGen(debug_buffer_size=...), delegate-lens demo --debug-buffer-size) "
            "and give it to the Inspector (debug_buffer_path / --debug-buffer)"
        )
    methods = [t.method for t in tables]
    if method is None:
        method = "forward" if "forward" in methods else methods[0]
    chosen = [t for t in tables if t.method == method]
    if not chosen:
        raise UsageError(f"no block of method {method!r} has intermediate outputs")
    return chosen[:1], method


def _convert(backend: str | None, identifier: int | str | None, value: object, row: str) -> object:
    if backend is None or identifier is None:
        return value
    from delegate_lens import hooks
    from delegate_lens.pluginmanager import has_implementations

    if not has_implementations("dl_intermediate_output"):
        return value
    converted = hooks.intermediate_output(backend, identifier, value)
    return value if converted is None else converted


def runtime_intermediate_outputs(
    inspector: Inspector, method: str | None = None
) -> tuple[list[_Entry], list[Unmatched]]:
    """The runtime entries of :func:`calculate_numeric_gap` (merged) and the rows that
    could not take part (no handles)."""
    tables, method = _tables_of(inspector, method)
    num_outs: dict[int, int] = {}
    record = inspector.etrecord
    if record is not None and method is not None:
        num_outs = dict(record.instruction_id_to_num_outs_map.get(method, {}))
    unmatched: list[Unmatched] = []
    entries: dict[Handles, _Entry] = {}
    order = 0
    for table in tables:
        rows = sorted(table.debug_data)
        inner: dict[str | None, set[int]] = {}
        for j in rows:
            key, link = table.keys[j], table.links[j]
            if key.identifier is not None and link.op_types and link.debug_handles is not None:
                inner.setdefault(link.delegate_backend_name, set()).update(
                    _as_handles(link.debug_handles)
                )
        for j in rows:
            key, link = table.keys[j], table.links[j]
            values = table.debug_data[j]
            if key.name == "OPERATOR_CALL" or key.name in FRAMEWORK_EVENTS or not values:
                continue
            if not link.op_types or link.debug_handles is None:
                unmatched.append(
                    Unmatched(
                        "runtime",
                        (),
                        [key.name],
                        "the row has no debug handles",
                        [] if key.identifier is None else [key.identifier],
                    )
                )
                continue
            handles = _as_handles(link.debug_handles)
            backend = link.delegate_backend_name
            if key.name == "DELEGATE_CALL" and inner.get(backend, set()) & set(handles):
                continue
            if key.identifier is not None:
                value = [_convert(backend, key.identifier, v, key.name) for v in values[-1:]]
                n_out = 1
            else:
                value = list(values)
                n_out = max(1, min(num_outs.get(key.instruction_id, 1), len(value)))
            order += 1
            entry = _Entry(
                handles,
                value,
                n_out,
                (key.instruction_id, order),
                key.name,
                backend if key.identifier is not None or key.name == "DELEGATE_CALL" else None,
                key.identifier,
            )
            previous = entries.get(handles)
            if previous is None or previous.rank < entry.rank:
                if previous is not None:
                    entry.names = previous.names + entry.names
                entries[handles] = entry
    return _merge(list(entries.values())), unmatched


def _as_handles(handles: int | Sequence[int]) -> Handles:
    return (int(handles),) if isinstance(handles, int) else tuple(int(h) for h in handles)


def _merge(entries: list[_Entry]) -> list[_Entry]:
    """Merge entries with overlapping handles (connected components)."""
    parent = list(range(len(entries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[int, int] = {}
    for i, entry in enumerate(entries):
        for h in entry.handles:
            if h in owner:
                a, b = find(owner[h]), find(i)
                if a != b:
                    parent[b] = a
            else:
                owner[h] = i
    groups: dict[int, list[_Entry]] = {}
    for i, entry in enumerate(entries):
        groups.setdefault(find(i), []).append(entry)
    merged: list[_Entry] = []
    for members in groups.values():
        if len(members) == 1:
            merged.append(members[0])
            continue
        members.sort(key=lambda e: e.rank)
        handles: list[int] = []
        for member in members:
            own = set(member.handles)
            handles = [h for h in handles if h not in own] + list(dict.fromkeys(member.handles))
        last = members[-1]
        out = _Entry(
            tuple(handles), last.value, last.num_outputs, last.rank, "", last.backend, None
        )
        out.names = [n for m in members for n in m.names]
        out.identifiers = [i for m in members for i in m.identifiers]
        merged.append(out)
    return merged


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


def _gap(comparator: Comparator, aot: object, runtime: object, ops: str) -> tuple[list[float], str]:
    """Gaps of one pair (one per element of a list), and a note on what was off."""
    pairs: list[tuple[Any, Any]]
    if isinstance(aot, list):
        runtime_list = runtime if isinstance(runtime, list) else [runtime]
        if len(runtime_list) != len(aot):
            _warn(
                f"numeric gap of {ops}: the reference gives {len(aot)} outputs, the runtime "
                f"{len(runtime_list)}; compared the first {min(len(aot), len(runtime_list))}"
            )
        pairs = list(zip(aot, runtime_list))
    else:
        pairs = [(aot, runtime[-1] if isinstance(runtime, list) and runtime else runtime)]
    gaps: list[float] = []
    notes: list[str] = []
    for a_raw, r_raw in pairs:
        a, r = _float(a_raw), _float(r_raw)
        if a is None or r is None:
            notes.append("value not numeric")
            gaps.append(math.nan)
            continue
        if a.shape != r.shape:
            if a.size != r.size:
                _warn(
                    f"numeric gap of {ops}: shapes disagree (reference {list(a.shape)}, "
                    f"runtime {list(r.shape)}); gap is nan"
                )
                notes.append(f"shapes disagree: {list(a.shape)} vs {list(r.shape)}")
                gaps.append(math.nan)
                continue
            notes.append(f"runtime shape {list(r.shape)} reshaped to {list(a.shape)}")
            r = r.reshape(a.shape)
        same = a == r  # equal infinities (masked scores) are no gap, not nan
        if not np.isfinite(a[same]).all():
            a, r = np.where(same, 0.0, a), np.where(same, 0.0, r)
        try:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                gaps.append(float(comparator.compare(a, r)))
        except Exception as exc:
            raise InspectorError(
                f"comparator {comparator.name!r} failed on {ops}: {type(exc).__name__}: {exc}"
            ) from None
    return gaps, "; ".join(notes)


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


def calculate_numeric_gap(
    inspector: Inspector,
    distance: object = "MSE",
    *,
    inputs: Sequence[object] | None = None,
    aot_outputs: AotOutputs | str | os.PathLike[str] | None = None,
    reference_graph: str | None = None,
    cache: bool | str | os.PathLike[str] = False,
    threshold: float | None = None,
    method: str | None = None,
    disable_debug_handle_validation: bool = False,
) -> NumericGapTable:
    """See :meth:`delegate_lens.Inspector.calculate_numeric_gap`."""
    from delegate_lens.numerics._comparators import NumericalComparatorBase

    if isinstance(distance, NumericalComparatorBase) and distance.inspector is None:
        distance.inspector = inspector  # as the reference hands it the Inspector
    comparator = resolve_comparator(distance)
    if threshold is None:
        threshold = comparator.default_threshold
    entries, unmatched = runtime_intermediate_outputs(inspector, method)
    chosen_method = method or _method_of(inspector, method)
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
        for i in range(max(1, min(entry.num_outputs, len(entry.handles)))):
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
            aot_value = aot.outputs[(last,)]
            runtime_value = _pick_runtime(entry, i, aot_value)
            aot_ops = [n for h in entry.handles for n in aot.op_names.get((h,), [])]
            if runtime_value is None:
                _warn(
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
            gaps, note = _gap(
                comparator, aot_value, runtime_value, f"{', '.join(aot_ops)} ({label})"
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
                    "diverged": any(comparator.diverged(g, threshold) for g in gaps),
                    "first_divergence": False,
                    "note": note,
                    "_order": aot.order.get(last, 0),
                    "_handles": set(h for h in entry.handles if (h,) in aot.outputs),
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
    _mark_first_divergence(rows, aot)
    for row in rows:
        del row["_order"], row["_handles"]
    return NumericGapTable(
        rows, unmatched, comparator.name, float(threshold), comparator.higher_is_better, aot.graph
    )


def _pick_runtime(entry: _Entry, i: int, aot_value: object) -> object:
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


def _method_of(inspector: Inspector, method: str | None) -> str:
    _, chosen = _tables_of(inspector, method)
    return chosen or "forward"


def _mark_first_divergence(rows: list[dict[str, Any]], aot: AotOutputs) -> None:
    """Mark the earliest diverged row (graph order) none of whose upstream rows diverged."""
    row_of: dict[int, int] = {}
    for i, row in enumerate(rows):
        for h in row["_handles"]:
            row_of[h] = i

    def upstream(i: int) -> set[int]:
        own = rows[i]["_handles"]
        seen: set[int] = set(own)
        frontier = [p for h in own for p in aot.inputs_of.get(h, ()) if p not in own]
        found: set[int] = set()
        while frontier:
            h = frontier.pop()
            if h in seen:
                continue
            seen.add(h)
            if h in row_of and row_of[h] != i:
                found.add(row_of[h])
            else:
                frontier.extend(aot.inputs_of.get(h, ()))
        return found

    for i, row in enumerate(rows):  # graph order: the first origin found is the earliest
        if row["diverged"] and not any(rows[k]["diverged"] for k in upstream(i)):
            row["first_divergence"] = True
            return
