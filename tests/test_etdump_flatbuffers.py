"""Cross-checks with the `flatbuffers` library as an independent reader and writer."""

from __future__ import annotations

import flatbuffers
import pytest
from conftest import VECTOR_NAMES, VECTORS
from flatbuffers import number_types as N
from flatbuffers.table import Table

from delegate_lens.etdump import (
    AllocationEvent,
    Allocator,
    Bool,
    DebugEvent,
    ETDump,
    Event,
    ProfileEvent,
    RunData,
    ScalarType,
    Tensor,
    Value,
    ValueType,
    dumps,
    load,
    loads,
)
from delegate_lens.etdump._jsonview import to_json


def _slot(slot: int) -> int:
    return 4 + 2 * slot


def _sub(tab: Table, slot: int) -> Table | None:
    o = tab.Offset(_slot(slot))
    if not o:
        return None
    return Table(tab.Bytes, tab.Indirect(tab.Pos + o))


def _scalar(tab: Table, slot: int, flags: type, default: int) -> int:
    o = tab.Offset(_slot(slot))
    return default if not o else tab.Get(flags, tab.Pos + o)


def _string(tab: Table, slot: int) -> str | None:
    o = tab.Offset(_slot(slot))
    return None if not o else tab.String(tab.Pos + o).decode()


def _tables(tab: Table, slot: int) -> list[Table]:
    o = tab.Offset(_slot(slot))
    if not o:
        return []
    start = tab.Vector(o)
    return [Table(tab.Bytes, tab.Indirect(start + 4 * i)) for i in range(tab.VectorLen(o))]


def _root(buf: bytes) -> Table:
    assert flatbuffers.util.BufferHasIdentifier(buf, 0, b"ED00", size_prefixed=True)
    assert flatbuffers.util.GetSizePrefix(buf, 0) == len(buf) - 4
    return Table(buf, 4 + flatbuffers.encode.Get(N.UOffsetTFlags.packer_type, buf, 4))


def _read_with_flatbuffers(buf: bytes) -> list[list[tuple[object, ...]]]:
    """(kind, name, instruction_id, delegate id str, start, end, chain) per event, per run."""
    runs = []
    for run in _tables(_root(buf), 1):
        events = []
        for ev in _tables(run, 3):
            p = _sub(ev, 0)
            d = _sub(ev, 2)
            if p is not None:
                events.append(
                    (
                        "profile",
                        _string(p, 0),
                        _scalar(p, 2, N.Int32Flags, -1),
                        _string(p, 4),
                        _scalar(p, 6, N.Uint64Flags, 0),
                        _scalar(p, 7, N.Uint64Flags, 0),
                        _scalar(p, 1, N.Int32Flags, 0),
                    )
                )
            elif d is not None:
                entry = _sub(d, 2)
                tensor = None if entry is None else _sub(entry, 1)
                offset = None if tensor is None else _scalar(tensor, 3, N.Int64Flags, 0)
                events.append(
                    (
                        "debug",
                        _string(d, 5),
                        _scalar(d, 1, N.Int32Flags, -1),
                        offset,
                        0,
                        0,
                        _scalar(d, 0, N.Uint64Flags, 0),
                    )
                )
            else:
                a = _sub(ev, 1)
                assert a is not None
                events.append(
                    ("allocation", _scalar(a, 0, N.Int32Flags, 0), _scalar(a, 1, N.Uint64Flags, 0))
                )
        runs.append(events)
    return runs


def _expected(etdump: ETDump) -> list[list[tuple[object, ...]]]:
    runs = []
    for run in etdump.run_data:
        events = []
        for ev in run.events:
            if ev.profile_event is not None:
                p = ev.profile_event
                events.append(
                    (
                        "profile",
                        p.name,
                        p.instruction_id,
                        p.delegate_debug_id_str,
                        p.start_time,
                        p.end_time,
                        p.chain_index,
                    )
                )
            elif ev.debug_event is not None:
                d = ev.debug_event
                t = None if d.debug_entry is None else d.debug_entry.tensor
                events.append(
                    (
                        "debug",
                        d.name,
                        d.instruction_id,
                        None if t is None else t.offset,
                        0,
                        0,
                        d.chain_index,
                    )
                )
            else:
                a = ev.allocation_event
                assert a is not None
                events.append(("allocation", a.allocator_id, a.allocation_size))
        runs.append(events)
    return runs


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_flatbuffers_reads_our_output_like_we_do(name: str) -> None:
    etdump = load(VECTORS / name / "etdump.etdp")
    ours = dumps(etdump)
    assert _read_with_flatbuffers(ours) == _expected(etdump)
    # and the reference file itself reads the same way with both readers
    assert _read_with_flatbuffers((VECTORS / name / "etdump.etdp").read_bytes()) == _expected(
        etdump
    )


def test_alignment_of_our_output() -> None:
    etdump = load(VECTORS / "mlp_xnnpack" / "etdump.etdp")
    buf = dumps(etdump)
    assert len(buf) % 8 == 0
    for run in _tables(_root(buf), 1):
        assert run.Pos % 4 == 0
        for ev in _tables(run, 3):
            p = _sub(ev, 0)
            if p is not None and p.Offset(_slot(6)):
                assert (p.Pos + p.Offset(_slot(6))) % 8 == 0  # uint64 start_time
            d = _sub(ev, 2)
            if d is not None:
                entry = _sub(d, 2)
                tensor = None if entry is None else _sub(entry, 1)
                if tensor is not None:
                    o = tensor.Offset(_slot(1))
                    assert (tensor.Vector(o)) % 8 == 0  # int64 elements


def _build_with_flatbuffers() -> bytes:
    """An ETDump written by the flatbuffers Builder (its own layout, vtables and order)."""
    b = flatbuffers.Builder(256)
    # Tensor with sizes [2, 3], strides [3, 1], offset 64
    b.StartVector(8, 2, 8)
    b.PrependInt64(3)
    b.PrependInt64(2)
    sizes = b.EndVector()
    b.StartVector(8, 2, 8)
    b.PrependInt64(1)
    b.PrependInt64(3)
    strides = b.EndVector()
    b.StartObject(4)
    b.PrependInt8Slot(0, int(ScalarType.FLOAT), 0)
    b.PrependUOffsetTRelativeSlot(1, sizes, 0)
    b.PrependUOffsetTRelativeSlot(2, strides, 0)
    b.PrependInt64Slot(3, 64, 0)
    tensor = b.EndObject()
    b.StartObject(1)
    b.PrependBoolSlot(0, True, False)
    output = b.EndObject()
    b.StartObject(8)
    b.PrependInt8Slot(0, int(ValueType.Tensor), 0)
    b.PrependUOffsetTRelativeSlot(1, tensor, 0)
    b.PrependUOffsetTRelativeSlot(7, output, 0)
    value = b.EndObject()
    dname = b.CreateString("out")
    b.StartObject(6)
    b.PrependUint64Slot(0, 2**64 - 1, 0)
    b.PrependInt32Slot(1, 3, -1)
    b.PrependUOffsetTRelativeSlot(2, value, 0)
    b.PrependUOffsetTRelativeSlot(5, dname, 0)
    debug = b.EndObject()
    b.StartObject(2)
    b.PrependInt32Slot(0, 1, 0)
    b.PrependUint64Slot(1, 4096, 0)
    alloc = b.EndObject()
    pname = b.CreateString("native_call_add.out")
    meta = b.CreateByteVector(b"\x01\x02\x03")
    b.StartObject(8)
    b.PrependUOffsetTRelativeSlot(0, pname, 0)
    b.PrependInt32Slot(2, 7, -1)
    b.PrependUOffsetTRelativeSlot(5, meta, 0)
    b.PrependUint64Slot(6, 100, 0)
    b.PrependUint64Slot(7, 250, 0)
    prof = b.EndObject()
    events = []
    for slot, sub in ((0, prof), (1, alloc), (2, debug)):
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(slot, sub, 0)
        events.append(b.EndObject())
    b.StartVector(4, len(events), 4)
    for e in reversed(events):
        b.PrependUOffsetTRelative(e)
    ev_vec = b.EndVector()
    aname = b.CreateString("method")
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, aname, 0)
    allocator = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(allocator)
    alloc_vec = b.EndVector()
    rname = b.CreateString("Execute")
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, rname, 0)
    b.PrependInt32Slot(1, 2, -1)
    b.PrependUOffsetTRelativeSlot(2, alloc_vec, 0)
    b.PrependUOffsetTRelativeSlot(3, ev_vec, 0)
    run = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(run)
    runs = b.EndVector()
    b.StartObject(2)
    b.PrependUint32Slot(0, 5, 0)
    b.PrependUOffsetTRelativeSlot(1, runs, 0)
    root = b.EndObject()
    b.FinishSizePrefixed(root, file_identifier=b"ED00")
    return bytes(b.Output())


def test_we_read_what_flatbuffers_writes() -> None:
    data = _build_with_flatbuffers()
    etdump = loads(data)
    expected = ETDump(
        version=5,
        run_data=[
            RunData(
                name="Execute",
                bundled_input_index=2,
                allocators=[Allocator("method")],
                events=[
                    Event(
                        profile_event=ProfileEvent(
                            name="native_call_add.out",
                            instruction_id=7,
                            delegate_debug_metadata=b"\x01\x02\x03",
                            start_time=100,
                            end_time=250,
                        )
                    ),
                    Event(allocation_event=AllocationEvent(allocator_id=1, allocation_size=4096)),
                    Event(
                        debug_event=DebugEvent(
                            chain_index=2**64 - 1,
                            instruction_id=3,
                            name="out",
                            debug_entry=Value(
                                val=ValueType.Tensor,
                                tensor=Tensor(ScalarType.FLOAT, [2, 3], [3, 1], 64),
                                output=Bool(True),
                            ),
                        )
                    ),
                ],
            )
        ],
    )
    assert etdump == expected
    assert loads(dumps(etdump)) == expected
    assert to_json(loads(dumps(etdump))) == to_json(expected)
    assert _read_with_flatbuffers(dumps(etdump)) == _expected(expected)
