"""Inspector semantics on small ETDumps and ETRecords built here: multi-method linking,
wrap-around, plugins for metadata and delegate clocks, debug-only rows, time scales."""

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


TWO_METHODS = {
    "forward": {
        "nodes": [
            ("aten_add_tensor", "aten.add.Tensor", 1),
            ("aten_mul_tensor", "aten.mul.Tensor", 2),
        ],
        "handles": {0: 1, 1: 2},
    },
    "decode": {
        "nodes": [
            ("aten_mul_tensor", "aten.mul.Tensor", 1),
            ("aten_sub_tensor", "aten.sub.Tensor", 2),
        ],
        "handles": {0: 1, 1: 2},
    },
}


# ----------------------------------------------------------------------------- multi-method


def test_each_run_links_to_its_own_method() -> None:
    runs = [
        operator_run(1000 * i, ["add", "mul"] if i % 2 == 0 else ["mul", "sub"]) for i in range(4)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inspector = inspect(runs, etrecord=make_etrecord(TWO_METHODS))
    blocks = inspector.event_blocks
    assert [b.method for b in blocks] == ["forward", "decode"]
    assert [b.run_indices for b in blocks] == [[0, 2], [1, 3]]
    forward_ops = [e.op_types for e in blocks[0].events if e.name.startswith("native_call_")]
    decode_ops = [e.op_types for e in blocks[1].events if e.name.startswith("native_call_")]
    assert forward_ops == [["aten.add.Tensor"], ["aten.mul.Tensor"]]
    assert decode_ops == [["aten.mul.Tensor"], ["aten.sub.Tensor"]]
    add = blocks[0].events[0]
    assert add.module_hierarchy == {
        "aten_add_tensor_": {
            "L__self__": ("", "M"),
            "L__self__aten_add_tensor": ("aten_add_tensor", "torch.nn.Mod"),
        }
    }
    assert add.stack_traces == {"aten_add_tensor_": 'File "model.py", line 1, in forward'}
    assert add.perf_data is not None and add.perf_data.raw == [100 / 1e6, 100 / 1e6]


def test_identical_methods_link_rows_but_not_the_method() -> None:
    same = {
        "forward": TWO_METHODS["forward"],
        "forward_copy": TWO_METHODS["forward"],
    }
    with pytest.warns(InspectorWarning, match="fits several identical ETRecord methods"):
        inspector = inspect([operator_run(0, ["add", "mul"])], etrecord=make_etrecord(same))
    block = inspector.event_blocks[0]
    assert block.method is None
    kernels = [e for e in block.events if e.name.startswith("native_call_")]
    assert [e.op_types for e in kernels] == [["aten.add.Tensor"], ["aten.mul.Tensor"]]
    assert all(e.method is None for e in block.events)


def test_methods_that_fit_but_differ_leave_the_run_unlinked() -> None:
    other = {
        "nodes": [
            ("aten_add_tensor", "aten.add.Tensor", 7),
            ("aten_mul_tensor", "aten.mul.Tensor", 8),
        ],
        "handles": {0: 7, 1: 8},  # same ops, other handles: which one ran is unknowable
    }
    methods = {"forward": TWO_METHODS["forward"], "other": other}
    with pytest.warns(InspectorWarning, match="fits several ETRecord methods"):
        inspector = inspect([operator_run(0, ["add", "mul"])], etrecord=make_etrecord(methods))
    block = inspector.event_blocks[0]
    assert block.method is None
    assert all(e.op_types == [] and e.debug_handles is None for e in block.events)


def test_run_matching_no_method_is_left_unlinked() -> None:
    with pytest.warns(InspectorWarning, match="matches no ETRecord method"):
        inspector = inspect([operator_run(0, ["div", "mul"])], etrecord=make_etrecord(TWO_METHODS))
    assert all(e.op_types == [] for e in inspector.event_blocks[0].events)


def test_single_method_mismatch_warns_and_links_the_rest() -> None:
    record = make_etrecord({"forward": TWO_METHODS["forward"]})
    with pytest.warns(InspectorWarning, match=r"instruction 1 \(native_call_sub.out"):
        inspector = inspect([operator_run(0, ["add", "sub", "mul"])], etrecord=record)
    events = {(e.name, e.instruction_id): e for e in inspector.event_blocks[0].events}
    assert events[("native_call_add.out", 0)].op_types == ["aten.add.Tensor"]
    assert events[("native_call_sub.out", 1)].op_types == []  # mismatching: unlinked
    assert events[("native_call_mul.out", 2)].op_types == []  # not in the method


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


def test_a_method_whose_ops_are_a_prefix_of_another_is_told_apart() -> None:
    methods = {
        "forward": TWO_METHODS["forward"],  # add, mul
        "prefix": {"nodes": [("aten_add_tensor", "aten.add.Tensor", 1)], "handles": {0: 1}},
    }
    runs = [operator_run(0, ["add"]), operator_run(1000, ["add", "mul"])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blocks = inspect(runs, etrecord=make_etrecord(methods)).event_blocks
    assert [b.method for b in blocks] == ["prefix", "forward"]


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


def _npu_run(t0: int, identifiers: Sequence[int]) -> RunData:
    """A run of one delegate call (instruction 0) logging ``identifiers``, then an add."""
    events = [
        prof(None, 0, t0 + 20 + 10 * i, t0 + 25 + 10 * i, delegate_debug_id_int=i)
        for i in identifiers
    ]
    events += [
        prof("DELEGATE_CALL", 0, t0 + 10, t0 + 500),
        prof("native_call_add.out", 1, t0 + 605, t0 + 700),
        prof("OPERATOR_CALL", 1, t0 + 600, t0 + 710),
        framework("Method::execute", t0, t0 + 800),
    ]
    return RunData(name="Execute", events=events)


def _delegated_method(identifiers: dict[str, list[int]]) -> dict[str, Any]:
    return {
        "nodes": [
            ("aten_convolution_default", "aten.convolution.default", 1),
            ("aten_relu_default", "aten.relu.default", 2),
            ("aten_add_tensor", "aten.add.Tensor", 3),
        ],
        "handles": {0: [1, 2], 1: 3},
        "delegates": {0: {"name": "TestNPU", "delegate_map": identifiers}},
    }


def test_delegated_methods_are_told_apart_by_their_delegate_identifiers() -> None:
    # same instructions (a delegate call, then add): only the identifiers differ
    methods = {
        "forward": _delegated_method({"0": [1], "1": [2]}),
        "decode": _delegated_method({"0": [1], "1": [1], "2": [2]}),
    }
    runs = [_npu_run(1000 * i, [0, 1] if i % 2 == 0 else [0, 1, 2]) for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blocks = inspect(runs, etrecord=make_etrecord(methods)).event_blocks
    assert [(b.method, b.run_indices) for b in blocks] == [("forward", [0, 2]), ("decode", [1, 3])]
    two = {e.name: e for e in blocks[1].events}["2"]
    assert (two.method, two.debug_handles, two.op_types) == ("decode", [2], ["aten.relu.default"])
    one = {e.name: e for e in blocks[0].events}["1"]
    assert (one.method, one.debug_handles) == ("forward", [2])


def test_delegated_methods_without_maps_stay_unlinked() -> None:
    # no Debug Handle Map (as XNNPACK): nothing tells the methods apart
    methods = {"forward": _delegated_method({}), "decode": _delegated_method({})}
    decode = methods["decode"]
    decode["nodes"] = [("aten_tan_default", "aten.tan.default", 1), *decode["nodes"][1:]]
    with pytest.warns(InspectorWarning, match="fits several ETRecord methods"):
        blocks = inspect([_npu_run(0, [0, 1])], etrecord=make_etrecord(methods)).event_blocks
    assert blocks[0].method is None
    assert all(e.op_types == [] and e.method is None for e in blocks[0].events)


def test_chrome_trace_tracks_name_the_method_each_run_linked_to() -> None:
    import io

    from delegate_lens.exporters import write_chrome_trace
    from delegate_lens.inspector import trace_input

    runs = [
        operator_run(1000 * i, ["add", "mul"] if i % 2 == 0 else ["mul", "sub"]) for i in range(3)
    ]
    inspector = inspect(runs, etrecord=make_etrecord(TWO_METHODS))
    out = io.StringIO()
    write_chrome_trace(trace_input(inspector), out)
    names = {
        e["tid"]: e["args"]["name"]
        for e in json.loads(out.getvalue())["traceEvents"]
        if e["name"] == "thread_name"
    }
    assert names == {
        0: "run 0: Execute (forward)",
        1: "run 1: Execute (decode)",
        2: "run 2: Execute (forward)",
    }
