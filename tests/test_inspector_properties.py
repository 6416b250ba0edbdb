"""Property tests: the columnar grouping equals a plain-Python model of the spec, exact
decimal JSON numbers, and the zero-copy column join."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from conftest import VECTORS
from hypothesis import given, settings
from hypothesis import strategies as st

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
from delegate_lens.etdump._columns import file_wide_columns
from delegate_lens.exporters import format_decimals
from delegate_lens.inspector import Inspector

# one event: ("p", name, chain, iid, did_int, did_str) or ("d", chain, iid, value, output)
profile_shape = st.tuples(
    st.just("p"),
    st.sampled_from(["OPERATOR_CALL", "native_call_add.out", "Method::execute", None, ""]),
    st.sampled_from([-1, 0, 1]),
    st.sampled_from([-1, 0, 1, 2]),
    st.sampled_from([-1, 3]),
    st.sampled_from([None, "", "conv"]),
)
debug_shape = st.tuples(
    st.just("d"),
    st.sampled_from([0, 1, 2**64 - 1]),
    st.sampled_from([-1, 0, 1, 2]),
    st.integers(-5, 5),
    st.booleans(),
)
template = st.lists(st.one_of(profile_shape, profile_shape, debug_shape), max_size=10)


@st.composite
def etdumps(draw: Any) -> list[tuple[str, int, list[tuple[Any, ...]], list[tuple[int, int]]]]:
    templates = draw(st.lists(template, min_size=1, max_size=3))
    runs = []
    for _ in range(draw(st.integers(1, 6))):
        shape = templates[draw(st.integers(0, len(templates) - 1))]
        name = draw(st.sampled_from(["Execute", "Execute", "Default"]))
        bundled = draw(st.sampled_from([-1, -1, 0]))
        times = [
            (s, s + draw(st.integers(0, 5000)))
            for s in draw(st.lists(st.integers(0, 10**9), min_size=len(shape), max_size=len(shape)))
        ]
        runs.append((name, bundled, shape, times))
    return runs


def _to_etdump(runs: list[tuple[str, int, list[tuple[Any, ...]], list[tuple[int, int]]]]) -> bytes:
    data = []
    for name, bundled, shape, times in runs:
        events = []
        for ev, (start, end) in zip(shape, times):
            if ev[0] == "p":
                _, ename, chain, iid, did_int, did_str = ev
                events.append(
                    Event(
                        profile_event=ProfileEvent(
                            name=ename,
                            chain_index=chain,
                            instruction_id=iid,
                            delegate_debug_id_int=did_int,
                            delegate_debug_id_str=did_str,
                            start_time=start,
                            end_time=end,
                        )
                    )
                )
            else:
                _, chain, iid, value, output = ev
                entry = Value(
                    val=ValueType.Int, int_value=Int(value), output=Bool(True) if output else None
                )
                events.append(
                    Event(
                        debug_event=DebugEvent(
                            chain_index=chain, instruction_id=iid, debug_entry=entry
                        )
                    )
                )
        data.append(RunData(name=name, bundled_input_index=bundled, events=events))
    return dumps(ETDump(run_data=data))


def _model(runs: list[tuple[str, int, list[tuple[Any, ...]], list[tuple[int, int]]]]) -> list[Any]:
    """The spec, literally: group by instruction signature in first-appearance order, a row
    per profile event (or one per debug-only group), merge runs by signature."""
    blocks: dict[Any, list[Any]] = {}
    for name, bundled, shape, times in runs:
        groups: dict[Any, dict[str, list[Any]]] = {}
        for ev, (start, end) in zip(shape, times):
            if ev[0] == "p":
                _, ename, chain, iid, did_int, did_str = ev
                key = (chain, iid, did_int, did_str or None)
                groups.setdefault(key, {"p": [], "d": []})["p"].append((ename or None, start, end))
            else:
                _, chain, iid, value, output = ev
                chain = -1 if chain == 2**64 - 1 else chain
                key = (chain, iid, -1, None)
                group = groups.setdefault(key, {"p": [], "d": []})
                if not output:
                    group["d"].append(value)
        rows = []
        for (_chain, iid, did_int, did_str), group in groups.items():
            identifier = did_int if did_int != -1 else did_str
            ids = (did_int, did_str)  # both belong to the signature
            for ename, start, end in group["p"]:
                rows.append((True, ename, iid, identifier, (start, end), group["d"], ids))
            if not group["p"] and group["d"]:
                rows.append((False, None, iid, identifier, None, group["d"], ids))
        if not rows:
            continue
        signature = (name, bundled, tuple((*r[:3], r[6]) for r in rows))
        blocks.setdefault(signature, []).append(rows)
    out = []
    for (name, bundled, _sig), instances in blocks.items():
        events = []
        for j, row in enumerate(instances[0]):
            has_perf, ename, iid, identifier, _times, debug, _ids = row
            shown = str(identifier) if identifier is not None else (ename or "")
            samples = None
            if has_perf:
                samples = []
                for rows in instances:
                    start, end = rows[j][4]
                    if identifier is None:
                        samples.append((end - start) / 1e6)
                    else:
                        samples.append(end / 1e6 - start / 1e6)
            events.append((shown, iid if iid >= 0 else None, identifier, samples, debug))
        out.append((name, bundled, len(instances), events))
    return out


def events_of(inspector: Inspector) -> list[Any]:
    """The Inspector's event blocks in the form of :func:`_model`."""
    return [
        (
            block.name,
            block.bundled_input_index,
            len(block.run_indices),
            [
                (
                    e.name,
                    e.instruction_id,
                    e.delegate_debug_identifier,
                    e.perf_data.raw if e.perf_data else None,
                    e.debug_data,
                )
                for e in block.events
            ],
        )
        for block in inspector.event_blocks
    ]


@settings(max_examples=150, deadline=None)
@given(etdumps())
def test_grouping_matches_the_spec_model(runs: Any) -> None:
    assert events_of(Inspector(etdump_data=_to_etdump(runs))) == _model(runs)


@given(
    st.lists(st.integers(0, 2**53 - 1), min_size=1, max_size=30),
    st.integers(0, 9),
)
def test_decimal_formatting_is_exact(ticks: list[int], places: int) -> None:
    arr = np.array([ticks], dtype=np.uint64)
    (text,) = format_decimals(arr, places)
    assert json.loads(f"[{text}]") == [float(t) / 10**places for t in ticks]


def test_file_wide_columns_only_for_all_of_one_decoded_file_in_order() -> None:
    from delegate_lens.etdump import load

    runs = [r.columns for r in load(VECTORS / "mlp_xnnpack" / "etdump.etdp").run_data]
    other = [r.columns for r in load(VECTORS / "conv_xnnpack" / "etdump.etdp").run_data]
    assert file_wide_columns(runs) is not None
    assert file_wide_columns([runs[1], runs[0], *runs[2:]]) is None  # out of order
    assert file_wide_columns(runs[:-1]) is None  # not the whole file
    assert file_wide_columns([*runs[:-1], other[-1]]) is None  # another file


def _assert_nested(slices: list[dict[str, Any]]) -> None:
    """Slices of one track, sorted by start (longest first), form a tree."""
    eps = 1e-9
    ordered = sorted(slices, key=lambda s: (s["ts"], -s["dur"]))
    stack: list[dict[str, Any]] = []
    for s in ordered:
        while stack:
            end = stack[-1]["ts"] + stack[-1]["dur"]
            # closed before s starts (a zero-length s exactly at the end stays inside)
            if end < s["ts"] - eps or (end <= s["ts"] + eps and s["dur"] > 0):
                stack.pop()
            else:
                break
        if stack:
            top = stack[-1]
            assert top["ts"] - eps <= s["ts"] and s["ts"] + s["dur"] <= top["ts"] + top["dur"] + eps
        stack.append(s)


@settings(max_examples=100, deadline=None)
@given(etdumps())
def test_exports_are_valid_for_any_etdump(runs: Any) -> None:
    import io

    from delegate_lens.exporters import write_chrome_trace, write_json
    from delegate_lens.inspector import json_input, trace_input

    inspector = Inspector(etdump_data=_to_etdump(runs))
    out = io.StringIO()
    write_chrome_trace(trace_input(inspector), out)
    trace = json.loads(out.getvalue())
    tracks: dict[int, list[dict[str, Any]]] = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            assert event["dur"] >= 0
            tracks.setdefault(event["tid"], []).append(event)
    for track in tracks.values():
        _assert_nested(track)
    profiled = sum(
        len(block.run_indices)
        for block in inspector.event_blocks
        for e in block.events
        if e.perf_data
    )
    assert sum(len(t) for t in tracks.values()) == profiled

    out = io.StringIO()
    write_json(json_input(inspector), out)
    doc = json.loads(out.getvalue())
    for block, jblock in zip(inspector.event_blocks, doc["blocks"], strict=True):
        for event, jevent in zip(block.events, jblock["events"], strict=True):
            assert jevent["name"] == event.name
            raw = jevent["perf_data"]["raw"] if jevent["perf_data"] else None
            assert raw == (event.perf_data.raw if event.perf_data else None)


@settings(max_examples=60, deadline=None)
@given(etdumps())
def test_grouping_by_sorting_matches_the_model_too(runs: Any) -> None:
    """The fallback for huge key spaces (np.unique instead of a lookup table)."""
    from unittest import mock

    from delegate_lens.inspector import _build as build

    with mock.patch.object(build, "_TABLE_LIMIT", 0):
        got = events_of(Inspector(etdump_data=_to_etdump(runs)))
    assert got == _model(runs)
