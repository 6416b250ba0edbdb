"""The runtime side of :func:`~delegate_lens.numerics.calculate_numeric_gap`: one entry per
row of the method's first run that has operators and debug values (see ``_gap``, step 2),
merged where handle sets overlap (step 3). numpy only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from delegate_lens.errors import InspectorError, InspectorWarning, NumericGapUsageError
from delegate_lens.etdump import FRAMEWORK_EVENTS
from delegate_lens.numerics._table import Unmatched

if TYPE_CHECKING:
    from delegate_lens.inspector import BlockTable, Inspector

Handles = tuple[int, ...]


class Entry:
    """One runtime output: a row's handles and debug values (or a merge of several)."""

    __slots__ = (
        "backend",
        "handles",
        "identifiers",
        "names",
        "num_outputs",
        "rank",
        "reference_names",
        "value",
    )

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
        self.reference_names = [name]  # the reference's runtime_ops: see _reference_names
        self.backend = backend
        self.identifiers = [] if identifier is None else [identifier]


def warn(message: str) -> None:
    warnings.warn(message, InspectorWarning, stacklevel=4)


def tables_of(inspector: Inspector, method: str | None) -> tuple[list[BlockTable], str | None]:
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
        raise NumericGapUsageError(f"no block of method {method!r} has intermediate outputs")
    buffer = getattr(inspector, "_debug_buffer", None)
    if buffer is not None and buffer.data is None and "no debug buffer" in buffer.problems:
        # every tensor is unavailable: an empty table (or the reference's zeros) would hide it
        raise NumericGapUsageError(
            "the ETDump's intermediate outputs are tensors in a debug buffer, and the "
            "Inspector was given none: pass debug_buffer_path=... (CLI: --debug-buffer); "
            "without it there is no runtime value to compare (the reference compares "
            "tensors of zeros)"
        )
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
) -> tuple[list[Entry], list[Unmatched]]:
    """The runtime entries of :func:`calculate_numeric_gap` (merged) and the rows that
    could not take part (no handles)."""
    tables, method = tables_of(inspector, method)
    num_outs: dict[int, int] = {}
    record = inspector.etrecord
    if record is not None and method is not None:
        num_outs = dict(record.instruction_id_to_num_outs_map.get(method, {}))
    unmatched: list[Unmatched] = []
    entries: dict[Handles, Entry] = {}
    last_name: dict[Handles, str] = {}  # in the order each handle set was first seen
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
            entry = Entry(
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
                last_name[handles] = key.name
    merged = _merge(list(entries.values()))
    for entry in merged:
        entry.reference_names = _reference_names(entry.handles, last_name)
    return merged, unmatched


def _reference_names(handles: Handles, last_name: dict[Handles, str]) -> list[str]:
    """The reference's ``runtime_ops`` of an entry: the name of the last event run of each
    handle set inside ``handles``, in the order the sets were first seen (its
    ``find_op_names``); ours (``Entry.names``) keep every event's name."""
    own = set(handles)
    return [name for key, name in last_name.items() if set(key) <= own]


def _as_handles(handles: int | Sequence[int]) -> Handles:
    return (int(handles),) if isinstance(handles, int) else tuple(int(h) for h in handles)


def _merge(entries: list[Entry]) -> list[Entry]:
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
    groups: dict[int, list[Entry]] = {}
    for i, entry in enumerate(entries):
        groups.setdefault(find(i), []).append(entry)
    merged: list[Entry] = []
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
        out = Entry(tuple(handles), last.value, last.num_outputs, last.rank, "", last.backend, None)
        out.names = [n for m in members for n in m.names]
        out.identifiers = [i for m in members for i in m.identifiers]
        merged.append(out)
    return merged
