"""Bad bytes: always ETDumpFormatError naming the byte offset, never a crash or a hang."""

from __future__ import annotations

import re
import struct
import tracemalloc
from collections.abc import Callable

import flatbuffers
import pytest
from conftest import VECTORS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import (
    AllocationEvent,
    Allocator,
    Bool,
    DebugEvent,
    Double,
    ETDump,
    Event,
    Float,
    Int,
    ProfileEvent,
    RunData,
    ScalarType,
    Tensor,
    TensorList,
    Value,
    ValueType,
    dumps,
    loads,
)
from delegate_lens.etdump._jsonview import from_json, to_json

MLP = (VECTORS / "mlp_xnnpack" / "etdump.etdp").read_bytes()
SMALL = dumps(
    ETDump(
        run_data=[
            RunData(
                name="Execute",
                allocators=[Allocator("a")],
                events=[
                    Event(
                        profile_event=ProfileEvent(
                            name="op", instruction_id=1, start_time=5, end_time=9
                        )
                    ),
                    Event(allocation_event=AllocationEvent(allocator_id=0, allocation_size=64)),
                    Event(
                        profile_event=ProfileEvent(
                            delegate_debug_id_str="x",
                            delegate_debug_metadata=b"\x01\x02",
                            start_time=1,
                        )
                    ),
                ],
            )
        ]
    )
)


RICH = dumps(
    ETDump(
        version=1,
        run_data=[
            RunData(
                name="Execute",
                bundled_input_index=0,
                allocators=[Allocator("a"), Allocator(None)],
                events=[
                    Event(
                        debug_event=DebugEvent(
                            chain_index=2**64 - 1,
                            instruction_id=4,
                            name="out",
                            delegate_debug_id_int=7,
                            debug_entry=Value(
                                val=ValueType.TensorList,
                                tensor_list=TensorList(
                                    [
                                        Tensor(ScalarType.FLOAT, [2, 3], [3, 1], 8),
                                        Tensor(ScalarType.INT, [], [], 0),
                                    ]
                                ),
                                int_value=Int(-3),
                                float_value=Float(0.5),
                                double_value=Double(2.5),
                                bool_value=Bool(True),
                                output=Bool(True),
                            ),
                        )
                    ),
                    Event(allocation_event=AllocationEvent(allocator_id=1, allocation_size=8)),
                    Event(
                        profile_event=ProfileEvent(
                            name="op", delegate_debug_metadata=b"meta", end_time=3
                        )
                    ),
                ],
            )
        ],
    )
)


# --- helpers to find things in a buffer ---------------------------------------------------------


def _u32(buf: bytes | bytearray, pos: int) -> int:
    return int(struct.unpack_from("<I", buf, pos)[0])


def _vtable(buf: bytes | bytearray, table: int) -> int:
    return table - int(struct.unpack_from("<i", buf, table)[0])


def _field(buf: bytes | bytearray, table: int, slot: int) -> int:
    vt = _vtable(buf, table)
    voff = int(struct.unpack_from("<H", buf, vt + 4 + 2 * slot)[0])
    assert voff, "field absent"
    return table + voff


def _deref(buf: bytes | bytearray, pos: int) -> int:
    return pos + _u32(buf, pos)


def _root(buf: bytes | bytearray) -> int:
    return _deref(buf, 4)


def _first_run(buf: bytes | bytearray) -> int:
    runs = _deref(buf, _field(buf, _root(buf), 1))
    return _deref(buf, runs + 4)


def _events_vector(buf: bytes | bytearray) -> int:
    return _deref(buf, _field(buf, _first_run(buf), 3))


def _first_profile(buf: bytes | bytearray) -> int:
    event = _deref(buf, _events_vector(buf) + 4)
    return _deref(buf, _field(buf, event, 0))


def _patched(
    pos_of: Callable[[bytearray], int], fmt: str, value: int, base: bytes = SMALL
) -> bytes:
    buf = bytearray(base)
    struct.pack_into(fmt, buf, pos_of(buf), value)
    return bytes(buf)


def _fails(data: bytes, *words: str) -> str:
    with pytest.raises(ETDumpFormatError) as info:
        loads(data)
    message = str(info.value)
    assert "byte offset" in message
    assert not re.search(r"byte offset -\d", message), message  # offsets are unsigned
    for word in words:
        assert word in message
    return message


# --- specific defects -------------------------------------------------------------------------------


def _one_run_file(
    b: flatbuffers.Builder, events: list[int], *, size_prefixed: bool = True
) -> bytes:
    """Finish builder ``b`` as an ETDump of one run holding the already built ``events``."""
    b.StartVector(4, len(events), 4)
    for event in reversed(events):
        b.PrependUOffsetTRelative(event)
    vec = b.EndVector()
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(3, vec, 0)
    run = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(run)
    runs = b.EndVector()
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(1, runs, 0)
    root = b.EndObject()
    if size_prefixed:
        b.FinishSizePrefixed(root, file_identifier=b"ED00")
    else:
        b.Finish(root, file_identifier=b"ED00")
    return bytes(b.Output())


def _named_profiles_file(b: flatbuffers.Builder, names: list[int]) -> bytes:
    """Finish ``b`` as one run of profile events, event ``i`` named by the string (or any
    position) at builder offset ``names[i]``, with start time ``i``; no size prefix."""
    profiles = []
    for i, name in enumerate(names):
        b.StartObject(8)
        b.PrependUOffsetTRelativeSlot(0, name, 0)
        b.PrependUint64Slot(6, i, 0)
        profiles.append(b.EndObject())
    events = []
    for p in profiles:
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(0, p, 0)
        events.append(b.EndObject())
    return _one_run_file(b, events, size_prefixed=False)


def test_small_buffer_is_valid() -> None:
    etdump = loads(SMALL)
    assert len(etdump.run_data[0].events) == 3


@pytest.mark.parametrize("data", [b"", b"\x00", b"ED00", b"\x00" * 7])
def test_empty_and_tiny(data: bytes) -> None:
    _fails(data, "too short")


def test_wrong_identifier() -> None:
    _fails(SMALL[:8] + b"XD00" + SMALL[12:], "identifier")
    _fails(b"garbage that is not an etdump at all", "identifier")


def test_truncated_file_with_size_prefix() -> None:
    _fails(SMALL[:-16], "size prefix")


def test_root_offset_outside() -> None:
    _fails(_patched(lambda b: 4, "<I", 0xFFFFFF00), "root")


def test_vtable_outside() -> None:
    _fails(_patched(_root, "<i", -0x7FFFFFF0), "vtable")
    message = _fails(_patched(_root, "<i", 0x7FFFFFF0), "vtable")
    # the table whose soffset points before the buffer is named, at its own position
    assert f"at byte offset {_root(SMALL)}" in message and "soffset 2147483632" in message


def test_vtable_with_bad_or_overrunning_size() -> None:
    _fails(_patched(lambda b: _vtable(b, _root(b)), "<H", 5), "vtable")
    _fails(_patched(lambda b: _vtable(b, _root(b)), "<H", 0xFFFE), "vtable")


def test_field_outside_its_table() -> None:
    _fails(_patched(lambda b: _vtable(b, _root(b)) + 6, "<H", 0x7FF0), "outside its table")


def test_offset_past_the_end() -> None:
    _fails(_patched(lambda b: _field(b, _root(b), 1), "<I", 0x7FFFFFFF), "past the end")


@pytest.mark.parametrize("length", [0xFFFFFFFF, 0x3FFFFFFF, 1000])
def test_lying_vector_length_allocates_nothing_big(length: int) -> None:
    data = _patched(_events_vector, "<I", length)
    tracemalloc.start()
    try:
        _fails(data, "RunData.events")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000


def test_lying_string_length() -> None:
    data = _patched(lambda b: _deref(b, _field(b, _first_profile(b), 0)), "<I", 0xFFFFFFF0)
    _fails(data, "ProfileEvent.name")


def test_invalid_utf8_string() -> None:
    buf = bytearray(SMALL)
    name = _deref(buf, _field(buf, _first_profile(buf), 0))
    buf[name + 4] = 0xFF
    _fails(bytes(buf), "UTF-8")


def test_event_with_two_members() -> None:
    b = flatbuffers.Builder(64)
    b.StartObject(2)
    b.PrependUint64Slot(1, 1, 0)
    alloc = b.EndObject()
    b.StartObject(8)
    b.PrependUint64Slot(6, 1, 0)
    prof = b.EndObject()
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, prof, 0)
    b.PrependUOffsetTRelativeSlot(1, alloc, 0)
    event = b.EndObject()
    _fails(_one_run_file(b, [event]), "more than one")


def test_unknown_enum_values_are_kept_as_ints() -> None:
    buf = bytearray(MLP)
    etdump = loads(bytes(buf))
    # find the Tensor of the last debug event and set scalar_type to 99
    cols = etdump.run_data[1].columns
    assert cols.debug_event(11).debug_entry is not None
    runs = _deref(buf, _field(buf, _root(buf), 1))
    run = _deref(buf, runs + 8)
    events = _deref(buf, _field(buf, run, 3))
    event = _deref(buf, events + 4 + 4 * 11)
    debug = _deref(buf, _field(buf, event, 2))
    value = _deref(buf, _field(buf, debug, 2))
    tensor = _deref(buf, _field(buf, value, 1))
    buf[_field(buf, tensor, 0)] = 99
    changed = loads(bytes(buf))
    entry = changed.run_data[1].columns.debug_event(11).debug_entry
    assert entry is not None and entry.tensor is not None
    assert entry.tensor.scalar_type == 99
    view = to_json(changed)["run_data"][1]["events"][11]["debug_event"]["debug_entry"]["tensor"]
    assert view["scalar_type"] == 99
    assert loads(dumps(changed)) == changed


# --- property tests ----------------------------------------------------------------------------------


def _load_or_format_error(data: bytes) -> None:
    try:
        etdump = loads(data)
    except ETDumpFormatError as exc:
        assert (
            "byte offset" in str(exc) or "malformed" in str(exc) or "before the start" in str(exc)
        )
        assert not re.search(r"byte offset -\d", str(exc)), str(exc)  # offsets are unsigned
        return
    # whatever loaded is a consistent ETDump: it converts and writes back
    assert from_json(to_json(etdump)) == etdump
    assert loads(dumps(etdump)) == etdump


@pytest.mark.parametrize("base", [MLP, SMALL, RICH], ids=["mlp", "small", "rich"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_bytes_load_or_raise_format_error(base: bytes, data: st.DataObject) -> None:
    _load_or_format_error(mutated(base, data))


def mutated(base: bytes, data: st.DataObject) -> bytes:
    """``base`` with 1 to 8 bytes overwritten, drawn from ``data``."""
    buf = bytearray(base)
    flips = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(buf) - 1), st.integers(0, 255)), min_size=1, max_size=8
        )
    )
    for pos, value in flips:
        buf[pos] = value
    return bytes(buf)


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(0, len(MLP) - 1), prefixed=st.booleans())
def test_truncated_bytes_load_or_raise_format_error(cut: int, prefixed: bool) -> None:
    data = MLP[:cut] if prefixed else MLP[4:][:cut]
    _load_or_format_error(data)


@pytest.mark.parametrize("base", [SMALL, RICH], ids=["small", "rich"])
def test_every_truncation_of_an_unprefixed_buffer(base: bytes) -> None:
    body = base[4:]
    for cut in range(len(body)):
        _load_or_format_error(body[:cut])


@settings(max_examples=100, deadline=None)
@given(junk=st.binary(min_size=0, max_size=300))
def test_garbage_with_identifier(junk: bytes) -> None:
    _load_or_format_error(junk[:4] + b"ED00" + junk[4:])
    _load_or_format_error(len(junk).to_bytes(4, "little") + junk[:4] + b"ED00" + junk[4:])


def test_shared_strings_and_long_strings_decode_once() -> None:
    """Writers that share one string between events (flatbuffers can) read fine and fast."""
    b = flatbuffers.Builder(1024)
    long_name = "x" * 300
    shared = b.CreateString(long_name)
    short = b.CreateString("op")
    etdump = loads(_named_profiles_file(b, [shared if i % 2 else short for i in range(2000)]))
    cols = etdump.run_data[0].columns
    assert len(cols) == 2000
    assert cols.strings == ["op", long_name] or cols.strings == [long_name, "op"]
    assert cols.string(int(cols.name[1])) == long_name
    assert int(cols.start_time[1999]) == 1999
