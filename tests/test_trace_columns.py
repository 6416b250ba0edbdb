"""The chrome-trace export written from columns equals the plain per-slice model it
replaced: same slices, names, nesting, clipping and timestamps (printed as Python prints
the float), whichever way the slices are nested (numpy across runs, or run by run)."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import choose, compiled_extension
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.config import compiled_code_off
from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dumps
from delegate_lens.exporters import _compiled, _trace_lines_py
from delegate_lens.exporters import write_chrome_trace as write_trace
from delegate_lens.exporters._chrome_trace import _Microseconds
from delegate_lens.inspector import Inspector, TimeScale, block_slices, trace_input
from delegate_lens.inspector._timescale import units_per_second


def write_chrome_trace(inspector: Inspector, stream: Any) -> None:
    write_trace(trace_input(inspector), stream)


def _prof(name: str, iid: int, start: int, end: int, **kw: Any) -> Event:
    return Event(
        profile_event=ProfileEvent(
            name=name, instruction_id=iid, start_time=start, end_time=end, **kw
        )
    )


def _run(t0: int, jitter: int, name: str = "Execute") -> RunData:
    """Two instructions; the second kernel overruns its call by ``jitter`` ticks and a
    zero-length kernel sits at the end of the first call."""
    return RunData(
        name=name,
        events=[
            _prof("native_call_add.out", 0, t0 + 5, t0 + 105),
            _prof("native_call_view.out", 0, t0 + 110, t0 + 110),
            _prof("OPERATOR_CALL", 0, t0, t0 + 110),
            _prof("native_call_mul.out", 1, t0 + 125, t0 + 230 + jitter),
            _prof("OPERATOR_CALL", 1, t0 + 120, t0 + 230),
            _prof("Method::execute", 0, t0, t0 + 235, chain_index=-1),
        ],
    )


def _model(inspector: Inspector) -> list[tuple[Any, ...]]:
    """The slices as the per-slice writer made them: (tid, name, ts, dur, clipped, args)."""
    out = []
    us = 1000 if inspector.source_time_scale.value == "ns" else 1
    blocks = [block_slices(inspector, t) for t in inspector.tables]
    origin = min(int(b.start.min()) for b in blocks if b.start.size)
    for table, sl in zip(inspector.tables, blocks, strict=True):
        keys = [table.keys[j] for j in sl.rows]
        for pos, run in enumerate(table.block.runs.tolist()):
            stack: list[int] = []
            for c in sl.order[pos].tolist():
                s, e = int(sl.start[pos, c]), int(sl.end[pos, c])
                while stack and stack[-1] <= s and not (stack[-1] == s == e):
                    stack.pop()
                clip = bool(sl.clipped[pos, c])
                if stack and e > stack[-1]:
                    e, clip = stack[-1], True
                stack.append(e)
                key = keys[c]
                out.append(
                    (run, key.name, (s - origin) / us, (e - s) / us, clip, key.instruction_id)
                )
    return sorted(out)


def _written(inspector: Inspector) -> tuple[str, list[tuple[Any, ...]]]:
    text = io.StringIO()
    write_chrome_trace(inspector, text)
    got = [
        (
            e["tid"],
            e["name"],
            e["ts"],
            e["dur"],
            e["args"].get("clipped", False),
            e["args"].get("instruction_id", 0),
        )
        for e in json.loads(text.getvalue())["traceEvents"]
        if e["ph"] == "X"
    ]
    return text.getvalue(), sorted(got)


@pytest.mark.parametrize("n_runs", [3, 60])  # run by run / numpy across runs
def test_trace_equals_the_per_slice_model(n_runs: int) -> None:
    runs = [_run(1000 * i, jitter=(i % 3) * 7) for i in range(n_runs)]
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)))
    text, got = _written(inspector)
    assert got == _model(inspector)
    assert any(clip for *_, clip, _iid in got)  # the overrunning kernel is clipped
    assert '"ts": 0.005, "dur": 0.1,' in text  # exact decimals, as repr prints them


def test_both_nesting_paths_write_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    choose(_compiled, _trace_lines_py, monkeypatch)  # numpy and Python
    runs = [_run(997 * i, jitter=(i % 4) * 5) for i in range(50)]
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)))
    vector = io.StringIO()
    write_chrome_trace(inspector, vector)
    monkeypatch.setattr(_trace_lines_py, "_VECTOR_RUNS", 10**9)
    loop = io.StringIO()
    write_chrome_trace(inspector, loop)
    assert vector.getvalue() == loop.getvalue()


def test_huge_times_print_the_float() -> None:
    """Values the integer fast path cannot print exactly take the float's repr."""
    runs = [
        RunData(
            name="Execute",
            events=[
                _prof("Method::execute", 0, 0, 10, chain_index=-1),
                _prof("Method::execute", 0, 3 * 10**18, 3 * 10**18 + 1500, chain_index=-1),
            ],
        )
    ]
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)))
    text, got = _written(inspector)
    assert got == _model(inspector)
    assert f'"ts": {3 * 10**18 / 1000!r}, "dur": 1.5,' in text


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(list(TimeScale)),
    st.lists(st.integers(-(10**17), 10**17) | st.integers(-5000, 5000), min_size=1, max_size=20),
)
def test_microsecond_text_is_the_floats_repr(scale: TimeScale, ticks: list[int]) -> None:
    us = _Microseconds(1_000_000 if scale is TimeScale.CYCLES else units_per_second(scale))
    ints, fracs, bad = us.parts(np.array(ticks, dtype=np.int64))
    for i, value in enumerate(ticks):
        text = us.one(value) if i in bad else f"{ints[i]}{fracs[i].decode()}"
        assert text == us.one(value)
        if scale is TimeScale.NS:
            assert text == repr(value / 1000)


def test_a_text_file_gets_the_same_bytes_as_a_string_stream(tmp_path: Path) -> None:
    runs = [_run(1000 * i, jitter=i) for i in range(4)]
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)))
    text = io.StringIO()
    write_chrome_trace(inspector, text)
    path = tmp_path / "trace.json"
    with path.open("w", encoding="utf-8") as stream:
        stream.write("")  # pending text is flushed before the bytes go in
        write_chrome_trace(inspector, stream)
    assert path.read_text(encoding="utf-8") == text.getvalue()


@st.composite
def _tracks(draw: Any) -> tuple[np.ndarray, np.ndarray]:
    k = draw(st.integers(1, 6))
    r = draw(st.integers(1, 12))
    start = np.array(
        draw(st.lists(st.integers(0, 40), min_size=k * r, max_size=k * r)), dtype=np.int64
    ).reshape(k, r)
    length = np.array(
        draw(st.lists(st.integers(-3, 30), min_size=k * r, max_size=k * r)), dtype=np.int64
    ).reshape(k, r)
    if draw(st.booleans()):
        start.sort(axis=1)
    return start, start + length


@settings(max_examples=300, deadline=None)
@given(_tracks())
def test_numpy_nesting_equals_the_stack_walk(tracks: tuple[np.ndarray, np.ndarray]) -> None:
    start, end = tracks
    expected = _trace_lines_py._nest_loop(start, end)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_trace_lines_py, "_VECTOR_RUNS", 0)  # every block through numpy
        got = _trace_lines_py.nest_runs(start, end)
    for a, b in zip(got, expected, strict=True):
        assert np.array_equal(a, b)
    c_walk = compiled_extension(_compiled.EXTENSION).nest_runs
    for a, b in zip(c_walk(start, end), expected, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)  # the C stack walk


class _FullDisk(io.RawIOBase):
    """A file that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room = room

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if len(data) > self.room:
            raise OSError(28, "No space left on device")
        self.room -= len(data)
        return len(data)


@pytest.mark.parametrize("room", [0, 5000, 60_000])
def test_an_error_of_the_file_reaches_the_caller(room: int) -> None:
    """The batches are written by a thread while the next is made: its error is raised
    in the caller, whichever batch failed."""
    runs = [_run(1000 * i, jitter=i) for i in range(300)]
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)))
    stream = io.TextIOWrapper(io.BufferedWriter(_FullDisk(room)), encoding="utf-8")
    with pytest.raises(OSError, match="No space left"):
        write_chrome_trace(inspector, stream)


def test_the_compiled_lines_are_built() -> None:
    """scripts/install.sh builds the C lines (setup.py); without a compiler they are
    optional (this skips, but fails in CI), and chosen at import unless switched off."""
    compiled_extension(_compiled.EXTENSION)
    assert _compiled.COMPILED is not compiled_code_off()


def _both_ways(inspector: Inspector, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The trace with the C lines, into a file (the writer thread's path), and with the
    Python twin's, into a string."""
    choose(_compiled, compiled_extension(_compiled.EXTENSION), monkeypatch)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        with path.open("w", encoding="utf-8") as stream:
            write_chrome_trace(inspector, stream)
        compiled = path.read_text(encoding="utf-8")
    choose(_compiled, _trace_lines_py, monkeypatch)
    python = io.StringIO()
    write_chrome_trace(inspector, python)
    return compiled, python.getvalue()


@pytest.mark.parametrize("chunk", [1 << 14, 300])
@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
def test_compiled_lines_equal_the_python_ones_on_the_vectors(
    name: str, chunk: int, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small chunks too: the C lines reuse a block's buffers in turn (one being written,
    one free), larger or smaller than the next chunk needs."""
    from delegate_lens.exporters import _chrome_trace

    monkeypatch.setattr(_chrome_trace, "_CHUNK_EVENTS", chunk)
    folder = vectors_dir / name
    inspector = Inspector(etdump_path=folder / "etdump.etdp", etrecord=folder / "etrecord.bin")
    compiled, python = _both_ways(inspector, monkeypatch)
    assert compiled == python and '"ph": "X"' in compiled


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=70),
    st.sampled_from(list(TimeScale)),
    st.booleans(),
)
def test_compiled_lines_equal_the_python_ones(
    jitters: list[int], scale: TimeScale, metadata: bool
) -> None:
    """Clipped slices, delegate metadata (the extra args), every time scale, few runs and
    many (numpy nesting), and times the text cannot print (negative or huge: the Python
    path prints those chunks)."""
    runs = [_run(1000 * i, jitter=j) for i, j in enumerate(jitters)]
    if metadata:
        runs[0].events.append(
            Event(
                profile_event=ProfileEvent(
                    name="conv",
                    delegate_debug_id_int=3,
                    delegate_debug_metadata=b"\x07%",
                    start_time=10,
                    end_time=20,
                )
            )
        )
    if len(jitters) % 7 == 3:
        runs[-1].events.append(_prof("Method::execute", 0, 3 * 10**18, 3 * 10**18 + 5))
    target = TimeScale.CYCLES if scale is TimeScale.CYCLES else TimeScale.MS
    inspector = Inspector(
        etdump_data=dumps(ETDump(run_data=runs)),
        source_time_scale=scale,
        target_time_scale=target,
    )
    with pytest.MonkeyPatch.context() as monkeypatch:
        compiled, python = _both_ways(inspector, monkeypatch)
    assert compiled == python


@settings(max_examples=300, deadline=None)
@given(_tracks(), st.lists(st.integers(0, 3), min_size=12, max_size=12), st.booleans())
def test_track_order_is_the_four_key_sort(
    tracks: tuple[np.ndarray, np.ndarray], levels: list[int], reverse: bool
) -> None:
    """The C insertion sort (and its numpy fallback for runs far from sorted) orders as a
    stable sort on start, level, zero length first, longest first."""
    from delegate_lens.exporters import track_order

    start, end = tracks
    if reverse:  # far from sorted: more moves than the C sort takes
        start, end = start[:, ::-1].copy(), end[:, ::-1].copy()
    lv = np.array(levels[: start.shape[1]], dtype=np.int64)
    expected = np.lexsort((-end, end > start, np.broadcast_to(lv, start.shape), start), axis=-1)
    assert np.array_equal(track_order(start, end, lv), expected)
    got = compiled_extension(_compiled.EXTENSION).track_order(start, end, lv)
    assert got is None or np.array_equal(got, expected)
    assert np.array_equal(_trace_lines_py.track_order(start, end, lv), expected)


def test_a_run_far_from_sorted_takes_numpy_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C sort declines it (None), and track_order sorts it with numpy instead."""
    from delegate_lens.exporters import track_order

    choose(_compiled, compiled_extension(_compiled.EXTENSION), monkeypatch)
    start = np.arange(300, dtype=np.int64)[::-1].reshape(1, 300).copy()
    end = start + 5
    lv = np.zeros(300, dtype=np.int64)
    assert _compiled.track_order(start, end, lv) is None  # too many moves
    assert np.array_equal(track_order(start, end, lv), np.arange(300)[::-1].reshape(1, 300))
