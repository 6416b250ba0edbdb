"""The ``perfetto`` export: a native Perfetto trace (protobuf ``Trace``), written with the
trace protos that the ``perfetto`` package ships (``pip install 'delegate-lens[perfetto]'``;
imported only here, when the export runs).

What it holds, in the form Perfetto's own SDK writes:

* a process track ``delegate-lens`` with one child track per run of the ETDump, in run
  order, named as the ``chrome-trace`` threads (``run 1: Execute (forward)``);
* each run's slices on a packet sequence of its own: the first packet clears the
  sequence's incremental state, interns the event names of the run's block
  (``EventName`` iids) and sets the packet defaults (the run's track; a sequence clock in
  nanoseconds, incremental, tied to the trace clock by a ``ClockSnapshot``); then one
  ``TYPE_SLICE_BEGIN`` (name iid) and one ``TYPE_SLICE_END`` track event per slice, each
  timestamp the nanoseconds since the sequence's previous packet. The slices and their
  nesting are those of ``chrome-trace`` (:mod:`delegate_lens.exporters._slices`): kernels
  inside their ``OPERATOR_CALL``, delegate events inside their ``DELEGATE_CALL``, both
  inside ``Method::execute``;
* when the ETDump has allocation events, one counter track (bytes) per allocator,
  ``memory (bytes): <allocator>``: what each run allocated, from its first slice to its
  last, as ``chrome-trace``'s counters.

Times are nanoseconds from the first event of the file (cycles as if they were
microseconds, as in ``chrome-trace``). About 30 bytes per slice.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import IO, TYPE_CHECKING

import numpy as np

from delegate_lens.errors import MissingExtraError

if TYPE_CHECKING:
    from delegate_lens.exporters._rows import TraceBlock, TraceInput

PROCESS_UUID = 1
DESCRIPTOR_SEQUENCE = 1  # track descriptors and counters; run r uses sequence 2 + r
SEQUENCE_CLOCK = 64  # the first sequence-scoped clock id
BOOTTIME = 6  # the trace clock (BuiltinClocks.BOOTTIME)
_NEST_EVENTS = 1 << 18  # slices nested at a time


def load_protos() -> ModuleType:
    """The ``perfetto_trace_pb2`` module of the ``perfetto`` package, or
    :class:`MissingExtraError` naming the extra."""
    try:
        return importlib.import_module("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    except ImportError as exc:
        raise MissingExtraError(
            "--format perfetto needs the perfetto package: install the 'perfetto' extra "
            "(pip install 'delegate-lens[perfetto]')"
        ) from exc


def write_perfetto(data: TraceInput, stream: IO[bytes]) -> None:
    """Write the Perfetto trace of ``data`` (see the module docstring) to a binary stream."""
    pb = load_protos()
    scale = 1_000_000_000 // data.units_per_second  # ns per tick (cycles: as if us)
    blocks = [block.slices for block in data.blocks]
    where: dict[int, tuple[int, int]] = {}  # run -> (block, position in block)
    for b, block in enumerate(data.blocks):
        for pos, run in enumerate(block.runs):
            where[run] = (b, pos)
    starts = [sl.first_start for sl in blocks if sl.first_start is not None]
    origin = min(starts, default=0)
    memory = data.memory  # run -> {allocator: bytes}
    spans = [  # (block, position) -> first start and last end, of the runs with counters
        sl.spans(
            (where[run][1] for run in memory if run in where and where[run][0] == b), _NEST_EVENTS
        )
        for b, sl in enumerate(blocks)
    ]
    allocators = sorted({label for per_run in memory.values() for label in per_run})
    counter_uuid = {label: 2 + i for i, label in enumerate(allocators)}
    first_run_uuid = 2 + len(allocators)

    head = pb.Trace()
    packet = head.packet.add()
    packet.trusted_packet_sequence_id = DESCRIPTOR_SEQUENCE
    track = packet.track_descriptor
    track.uuid = PROCESS_UUID
    track.process.pid = 1
    track.process.process_name = "delegate-lens"
    track.child_ordering = pb.TrackDescriptor.EXPLICIT
    for label in allocators:
        packet = head.packet.add()
        packet.trusted_packet_sequence_id = DESCRIPTOR_SEQUENCE
        track = packet.track_descriptor
        track.uuid = counter_uuid[label]
        track.parent_uuid = PROCESS_UUID
        track.name = f"memory (bytes): {label}"
        track.sibling_order_rank = -1  # above the runs
        track.counter.unit = pb.CounterDescriptor.UNIT_SIZE_BYTES
    for run in sorted(where):
        b, pos = where[run]
        method = data.blocks[b].method
        packet = head.packet.add()
        packet.trusted_packet_sequence_id = DESCRIPTOR_SEQUENCE
        track = packet.track_descriptor
        track.uuid = first_run_uuid + run
        track.parent_uuid = PROCESS_UUID
        track.name = f"run {run}: {data.run_names[run] or ''}" + (f" ({method})" if method else "")
        track.sibling_order_rank = run
        if run in memory and pos in spans[b]:
            first, last = ((t - origin) * scale for t in spans[b][pos])
            for label, total in memory[run].items():
                for ts, value in ((first, total), (last, 0)):
                    packet = head.packet.add()
                    packet.trusted_packet_sequence_id = DESCRIPTOR_SEQUENCE
                    packet.timestamp = ts
                    event = packet.track_event
                    event.type = pb.TrackEvent.TYPE_COUNTER
                    event.track_uuid = counter_uuid[label]
                    event.counter_value = value
    stream.write(head.SerializeToString())

    for block in data.blocks:
        if block.slices.rows:
            _write_block(pb, stream, block, origin, scale, first_run_uuid)


def _write_block(
    pb: ModuleType,
    stream: IO[bytes],
    block: TraceBlock,
    origin: int,
    scale: int,
    first_run_uuid: int,
) -> None:
    """The packet sequences of the runs of one block. Each packet is written as a ``Trace``
    holding only it (serialized ``Trace`` messages concatenate, as the package's streaming
    builder writes them); the slice packets reuse one message per kind, only their
    timestamp and name change."""
    source = block.slices
    keys = [block.rows[j].event_name for j in source.rows]
    names: dict[str, int] = {}
    for name in keys:
        names.setdefault(name, len(names) + 1)
    iids = [names[name] for name in keys]
    begin_trace, end_trace = pb.Trace(), pb.Trace()
    begin, end = begin_trace.packet.add(), end_trace.packet.add()
    begin.track_event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
    end.track_event.type = pb.TrackEvent.TYPE_SLICE_END
    begin_event = begin.track_event
    serialize_begin, serialize_end = begin_trace.SerializeToString, end_trace.SerializeToString
    runs = list(block.runs)
    for lo, sl in source.ranges(_NEST_EVENTS):
        span = sl.start.shape[0]
        nested = sl.nested()
        cols = nested.cols.tolist()
        starts = ((nested.start - origin) * scale).tolist()
        ends = ((np.maximum(nested.end, nested.start) - origin) * scale).tolist()
        depths = nested.depth.tolist()
        for i, run in enumerate(runs[lo : lo + span]):
            sequence = 2 + run
            now = starts[i][0]
            pieces = [_sequence_start(pb, sequence, first_run_uuid + run, names, now)]
            put = pieces.append
            begin.trusted_packet_sequence_id = sequence
            end.trusted_packet_sequence_id = sequence
            open_ends: list[int] = []
            for c, s, e, d in zip(cols[i], starts[i], ends[i], depths[i], strict=True):
                while len(open_ends) > d:
                    t = open_ends.pop()
                    end.timestamp = t - now
                    now = t
                    put(serialize_end())
                begin.timestamp = s - now
                now = s
                begin_event.name_iid = iids[c]
                put(serialize_begin())
                open_ends.append(e)
            while open_ends:
                t = open_ends.pop()
                end.timestamp = t - now
                now = t
                put(serialize_end())
            stream.write(b"".join(pieces))


def _sequence_start(
    pb: ModuleType, sequence: int, track: int, names: dict[str, int], now: int
) -> bytes:
    """A run's first packets: incremental state cleared, interned names, defaults (its
    track, the sequence clock), then the clock snapshot that starts the clock at ``now``."""
    trace = pb.Trace()
    packet = trace.packet.add()
    packet.trusted_packet_sequence_id = sequence
    packet.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    for name, iid in names.items():
        packet.interned_data.event_names.add(iid=iid, name=name)
    defaults = packet.trace_packet_defaults
    defaults.timestamp_clock_id = SEQUENCE_CLOCK
    defaults.track_event_defaults.track_uuid = track
    packet = trace.packet.add()
    packet.trusted_packet_sequence_id = sequence
    clocks = packet.clock_snapshot.clocks
    clocks.add(clock_id=BOOTTIME, timestamp=now)
    clocks.add(clock_id=SEQUENCE_CLOCK, timestamp=now, is_incremental=True)
    data: bytes = trace.SerializeToString()
    return data
