"""ETDumps whose offsets share what they point at, built with the flatbuffers package (a
writer that shares only when asked: an offset used twice). For the tests of
``delegate_lens.etdump._limits`` and ``benchmarks/hostile_shared.py``.

- :func:`shared_metadata`, :func:`shared_runs`, :func:`shared_events`, :func:`shared_name`:
  the four amplifications of issue 35 (a metadata vector, a run, an event, a name named
  again and again), any size;
- :func:`build`: a small ETDump from a :class:`Plan`, each object fresh or the reuse of an
  earlier one of its kind, for property tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from flatbuffers.builder import Builder


def _vector(b: Builder, items: Sequence[int]) -> int:
    """A vector of uoffsets to ``items`` (builder offsets)."""
    b.StartVector(4, len(items), 4)
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return int(b.EndVector())


def _profile(b: Builder, name: int | None, metadata: int | None, start: int) -> int:
    b.StartObject(8)
    if name is not None:
        b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependInt32Slot(2, 7, -1)  # instruction_id
    if metadata is not None:
        b.PrependUOffsetTRelativeSlot(5, metadata, 0)
    b.PrependUint64Slot(6, start, 0)
    b.PrependUint64Slot(7, start + 1, 0)
    return int(b.EndObject())


def _event(b: Builder, slot: int, member: int) -> int:
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(slot, member, 0)
    return int(b.EndObject())


def _run(b: Builder, name: int | None, events: int | None, allocators: int | None = None) -> int:
    b.StartObject(4)
    if name is not None:
        b.PrependUOffsetTRelativeSlot(0, name, 0)
    if allocators is not None:
        b.PrependUOffsetTRelativeSlot(2, allocators, 0)
    if events is not None:
        b.PrependUOffsetTRelativeSlot(3, events, 0)
    return int(b.EndObject())


def _finish(b: Builder, runs: Sequence[int]) -> bytes:
    vec = _vector(b, runs)
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(1, vec, 0)
    root = b.EndObject()
    b.FinishSizePrefixed(root, file_identifier=b"ED00")
    return bytes(b.Output())


def _one_run(b: Builder, events: Sequence[int]) -> bytes:
    name = b.CreateString("Execute")
    return _finish(b, [_run(b, name, _vector(b, events))])


def shared_metadata(events: int, size: int = 4096) -> bytes:
    """``events`` profile events (distinct tables) naming one ``size``-byte metadata vector."""
    b = Builder(size + 48 * events + 1024)
    metadata = b.CreateByteVector(bytes(range(256)) * (size // 256) + bytes(size % 256))
    name = b.CreateString("DELEGATE_CALL")
    return _one_run(b, [_event(b, 0, _profile(b, name, metadata, i)) for i in range(events)])


def shared_runs(runs: int) -> bytes:
    """``runs`` entries of ``run_data`` naming one run (of one profile event)."""
    b = Builder(4 * runs + 1024)
    name = b.CreateString("op")
    event = _event(b, 0, _profile(b, name, None, 1))
    run = _run(b, b.CreateString("Execute"), _vector(b, [event]))
    return _finish(b, [run] * runs)


def shared_events(events: int) -> bytes:
    """One run whose ``events`` entries all name one event."""
    b = Builder(4 * events + 1024)
    event = _event(b, 0, _profile(b, b.CreateString("op"), None, 1))
    return _one_run(b, [event] * events)


def shared_name(events: int, size: int = 4 << 20) -> bytes:
    """``events`` profile events (distinct tables) named by one ``size``-byte string."""
    b = Builder(size + 48 * events + 1024)
    name = b.CreateString("n" * size)
    return _one_run(b, [_event(b, 0, _profile(b, name, None, i)) for i in range(events)])


# --- plans: small ETDumps, each object fresh or an earlier one reused ---------------------------

KINDS = (
    "run",
    "events",
    "event",
    "profile",
    "metadata",
    "debug",
    "value",
    "tensor",
    "sizes",
    "alloc",
    "name",
)
"""What a plan may share: tables (run, event, profile, debug, value, tensor, alloc), vectors
(events, metadata, sizes: empty or not) and strings (name)."""


@attrs.frozen
class Plan:
    """Runs of events; ``events[r][i]`` is ``"profile"``, ``"debug"`` or ``"alloc"``;
    ``reuse[kind]`` lists, per object of that kind in build order, the index of an earlier
    one to name instead (-1: a fresh one); ``metadata_size`` and ``sizes`` give the
    metadata vectors' and tensor sizes' lengths (0: empty vectors)."""

    events: tuple[tuple[str, ...], ...]
    reuse: dict[str, tuple[int, ...]] = attrs.field(factory=dict)
    metadata_size: int = 3
    sizes: int = 2

    def shares(self, kind: str) -> bool:
        """Whether any object of ``kind`` is an earlier one reused."""
        return any(k >= 0 for k in self.reuse.get(kind, ()))


class _Maker:
    """Makes objects of each kind, reusing an earlier one where the plan says."""

    def __init__(self, b: Builder, plan: Plan) -> None:
        self.b = b
        self.plan = plan
        self.made: dict[str, list[tuple[int, bool]]] = {}
        self.reused: set[str] = set()

    def get(self, kind: str, make: Callable[..., Any], *args: Any, empty: bool = False) -> int:
        """An object of ``kind``: ``make(*args)`` (``empty``: an empty vector), or an
        earlier one where the plan says; a reused empty vector does not count as shared."""
        made = self.made.setdefault(kind, [])
        choices = self.plan.reuse.get(kind, ())
        pick = choices[len(made)] if len(made) < len(choices) else -1
        if 0 <= pick < len(made) and (empty or not made[pick][1]):
            made.append(made[pick])  # (an empty vector stands only for an empty one)
            if not made[pick][1]:
                self.reused.add(kind)
        else:
            made.append((int(make(*args)), empty))
        return made[-1][0]


def build(plan: Plan, *, share: bool = True) -> tuple[bytes, set[str]]:
    """The ETDump of ``plan`` (every object fresh when not ``share``) and the kinds of
    which it really named one object twice (a reuse of an object not made yet makes a
    fresh one; a reused empty vector is not counted)."""
    b = Builder(1024)
    m = _Maker(b, plan if share else attrs.evolve(plan, reuse={}))
    size, dims = plan.metadata_size, plan.sizes
    runs = []
    for events in plan.events:
        made = []
        for kind in events:
            name = m.get("name", b.CreateString, "op")
            if kind == "profile":
                meta = m.get("metadata", b.CreateByteVector, b"\x05" * size, empty=not size)
                member = m.get("profile", _profile, b, name, meta, 1)
                made.append(m.get("event", _event, b, 0, member))
            elif kind == "alloc":
                member = m.get("alloc", _alloc, b)
                made.append(m.get("event", _event, b, 1, member))
            else:
                sizes = m.get("sizes", _longs, b, [1] * dims, empty=not dims)
                tensor = m.get("tensor", _tensor, b, sizes)
                value = m.get("value", _value, b, tensor)
                member = m.get("debug", _debug, b, name, value)
                made.append(m.get("event", _event, b, 2, member))
        vec = m.get("events", _vector, b, made, empty=not made)
        runs.append(m.get("run", _run, b, b.CreateString("Execute"), vec))
    return _finish(b, runs), m.reused


def _alloc(b: Builder) -> int:
    b.StartObject(2)
    b.PrependInt32Slot(0, 1, 0)
    b.PrependUint64Slot(1, 64, 0)
    return int(b.EndObject())


def _longs(b: Builder, values: Sequence[int]) -> int:
    b.StartVector(8, len(values), 8)
    for value in reversed(values):
        b.PrependInt64(value)
    return int(b.EndVector())


def _tensor(b: Builder, sizes: int) -> int:
    strides = _longs(b, [1] * 0)
    b.StartObject(4)
    b.PrependInt8Slot(0, 6, 0)  # FLOAT
    b.PrependUOffsetTRelativeSlot(1, sizes, 0)
    b.PrependUOffsetTRelativeSlot(2, strides, 0)
    return int(b.EndObject())


def _value(b: Builder, tensor: int) -> int:
    b.StartObject(8)
    b.PrependInt8Slot(0, 5, 0)  # Tensor
    b.PrependUOffsetTRelativeSlot(1, tensor, 0)
    return int(b.EndObject())


def _debug(b: Builder, name: int, value: int) -> int:
    b.StartObject(6)
    b.PrependInt32Slot(1, 3, -1)
    b.PrependUOffsetTRelativeSlot(2, value, 0)
    b.PrependUOffsetTRelativeSlot(5, name, 0)
    return int(b.EndObject())


# --- no sharing, yet costly: many rows, tensors naming one debug buffer (issue 35, item 2) -----


def packed_events(events: int) -> bytes:
    """One run of ``events`` distinct profile events (one row each), packed tight: an
    event of only a name (one shared string) in 20 bytes, so 5 MB hold 250,000 rows."""
    b = Builder(24 * events + 1024)
    name = b.CreateString("op")
    made = []
    for _ in range(events):
        b.StartObject(8)
        b.PrependUOffsetTRelativeSlot(0, name, 0)
        made.append(_event(b, 0, int(b.EndObject())))
    return _one_run(b, made)


def tensors_on_one_buffer(tensors: int, elements: int) -> bytes:
    """``tensors`` debug events, each a distinct float tensor of ``elements`` elements at
    offset 0 of the debug buffer (all naming the same bytes)."""
    from delegate_lens.etdump import (
        DebugEvent,
        ETDump,
        Event,
        RunData,
        ScalarType,
        Tensor,
        Value,
        ValueType,
        dumps,
    )

    def value() -> Value:
        tensor = Tensor(scalar_type=ScalarType.FLOAT, sizes=[elements], strides=[1], offset=0)
        return Value(val=ValueType.Tensor, tensor=tensor)

    events = [
        Event(debug_event=DebugEvent(name=f"op{i}", instruction_id=i, debug_entry=value()))
        for i in range(tensors)
    ]
    return dumps(ETDump(run_data=[RunData(name="Execute", events=events)]))
