"""Decoding with little memory: the compiled walk's columns made on first need and its
release calls between batches, and files decoded through a map that is dropped as the walk
goes and closed after (delegate_lens.etdump._mapped)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import VECTORS, choose, compiled_extension
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_etdump_compiled import _numpy, assert_same
from test_etdump_robustness import RICH, SMALL

from delegate_lens.errors import ETDumpFormatError, InputFileError
from delegate_lens.etdump import (
    AllocationEvent,
    DebugEvent,
    ETDump,
    Event,
    ProfileEvent,
    RunData,
    _walk_py,
    dumps,
)
from delegate_lens.etdump import (
    _fastwalk as fastwalk,
)
from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._mapped import decode_file
from delegate_lens.etdump._objects import Bool, Value, ValueType
from delegate_lens.etdump._reader import _root_position, decode_columns

VECTOR_FILES = sorted(VECTORS.glob("*/etdump.etdp"))
LAZY = (
    "delegate_debug_id_int",
    "delegate_debug_id_str",
    "metadata_offset",
    "metadata_length",
    "allocator_id",
    "allocation_size",
)


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The compiled walk where it is built, whatever was chosen at import; the tests of the
    walk itself ask for it (:func:`compiled_extension`: they skip without it, but fail in CI)."""
    try:
        extension = importlib.import_module(fastwalk.EXTENSION)
    except ImportError:
        pass
    else:
        choose(fastwalk, extension, monkeypatch)
    yield


def _walked(data: bytes, batch: int) -> tuple[dict[str, object] | None, int]:
    """What the walk returns for ``data`` released every ``batch`` events, and how many
    times it called release."""
    buf = Buffer(data)
    calls = [0]

    def release() -> None:
        calls[0] += 1

    lo, hi = buf.files()
    walk = compiled_extension(fastwalk.EXTENSION).walk
    found = walk(buf.u8, np.array([_root_position(buf)], np.int64), lo, hi, release, batch)
    return found, calls[0]


_EVENTS = st.one_of(
    st.builds(
        lambda name, did, ds, meta, t: Event(
            profile_event=ProfileEvent(
                name=name,
                instruction_id=3,
                delegate_debug_id_int=did,
                delegate_debug_id_str=ds,
                delegate_debug_metadata=meta,
                start_time=t,
                end_time=t + 5,
            )
        ),
        st.sampled_from([None, "op", "conv"]),
        st.sampled_from([-1, -1, 4]),
        st.sampled_from([None, None, "x"]),
        st.sampled_from([None, None, b"", b"\x01\x02"]),
        st.integers(0, 2**40),
    ),
    st.builds(
        lambda a, size: Event(
            allocation_event=AllocationEvent(allocator_id=a, allocation_size=size)
        ),
        st.sampled_from([0, 0, 1]),
        st.sampled_from([0, 64]),
    ),
    st.builds(
        lambda chain, entry: Event(
            debug_event=DebugEvent(
                chain_index=chain,
                instruction_id=2,
                name="out",
                debug_entry=Value(val=ValueType.Bool, bool_value=Bool(True)) if entry else None,
            )
        ),
        st.sampled_from([0, 2**64 - 1]),
        st.booleans(),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_EVENTS, max_size=12), min_size=1, max_size=4), st.integers(1, 5))
def test_columns_made_on_first_need_equal_numpy(runs: list[list[Event]], batch: int) -> None:
    """Whichever event first sets a rarely used field (a delegate id, metadata, an
    allocation, a debug entry), the walk's columns equal numpy's, released or not."""
    compiled_extension(fastwalk.EXTENSION)
    data = dumps(ETDump(run_data=[RunData(name="Execute", events=events) for events in runs]))
    reference = _numpy(data)
    buf = Buffer(data)
    fast = fastwalk.columns(buf, np.array([_root_position(buf)], np.int64))
    assert fast is not None
    assert_same(fast, reference)
    found, calls = _walked(data, batch)
    assert found is not None
    n = reference.n_events
    assert calls == max(0, (n - 1) // batch)  # once per batch boundary passed
    for column in ("kind", "name", "chain_index", "start_time", "end_time"):
        assert len(found[column]) == n  # type: ignore[arg-type]
    for column in LAZY:  # made only when an event sets it
        if column in found:
            assert len(found[column]) == n  # type: ignore[arg-type]
        else:
            assert reference.columns[column].strides[0] == 0, column


def test_walk_leaves_out_unused_columns() -> None:
    """The big vector has no delegate ids, metadata, allocations or debug entries: the walk
    allocates none of those columns (each would be 4 to 8 bytes per event)."""
    found, _calls = _walked((VECTORS / "gpt_portable_big" / "etdump.etdp").read_bytes(), 1 << 16)
    assert found is not None
    assert not set((*LAZY, "debug_entry")) & set(found)


@pytest.mark.parametrize("path", VECTOR_FILES, ids=[p.parent.name for p in VECTOR_FILES])
def test_decode_file_equals_decode_columns(path: Path) -> None:
    mapped = decode_file(path)
    read = decode_columns(path.read_bytes())
    assert mapped.n_events == read.n_events
    for name, column in read.columns.items():
        if name != "metadata_offset":  # points into a smaller blob
            assert np.array_equal(mapped.columns[name], column), name
    a, b = mapped.etdump(0), read.etdump(0)
    assert [r.name for r in a.run_data] == [r.name for r in b.run_data]
    for x, y in zip(a.run_data, b.run_data, strict=True):
        assert x.columns.equals(y.columns)
        for i in np.flatnonzero(y.columns.metadata_length >= 0).tolist():
            assert x.columns.metadata(i) == y.columns.metadata(i)


@pytest.mark.parametrize("data", [SMALL, RICH], ids=["small", "rich"])
def test_decode_file_keeps_only_the_metadata(tmp_path: Path, data: bytes) -> None:
    """The file is neither held nor left mapped: blob is the metadata spans alone."""
    path = tmp_path / "f.etdp"
    path.write_bytes(data)
    decoded = decode_file(path)
    read = decode_columns(data)
    lengths = read.columns["metadata_length"]
    assert len(decoded.blob) == int(lengths[lengths > 0].sum()) < len(data)
    got, want = decoded.etdump(0).run_data[0].columns, read.etdump(0).run_data[0].columns
    assert got.equals(want)
    assert [got.metadata(i) for i in range(len(got))] == [
        want.metadata(i) for i in range(len(want))
    ]
    maps = Path("/proc/self/maps")
    if maps.exists():
        assert str(path) not in maps.read_text()


def test_decode_file_without_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    choose(fastwalk, _walk_py, monkeypatch)
    path = tmp_path / "f.etdp"
    path.write_bytes(RICH)
    assert (
        decode_file(path)
        .etdump(0)
        .run_data[0]
        .columns.equals(decode_columns(RICH).etdump(0).run_data[0].columns)
    )


def test_decode_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"missing\.etdp"):
        decode_file(tmp_path / "missing.etdp")
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(SMALL[:40])
    with pytest.raises(ETDumpFormatError, match=r"bad\.etdp"):
        decode_file(bad)
    empty = tmp_path / "empty.etdp"
    empty.write_bytes(b"")
    with pytest.raises(ETDumpFormatError, match=r"empty\.etdp"):
        decode_file(empty)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_decode_file_reads_a_pipe(tmp_path: Path) -> None:
    """What cannot be mapped is read, as before."""
    import threading

    fifo = tmp_path / "pipe.etdp"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as stream:
            stream.write(SMALL)

    writer = threading.Thread(target=feed)
    writer.start()
    decoded = decode_file(fifo)
    writer.join()
    assert (
        decoded.etdump(0)
        .run_data[0]
        .columns.equals(decode_columns(SMALL).etdump(0).run_data[0].columns)
    )


@pytest.mark.parametrize("compiled", [True, False], ids=["walk", "numpy"])
def test_decode_file_errors_deep_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """A format error found while arrays still view the map is the error raised (not a
    complaint about closing the map)."""
    if compiled:
        compiled_extension(fastwalk.EXTENSION)
    else:
        choose(fastwalk, _walk_py, monkeypatch)
    data = bytearray(RICH)
    data[len(data) // 2 :] = b"\xff" * (len(data) - len(data) // 2)
    path = tmp_path / "mangled.etdp"
    path.write_bytes(bytes(data))
    with pytest.raises(ETDumpFormatError, match=r"mangled\.etdp"):
        decode_file(path)
