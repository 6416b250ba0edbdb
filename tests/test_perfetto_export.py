"""The ``perfetto`` export, read back with the ``perfetto`` package's own trace protos:
track descriptors, interned names, the sequence clock, slices nested as in chrome-trace
(delegate events inside their DELEGATE_CALL), allocation counters, size per slice, and a
clear error when the extra is missing."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb  # the dev extra has it

from delegate_lens.cli import main
from delegate_lens.errors import MissingExtraError
from delegate_lens.etdump import (
    AllocationEvent,
    Allocator,
    ETDump,
    Event,
    ProfileEvent,
    RunData,
    dumps,
)
from delegate_lens.exporters import write_chrome_trace, write_perfetto
from delegate_lens.inspector import Inspector, trace_input

BOOTTIME = 6


@attrs.define
class Read:
    """What a trace holds: track names by uuid, slices (track, name, start, end, names of
    the enclosing slices) and counter values (track, ts, value), times in ns of the trace
    clock."""

    tracks: dict[int, Any] = attrs.field(factory=dict)
    slices: list[tuple[str, str, int, int, tuple[str, ...]]] = attrs.field(factory=list)
    counters: list[tuple[str, int, int]] = attrs.field(factory=list)
    packets: int = 0


@attrs.define
class _Sequence:
    names: dict[int, str] = attrs.field(factory=dict)
    defaults: Any = None
    clocks: dict[int, tuple[int, int]] = attrs.field(factory=dict)  # id -> (value, offset)
    open: dict[int, list[tuple[str, int]]] = attrs.field(factory=dict)


def read_trace(data: bytes) -> Read:
    """Decode as the trace format documents it (incremental state per sequence, interned
    event names, packet defaults, sequence-scoped incremental clocks)."""
    trace = pb.Trace.FromString(data)
    out = Read(packets=len(trace.packet))
    sequences: dict[int, _Sequence] = {}
    open_slices: list[tuple[int, str, int, int, tuple[str, ...]]] = []
    for packet in trace.packet:
        seq_id = packet.trusted_packet_sequence_id
        assert seq_id > 0
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            sequences[seq_id] = _Sequence()
        seq = sequences.setdefault(seq_id, _Sequence())
        if packet.HasField("track_descriptor"):
            out.tracks[packet.track_descriptor.uuid] = packet.track_descriptor
        for name in packet.interned_data.event_names:
            seq.names[name.iid] = name.name
        if packet.HasField("trace_packet_defaults"):
            seq.defaults = packet.trace_packet_defaults
        if packet.HasField("clock_snapshot"):
            values = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            boot = values[BOOTTIME].timestamp
            for clock_id, clock in values.items():
                if clock_id >= 64:
                    assert clock.is_incremental
                    seq.clocks[clock_id] = (clock.timestamp, boot - clock.timestamp)
            continue
        if not packet.HasField("track_event"):
            continue
        event = packet.track_event
        defaults = seq.defaults
        clock = (
            packet.timestamp_clock_id
            if packet.HasField("timestamp_clock_id")
            else (defaults.timestamp_clock_id if defaults is not None else BOOTTIME)
        )
        assert packet.HasField("timestamp")
        if clock >= 64:
            value, offset = seq.clocks[clock]
            value += packet.timestamp
            seq.clocks[clock] = (value, offset)
            ts = value + offset
        else:
            ts = packet.timestamp
        track = (
            event.track_uuid
            if event.HasField("track_uuid")
            else defaults.track_event_defaults.track_uuid
        )
        stack = seq.open.setdefault(track, [])
        if event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            name = seq.names[event.name_iid] if event.HasField("name_iid") else event.name
            stack.append((name, ts))
        elif event.type == pb.TrackEvent.TYPE_SLICE_END:
            name, start = stack.pop()
            open_slices.append((track, name, start, ts, tuple(n for n, _ in stack)))
        elif event.type == pb.TrackEvent.TYPE_COUNTER:
            out.counters.append((out.tracks[track].name, ts, event.counter_value))
    assert all(not s for seq in sequences.values() for s in seq.open.values())
    out.slices = [(out.tracks[t].name, n, s, e, p) for t, n, s, e, p in open_slices]
    return out


def _perfetto(inspector: Inspector) -> Read:
    stream = io.BytesIO()
    write_perfetto(trace_input(inspector), stream)
    return read_trace(stream.getvalue())


def _chrome(inspector: Inspector) -> dict[str, Any]:
    text = io.StringIO()
    write_chrome_trace(trace_input(inspector), text)
    trace: dict[str, Any] = json.loads(text.getvalue())
    return trace


def _vector(vectors_dir: Path, name: str) -> Inspector:
    return Inspector(
        etdump_path=str(vectors_dir / name / "etdump.etdp"),
        etrecord=str(vectors_dir / name / "etrecord.bin"),
    )


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
def test_slices_tracks_and_nesting_are_chrome_traces(vectors_dir: Path, name: str) -> None:
    inspector = _vector(vectors_dir, name)
    got = _perfetto(inspector)
    chrome = _chrome(inspector)["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in chrome if e["name"] == "thread_name"}
    expected = sorted(
        (
            threads[e["tid"]],
            e["name"],
            round(e["ts"] * 1000),
            round((e["ts"] + e["dur"]) * 1000),
        )
        for e in chrome
        if e["ph"] == "X"
    )
    assert sorted(s[:4] for s in got.slices) == expected
    # tracks: a process with one child per run, in run order
    (process,) = [t for t in got.tracks.values() if t.HasField("process")]
    assert process.process.process_name == "delegate-lens"
    assert process.child_ordering == pb.TrackDescriptor.EXPLICIT
    runs = {t.name: t for t in got.tracks.values() if t.parent_uuid == process.uuid}
    assert sorted(runs) == sorted(threads.values())
    assert all(runs[label].sibling_order_rank == tid for tid, label in threads.items())
    # nesting: kernels in their OPERATOR_CALL, delegate events in their DELEGATE_CALL
    delegated = {e["name"] for e in chrome if e.get("cat") == "delegate"}
    for track, slice_name, _s, _e, outer in got.slices:
        if slice_name in delegated:
            assert outer[:2] == ("Method::execute", "DELEGATE_CALL"), (track, slice_name)
        elif slice_name.startswith("native_call_"):
            assert outer == ("Method::execute", "OPERATOR_CALL"), (track, slice_name)
        elif slice_name in ("OPERATOR_CALL", "DELEGATE_CALL"):
            assert outer == ("Method::execute",), (track, slice_name)
    assert bool(delegated) == (name != "gpt_portable")


def test_at_most_40_bytes_per_slice_with_names_interned(vectors_dir: Path) -> None:
    inspector = _vector(vectors_dir, "gpt_portable")
    stream = io.BytesIO()
    write_perfetto(trace_input(inspector), stream)
    got = read_trace(stream.getvalue())
    assert len(got.slices) > 10_000
    assert len(stream.getvalue()) / len(got.slices) <= 40
    trace = pb.Trace.FromString(stream.getvalue())
    events = [p.track_event for p in trace.packet if p.HasField("track_event")]
    assert not any(e.HasField("name") for e in events)  # names only through iids


def _with_allocations() -> bytes:
    def run(t0: int, sizes: list[tuple[int, int]]) -> RunData:
        events = [
            Event(
                profile_event=ProfileEvent(
                    name="Method::execute", start_time=t0 + 10, end_time=t0 + 90
                )
            )
        ]
        events += [
            Event(allocation_event=AllocationEvent(allocator_id=a, allocation_size=s))
            for a, s in sizes
        ]
        return RunData(
            name="Execute", allocators=[Allocator("planned"), Allocator(None)], events=events
        )

    runs = [run(0, [(0, 64), (0, 32), (1, 8)]), run(1000, [(0, 16), (5, 1)])]
    return dumps(ETDump(run_data=runs))


def test_allocations_are_counter_tracks_in_bytes() -> None:
    got = _perfetto(Inspector(etdump_data=_with_allocations()))
    counters = {t.name: t for t in got.tracks.values() if t.HasField("counter")}
    assert sorted(counters) == [
        "memory (bytes): allocator 1",
        "memory (bytes): allocator 5",
        "memory (bytes): planned",
    ]
    assert all(t.counter.unit == pb.CounterDescriptor.UNIT_SIZE_BYTES for t in counters.values())
    assert sorted(got.counters) == sorted(
        [
            ("memory (bytes): planned", 0, 96),
            ("memory (bytes): planned", 80, 0),
            ("memory (bytes): allocator 1", 0, 8),
            ("memory (bytes): allocator 1", 80, 0),
            ("memory (bytes): planned", 1000, 16),
            ("memory (bytes): planned", 1080, 0),
            ("memory (bytes): allocator 5", 1000, 1),
            ("memory (bytes): allocator 5", 1080, 0),
        ]
    )
    assert [s[:4] for s in got.slices] == [
        ("run 0: Execute", "Method::execute", 0, 80),
        ("run 1: Execute", "Method::execute", 1000, 1080),
    ]


def test_cli_writes_the_trace_file(vectors_dir: Path, tmp_path: Path) -> None:
    vector = vectors_dir / "mlp_xnnpack"
    out = tmp_path / "trace.pftrace"
    args = [str(vector / "etdump.etdp"), "--etrecord", str(vector / "etrecord.bin")]
    assert main(["inspect", *args, "--format", "perfetto", "-o", str(out)]) == 0
    assert read_trace(out.read_bytes()).slices


def _perfetto_to_stdout(vectors_dir: Path, *extra: str, tty: bool) -> tuple[int, bytes, bytes]:
    """``inspect -f perfetto`` with standard output on a pseudo-terminal (``tty``) or a
    pipe: its status, what standard output got and standard error."""
    import os
    import subprocess

    vector = vectors_dir / "mlp_xnnpack"
    argv = [sys.executable, "-m", "delegate_lens", "inspect", str(vector / "etdump.etdp")]
    argv += ["--etrecord", str(vector / "etrecord.bin"), "-f", "perfetto", *extra]
    if not tty:
        done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
        return done.returncode, done.stdout, done.stderr
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    assert proc.stderr is not None
    err = proc.stderr.read()
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=60), out, err


@pytest.mark.parametrize("extra", [[], ["-o", "-"]])
def test_binary_trace_is_not_written_onto_a_terminal(vectors_dir: Path, extra: list[str]) -> None:
    pytest.importorskip("pty")
    status, out, err = _perfetto_to_stdout(vectors_dir, *extra, tty=True)
    assert status == 2 and out == b""
    assert err == (
        b"error: format 'perfetto' is binary and standard output is a terminal: give a file "
        b"with -o FILE (or pipe the output)\n"
    )


def test_binary_trace_goes_into_a_pipe(vectors_dir: Path, tmp_path: Path) -> None:
    status, out, err = _perfetto_to_stdout(vectors_dir, tty=False)
    assert status == 0, err
    assert read_trace(out).slices
    status, dash, _ = _perfetto_to_stdout(vectors_dir, "-o", "-", tty=False)
    assert status == 0 and read_trace(dash).slices


def test_binary_on_a_terminal_is_refused_in_process(
    vectors_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    screen = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", Terminal(screen))
    vector = vectors_dir / "mlp_xnnpack"
    with pytest.raises(SystemExit) as exc:
        main(["inspect", str(vector / "etdump.etdp"), "-f", "perfetto"])
    assert exc.value.code == 2 and screen.getvalue() == b""
    assert "-o FILE" in capsys.readouterr().err


def test_missing_extra_is_one_line_naming_it(
    vectors_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from delegate_lens.exporters import load_protos

    for module in list(sys.modules):
        if module == "perfetto" or module.startswith("perfetto."):
            monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"delegate-lens\[perfetto\]"):
        load_protos()
    vector = vectors_dir / "mlp_xnnpack"
    out = tmp_path / "trace.pftrace"
    args = [str(vector / "etdump.etdp"), "--etrecord", str(vector / "etrecord.bin")]
    with pytest.raises(SystemExit) as exc:
        main(["inspect", *args, "--format", "perfetto", "-o", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'perfetto' extra" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
