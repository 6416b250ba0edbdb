"""Every reference vector reproduces the reference Inspector's expected.json."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from delegate_lens.inspector import Inspector
from delegate_lens.inspector._linking import FRAMEWORK_EVENTS


def _inspector(vector: Path) -> Inspector:
    debug = vector / "debug.bin"
    return Inspector(
        etdump_path=vector / "etdump.etdp",
        etrecord=str(vector / "etrecord.bin"),
        debug_buffer_path=debug if debug.exists() else None,
    )


def _hierarchy(value: dict[str, Any]) -> dict[str, Any]:
    return {
        node: None if frames is None else {k: list(v) for k, v in frames.items()}
        for node, frames in value.items()
    }


def _check_vector(vector: Path) -> None:
    expected = json.loads((vector / "expected.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the vectors match their ETRecords: no warning
        inspector = _inspector(vector)
        blocks = inspector.event_blocks
    assert [b.name for b in blocks] == [b["name"] for b in expected["blocks"]]
    instruction_zero = inspector.etrecord.debug_handle_map_as_written["forward"].get(0)
    for block, exp_block in zip(blocks, expected["blocks"]):
        assert len(block.events) == len(exp_block["events"])
        assert len(block.run_indices) == max(e["n"] for e in exp_block["events"])
        for event, exp in zip(block.events, exp_block["events"]):
            where = f"{vector.name}/{block.name}/{exp['name']}"
            assert event.name == exp["name"], where
            assert event.perf_data is not None, where
            raw = event.perf_data.raw
            assert len(raw) == exp["n"], where
            np.testing.assert_allclose(raw, exp["raw"], rtol=1e-9, atol=0, err_msg=where)
            ref = np.asarray(exp["raw"])
            perf = event.perf_data
            for q, got in ((10, perf.p10), (50, perf.p50), (90, perf.p90)):
                assert math.isclose(got, float(np.percentile(ref, q)), rel_tol=1e-9), where
            assert math.isclose(perf.avg, float(np.mean(ref)), rel_tol=1e-9), where
            assert (perf.min, perf.max) == (min(raw), max(raw)), where
            assert event.op_types == exp["op_types"], where
            assert event.delegate_debug_identifier == exp["delegate_debug_identifier"], where
            assert event.is_delegated_op == exp["is_delegated_op"], where
            assert event.delegate_backend_name == exp["delegate_backend_name"], where
            assert _hierarchy(event.module_hierarchy) == exp["module_hierarchy"], where
            assert bool(event.stack_traces) == exp["has_stack_traces"], where
            assert len(event.debug_data) == exp["n_debug_data"], where
            # framework rows too: the reference gives them the handles of instruction 0
            assert event.debug_handles == exp["debug_handles"], where
            if event.name in FRAMEWORK_EVENTS:
                assert exp["debug_handles"] == _as_json(instruction_zero), where
                assert event.op_types == [] and event.module_hierarchy == {}, where


def _as_json(handles: Any) -> Any:
    return list(handles) if isinstance(handles, tuple) else handles


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
def test_vector_reproduces_expected(vectors_dir: Path, name: str) -> None:
    _check_vector(vectors_dir / name)


@pytest.mark.slow
def test_big_vector_reproduces_expected(vectors_dir: Path) -> None:
    _check_vector(vectors_dir / "gpt_portable_big")


def test_debug_data_inflated_from_buffer(vectors_dir: Path) -> None:
    vector = vectors_dir / "mlp_xnnpack"
    inspector = _inspector(vector)
    execute = inspector.event_blocks[1]
    delegate_call = next(e for e in execute.events if e.name == "DELEGATE_CALL")
    shapes = [np.shape(v) for v in delegate_call.debug_data]
    assert shapes == [(2, 16), (), (2, 8)]
    etdump = json.loads((vector / "etdump.json").read_text())
    # the first Execute run's debug events of instruction 1 point at these offsets
    offsets = [
        ev["debug_event"]["debug_entry"]["tensor"].get("offset", 0)
        for ev in etdump["run_data"][1]["events"]
        if "debug_event" in ev and ev["debug_event"].get("instruction_id") == 1
    ]
    buffer = (vector / "debug.bin").read_bytes()
    first = np.frombuffer(buffer, dtype=np.float32, count=32, offset=offsets[0]).reshape(2, 16)
    value = delegate_call.debug_data[0]  # a torch tensor, as the reference's
    assert type(value).__name__ == "Tensor" and str(value.dtype) == "torch.float32"
    np.testing.assert_array_equal(value.numpy(), first)


def test_samples_are_ticks_over_factor(vectors_dir: Path) -> None:
    """Non-delegate samples are (end - start) / 1e6 exactly; start_time holds raw ticks."""
    vector = vectors_dir / "conv_xnnpack"
    etdump = json.loads((vector / "etdump.json").read_text())
    inspector = _inspector(vector)
    execute = inspector.event_blocks[1]
    tan = next(e for e in execute.events if e.name == "native_call_tan.out")
    raw_events = [
        ev["profile_event"]
        for run in etdump["run_data"]
        for ev in run["events"]
        if ev.get("profile_event", {}).get("name") == "native_call_tan.out"
    ]
    assert tan.start_time == [p["start_time"] for p in raw_events]
    assert tan.perf_data is not None
    assert tan.perf_data.raw == [(p["end_time"] - p["start_time"]) / 1e6 for p in raw_events]


def test_perf_data_from_raw_computes_the_reference_statistics() -> None:
    from delegate_lens.inspector import PerfData

    perf = PerfData([0.4, 0.1, 0.3, 0.2])
    assert (perf.p10, perf.p50, perf.p90) == pytest.approx((0.13, 0.25, 0.37))
    assert (perf.avg, perf.min, perf.max) == pytest.approx((0.25, 0.1, 0.4))
