"""The timeline writers work a chunk of runs at a time: a block's slices are made for a
range of its runs (:class:`~delegate_lens.exporters.SliceSource`), never for the whole
block; the text is made and written by threads of the writer, in order, with its buffers
reused; statistics the timelines do not show are never computed."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dumps
from delegate_lens.exporters import Slices, SliceSource, write_chrome_trace, write_perfetto
from delegate_lens.exporters import _chrome_trace as chrome
from delegate_lens.exporters import _trace_sink as sink
from delegate_lens.inspector import Inspector, block_slices, trace_input

FRAMEWORK = ("Method::execute", "Program::load_method", "Method::init")


def _prof(name: str, iid: int, start: int, end: int, **kw: Any) -> Event:
    return Event(
        profile_event=ProfileEvent(
            name=name, instruction_id=iid, start_time=start, end_time=end, **kw
        )
    )


def _run(t0: int, jitter: int) -> RunData:
    """A call whose kernel overruns it by ``jitter`` ticks, and a delegate call whose
    delegate event starts before it."""
    return RunData(
        name="Execute",
        events=[
            _prof("native_call_add.out", 0, t0 + 5, t0 + 105 + jitter),
            _prof("OPERATOR_CALL", 0, t0, t0 + 110),
            _prof("7", 1, t0 + 118 - jitter % 5, t0 + 150, delegate_debug_id_int=7),
            _prof("DELEGATE_CALL", 1, t0 + 120, t0 + 200),
            _prof("Method::execute", 0, t0, t0 + 235, chain_index=-1),
        ],
    )


def _expected_slices(inspector: Inspector) -> dict[tuple[int, str, int], tuple[int, int, bool]]:
    """Each slice from the Inspector's events, one at a time: (run, name, instruction) ->
    (start, end, clipped), a kernel or delegate event clipped to its call."""
    factor = inspector.time_factor
    out: dict[tuple[int, str, int], tuple[int, int, bool]] = {}
    for block in inspector.event_blocks:
        for pos, run in enumerate(block.run_indices):
            spans: dict[tuple[str, int], tuple[int, int]] = {}
            delegated: dict[tuple[str, int], bool] = {}
            for event in block.events:
                if event.perf_data is None or event.start_time is None:
                    continue
                iid = event.instruction_id if event.instruction_id is not None else -1
                start = int(event.start_time[pos])
                end = start + int(np.rint(event.perf_data.raw[pos] * factor))
                spans[(event.name, iid)] = (start, end)
                delegated[(event.name, iid)] = event.delegate_debug_identifier is not None
            for (name, iid), (start, end) in spans.items():
                call = "DELEGATE_CALL" if delegated[(name, iid)] else "OPERATOR_CALL"
                outer = spans.get((call, iid))
                inner = name not in FRAMEWORK and name not in ("OPERATOR_CALL", "DELEGATE_CALL")
                s, e = start, end
                if inner and outer is not None:
                    s = min(max(s, outer[0]), outer[1])
                    e = min(max(e, s), outer[1])
                out[(run, name, iid)] = (s, e, (s, e) != (start, end))
    return out


def _made(
    inspector: Inspector, cuts: list[int]
) -> dict[tuple[int, str, int], tuple[int, int, bool]]:
    """The slices of every block, made range by range (``cuts``: where ranges end)."""
    out: dict[tuple[int, str, int], tuple[int, int, bool]] = {}
    for block, trace in zip(inspector.tables, trace_input(inspector).blocks, strict=True):
        source = trace.slices
        bounds = sorted({0, source.n_runs, *(c for c in cuts if 0 < c < source.n_runs)})
        for lo, hi in itertools.pairwise(bounds):
            sl = source.runs(lo, hi)
            assert sl.start.shape == (hi - lo, len(source.rows))
            for at in range(hi - lo):
                run = int(block.block.runs[lo + at])
                for c, j in enumerate(source.rows):
                    key = block.keys[j]
                    out[(run, key.name, key.instruction_id)] = (
                        int(sl.start[at, c]),
                        int(sl.end[at, c]),
                        bool(sl.clipped[at, c]),
                    )
                assert sorted(sl.order[at].tolist()) == list(range(len(source.rows)))
    return out


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 40),
    st.lists(st.integers(0, 40), max_size=6),
)
def test_slices_made_range_by_range_are_each_events_slice(n_runs: int, cuts: list[int]) -> None:
    runs = [_run(1000 * i, jitter=(i % 4) * 3) for i in range(n_runs)]
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)))
    got = _made(inspector, cuts)
    assert got == _expected_slices(inspector)
    assert any(clipped for *_, clipped in got.values())  # the delegate event, at least


@pytest.mark.parametrize("name", ["gpt_portable", "conv_xnnpack"])
def test_slices_of_the_vectors_range_by_range(name: str, vectors_dir: Path) -> None:
    inspector = Inspector(etdump_path=vectors_dir / name / "etdump.etdp")
    assert _made(inspector, [1, 2, 5]) == _expected_slices(inspector)
    for table, trace in zip(inspector.tables, trace_input(inspector).blocks, strict=True):
        whole = block_slices(inspector, table)
        first = int(whole.start.min()) if whole.start.size else None
        assert trace.slices.first_start == first


def test_a_source_of_made_slices_gives_them_back() -> None:
    start = np.arange(12, dtype=np.int64).reshape(4, 3)
    made = Slices(
        rows=[0, 2, 5],
        start=start,
        end=start + 1,
        clipped=np.zeros((4, 3), dtype=bool),
        order=np.tile(np.arange(3), (4, 1)),
    )
    source = SliceSource.of(made)
    assert (source.n_runs, source.first_start, source.rows) == (4, 0, [0, 2, 5])
    assert np.array_equal(source.runs(1, 99).start, start[1:])
    assert [lo for lo, _sl in source.ranges(6)] == [0, 2]
    assert source.spans([3, 1], 3) == {1: (3, 6), 3: (9, 12)}


def _trace_runs(n: int) -> Inspector:
    runs = [_run(1000 * i, jitter=i % 4) for i in range(n)]
    return Inspector(etdump_data=dumps(ETDump(run_data=runs)))


def test_the_writer_makes_a_chunk_of_runs_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    inspector = _trace_runs(400)
    data = trace_input(inspector)
    asked: list[int] = []
    blocks = []
    for block in data.blocks:
        source = block.slices

        def make(lo: int, hi: int, source: SliceSource = source) -> Slices:
            asked.append(hi - lo)
            return source.make(lo, hi)

        blocks.append(
            type(block)(
                block.index,
                block.method,
                block.runs,
                block.rows,
                SliceSource(source.rows, source.n_runs, source.first_start, make),
                block.metadata,
            )
        )
    monkeypatch.setattr(chrome, "_CHUNK_EVENTS", 50)  # 10 runs of 5 slices
    whole = io.StringIO()
    write_chrome_trace(data, whole)
    streamed = io.StringIO()
    write_chrome_trace(type(data)(**{**_fields(data), "blocks": blocks}), streamed)
    assert streamed.getvalue() == whole.getvalue()
    assert sum(asked) == 400 and max(asked) == 10  # every run once, ten at a time


def _fields(data: Any) -> dict[str, Any]:
    import attrs

    return {f.name: getattr(data, f.name) for f in attrs.fields(type(data))}


def test_a_timeline_computes_no_statistics(vectors_dir: Path, tmp_path: Path) -> None:
    inspector = Inspector(etdump_path=vectors_dir / "gpt_portable" / "etdump.etdp")
    with (tmp_path / "trace.json").open("w", encoding="utf-8") as stream:
        write_chrome_trace(trace_input(inspector), stream)
    write_perfetto(trace_input(inspector), io.BytesIO())
    assert all(t._stats is None for t in inspector.tables)
    table = inspector.tables[1]
    some = table.with_runs([0])
    assert np.array_equal(some.stats, table.stats, equal_nan=True)  # the whole block's
    p50 = float(np.percentile(table.samples[table.block.has_perf][0], 50))
    assert float(table.stats[1, np.flatnonzero(table.block.has_perf)[0]]) == p50


def test_pieces_written_in_part_are_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    """``writev`` may write less than asked: the rest follows, byte for byte."""
    real = os.writev
    calls = []

    def some(fd: int, views: list[memoryview]) -> int:
        calls.append(len(views))
        taken, room = [], 7
        for v in views:
            taken.append(v[:room])
            room -= len(taken[-1])
            if not room:
                break
        return real(fd, taken)

    monkeypatch.setattr(sink.os, "writev", some)
    monkeypatch.setattr(sink, "_IOV_MAX", 3)
    pieces = [b"abc", b"", memoryview(b"defghijklmnop"), b"q" * 20, b"rs"]
    read, write = os.pipe()
    try:
        sink._write_all(write, pieces)
        os.close(write)
        with os.fdopen(read, "rb") as got:
            assert got.read() == b"".join(bytes(p) for p in pieces)
    finally:
        for fd in (read, write):
            with contextlib.suppress(OSError):
                os.close(fd)
    assert max(calls) <= 3 and len(calls) >= 38 // 7


def test_a_closed_pipe_is_an_error_of_the_caller() -> None:
    """The writer's thread hits the error; the caller raises it (no hang)."""
    inspector = _trace_runs(300)
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w", encoding="utf-8") as stream:
        errors: list[BaseException] = []

        def go() -> None:
            try:
                write_chrome_trace(trace_input(inspector), stream)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=go)
        thread.start()
        thread.join(60)
        assert not thread.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], BrokenPipeError)


def test_a_file_gets_what_a_string_stream_gets(tmp_path: Path) -> None:
    """Through the threads and ``writev`` (a file), or inline (a string): the same text."""
    inspector = _trace_runs(700)
    text = io.StringIO()
    write_chrome_trace(trace_input(inspector), text)
    path = tmp_path / "trace.json"
    with path.open("w", encoding="utf-8") as stream:
        write_chrome_trace(trace_input(inspector), stream)
    assert path.read_text(encoding="utf-8") == text.getvalue()


def test_a_buffer_taken_and_not_used_goes_back_to_the_pool() -> None:
    """A batch whose C lines gave up (a value they cannot print) still frees the buffer
    it took; one taken and used is given back once; one taken but too small (the lines
    made a new one) is let go, the new one kept: the pool does not grow."""
    pool: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
    old = bytearray(64)
    pool.put(old)
    buffers = sink.Buffers(pool)
    assert buffers.take() is old  # taken, then not used (the C lines gave up)
    buffers.give()
    assert pool.get_nowait() is old and pool.empty()

    pool.put(old)
    buffers = sink.Buffers(pool)
    taken = buffers.take()
    assert taken is old
    assert bytes(buffers.views(taken, [3])[0]) == bytes(3)
    buffers.give()
    assert pool.get_nowait() is old and pool.empty()  # held once, not twice

    pool.put(old)
    buffers = sink.Buffers(pool)
    assert buffers.take() is old
    made = bytearray(b"abcdef")  # old was too small: the lines made this one
    assert [bytes(v) for v in buffers.views(made, [2, 6])] == [b"ab", b"cdef"]
    buffers.give()
    assert pool.get_nowait() is made and pool.empty()
