"""Linking rows to the ETRecord: which method a block ran, and each row's graph nodes.

* Non-delegate rows get ``debug_handle_map[method][instruction_id]``; a ``DELEGATE_CALL``
  row also gets its backend name from ``delegate_map``.
* Delegate-logged rows get the backend name of their instruction's delegate entry and the
  handles the backend mapped their identifier to (none when the backend gave no map). Given
  the program (:class:`~delegate_lens.inspector._recovery.Recovery`), a delegate call whose
  entry has no identifiers gets the map a ``dl_recover_delegate_map`` plugin recovers from
  its processed bytes instead (:meth:`Linker.recover`); a non-empty entry always wins.
* Every graph node carrying one of the handles gives ``op_types``, ``stack_traces`` and
  ``module_hierarchy`` (keyed by node name + ``_``, as the reference).
* Framework rows (``Method::init``, ``Program::load_method``, ``Method::execute``) get the
  debug handles of the instruction id they carry (0), as the reference gives them, and no
  op types, stack traces or module hierarchy: they run no operator.

Choosing the method (the reference only knows ``forward`` and fails otherwise): a block's
rows are checked against every method: an instruction id that the method lacks, a
``native_call_<op>`` whose op is not among the method's op types at that instruction, an
operator row at a delegate call or a delegate row at an operator, is a mismatch. The block
is linked to the one method without mismatches (when several fit, to the one whose
instructions are exactly those the run executed, then whose delegate maps know, then hold
exactly, the delegate identifiers the run logged); when several still fit or none does, a
warning says so and the block stays unlinked (identical methods, which give the same links
whichever ran, link the rows and leave the method unknown). With a single-method ETRecord
from another model, the mismatching instructions are listed in a warning and left unlinked,
the others are linked.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from delegate_lens.errors import InspectorWarning
from delegate_lens.etdump import FRAMEWORK_EVENTS

if TYPE_CHECKING:
    from delegate_lens.etrecord import DelegateEntry, ETRecord, GraphInfo, Handles
    from delegate_lens.inspector._recovery import Recovery


_MAX_LISTED = 8


@attrs.frozen
class RowKey:
    """What linking needs to know about a row."""

    name: str
    instruction_id: int
    identifier: int | str | None


@attrs.frozen
class Choice:
    """How a block is linked: ``method`` (None when unknown), the method whose maps the
    rows are linked with (``link_with``, None: unlinked) and instructions left unlinked."""

    method: str | None
    link_with: str | None
    unlinked: frozenset[int]


@attrs.frozen
class RowLink:
    """What the ETRecord says about a row."""

    debug_handles: int | list[int] | None = None
    op_types: list[str] = attrs.field(factory=list)
    stack_traces: dict[str, str | None] = attrs.field(factory=dict)
    module_hierarchy: dict[str, dict[str, tuple[str, str]] | None] = attrs.field(factory=dict)
    delegate_backend_name: str | None = None
    method: str | None = None
    node_names: tuple[str, ...] = ()
    """The graph node behind each entry of ``op_types``, by name (same order)."""
    recovered: bool = False
    """Linked by a map a ``dl_recover_delegate_map`` plugin recovered from the program: an
    operator's own event (such a map has no per-call summaries)."""

    @property
    def module_paths(self) -> list[str]:
        """The innermost module path of each node, each path once, in node order (the
        root module, path ``""``, names nothing)."""
        paths: list[str] = []
        for frames in self.module_hierarchy.values():
            if frames:
                path = list(frames.values())[-1][0]
                if path and path not in paths:
                    paths.append(path)
        return paths


NO_LINK = RowLink()


def _entry_name(entry: DelegateEntry | None) -> str | None:
    return None if entry is None else entry.name


def _entry_keys(entry: DelegateEntry | None) -> set[str] | None:
    """The identifiers (as text) a delegate entry maps; None without a map."""
    return None if entry is None else (set(entry.identifiers) or None)


def _present(handles: int | Iterable[int] | None) -> int | list[int] | None:
    """Handles as the reference shows them: an int stays an int, a sequence is a list."""
    if handles is None:
        return None
    if isinstance(handles, int):
        return handles
    return [int(h) for h in handles]


def _op_base(op_type: str) -> str:
    parts = op_type.split(".")
    return _loose(parts[-2] if len(parts) >= 2 else op_type)


def _loose(op: str) -> str:
    """An op name without the decorations that differ between a graph node and the kernel
    the runtime calls for it (``_to_dim_order_copy`` / ``to_dim_order``, ``view_copy`` /
    ``et_view``)."""
    return op.lstrip("_").removeprefix("et_").removesuffix("_copy")


def _native_op(name: str) -> str | None:
    if not name.startswith("native_call_"):
        return None
    return _loose(name[len("native_call_") :].split(".", 1)[0])


def _warn(message: str) -> None:
    warnings.warn(message, InspectorWarning, stacklevel=4)


class Linker:
    """Links rows of blocks to an ETRecord (torch-free: maps and graph JSON only)."""

    def __init__(self, etrecord: ETRecord, recovery: Recovery | None = None) -> None:
        self.etrecord = etrecord
        self.recovery = recovery
        self._recovered: dict[tuple[str, int], list[int | str]] = {}
        self._overlaid: set[tuple[str, int]] = set()
        # handles as written (an int stays an int), delegate entries with exact lookup
        self.debug_handle_map: Mapping[str, Mapping[int, Handles]] = (
            etrecord.debug_handle_map_as_written
        )
        self.delegate_map: Mapping[str, Mapping[int, DelegateEntry]] = etrecord.delegate_entries
        methods = list(etrecord.methods)
        for name in self.debug_handle_map:
            if name not in methods:
                methods.append(name)
        self.methods: list[str] = methods
        self._graphs: dict[str, GraphInfo | None] = {}
        self._cache: dict[tuple[str, RowKey], RowLink] = {}

    # --- maps recovered from the program ----------------------------------------------------

    def recover(self, rows: Sequence[RowKey]) -> None:
        """Ask the program's recovery (``dl_recover_delegate_map``) for the map of every
        delegate call that logged events in ``rows`` and whose ETRecord entry has no
        identifiers; a recovered map then stands in for that entry (a non-empty ETRecord
        map always wins)."""
        if self.recovery is None:
            return
        logged: dict[int, list[int | str]] = {}
        for row in rows:
            if row.identifier is not None and row.instruction_id >= 0:
                found = logged.setdefault(row.instruction_id, [])
                if row.identifier not in found:
                    found.append(row.identifier)
        for method in self.recovery.program.methods:
            if method not in self.methods:
                continue
            for iid, identifiers in logged.items():
                key = (method, iid)
                entry = self.delegate_map.get(method, {}).get(iid)
                if key not in self._recovered and _entry_keys(entry) is not None:
                    continue  # the ETRecord's own map wins
                before = self._recovered.get(key, [])
                merged = before + [i for i in identifiers if i not in before]
                if key in self._recovered and merged == before:
                    continue
                handles = self.debug_handle_map.get(method, {}).get(iid)
                listed = None if handles is None else _as_list(handles)
                recovered = self.recovery.entry(method, iid, merged, listed, self.graph(method))
                self._recovered[key] = merged
                if recovered is None:
                    continue
                maps = {m: dict(v) for m, v in self.delegate_map.items()}
                maps.setdefault(method, {})[iid] = recovered
                self.delegate_map = maps
                self._overlaid.add(key)
                self._cache.clear()

    def say_unlinked(self, method: str | None, rows: Sequence[RowKey]) -> None:
        """Warn once per delegate call of ``method`` about the events its recovered map
        leaves unlinked, and why."""
        if self.recovery is None or method is None:
            return
        iids = sorted({r.instruction_id for r in rows if r.identifier is not None})
        self.recovery.say_unlinked(method, iids)

    # --- graph access -------------------------------------------------------------------

    def graph(self, method: str) -> GraphInfo | None:
        if method not in self._graphs:
            graph = None
            try:
                if method in self.etrecord.methods:
                    graph = self.etrecord.graph(method)
            except Exception as exc:  # a damaged graph entry: link without nodes
                _warn(f"ETRecord: the graph of method {method!r} cannot be read ({exc})")
            self._graphs[method] = graph
        return self._graphs[method]

    def _op_types_at(self, method: str, instruction_id: int) -> list[str]:
        graph = self.graph(method)
        handles = self.debug_handle_map.get(method, {}).get(instruction_id)
        if graph is None or handles is None:
            return []
        return list(graph.op_types(handles))

    # --- choosing a method --------------------------------------------------------------

    def instructions(self, method: str) -> set[int]:
        """Instruction ids the ETRecord knows for ``method`` (handle and delegate maps)."""
        return set(self.debug_handle_map.get(method, {})) | set(self.delegate_map.get(method, {}))

    def check(self, method: str, rows: Iterable[RowKey]) -> tuple[dict[int, str], int]:
        """Mismatches ``{instruction_id: reason}`` of ``rows`` against ``method``, and the
        number of instructions that positively match (evidence)."""
        dhm = self.debug_handle_map.get(method, {})
        dm = self.delegate_map.get(method, {})
        mismatches: dict[int, str] = {}
        evidence = 0
        seen: set[tuple[str, int, bool]] = set()
        for row in rows:
            iid = row.instruction_id
            if row.name in FRAMEWORK_EVENTS or iid < 0:
                continue
            delegate_row = row.identifier is not None or row.name == "DELEGATE_CALL"
            key = (row.name if not delegate_row else "", iid, delegate_row)
            if key in seen:
                continue
            seen.add(key)
            if iid not in dhm and iid not in dm:
                mismatches.setdefault(iid, f"{row.name}: no such instruction in {method!r}")
            elif delegate_row:
                if iid in dm:
                    evidence += 1
                else:
                    mismatches.setdefault(iid, f"{row.name}: not a delegate call in {method!r}")
            elif iid in dm:
                mismatches.setdefault(iid, f"{row.name}: a delegate call in {method!r}")
            else:
                op = _native_op(row.name)
                if op is None:
                    continue
                op_types = self._op_types_at(method, iid)
                if not op_types:
                    continue
                if op in {_op_base(t) for t in op_types}:
                    evidence += 1
                else:
                    mismatches[iid] = f"{row.name}: ETRecord has {', '.join(op_types)}"
        return mismatches, evidence

    def choose(self, block_label: str, rows: Sequence[RowKey]) -> Choice:
        """The method of a block and the instructions to leave unlinked (with warnings)."""
        relevant = [r for r in rows if r.name not in FRAMEWORK_EVENTS and r.instruction_id >= 0]
        if not self.methods:
            return Choice(None, None, frozenset())
        if not relevant:  # framework rows only (Method::init): the method is not known; with
            # one method its handles still go to them, as the reference gives them
            single = self.methods[0] if len(self.methods) == 1 else None
            return Choice(None, single, frozenset())
        if len(self.methods) == 1:
            method = self.methods[0]
            mismatches, _ = self.check(method, relevant)
            if mismatches:
                _warn(
                    f"ETRecord does not match the ETDump in {block_label}: "
                    f"{_describe(mismatches)}; these instructions are left unlinked"
                )
            return Choice(method, method, frozenset(mismatches))
        results = {m: self.check(m, relevant) for m in self.methods}
        fitting = [m for m, (mism, _ev) in results.items() if not mism]
        if len(fitting) == 1:
            return Choice(fitting[0], fitting[0], frozenset())
        # a run of a method executes all its instructions: among the methods that fit,
        # prefer the one whose instructions are exactly those the run executed (a run of a
        # method with ops [add] also fits a method with ops [add, mul])
        executed = {r.instruction_id for r in relevant}
        complete = [m for m in fitting if self.instructions(m) == executed] or fitting
        if len(complete) > 1:
            # delegated methods look alike by instructions (a DELEGATE_CALL each); the
            # identifiers their delegates logged tell them apart: prefer the methods whose
            # Debug Handle Maps know every identifier, then those whose maps hold exactly
            # the identifiers the run logged (as for instructions above)
            fits = {m: self.identifier_fit(m, relevant) for m in complete}
            complete = [m for m in complete if fits[m][0]] or complete
            complete = [m for m in complete if fits[m][1]] or complete
        if len(complete) == 1:
            return Choice(complete[0], complete[0], frozenset())
        if complete:
            names = ", ".join(map(repr, complete))
            if self._same_links(complete, rows):
                # identical methods (same handles, ops, sources): the rows' links do not
                # depend on which one ran; only the method name is unknown
                _warn(
                    f"{block_label} fits several identical ETRecord methods ({names}); "
                    "rows linked, method unknown"
                )
                return Choice(None, complete[0], frozenset())
            _warn(f"{block_label} fits several ETRecord methods ({names}); left unlinked")
            return Choice(None, None, frozenset())
        closest = min(results, key=lambda m: (len(results[m][0]), -results[m][1]))
        _warn(
            f"{block_label} matches no ETRecord method (closest {closest!r}: "
            f"{_describe(results[closest][0])}); left unlinked"
        )
        return Choice(None, None, frozenset())

    def identifier_fit(self, method: str, rows: Iterable[RowKey]) -> tuple[bool, bool]:
        """Whether ``method``'s delegate maps know every delegate identifier ``rows``
        logged, and whether they hold exactly those. Delegate calls whose backend gave no
        map say nothing either way."""
        dm = self.delegate_map.get(method, {})
        logged: dict[int, set[str]] = {}
        for row in rows:
            if row.identifier is not None:
                logged.setdefault(row.instruction_id, set()).add(str(row.identifier))
            elif row.name == "DELEGATE_CALL":
                logged.setdefault(row.instruction_id, set())
        known = exact = True
        for iid, identifiers in logged.items():
            keys = _entry_keys(dm.get(iid))
            if keys is None:
                continue
            if not identifiers <= keys:
                known = False
            if identifiers != keys:
                exact = False
        return known, exact

    def _same_links(self, methods: Sequence[str], rows: Sequence[RowKey]) -> bool:
        first = methods[0]
        for row in rows:
            reference = attrs.evolve(self.link(first, row), method=None)
            for other in methods[1:]:
                if attrs.evolve(self.link(other, row), method=None) != reference:
                    return False
        return True

    # --- linking a row --------------------------------------------------------------------

    def link(self, method: str | None, row: RowKey) -> RowLink:
        if method is None or row.instruction_id < 0:
            return NO_LINK
        if row.name in FRAMEWORK_EVENTS and row.identifier is None:
            # as the reference: the handles of the instruction id the runtime logged (0),
            # and nothing else (no op types, no module): they run no operator
            handles = self.debug_handle_map.get(method, {}).get(row.instruction_id)
            return RowLink(debug_handles=_present(handles), method=method)
        key = (method, row)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._link(method, row)
        return cached

    def _link(self, method: str, row: RowKey) -> RowLink:
        iid = row.instruction_id
        dhm = self.debug_handle_map.get(method, {})
        dm = self.delegate_map.get(method, {})
        backend: str | None = None
        if row.identifier is None:
            handles = dhm.get(iid)
            if row.name == "DELEGATE_CALL":
                backend = _entry_name(dm.get(iid))
        else:
            entry = dm.get(iid)
            if entry is None:
                handles = dhm.get(iid)
            else:
                backend = _entry_name(entry)
                handles = entry.handles(row.identifier)
        presented = _present(handles)
        op_types: list[str] = []
        node_names: list[str] = []
        stack_traces: dict[str, str | None] = {}
        hierarchy: dict[str, dict[str, tuple[str, str]] | None] = {}
        graph = self.graph(method)
        if graph is not None and handles is not None:
            for node in graph.nodes_for_handles(handles):
                op_types.append(node.op_type)
                node_names.append(node.name)
                stack_traces[node.hierarchy_key] = node.stack_trace
                hierarchy[node.hierarchy_key] = node.module_hierarchy or None
        return RowLink(
            debug_handles=presented,
            op_types=op_types,
            stack_traces=stack_traces,
            module_hierarchy=hierarchy,
            delegate_backend_name=backend,
            method=method,
            node_names=tuple(node_names),
            recovered=row.identifier is not None and (method, iid) in self._overlaid,
        )


def _as_list(handles: int | Iterable[int]) -> list[int]:
    return [handles] if isinstance(handles, int) else [int(h) for h in handles]


def _describe(mismatches: Mapping[int, str]) -> str:
    items = sorted(mismatches.items())
    text = "; ".join(f"instruction {iid} ({reason})" for iid, reason in items[:_MAX_LISTED])
    if len(items) > _MAX_LISTED:
        text += f"; and {len(items) - _MAX_LISTED} more"
    return text
