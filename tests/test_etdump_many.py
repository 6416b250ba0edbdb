"""decode_many: several ETDumps decoded as one buffer give exactly what each gives alone,
and no offset of one file can reach another (the batch fails where any file alone fails)."""

from __future__ import annotations

import struct

import pytest
from conftest import VECTORS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_etdump_robustness import MLP, RICH, SMALL, _field, _first_run, _root

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import dumps, loads
from delegate_lens.etdump._reader import (
    decode_columns,
    decode_joined,
    decode_many,
    joined_layout,
)
from delegate_lens.inspector._build import concat_runs, decoded_file_columns
from delegate_lens.testing.strategies import etdump_runs

BASES = [SMALL, RICH, MLP]


def _alone_ok(data: bytes) -> bool:
    try:
        loads(data)
    except ETDumpFormatError:
        return False
    return True


def _joined_start(datas: list[bytes], k: int) -> int:
    """Where file ``k`` starts in decode_many's joined buffer (16-byte aligned, >= 16 apart)."""
    at = 0
    for data in datas[:k]:
        at += len(data) + (-(len(data) + 16) % 16 + 16)
    return at


def test_vectors_together_equal_each_alone() -> None:
    datas = [
        (VECTORS / name / "etdump.etdp").read_bytes()
        for name in sorted(p.name for p in VECTORS.iterdir() if (p / "etdump.etdp").exists())
    ] + [SMALL, RICH]
    decoded = decode_many(datas)
    assert decoded.n_files == len(datas)
    for k, data in enumerate(datas):
        assert decoded.etdump(k) == loads(data)


def test_file_columns_equal_concat_runs() -> None:
    for data in (SMALL, RICH, MLP):
        wide = decoded_file_columns(decode_columns(data))
        cat = concat_runs(loads(data))
        for attr in (
            "run",
            "run_start",
            "kind",
            "chain_index",
            "start_time",
            "end_time",
            "instruction_id",
            "did_int",
            "metadata_length",
            "is_output",
        ):
            assert getattr(wide, attr).tolist() == getattr(cat, attr).tolist(), attr
        for attr in ("name", "did_str"):
            assert [wide.string(int(c)) for c in getattr(wide, attr)] == [
                cat.string(int(c)) for c in getattr(cat, attr)
            ]
        assert wide.run_names == cat.run_names
        assert [wide.metadata(i) for i in range(len(wide))] == [
            cat.metadata(i) for i in range(len(cat))
        ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(etdumps=st.lists(etdump_runs(), min_size=1, max_size=4), prefixed=st.booleans())
def test_generated_files_together_equal_each_alone(etdumps: list, prefixed: bool) -> None:
    datas = [dumps(e) if prefixed else dumps(e)[4:] for e in etdumps]
    decoded = decode_many(datas)
    for k, etdump in enumerate(etdumps):
        assert decoded.etdump(k) == etdump


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_file_among_others_fails_the_batch_iff_it_fails_alone(
    data: st.DataObject,
) -> None:
    datas = [
        bytearray(b) for b in data.draw(st.lists(st.sampled_from(BASES), min_size=2, max_size=4))
    ]
    k = data.draw(st.integers(0, len(datas) - 1))
    flips = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(datas[k]) - 1), st.integers(0, 255)),
            min_size=1,
            max_size=8,
        )
    )
    for pos, value in flips:
        datas[k][pos] = value
    files = [bytes(d) for d in datas]
    if all(_alone_ok(f) for f in files):
        decoded = decode_many(files)
        for i, f in enumerate(files):
            assert decoded.etdump(i) == loads(f)
    else:
        with pytest.raises(ETDumpFormatError):
            decode_many(files)


def test_offset_into_the_next_file_is_refused() -> None:
    """File A's run entry aimed at file B's first run: alone it points past A's end; in a
    batch it would land on a valid RunData of B, and must still be refused."""
    a, b = bytearray(SMALL), bytes(RICH)
    slot = _field(bytes(a), _root(a), 1)  # ETDump.run_data
    entry = slot + struct.unpack_from("<I", a, slot)[0] + 4  # its first entry
    target = _joined_start([bytes(a), b], 1) + _first_run(b)
    struct.pack_into("<I", a, entry, target - entry)
    with pytest.raises(ETDumpFormatError, match="past the end of the buffer"):
        loads(bytes(a))
    with pytest.raises(ETDumpFormatError, match="its file"):
        decode_many([bytes(a), b])


def test_vtable_in_the_previous_file_is_refused() -> None:
    """File B's first run table with its vtable aimed back at A's first run's vtable."""
    a, b = bytes(SMALL), bytearray(RICH)
    run_b = _first_run(bytes(b))
    vt_a = _first_run(a) - struct.unpack_from("<i", a, _first_run(a))[0]
    joined_b = _joined_start([a, bytes(b)], 1)
    struct.pack_into("<i", b, run_b, joined_b + run_b - vt_a)
    with pytest.raises(ETDumpFormatError):
        loads(bytes(b))
    with pytest.raises(ETDumpFormatError, match="vtable of RunData"):
        decode_many([a, bytes(b)])


def test_bad_header_fails_the_batch() -> None:
    with pytest.raises(ETDumpFormatError, match="not an ETDump"):
        decode_many([SMALL, b"PK\x03\x04" + bytes(40)])


def test_decode_joined_reads_files_laid_out_in_place() -> None:
    """A reader may place files itself (joined_layout) and skip decode_many's join."""
    datas = [SMALL, RICH, MLP, SMALL]
    starts, sizes = joined_layout([len(d) for d in datas])
    assert starts.tolist() == [_joined_start(datas, k) for k in range(len(datas))]
    buffer = bytearray(int(starts[-1] + sizes[-1]) + 16)
    for data, at in zip(datas, starts.tolist()):
        buffer[at : at + len(data)] = data
    buffer[int(starts[0] + sizes[0]) : int(starts[1])] = b"\xff" * int(starts[1] - sizes[0])
    decoded = decode_joined(buffer, starts, sizes)
    for k, data in enumerate(datas):
        assert decoded.etdump(k) == loads(data)
    with pytest.raises(ValueError, match="joined_layout"):
        decode_joined(buffer, starts + 16, sizes)
    with pytest.raises(ValueError, match="joined_layout"):
        decode_joined(buffer[:-1], starts, sizes)
