"""The Inspector's memory-lean building (issue 25 item 2) computes what it computed before:
grouping a chunk of runs at a time, samples a few rows at a time, ticks made on demand,
allocation usage from the decoded columns, and no per-event run index kept."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest
from conftest import VECTORS
from hypothesis import given, settings
from hypothesis import strategies as st
from test_inspector_properties import _model, _to_etdump, etdumps, events_of

from delegate_lens.etdump import (
    AllocationEvent,
    Allocator,
    ETDump,
    Event,
    ProfileEvent,
    RunData,
    decode_columns,
    dumps,
)
from delegate_lens.inspector import Inspector
from delegate_lens.inspector import _build as build
from delegate_lens.inspector import _tables as tables
from delegate_lens.inspector._memory import memory_usage

pytestmark = pytest.mark.usefixtures("builtin_plugins_only")
SMALL_VECTORS = [p for p in sorted(VECTORS.glob("*/etdump.etdp")) if "big" not in p.parent.name]


@settings(max_examples=80, deadline=None)
@given(etdumps(), st.sampled_from([1, 2, 7]))
def test_grouping_in_small_chunks_matches_the_spec_model(runs: Any, chunk: int) -> None:
    """Every run in a chunk of its own (or a few together), samples one row at a time."""
    with mock.patch.object(build, "_CHUNK", chunk), mock.patch.object(tables, "_CHUNK", 1):
        got = events_of(Inspector(etdump_data=_to_etdump(runs)))
    assert got == _model(runs)


def _tables(path: Any) -> list[Any]:
    etrecord = path.parent / "etrecord.bin"
    inspector = Inspector(etdump_path=path, etrecord=etrecord if etrecord.exists() else None)
    out = []
    for t in inspector.tables:
        ticks = t.ticks
        out.append(
            (
                t.samples.tobytes(),
                t.stats.tobytes(),
                None if ticks is None else ticks.tobytes(),
                t.exact.tolist(),
                t.block.events.astype(np.int64).tolist(),
                t.block.group.tolist(),
                t.block.has_perf.tolist(),
                t.keys,
                t.debug_data,
            )
        )
    return out


@pytest.mark.parametrize("path", SMALL_VECTORS, ids=[p.parent.name for p in SMALL_VECTORS])
def test_chunk_sizes_do_not_change_the_tables(path: Any) -> None:
    whole = _tables(path)
    with mock.patch.object(build, "_CHUNK", 1), mock.patch.object(tables, "_CHUNK", 1):
        assert _tables(path) == whole
    with mock.patch.object(build, "_CHUNK", 3), mock.patch.object(tables, "_CHUNK", 5):
        assert _tables(path) == whole


def test_ticks_are_the_exact_rows_elapsed_ticks() -> None:
    path = VECTORS / "gpt_portable" / "etdump.etdp"
    inspector = Inspector(etdump_path=path)
    fc = inspector.file_columns
    for t in inspector.tables:
        ticks = t.ticks
        assert ticks is not None
        ev = t.block.events.T
        for row in range(t.n_rows):
            want = fc.end_time[ev[row]] - fc.start_time[ev[row]] if t.exact[row] else 0
            assert np.array_equal(ticks[row], np.broadcast_to(want, ticks[row].shape))
        assert np.array_equal(t.samples[t.exact], ticks[t.exact] / inspector.time_factor)


def test_no_byte_per_event_for_what_a_file_lacks() -> None:
    """No run index and no output flags held per event (the run index is made on use)."""
    inspector = Inspector(etdump_path=VECTORS / "gpt_portable_big" / "etdump.etdp")
    fc = inspector.file_columns
    assert fc.is_output.strides == (0,) and not fc.is_output.any()
    lengths = np.diff(np.append(fc.run_start, len(fc)))
    assert np.array_equal(fc.run, np.repeat(np.arange(len(lengths)), lengths))
    assert all(t.block.events.dtype == np.int32 for t in inspector.tables)
    assert all(t.block.group.shape == (t.n_rows,) for t in inspector.tables)


_ALLOCATION_RUN = st.lists(
    st.one_of(
        st.builds(
            lambda a, size: Event(
                allocation_event=AllocationEvent(allocator_id=a, allocation_size=size)
            ),
            st.integers(0, 3),
            st.sampled_from([1, 64, 2**63]),
        ),
        st.builds(
            lambda t: Event(profile_event=ProfileEvent(name="op", start_time=t, end_time=t + 1)),
            st.integers(0, 100),
        ),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_ALLOCATION_RUN, min_size=1, max_size=5))
def test_memory_usage_from_columns_equals_from_runs(runs: list[list[Event]]) -> None:
    etdump = ETDump(
        run_data=[
            RunData(name=f"r{i}", allocators=[Allocator("a"), Allocator(None)], events=events)
            for i, events in enumerate(runs)
        ]
    )
    data = dumps(etdump)
    want = memory_usage(decode_columns(data).etdump(0))
    assert memory_usage(decode_columns(data)) == want
    inspector = Inspector(etdump_data=data)
    assert inspector.get_memory_usage() == want
    assert inspector._etdump is None  # no run objects were made for it


def test_a_table_of_some_runs_is_those_runs_of_the_table() -> None:
    """What the report's timeline slices: only the runs it shows."""
    inspector = Inspector(etdump_path=VECTORS / "gpt_portable" / "etdump.etdp")
    for t in inspector.tables:
        picked = [0, t.n_runs - 1] if t.n_runs > 1 else [0]
        some = t.with_runs(picked)
        assert some.n_runs == len(picked) and some.n_rows == t.n_rows
        assert np.array_equal(some.samples, t.samples[:, picked], equal_nan=True)
        assert np.array_equal(some.block.events, t.block.events[picked])
        assert np.array_equal(some.block.runs, t.block.runs[picked])
        ticks, all_ticks = some.ticks, t.ticks
        assert ticks is not None and all_ticks is not None
        assert np.array_equal(ticks, all_ticks[:, picked])
        assert some.keys == t.keys and some.links == t.links


def test_rows_with_nan_as_zero() -> None:
    inspector = Inspector(etdump_path=VECTORS / "mlp_xnnpack" / "etdump.etdp")
    for t in inspector.tables:
        rows = t.zeroed_rows
        for j in range(t.n_rows):
            assert np.array_equal(rows[j], np.nan_to_num(t.samples)[j])
