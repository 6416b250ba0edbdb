"""Inspector linking of runs to ETRecord methods, on small ETDumps and ETRecords built here
(with ``test_inspector_synthetic.py``'s builders): each run links to its own method, runs
that fit several methods or none stay unlinked, delegated methods are told apart by their
delegate identifiers, and trace tracks name the method each run linked to."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from test_inspector_synthetic import framework, inspect, make_etrecord, operator_run, prof

from delegate_lens.etdump import RunData
from delegate_lens.inspector import InspectorWarning

# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")

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
