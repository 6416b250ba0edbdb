"""Inspector semantics on small ETDumps and ETRecords built here: wrap-around, plugins for
metadata and delegate clocks, debug-only rows, time scales. Linking runs to their methods is
tested in ``test_inspector_synthetic_methods.py``; these builders serve other tests too."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from delegate_lens import hookimpl
from delegate_lens.errors import InspectorError, UsageError
from delegate_lens.etdump import (
    Bool,
    DebugEvent,
    ETDump,
    Event,
    Int,
    ProfileEvent,
    RunData,
    Value,
    ValueType,
    dumps,
)
from delegate_lens.etrecord import ETRecord
from delegate_lens.inspector import Inspector, InspectorWarning, TimeScale
from delegate_lens.pluginmanager import get_plugin_manager

# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")


# ----------------------------------------------------------------------------- builders

EDGE = "executorch.exir.dialects.edge.ops."


def graph_json(nodes: Sequence[tuple[str, str, int]]) -> bytes:
    """A serialized edge program with nodes (name, op type, debug handle)."""
    return json.dumps(
        {
            "graph_module": {
                "graph": {
                    "nodes": [
                        {
                            "name": name,
                            "target": EDGE + op,
                            "inputs": [],
                            "outputs": [],
                            "metadata": {
                                "debug_handle": str(handle),
                                "stack_trace": f'File "model.py", line {handle}, in forward',
                                "nn_module_stack": f"L__self__,,M;L__self__{name},{name},torch.nn.Mod",
                            },
                        }
                        for name, op, handle in nodes
                    ]
                }
            }
        }
    ).encode()


def make_etrecord(methods: dict[str, dict[str, Any]]) -> ETRecord:
    """``methods``: name -> {"nodes": [...], "handles": {iid: h}, "delegates": {iid: {...}}}."""
    entries: dict[str, bytes] = {"ETRECORD_V0": b""}
    handle_map: dict[str, Any] = {}
    delegate_map: dict[str, Any] = {}
    for method, spec in methods.items():
        key = f"edge_dialect_exported_program/{method}"
        entries[key] = graph_json(spec["nodes"])
        for suffix in ("_state_dict", "_constants", "_example_inputs"):
            entries[key + suffix] = b""
        handle_map[method] = {str(i): h for i, h in spec["handles"].items()}
        delegate_map[method] = {str(i): d for i, d in spec.get("delegates", {}).items()}
    entries["debug_handle_map"] = json.dumps(handle_map).encode()
    entries["delegate_map"] = json.dumps(delegate_map).encode()
    return ETRecord.from_entries(entries)


def prof(name: str | None, iid: int, start: int, end: int, **kw: Any) -> Event:
    return Event(
        profile_event=ProfileEvent(
            name=name, instruction_id=iid, start_time=start, end_time=end, **kw
        )
    )


def framework(name: str, start: int, end: int) -> Event:
    return prof(name, 0, start, end, chain_index=-1)


def operator_run(t0: int, ops: Sequence[str]) -> RunData:
    """An Execute run calling ``ops`` (one instruction each), 100 ticks per kernel."""
    events = []
    t = t0 + 10
    for iid, op in enumerate(ops):
        events.append(prof(f"native_call_{op}.out", iid, t + 5, t + 105))
        events.append(prof("OPERATOR_CALL", iid, t, t + 110))
        t += 120
    events.append(framework("Method::execute", t0, t + 10))
    return RunData(name="Execute", events=events)


def inspect(runs: Sequence[RunData], **kw: Any) -> Inspector:
    return Inspector(etdump_data=dumps(ETDump(run_data=list(runs))), **kw)


# ----------------------------------------------------------------------------- time


def test_wrap_around_of_a_32_bit_clock() -> None:
    start = 2**32 - 100
    inspector = inspect([RunData(name="Execute", events=[prof("OPERATOR_CALL", 0, start, 50)])])
    event = inspector.event_blocks[0].events[0]
    assert event.perf_data is not None
    assert event.perf_data.raw == [((2**32 - 1 - start) + 50) / 1e6]
    assert event.start_time == [start]


def test_wrap_beyond_32_bits_is_an_error() -> None:
    run = RunData(name="Execute", events=[prof("OPERATOR_CALL", 0, 2**40, 5)])
    with pytest.raises(
        InspectorError, match=r"block 0 \('Execute'.*row 'OPERATOR_CALL'.*wrap-around"
    ):
        inspect([run])


def test_time_scales() -> None:
    run = RunData(name="Execute", events=[prof("OPERATOR_CALL", 0, 1000, 4000)])
    us = inspect([run], source_time_scale="ns", target_time_scale=TimeScale.US)
    assert us.event_blocks[0].events[0].perf_data.raw == [3.0]  # type: ignore[union-attr]
    cycles = inspect([run], source_time_scale="cycles", target_time_scale="cycles")
    assert cycles.event_blocks[0].events[0].perf_data.raw == [3000.0]  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="cycles only convert to cycles"):
        inspect([run], source_time_scale="cycles")
    with pytest.raises(UsageError, match="unknown time scale"):
        inspect([run], target_time_scale="fortnights")


# ----------------------------------------------------------------------------- delegates

DELEGATED = {
    "forward": {
        "nodes": [
            ("aten_conv", "aten.convolution.default", 1),
            ("aten_relu", "aten.relu.default", 2),
        ],
        "handles": {0: [1, 2]},
        "delegates": {0: {"name": "TestNPU", "delegate_map": {"7": [1, 2], "fused": [2]}}},
    }
}


def delegate_run(t0: int, metadata: bytes = b"m") -> RunData:
    return RunData(
        name="Execute",
        events=[
            prof(None, 0, 100, 300, delegate_debug_id_int=7, delegate_debug_metadata=metadata),
            prof(None, 0, 300, 400, delegate_debug_id_str="fused", delegate_debug_metadata=b""),
            prof("DELEGATE_CALL", 0, t0 + 10, t0 + 900),
            framework("Method::execute", t0, t0 + 1000),
        ],
    )


def test_delegate_rows_link_through_the_delegate_map() -> None:
    inspector = inspect([delegate_run(0)], etrecord=make_etrecord(DELEGATED))
    events = {e.name: e for e in inspector.event_blocks[0].events}
    seven = events["7"]
    assert (seven.delegate_debug_identifier, seven.is_delegated_op) == (7, True)
    assert seven.delegate_backend_name == "TestNPU"
    assert seven.debug_handles == [1, 2]
    assert seven.op_types == ["aten.convolution.default", "aten.relu.default"]
    fused = events["fused"]
    assert (fused.debug_handles, fused.op_types) == ([2], ["aten.relu.default"])
    call = events["DELEGATE_CALL"]
    assert (call.delegate_backend_name, call.is_delegated_op, call.debug_handles) == (
        "TestNPU",
        False,
        [1, 2],
    )
    # the handles of its instruction id (0), as the reference gives them; no operator
    execute = events["Method::execute"]
    assert (execute.debug_handles, execute.op_types) == ([1, 2], [])
    # reference default for delegate clocks: start and end each scaled
    assert seven.perf_data is not None and seven.perf_data.raw == [300 / 1e6 - 100 / 1e6]
    assert seven.raw_delegate_debug_metadatas == [b"m"]
    assert seven.delegate_debug_metadatas == [b"m"]
    assert fused.raw_delegate_debug_metadatas == []  # all empty: nothing kept


class _NPUPlugin:
    def __init__(self) -> None:
        self.seen: list[tuple[str, list[bytes]]] = []

    @hookimpl
    def dl_parse_delegate_metadata(self, backend_id: str, metadatas: Sequence[bytes]) -> Any:
        if backend_id != "TestNPU":
            return None
        self.seen.append((backend_id, list(metadatas)))
        if any(m == b"boom" for m in metadatas):
            raise ValueError("cannot parse boom")
        return {"kernel": [m.decode() for m in metadatas]}

    @hookimpl
    def dl_delegate_time_scale(self, backend_id: str, event_name: str, ticks: int) -> float | None:
        if backend_id != "TestNPU":
            return None
        return ticks * 2.0  # 2 ns per cycle


@pytest.fixture
def npu_plugin() -> Iterator[_NPUPlugin]:
    plugin = _NPUPlugin()
    get_plugin_manager().register(plugin, name="test_npu")
    yield plugin


def test_plugins_parse_metadata_and_convert_clocks(npu_plugin: _NPUPlugin) -> None:
    inspector = inspect(
        [delegate_run(0, b"gemm"), delegate_run(5000, b"conv")], etrecord=make_etrecord(DELEGATED)
    )
    seven = next(e for e in inspector.event_blocks[0].events if e.name == "7")
    assert seven.delegate_debug_metadatas == {"kernel": ["gemm", "conv"]}
    assert seven.raw_delegate_debug_metadatas == [b"gemm", b"conv"]
    assert npu_plugin.seen == [("TestNPU", [b"gemm", b"conv"])]
    assert seven.perf_data is not None
    assert seven.perf_data.raw == [600.0 / 1e6 - 200.0 / 1e6] * 2  # cycles -> ns -> ms
    call = next(e for e in inspector.event_blocks[0].events if e.name == "DELEGATE_CALL")
    assert call.perf_data is not None and call.perf_data.raw == [890 / 1e6] * 2  # runtime clock


def test_failing_metadata_plugin_warns_and_keeps_raw_bytes(npu_plugin: _NPUPlugin) -> None:
    with pytest.warns(UserWarning, match="test_npu"):
        inspector = inspect([delegate_run(0, b"boom")], etrecord=make_etrecord(DELEGATED))
        seven = next(e for e in inspector.event_blocks[0].events if e.name == "7")
    assert seven.delegate_debug_metadatas == [b"boom"]


def test_user_parser_and_converter_win_over_plugins(npu_plugin: _NPUPlugin) -> None:
    calls: list[tuple[Any, int]] = []

    def converter(name: Any, ticks: int) -> float:
        calls.append((name, ticks))
        return ticks / 1000.0  # already in ms

    inspector = inspect(
        [delegate_run(0, b"x")],
        etrecord=make_etrecord(DELEGATED),
        delegate_metadata_parser=lambda raws: [r.hex() for r in raws],
        delegate_time_scale_converter=converter,
    )
    seven = next(e for e in inspector.event_blocks[0].events if e.name == "7")
    assert seven.delegate_debug_metadatas == ["78"]
    assert seven.perf_data is not None and seven.perf_data.raw == [0.3 - 0.1]
    assert ("7", 100) in calls and ("7", 300) in calls
    assert npu_plugin.seen == []


def test_user_parser_that_raises_is_named_in_a_warning() -> None:
    def broken_parser(raws: list[bytes]) -> Any:
        raise RuntimeError("bad metadata")

    inspector = inspect([delegate_run(0)], delegate_metadata_parser=broken_parser)
    with pytest.warns(InspectorWarning, match="broken_parser"):
        seven = next(e for e in inspector.event_blocks[0].events if e.name == "7")
    assert seven.delegate_debug_metadatas == [b"m"]


# ----------------------------------------------------------------------------- debug events


def debug(iid: int, value: int, *, output: bool = False, chain: int = 0) -> Event:
    entry = Value(val=ValueType.Int, int_value=Int(value), output=Bool(True) if output else None)
    return Event(debug_event=DebugEvent(chain_index=chain, instruction_id=iid, debug_entry=entry))


def test_debug_events_attach_to_rows_and_outputs_do_not() -> None:
    run = RunData(
        name="Execute",
        events=[
            debug(0, 11),
            prof("native_call_add.out", 0, 10, 20),
            prof("OPERATOR_CALL", 0, 5, 25),
            debug(1, 22),  # instruction 1 was not profiled: a row without samples
            framework("Method::execute", 0, 30),
            debug(0, 99, output=True, chain=2**64 - 1),
        ],
    )
    events = inspect([run, run]).event_blocks[0].events
    assert [e.name for e in events] == [
        "native_call_add.out",
        "OPERATOR_CALL",
        "",
        "Method::execute",
    ]
    assert events[0].debug_data == [11] and events[1].debug_data == [11]
    assert events[2].perf_data is None and events[2].debug_data == [22]
    assert events[2].instruction_id == 1
    assert events[3].debug_data == []
    assert events[0].perf_data is not None and len(events[0].perf_data.raw) == 2


def test_runs_with_different_rows_make_separate_blocks() -> None:
    a = operator_run(0, ["add"])
    b = operator_run(1000, ["add", "mul"])
    blocks = inspect([a, b, a]).event_blocks
    assert [(blk.name, blk.run_indices) for blk in blocks] == [
        ("Execute", [0, 2]),
        ("Execute", [1]),
    ]


def test_bad_arguments() -> None:
    data = dumps(ETDump(run_data=[operator_run(0, ["add"])]))
    with pytest.raises(UsageError, match="exactly one"):
        Inspector()
    with pytest.raises(UsageError, match="exactly one"):
        Inspector(etdump_path="x.etdp", etdump_data=data)
    with pytest.raises(UsageError, match="etrecord must be"):
        Inspector(etdump_data=data, etrecord=42)


def test_kernel_names_match_their_ops_loosely() -> None:
    """Kernels named differently from their graph op (et_view for view_copy,
    _to_dim_order_copy for dim_order_ops._to_dim_order_copy) are not mismatches."""
    record = make_etrecord(
        {
            "forward": {
                "nodes": [
                    ("aten_view_copy_default", "aten.view_copy.default", 1),
                    ("dim_order", "dim_order_ops._to_dim_order_copy.default", 2),
                ],
                "handles": {0: 1, 1: 2},
            }
        }
    )
    run = RunData(
        name="Execute",
        events=[
            prof("native_call_et_view.default", 0, 0, 10),
            prof("native_call__to_dim_order_copy.out", 1, 20, 30),
        ],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        events = inspect([run], etrecord=record).event_blocks[0].events
    assert [e.op_types for e in events] == [
        ["aten.view_copy.default"],
        ["dim_order_ops._to_dim_order_copy.default"],
    ]


def test_json_export_stays_strict_json_with_nan_values() -> None:
    import io
    import math

    from delegate_lens.exporters import write_json
    from delegate_lens.inspector import json_input

    inspector = inspect(
        [delegate_run(0)], delegate_metadata_parser=lambda raws: {"ratio": [math.nan] * len(raws)}
    )
    out = io.StringIO()
    write_json(json_input(inspector), out)

    def no_constants(name: str) -> Any:
        raise AssertionError(f"not strict JSON: {name}")

    doc = json.loads(out.getvalue(), parse_constant=no_constants)
    seven = next(e for e in doc["blocks"][0]["events"] if e["name"] == "7")
    assert seven["delegate_debug_metadatas"] == {"ratio": [None]}


def test_failing_time_converter_warns_and_falls_back() -> None:
    def bad_clock(name: Any, ticks: int) -> float:
        raise ZeroDivisionError("no rate")

    with pytest.warns(InspectorWarning) as caught:
        inspector = inspect([delegate_run(0)], delegate_time_scale_converter=bad_clock)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2  # one per delegate row
    assert any("bad_clock failed on row '7': ZeroDivisionError: no rate" in m for m in messages)
    seven = next(e for e in inspector.event_blocks[0].events if e.name == "7")
    assert seven.perf_data is not None and seven.perf_data.raw == [300 / 1e6 - 100 / 1e6]
