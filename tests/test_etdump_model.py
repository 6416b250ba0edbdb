"""Object model, columns API and round trips of arbitrary ETDump objects (hypothesis)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
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
    EventColumns,
    EventColumnsBuilder,
    EventKind,
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
from delegate_lens.etdump._jsonview import from_json, to_json, write_json

# The format's defaults (-1 for ids, 0 elsewhere) are drawn often: the writer omits a field
# equal to its default and the reader restores it, a path plain random ints rarely reach.
I32 = st.sampled_from([-1, 0, 1]) | st.integers(-(2**31), 2**31 - 1)
I64 = st.sampled_from([-1, 0, 1]) | st.integers(-(2**63), 2**63 - 1)
U64 = st.sampled_from([0, 1]) | st.integers(0, 2**64 - 1)
TEXT = st.text(max_size=40)
OPT_TEXT = st.none() | st.sampled_from(["OPERATOR_CALL", "native_call_add.out", "", "é✓"]) | TEXT


def test_defaults_are_the_formats() -> None:
    assert ProfileEvent() == ProfileEvent(None, 0, -1, -1, None, None, 0, 0)
    assert DebugEvent().instruction_id == -1 and DebugEvent().delegate_debug_id_int == -1
    assert RunData().bundled_input_index == -1
    assert ETDump().version == 0
    assert Tensor().offset == 0 and Tensor().scalar_type is ScalarType.BYTE
    assert Value().val is ValueType.Null


def test_representation_differs_from_the_references_on_purpose() -> None:
    """docs/migrating.md (etdump): a run that logged no allocator reads back with ``[]``
    (the reference's ``None``), and ``Value.val`` is a ``ValueType``, an IntEnum whose
    member names are the reference's strings (the wire's int8, not ``"Tensor"``)."""
    run = RunData("Execute", events=[Event(debug_event=DebugEvent(debug_entry=Value(val=5)))])
    back = loads(dumps(ETDump(run_data=[run]))).run_data[0]
    assert back.allocators == []
    val = back.events[0].debug_event.debug_entry.val
    assert val is ValueType.Tensor and val.name == "Tensor" and val != "Tensor"


def test_validators_reject_values_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match="instruction_id"):
        ProfileEvent(instruction_id=2**31)
    with pytest.raises(ValueError, match="start_time"):
        ProfileEvent(start_time=-1)
    with pytest.raises(TypeError, match="name"):
        ProfileEvent(name=b"bytes")  # type: ignore[arg-type]
    assert Tensor(scalar_type=99).scalar_type == 99  # unknown enum values are kept as ints
    assert Value(val=5).val is ValueType.Tensor


def test_builder_columns_and_lazy_events() -> None:
    b = EventColumnsBuilder()
    b.add_profile_event(
        "a", instruction_id=3, delegate_debug_metadata=b"md", start_time=1, end_time=2
    )
    b.add_allocation_event(2, 4096)
    b.add_debug_event(chain_index=2**64 - 1, instruction_id=0, name="a")
    b.add_event_none()
    cols = b.build()
    assert len(cols) == 4
    assert cols.kind.tolist() == [
        EventKind.PROFILE,
        EventKind.ALLOCATION,
        EventKind.DEBUG,
        EventKind.NONE,
    ]
    assert cols.name.tolist() == [0, -1, 0, -1]
    assert cols.strings == ["a"]
    assert cols.chain_index.tolist() == [0, 0, -1, 0]
    assert cols.metadata(0) == b"md" and cols.metadata(1) is None
    assert cols.allocation_size.tolist() == [0, 4096, 0, 0]
    assert cols.debug_event(2).chain_index == 2**64 - 1
    run = RunData.from_columns("Execute", -1, [Allocator("m")], cols)
    assert run.events[1] == Event(allocation_event=AllocationEvent(2, 4096))
    assert run.events[-1] == Event()
    assert len(run.events[1:3]) == 2
    with pytest.raises(IndexError):
        run.events[4]
    back = loads(dumps(ETDump(run_data=[run])))
    assert back.run_data[0] == run
    assert back.run_data[0].events == list(run.events)


def test_build_from_arrays_fills_defaults() -> None:
    cols = EventColumns.build(
        np.full(3, EventKind.PROFILE),
        name=[0, 1, 0],
        strings=["x", "y"],
        start_time=np.arange(3, dtype=np.uint64),
    )
    assert cols.instruction_id.tolist() == [-1, -1, -1]
    assert cols.metadata_length.tolist() == [-1, -1, -1]
    assert cols.decode(cols.name).tolist() == ["x", "y", "x"]
    with pytest.raises(ValueError, match="name"):
        EventColumns.build(np.full(2, EventKind.PROFILE), name=[0, 5], strings=["x"])
    with pytest.raises(ValueError, match="shape"):
        EventColumns.build(np.full(2, EventKind.PROFILE), start_time=[1, 2, 3])


def test_event_list_runs_and_column_runs_compare_equal() -> None:
    events = [
        Event(profile_event=ProfileEvent(name="op", start_time=5)),
        Event(debug_event=DebugEvent(debug_entry=Value(val=ValueType.Int, int_value=Int(7)))),
    ]
    listed = RunData("r", events=events)
    columnar = RunData.from_columns("r", -1, [], EventColumns.from_events(events))
    assert listed == columnar
    assert columnar.events == events
    assert listed.columns.equals(columnar.columns)
    assert RunData("r", events=events[:1]) != columnar


def test_writer_rejects_columns_that_do_not_fit() -> None:
    cols = EventColumns.build(np.full(1, EventKind.PROFILE), chain_index=[2**40])
    with pytest.raises(ETDumpFormatError, match="chain_index"):
        dumps(ETDump(run_data=[RunData.from_columns(None, -1, [], cols)]))


def test_strings_that_are_not_unicode_text_are_a_format_error() -> None:
    for etdump in (
        ETDump(run_data=[RunData(name="a\udc80b")]),
        ETDump(run_data=[RunData(events=[Event(profile_event=ProfileEvent(name="\ud800"))])]),
    ):
        with pytest.raises(ETDumpFormatError, match=r"cannot write the string .*surrogates"):
            dumps(etdump)


def test_import_is_torch_free() -> None:
    code = (
        "import sys, delegate_lens.etdump, delegate_lens.etdump._jsonview, delegate_lens.etdump._summary;"
        "import delegate_lens.cli._etdump_cmd;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- hypothesis: arbitrary objects survive dumps -> loads -----------------------------------------

tensors = st.builds(
    Tensor,
    scalar_type=st.sampled_from(list(ScalarType)) | st.integers(-128, 127),
    sizes=st.lists(I64, max_size=4),
    strides=st.lists(I64, max_size=4),
    offset=I64,
)
values = st.builds(
    Value,
    val=st.sampled_from(list(ValueType)) | st.integers(-128, 127),
    tensor=st.none() | tensors,
    tensor_list=st.none() | st.builds(TensorList, st.lists(tensors, max_size=3)),
    int_value=st.none() | st.builds(Int, I64),
    float_value=st.none() | st.builds(Float, st.floats(width=32)),
    double_value=st.none() | st.builds(Double, st.floats()),
    bool_value=st.none() | st.builds(Bool, st.booleans()),
    output=st.none() | st.builds(Bool, st.booleans()),
)
profile_events = st.builds(
    ProfileEvent,
    name=OPT_TEXT,
    chain_index=I32,
    instruction_id=I32,
    delegate_debug_id_int=I32,
    delegate_debug_id_str=OPT_TEXT,
    delegate_debug_metadata=st.none() | st.binary(max_size=20),
    start_time=U64,
    end_time=U64,
)
debug_events = st.builds(
    DebugEvent,
    chain_index=U64,
    instruction_id=I32,
    debug_entry=st.none() | values,
    delegate_debug_id_int=I32,
    delegate_debug_id_str=OPT_TEXT,
    name=OPT_TEXT,
)
events = st.one_of(
    st.builds(Event, profile_event=profile_events),
    st.builds(Event, allocation_event=st.builds(AllocationEvent, I32, U64)),
    st.builds(Event, debug_event=debug_events),
    st.just(Event()),
)
runs = st.builds(
    RunData,
    name=OPT_TEXT,
    bundled_input_index=I32,
    allocators=st.lists(st.builds(Allocator, OPT_TEXT), max_size=3),
    events=st.lists(events, max_size=12),
)
etdumps = st.builds(ETDump, version=st.integers(0, 2**32 - 1), run_data=st.lists(runs, max_size=4))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(etdumps)
def test_arbitrary_etdumps_survive_dumps_loads(etdump: ETDump) -> None:
    data = dumps(etdump)
    assert data[8:12] == b"ED00"
    again = loads(data)
    assert again == etdump
    assert loads(dumps(again)) == etdump
    assert loads(data[4:]) == etdump  # without the size prefix


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(etdumps)
def test_arbitrary_etdumps_survive_the_json_view(etdump: ETDump) -> None:
    view = to_json(etdump)
    assert from_json(view) == etdump
    for compact in (False, True):
        stream = io.StringIO()
        write_json(etdump, stream, compact=compact)
        assert json.loads(stream.getvalue()) == view


def test_decoded_debug_entries_are_a_lazy_mapping() -> None:
    from conftest import VECTORS

    from delegate_lens.etdump import load
    from delegate_lens.etdump._values import DebugEntries

    run = load(VECTORS / "mlp_xnnpack" / "etdump.etdp").run_data[1]
    entries = run.columns.debug_entries
    assert isinstance(entries, DebugEntries)
    assert list(entries) == [0, 6, 7, 8, 11]
    assert len(entries) == 5 and 11 in entries and 1 not in entries
    with pytest.raises(KeyError):
        entries[1]
    assert entries.get(1) is None
    assert entries.output_flags().tolist() == [False, False, False, False, True]
    values = list(entries.values())
    assert values[-1].tensor is not None and values[-1].tensor.sizes == [2, 8]
    assert dict(entries.items()) == {i: run.columns.debug_event(i).debug_entry for i in entries}


def test_tensor_lists_and_scalars_survive_a_round_trip() -> None:
    entry = Value(
        val=ValueType.TensorList,
        tensor_list=TensorList(
            [Tensor(ScalarType.INT, [3], [1], 8), Tensor(ScalarType.BOOL, [], [], 0)]
        ),
        int_value=Int(-5),
        float_value=Float(1.5),
        double_value=Double(-2.25),
        bool_value=Bool(False),
    )
    run = RunData(
        "Execute", events=[Event(debug_event=DebugEvent(debug_entry=entry, name="x"))] * 3
    )
    back = loads(dumps(ETDump(run_data=[run, run])))
    assert back.run_data[1].events[2].debug_event == DebugEvent(debug_entry=entry, name="x")
    assert back == ETDump(run_data=[run, run])
