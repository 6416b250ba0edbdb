"""One mutant of a backend, as a plugin: hook wrappers around the backend's own hooks that
plant one kind of bug (:data:`delegate_lens.testing.mutants.MUTANT_KINDS`) into what it
returns, so any backend gives mutants without its code changing.

* map kinds wrap ``dl_preprocess`` and change the Debug Handle Map it returns;
* logging kinds wrap ``dl_runtime_backend``: the runtime's ``execute`` gets an event
  tracer that keeps what the backend logs in the call, then hands the real tracer the
  events with the bug planted;
* metadata kinds wrap ``dl_encode_delegate_metadata``'s bytes.

``applied`` counts the places a bug was planted: a mutant that planted nothing (a backend
with no fused op to drop a handle of, say) is not applicable, not a survivor.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from delegate_lens.errors import PluginError
from delegate_lens.hookspecs import hookimpl
from delegate_lens.testing._coverage import _as_tuple, partition_handles
from delegate_lens.testing._profile import BackendProfile

if TYPE_CHECKING:
    from torch.export import ExportedProgram

MAP_KINDS = frozenset(
    {"swap-identifiers", "shift-handle", "drop-handle", "add-outside-handle", "preprocess-fails"}
)
METADATA_KINDS = frozenset({"metadata-byte-order", "metadata-truncated"})
_SHIFT = 10**9  # ticks an event is moved out of its call by


@attrs.define
class _Record:
    """One event the backend logged in a call (kept until the call returns)."""

    kind: str  # "profile" or "output"
    identifier: int | str
    start: int = 0
    end: int = 0
    metadata: object = None
    output: object = None
    real_time: bool = True


def _ids(identifier: int | str) -> tuple[str | None, int]:
    return (identifier, -1) if isinstance(identifier, str) else (None, identifier)


class _KeepingTracer:
    """An event tracer in front of the real one: keeps the delegate's events of one call."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.records: list[_Record] = []

    def __getattr__(self, name: str) -> Any:  # clock, instruction_id, ...
        return getattr(self.real, name)

    def start_profiling_delegate(self, name: str | None, delegate_debug_id: int) -> Any:
        return self.real.start_profiling_delegate(name, delegate_debug_id)

    def end_profiling_delegate(self, entry: Any, metadata: object) -> None:
        ident = entry.name if entry.name is not None else entry.delegate_debug_id
        self.records.append(
            _Record("profile", ident, entry.start_time, self.real.clock(), metadata)
        )

    def log_profiling_delegate(
        self, name: str | None, delegate_debug_id: int, start: int, end: int, metadata: object
    ) -> None:
        ident = name if name is not None else delegate_debug_id
        self.records.append(_Record("profile", ident, start, end, metadata, real_time=False))

    def log_intermediate_output_delegate(
        self, name: str | None, delegate_debug_id: int, output: object
    ) -> None:
        ident = name if name is not None else delegate_debug_id
        self.records.append(_Record("output", ident, output=output))

    def replay(self, records: Sequence[_Record]) -> None:
        for r in records:
            name, ddi = _ids(r.identifier)
            if r.kind == "profile":
                self.real.log_profiling_delegate(name, ddi, r.start, r.end, r.metadata)
            else:
                self.real.log_intermediate_output_delegate(name, ddi, r.output)


class _Context:
    def __init__(self, real: Any, tracer: _KeepingTracer) -> None:
        self._real, self.event_tracer = real, tracer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@attrs.frozen
class _Handle:
    inner: object
    per_op: tuple[int | str, ...]  # the map's per-op identifiers
    known: frozenset[int | str]  # every identifier of the map


class MutantPlugin:
    """The plugin planting bug ``kind`` into backend ``backend_id``'s hooks."""

    def __init__(self, backend_id: str, kind: str, profile: BackendProfile) -> None:
        self.backend_id, self.kind, self.profile = backend_id, kind, profile
        self.applied = 0
        self.maps: dict[bytes, tuple[Mapping[int | str, Any], frozenset[int]]] = {}

    def know(self, processed: bytes, mapping: Mapping[int | str, Any], part: set[int]) -> None:
        """Remember a blob's map (the runtime sees the blob, the map names the ops)."""
        self.maps[bytes(processed)] = (dict(mapping), frozenset(part))

    # ------------------------------------------------------------------ maps

    @hookimpl(wrapper=True)
    def dl_preprocess(
        self, backend_id: str, edge_program: ExportedProgram
    ) -> Generator[None, object, object]:
        result = yield
        if backend_id != self.backend_id or result is None:
            return result
        mapping = dict(getattr(result, "debug_handle_map", None) or {})
        part = partition_handles(edge_program)
        processed = bytes(getattr(result, "processed_bytes", b""))
        if self.kind in MAP_KINDS:
            if self.kind == "preprocess-fails":
                self.applied += 1
                raise PluginError(f"mutant preprocess-fails: {backend_id} cannot compile")
            mutated = self._mutate_map(mapping, edge_program, part)
            if mutated != mapping:
                self.applied += 1
                from delegate_lens.backend import PreprocessResult

                mapping = mutated
                result = PreprocessResult(processed, mutated)
        self.know(processed, mapping, part)
        return result

    def _mutate_map(
        self, mapping: dict[int | str, Any], program: ExportedProgram, part: set[int]
    ) -> dict[int | str, Any]:
        entries = {i: _as_tuple(hs) for i, hs in mapping.items()}
        summaries = self.profile.summary_identifiers(entries, part)
        per_op = [i for i in entries if i not in summaries]
        order = [
            n.meta["debug_handle"]
            for n in program.graph.nodes
            if n.meta.get("debug_handle") in part
        ]
        order = list(dict.fromkeys(order))
        kind = self.kind
        if kind == "add-outside-handle" and entries:
            first = next(iter(entries))
            entries[first] = (*entries[first], max(part, default=0) + 1000)
        elif kind == "swap-identifiers":
            for a in per_op:
                b = next((b for b in per_op if entries[b] != entries[a]), None)
                if b is not None:
                    entries[a], entries[b] = entries[b], entries[a]
                    break
        elif kind == "shift-handle" and per_op:
            ident = per_op[-1]  # e.g. a decomposition's last kernel, onto the node feeding it
            handles = entries[ident]
            h = handles[-1]
            at = order.index(h) if h in order else len(order)
            for other in (*reversed(order[:at]), *order[at + 1 :]):  # nearest before first
                if other not in handles:
                    entries[ident] = (*handles[:-1], other)
                    break
        elif kind == "drop-handle" and per_op:
            fused = next((i for i in per_op if len(entries[i]) > 1), None)
            if fused is not None:
                entries[fused] = entries[fused][:-1]
            else:
                del entries[per_op[0]]
        return dict(entries)

    # ------------------------------------------------------------------ metadata

    @hookimpl(wrapper=True)
    def dl_encode_delegate_metadata(self, backend_id: str) -> Generator[None, object, object]:
        result = yield
        if backend_id != self.backend_id or self.kind not in METADATA_KINDS:
            return result
        if not isinstance(result, bytes) or len(result) < 2:
            return result
        if self.kind == "metadata-truncated":
            mutated = result[: len(result) // 2]
        else:  # every 4-byte word in the other byte order
            words = len(result) - len(result) % 4
            mutated = b"".join(result[i : i + 4][::-1] for i in range(0, words, 4))
            mutated += result[words:]
        if mutated != result:
            self.applied += 1
        return mutated

    # ------------------------------------------------------------------ runtime

    @hookimpl(wrapper=True)
    def dl_runtime_backend(self, backend_id: str) -> Generator[None, object, object]:
        result = yield
        if backend_id != self.backend_id or result is None:
            return result
        if self.kind in MAP_KINDS or self.kind in METADATA_KINDS:
            return result
        return _MutantRuntime(result, self)

    def handle(self, processed: bytes, inner: object) -> _Handle:
        mapping, part = self.maps.get(bytes(processed), ({}, frozenset()))
        entries = {i: _as_tuple(hs) for i, hs in mapping.items()}
        summaries = self.profile.summary_identifiers(entries, part)
        per_op = tuple(i for i in entries if i not in summaries)
        return _Handle(inner, per_op, frozenset(entries))


class _MutantRuntime:
    def __init__(self, inner: Any, plugin: MutantPlugin) -> None:
        self.inner, self.plugin = inner, plugin

    def init(self, processed_bytes: bytes, compile_specs: Sequence[Any]) -> _Handle:
        return self.plugin.handle(processed_bytes, self.inner.init(processed_bytes, compile_specs))

    def execute(self, context: Any, handle: _Handle, args: Sequence[object]) -> Any:
        kind = self.plugin.kind
        tracer = getattr(context, "event_tracer", None)
        if tracer is None:
            return self.inner.execute(context, handle.inner, args)
        keeping = _KeepingTracer(tracer)
        outputs = self.inner.execute(_Context(context, keeping), handle.inner, args)
        records = keeping.records
        mutated = _MUTATIONS[kind](records, handle, args) if kind in _MUTATIONS else records
        if mutated is not records:
            self.plugin.applied += 1
        keeping.replay(mutated)
        if kind == "wrong-final-output":
            self.plugin.applied += 1
            outputs = [o + 1 for o in outputs]
        return outputs


# ---------------------------------------------------------------------- logging mutations
# each takes one call's records and returns new ones, or the same list when it cannot
# plant its bug in this call

Mutation = Callable[[list[_Record], _Handle, Sequence[object]], list[_Record]]


def _ops(records: Sequence[_Record], handle: _Handle) -> list[int | str]:
    """The per-op identifiers logged (a profile event) in the call, in order."""
    seen = [r.identifier for r in records if r.kind == "profile" and r.identifier in handle.per_op]
    return list(dict.fromkeys(seen))


def _renamed(records: list[_Record], ident: int | str, new: int | str) -> list[_Record]:
    return [attrs.evolve(r, identifier=new) if r.identifier == ident else r for r in records]


def _skip(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    ops = _ops(records, handle)
    return [r for r in records if r.identifier != ops[-1]] if ops else records


def _twice(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    ops = _ops(records, handle)
    if not ops:
        return records
    own = [r for r in records if r.identifier == ops[0]]
    at = max(i for i, r in enumerate(records) if r.identifier == ops[0]) + 1
    return [*records[:at], *(attrs.evolve(r) for r in own), *records[at:]]


def _neighbour(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    ops = _ops(records, handle)
    return _renamed(records, ops[0], ops[1]) if len(ops) > 1 else records


def _orphan(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    ops = _ops(records, handle)
    if not ops:
        return records
    if isinstance(ops[0], str):
        ghost: int | str = f"{ops[0]}~ghost"
    else:
        ghost = max(i for i in handle.known if isinstance(i, int)) + 1000
    return _renamed(records, ops[0], ghost)


def _outputs(records: Sequence[_Record], handle: _Handle) -> list[int]:
    return [
        i for i, r in enumerate(records) if r.kind == "output" and r.identifier in handle.per_op
    ]


def _wrong_tensor(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    outs = _outputs(records, handle)
    if len(outs) < 2 or records[outs[0]].identifier == records[outs[-1]].identifier:
        return records
    new = list(records)  # the last op logs the first op's tensor
    new[outs[-1]] = attrs.evolve(records[outs[-1]], output=records[outs[0]].output)
    return new


def _previous(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    outs = _outputs(records, handle)
    if not outs or not args:
        return records
    new = list(records)  # each op logs the tensor before its own: the call's input first
    previous: object = args[0]
    for i in outs:
        new[i] = attrs.evolve(records[i], output=previous)
        previous = records[i].output
    return new


def _profiles(records: Sequence[_Record], handle: _Handle) -> list[int]:
    return [
        i for i, r in enumerate(records) if r.kind == "profile" and r.identifier in handle.per_op
    ]


def _overlap(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    events = _profiles(records, handle)
    if len(events) < 2:
        return records
    first, second = records[events[0]], records[events[1]]
    if first.identifier == second.identifier or second.start >= second.end:
        return records
    new = list(records)  # the second op starts while the first runs
    new[events[1]] = attrs.evolve(second, start=min(second.start, first.start))
    return new


def _outside(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    events = _profiles(records, handle)
    if not events:
        return records
    r = records[events[0]]
    shift = -_SHIFT if r.start > 2 * _SHIFT else _SHIFT
    new = list(records)
    new[events[0]] = attrs.evolve(r, start=r.start + shift, end=r.end + shift)
    return new


def _time_scale(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    own = [r for r in records if r.kind == "profile" and not r.real_time]
    chosen = own or [r for r in records if r.kind == "profile"]
    if not chosen or all(r.end < 1000 for r in chosen):
        return records
    # the backend's own timestamps in microseconds, where the tracer's clock counts ns
    return [
        attrs.evolve(r, start=r.start // 1000, end=r.end // 1000) if r in chosen else r
        for r in records
    ]


def _reversed(records: list[_Record], handle: _Handle, args: Sequence[object]) -> list[_Record]:
    events = _profiles(records, handle)
    if not events:
        return records
    r = records[events[0]]
    start, end = (r.end, r.start) if r.end > r.start else (r.start + 1, r.start)
    new = list(records)
    new[events[0]] = attrs.evolve(r, start=start, end=end)
    return new


_MUTATIONS: dict[str, Mutation] = {
    "skip-op": _skip,
    "log-twice": _twice,
    "log-under-neighbour": _neighbour,
    "orphan-identifier": _orphan,
    "wrong-output-tensor": _wrong_tensor,
    "log-previous-output": _previous,
    "events-overlap": _overlap,
    "events-outside-call": _outside,
    "wrong-time-scale": _time_scale,
    "reversed-times": _reversed,
}
RUNTIME_KINDS = frozenset({*_MUTATIONS, "wrong-final-output"})
