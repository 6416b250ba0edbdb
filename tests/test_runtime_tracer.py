"""EventTracer API and ETDumpGen without torch models: errors, metadata, debug buffer, files."""

from __future__ import annotations

import itertools
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.errors import EventTracerError
from delegate_lens.etdump import loads
from delegate_lens.etdump._jsonview import to_json
from delegate_lens.runtime import (
    DebugBufferFullWarning,
    ETDumpGen,
    EventTracer,
    EventTracerEntry,
    event_tracer_end_profiling_delegate,
    event_tracer_log_output_delegate,
    event_tracer_log_profiling_delegate,
    event_tracer_start_profiling_delegate,
)


def counter_clock(start: int = 1000, step: int = 10):  # type: ignore[no-untyped-def]
    it = itertools.count(start, step)
    return lambda: next(it)


def events_of(gen: ETDumpGen) -> list[tuple[str | None, list[dict]]]:  # type: ignore[type-arg]
    data = to_json(loads(gen.get_etdump_data()))
    return [(r.get("name"), r["events"]) for r in data["run_data"]]


# --------------------------------------------------------------------------- identifiers


@pytest.mark.parametrize(
    ("name", "ddi", "match"),
    [
        ("a", 3, "exactly one"),
        (None, None, "without an identifier"),
        (None, -1, "without an identifier"),
        (5, None, "must be a str"),
        (None, "x", "must be an int"),
        (None, True, "must be an int"),
        (None, -7, ">= 0"),
        ("", None, "empty"),
        ("", 3, "exactly one"),
        (None, 2**31, "int32"),
        (None, 2**40, "int32"),
    ],
)
def test_identifier_errors(name: object, ddi: object, match: str) -> None:
    gen = ETDumpGen()
    with pytest.raises(EventTracerError, match=match):
        event_tracer_start_profiling_delegate(gen, name, ddi)  # type: ignore[arg-type]
    with pytest.raises(EventTracerError, match=match):
        event_tracer_log_profiling_delegate(gen, name, ddi, 1, 2)  # type: ignore[arg-type]
    with pytest.raises(EventTracerError, match=match):
        event_tracer_log_output_delegate(gen, name, ddi, 1.0)  # type: ignore[arg-type]
    assert events_of(gen) == []


def test_largest_int32_and_numpy_integer_identifiers_are_written() -> None:
    gen = ETDumpGen(clock=counter_clock())
    gen.create_event_block("Execute")
    entry = event_tracer_start_profiling_delegate(gen, None, 2**31 - 1)
    event_tracer_end_profiling_delegate(gen, entry)
    event_tracer_log_profiling_delegate(gen, None, 2**31 - 1, 1, 2)
    # ids read from a backend's numpy tables (were "must be an int, not int64")
    entry = event_tracer_start_profiling_delegate(gen, None, np.int64(5))  # type: ignore[arg-type]
    event_tracer_end_profiling_delegate(gen, entry)
    event_tracer_log_profiling_delegate(gen, None, np.uint32(6), 1, 2)  # type: ignore[arg-type]
    [(_, events)] = events_of(gen)
    ids = [e["profile_event"]["delegate_debug_id_int"] for e in events]
    assert ids == [2**31 - 1, 2**31 - 1, 5, 6]
    with pytest.raises(EventTracerError, match="must be an int, not bool"):
        event_tracer_log_profiling_delegate(gen, None, np.bool_(True), 1, 2)  # type: ignore[arg-type]


def test_end_needs_the_entry() -> None:
    with pytest.raises(EventTracerError, match="entry"):
        event_tracer_end_profiling_delegate(ETDumpGen(), "not an entry")  # type: ignore[arg-type]


def test_bad_times() -> None:
    gen = ETDumpGen()
    with pytest.raises(EventTracerError, match="uint64"):
        event_tracer_log_profiling_delegate(gen, "x", None, -1, 5)
    with pytest.raises(EventTracerError, match="ints"):
        event_tracer_log_profiling_delegate(gen, "x", None, "soon", 5)  # type: ignore[arg-type]
    with pytest.raises(EventTracerError, match="ints"):  # would lose its fraction
        event_tracer_log_profiling_delegate(gen, "x", None, 1.5, 2.75)  # type: ignore[arg-type]
    event_tracer_log_profiling_delegate(gen, "x", None, np.uint64(3), np.int32(4))
    [(_, [event])] = events_of(gen)
    assert (event["profile_event"]["start_time"], event["profile_event"]["end_time"]) == (3, 4)


def test_none_tracer_is_a_noop() -> None:
    assert event_tracer_start_profiling_delegate(None, "a", None) is None
    assert event_tracer_end_profiling_delegate(None, None, {"any": "thing"}) is None
    assert event_tracer_log_profiling_delegate(None, "a", None, 0, 1, object()) is None
    assert event_tracer_log_output_delegate(None, None, 1, object()) is None


def test_base_tracer_records_nothing_but_accepts_everything() -> None:
    tracer = EventTracer(clock=counter_clock())
    entry = event_tracer_start_profiling_delegate(tracer, None, 4)
    assert isinstance(entry, EventTracerEntry) and entry.start_time == 1000
    event_tracer_end_profiling_delegate(tracer, entry, b"m")
    event_tracer_log_output_delegate(tracer, "x", None, np.ones(3))


# --------------------------------------------------------------------------- delegate events


def test_delegate_events_layout_and_metadata() -> None:
    gen = ETDumpGen(clock=counter_clock())
    gen.create_event_block("Execute")
    gen.set_chain_debug_handle(0, 7)
    entry = event_tracer_start_profiling_delegate(gen, "op#1", None)
    event_tracer_end_profiling_delegate(gen, entry, b"\x01\x02")
    entry = event_tracer_start_profiling_delegate(gen, None, 12)
    event_tracer_end_profiling_delegate(gen, entry)
    event_tracer_log_profiling_delegate(gen, None, 0, 5, 3, bytearray(b"x"))  # wrapped clock ok
    [(name, events)] = events_of(gen)
    assert name == "Execute"
    assert events == [
        {
            "profile_event": {
                "instruction_id": 7,
                "delegate_debug_id_str": "op#1",
                "delegate_debug_metadata": [1, 2],
                "start_time": 1000,
                "end_time": 1010,
            }
        },
        {
            "profile_event": {
                "instruction_id": 7,
                "delegate_debug_id_int": 12,
                "delegate_debug_metadata": [],
                "start_time": 1020,
                "end_time": 1030,
            }
        },
        {
            "profile_event": {
                "instruction_id": 7,
                "delegate_debug_id_int": 0,
                "delegate_debug_metadata": [120],
                "start_time": 5,
                "end_time": 3,
            }
        },
    ]


def test_structured_metadata_without_encoder_names_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    import delegate_lens.hookcalls as pmod

    monkeypatch.setattr(pmod, "call_hook", lambda *a, **k: None)
    gen = ETDumpGen()
    gen.delegate_backend_id = "NoSuchBackend"
    with pytest.raises(EventTracerError, match="NoSuchBackend"):
        event_tracer_log_profiling_delegate(gen, "x", None, 0, 1, {"flops": 3})


def test_structured_metadata_encoded_by_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    import delegate_lens.hookcalls as pmod

    seen = []

    def fake(hook: str, **kwargs: object) -> bytes:
        seen.append((hook, kwargs))
        return b"enc"

    monkeypatch.setattr(pmod, "call_hook", fake)
    gen = ETDumpGen(clock=counter_clock())
    gen.delegate_backend_id = "B"
    event_tracer_log_profiling_delegate(gen, "x", None, 0, 1, {"flops": 3})
    assert seen == [("dl_encode_delegate_metadata", {"backend_id": "B", "metadata": {"flops": 3}})]
    [(_, events)] = events_of(gen)
    assert events[0]["profile_event"]["delegate_debug_metadata"] == list(b"enc")


# --------------------------------------------------------------------------- debug buffer


def test_delegate_outputs_go_to_debug_buffer_aligned() -> None:
    gen = ETDumpGen(debug_buffer_size=1024, clock=counter_clock())
    gen.set_chain_debug_handle(0, 2)
    a = np.arange(3, dtype=np.float32)
    b = np.arange(6, dtype=np.int64).reshape(2, 3)
    event_tracer_log_output_delegate(gen, "a", None, a)
    event_tracer_log_output_delegate(gen, None, 9, b)
    event_tracer_log_output_delegate(gen, None, 9, 2.5)
    event_tracer_log_output_delegate(gen, None, 9, [a, a])
    [(name, events)] = events_of(gen)
    assert name == "Default"
    t0 = events[0]["debug_event"]["debug_entry"]["tensor"]
    t1 = events[1]["debug_event"]["debug_entry"]["tensor"]
    assert t0 == {"scalar_type": "FLOAT", "sizes": [3], "strides": [1]}  # offset 0 omitted
    assert t1 == {"scalar_type": "LONG", "sizes": [2, 3], "strides": [3, 1], "offset": 64}
    assert events[1]["debug_event"]["delegate_debug_id_int"] == 9
    assert events[2]["debug_event"]["debug_entry"] == {
        "val": "Double",
        "double_value": {"double_val": 2.5},
    }
    tl = events[3]["debug_event"]["debug_entry"]["tensor_list"]["tensors"]
    assert [t["offset"] for t in tl] == [128, 192]
    buf = gen.debug_buffer
    assert np.array_equal(np.frombuffer(buf[0:12], np.float32), a)
    assert np.array_equal(np.frombuffer(buf[64:112], np.int64).reshape(2, 3), b)


def test_no_debug_buffer_records_no_debug_events() -> None:
    gen = ETDumpGen(clock=counter_clock())
    event_tracer_log_output_delegate(gen, "a", None, np.ones(4, np.float32))
    gen.log_evalue(np.ones(2))
    assert events_of(gen) == []
    assert gen.debug_buffer == b""


def test_debug_buffer_full_keeps_profiling_and_a_clean_prefix(tmp_path: Path) -> None:
    gen = ETDumpGen(debug_buffer_size=200, clock=counter_clock())
    big = np.ones(40, np.float32)  # 160 bytes
    small = np.ones(2, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        event_tracer_log_output_delegate(gen, "a", None, small)  # offset 0
        event_tracer_log_output_delegate(gen, "b", None, big)  # needs 64..224 > 200: full
        event_tracer_log_output_delegate(gen, "c", None, small)  # would fit, not stored
        for i in range(3):
            event_tracer_log_profiling_delegate(gen, f"p{i}", None, i, i + 1)
    assert [w.category for w in caught] == [DebugBufferFullWarning]
    assert "200 bytes" in str(caught[0].message)
    assert gen.debug_buffer_full and gen.dropped_debug_values == 2
    [(_, events)] = events_of(gen)
    debug = [e for e in events if "debug_event" in e]
    profile = [e for e in events if "profile_event" in e]
    assert [d["debug_event"]["delegate_debug_id_str"] for d in debug] == ["a"]
    assert len(profile) == 3
    gen.write(tmp_path / "e.etdp", tmp_path / "d.bin")
    assert len((tmp_path / "d.bin").read_bytes()) == 8
    assert loads((tmp_path / "e.etdp").read_bytes()).run_data[0].columns.kind.tolist() == [
        3,
        1,
        1,
        1,
    ]


def test_debug_buffer_size_checked() -> None:
    with pytest.raises(EventTracerError, match=">= 0"):
        ETDumpGen(debug_buffer_size=-1)
    with pytest.raises(EventTracerError, match="int"):
        ETDumpGen(debug_buffer_size=1.5)  # type: ignore[arg-type]


def test_a_large_debug_buffer_limit_allocates_only_what_is_stored() -> None:
    """The size is a limit: 1 PiB used to be allocated up front (MemoryError)."""
    gen = ETDumpGen(debug_buffer_size=1 << 50)
    gen.create_event_block("Execute")
    gen.log_evalue(np.arange(3, dtype=np.float32))
    gen.log_evalue(np.arange(5, dtype=np.int64))
    assert gen.debug_buffer == (
        np.arange(3, dtype=np.float32).tobytes()
        + bytes(52)
        + np.arange(5, dtype=np.int64).tobytes()
    )


# --------------------------------------------------------------------------- files


def test_write_is_atomic_and_deterministic(tmp_path: Path) -> None:
    def record() -> ETDumpGen:
        gen = ETDumpGen(debug_buffer_size=256, clock=counter_clock())
        gen.add_profile_event("Method::init", -1, 0, 1, 2)
        gen.create_event_block("Execute")
        event_tracer_log_profiling_delegate(gen, None, 1, 3, 4, b"m")
        event_tracer_log_output_delegate(gen, None, 1, np.ones(2, np.float32))
        return gen

    a, b = record(), record()
    assert a.get_etdump_data() == b.get_etdump_data()
    target = tmp_path / "out.etdp"
    target.write_bytes(b"old")
    a.write(target, tmp_path / "debug.bin")
    assert target.read_bytes() == a.get_etdump_data()
    assert (tmp_path / "debug.bin").read_bytes() == a.debug_buffer
    assert sorted(p.name for p in tmp_path.iterdir()) == ["debug.bin", "out.etdp"]
    with pytest.raises(OSError):
        a.write(tmp_path / "missing-dir" / "x.etdp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["debug.bin", "out.etdp"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.text(min_size=1, max_size=5), st.integers(0, 2**31 - 1)),
            st.integers(0, 2**64 - 1),
            st.integers(0, 2**64 - 1),
            st.binary(max_size=8),
        ),
        max_size=20,
    )
)
def test_delegate_events_round_trip(events: list[tuple[str | int, int, int, bytes]]) -> None:
    gen = ETDumpGen()
    gen.create_event_block("Execute")
    gen.set_chain_debug_handle(0, 3)
    for ident, start, end, meta in events:
        name, ddi = (ident, None) if isinstance(ident, str) else (None, ident)
        event_tracer_log_profiling_delegate(gen, name, ddi, start, end, meta)
    run = loads(gen.get_etdump_data()).run_data[0]
    cols = run.columns
    assert len(cols) == len(events)
    for i, (ident, start, end, meta) in enumerate(events):
        if isinstance(ident, str):
            assert cols.string(int(cols.delegate_debug_id_str[i])) == ident
            assert cols.delegate_debug_id_int[i] == -1
        else:
            assert cols.delegate_debug_id_int[i] == ident
        assert int(cols.start_time[i]) == start and int(cols.end_time[i]) == end
        assert cols.metadata(i) == meta
        assert cols.instruction_id[i] == 3


def test_tracer_modules_import_no_torch() -> None:
    code = (
        "import sys; from delegate_lens.runtime import ETDumpGen, event_tracer_log_profiling_delegate;"
        "import delegate_lens.backends_demo._plugin, delegate_lens.backends_demo._runtime;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_structured_metadata_is_a_snapshot_encoded_once_per_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    import delegate_lens.hookcalls as pmod

    calls = []

    def fake(hook: str, backend_id: str, metadata: object) -> bytes:
        calls.append(metadata)
        return json.dumps(metadata).encode()

    monkeypatch.setattr(pmod, "call_hook", fake)
    gen = ETDumpGen(clock=counter_clock())
    gen.delegate_backend_id = "B"
    meta = {"flops": 1}
    for _ in range(5):
        entry = event_tracer_start_profiling_delegate(gen, None, 1)
        event_tracer_end_profiling_delegate(gen, entry, meta)
    meta["flops"] = 2  # edited after logging: must not change what was logged
    event_tracer_log_profiling_delegate(gen, None, 2, 0, 1, meta)
    [(_, events)] = events_of(gen)
    stored = [bytes(e["profile_event"]["delegate_debug_metadata"]) for e in events]
    assert stored == [b'{"flops": 1}'] * 5 + [b'{"flops": 2}']
    # one check at the first log, then one encoding per distinct value at build time
    assert len(calls) == 3


def test_metadata_rejected_at_build_keeps_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A structured value the encoder rejects after the first (checked) one must not lose
    the ETDump: the event is kept with empty metadata and a PluginWarning names it."""
    import delegate_lens.hookcalls as pmod
    from delegate_lens.errors import PluginError, PluginWarning

    def fake(hook: str, backend_id: str, metadata: dict[str, int]) -> bytes:
        if metadata["flops"] < 0:
            raise PluginError("plugin 'fake' failed in dl_encode_delegate_metadata: negative")
        return bytes([metadata["flops"]])

    monkeypatch.setattr(pmod, "call_hook", fake)
    gen = ETDumpGen(clock=counter_clock())
    gen.create_event_block("Execute")
    gen.set_chain_debug_handle(0, 4)
    gen.delegate_backend_id = "B"
    event_tracer_log_profiling_delegate(gen, None, 1, 0, 1, {"flops": 7})  # checked now
    event_tracer_log_profiling_delegate(gen, "bad#1", None, 2, 3, {"flops": -1})  # deferred
    event_tracer_log_profiling_delegate(gen, None, 3, 4, 5, {"flops": 9})
    with pytest.warns(PluginWarning, match=r"1 delegate event.*instruction 4, identifier 'bad#1'"):
        data = gen.get_etdump_data()
    assert gen.unencoded_metadata == 1
    events = [e["profile_event"] for e in to_json(loads(data))["run_data"][0]["events"]]
    assert [e.get("delegate_debug_metadata") for e in events] == [[7], [], [9]]
    assert [e.get("start_time", 0) for e in events] == [0, 2, 4]
