"""The codec against the reference vectors: field-level equality with etdump.json, round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import VECTOR_NAMES, VECTORS

from delegate_lens.etdump import (
    ETDump,
    EventKind,
    ScalarType,
    ValueType,
    dump,
    dumps,
    load,
    loads,
)
from delegate_lens.etdump._jsonview import from_json, to_json

BIG = VECTORS / "gpt_portable_big" / "etdump.etdp"


def _vector(name: str) -> tuple[ETDump, Any]:
    folder = VECTORS / name
    return load(folder / "etdump.etdp"), json.loads((folder / "etdump.json").read_text())


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_all_fields_equal_reference_json(name: str) -> None:
    etdump, reference = _vector(name)
    assert to_json(etdump) == reference


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_dumps_of_load_decodes_equal(name: str) -> None:
    etdump, reference = _vector(name)
    again = loads(dumps(etdump))
    assert again == etdump
    assert to_json(again) == reference
    # a second trip is byte-stable
    assert dumps(again) == dumps(etdump)


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_from_json_to_json_round_trip(name: str) -> None:
    etdump, reference = _vector(name)
    built = from_json(reference)
    assert built == etdump
    assert to_json(loads(dumps(built))) == reference


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_input_without_size_prefix_reads_the_same(name: str) -> None:
    raw = (VECTORS / name / "etdump.etdp").read_bytes()
    assert raw[8:12] == b"ED00"
    assert loads(raw[4:]) == loads(raw)


def test_output_is_size_prefixed_with_identifier() -> None:
    data = dumps(load(VECTORS / "mlp_xnnpack" / "etdump.etdp"))
    assert int.from_bytes(data[:4], "little") == len(data) - 4
    assert data[8:12] == b"ED00"


def test_mlp_columns_and_objects() -> None:
    etdump = load(VECTORS / "mlp_xnnpack" / "etdump.etdp")
    run = etdump.run_data[1]
    cols = run.columns
    assert run.name == "Execute"
    assert len(cols) == len(run.events) == 12
    assert cols.kind.tolist()[:4] == [
        EventKind.DEBUG,
        EventKind.PROFILE,
        EventKind.PROFILE,
        EventKind.PROFILE,
    ]
    assert cols.string(int(cols.delegate_debug_id_str[3])) == "Fully Connected (NC, F32) GEMM #1"
    assert cols.metadata(3) == b""  # present and empty
    assert cols.metadata(1) is None  # absent
    assert int(cols.start_time[3]) == 3786769508
    last = cols.debug_event(11)
    assert last.chain_index == 2**64 - 1  # uint64 max, read as -1 in the int64 column
    assert int(cols.chain_index[11]) == -1
    assert last.debug_entry is not None
    assert last.debug_entry.val is ValueType.Tensor
    assert last.debug_entry.tensor is not None
    assert last.debug_entry.tensor.scalar_type is ScalarType.FLOAT
    assert last.debug_entry.tensor.sizes == [2, 8]
    assert last.debug_entry.output is not None and last.debug_entry.output.bool_val
    event = run.events[3]
    assert event.profile_event is not None
    assert event.profile_event.delegate_debug_id_str == "Fully Connected (NC, F32) GEMM #1"
    assert run.events[-1].debug_event == last


def test_runs_share_one_string_table() -> None:
    etdump = load(VECTORS / "gpt_portable" / "etdump.etdp")
    tables = {id(run.columns.strings) for run in etdump.run_data}
    assert len(tables) == 1
    a, b = etdump.run_data[1].columns, etdump.run_data[2].columns
    assert np.array_equal(a.name, b.name)  # same ops in the same order: same codes
    assert a.strings[int(a.name[0])] == "native_call_embedding.out"


def test_big_vector_loads_with_all_events() -> None:
    etdump = load(BIG)
    assert len(etdump.run_data) == 2001
    assert sum(len(run.columns) for run in etdump.run_data) == 482_002
    assert [run.name for run in etdump.run_data[:2]] == ["Default", "Execute"]
    assert all(len(run.columns) == 241 for run in etdump.run_data[1:])
    execute = etdump.run_data[-1].columns
    assert (execute.kind == EventKind.PROFILE).all()
    names = execute.decode(execute.name)
    assert names[-1] == "Method::execute"


@pytest.mark.slow
def test_big_vector_round_trips(tmp_path: Path) -> None:
    etdump = load(BIG)
    out = tmp_path / "big.etdp"
    dump(etdump, out)
    again = load(out)
    assert again == etdump
    assert out.stat().st_size < BIG.stat().st_size  # strings are written once


def test_dump_writes_atomically(tmp_path: Path) -> None:
    out = tmp_path / "x.etdp"
    out.write_bytes(b"old")
    dump(load(VECTORS / "conv_xnnpack" / "etdump.etdp"), out)
    assert loads(out.read_bytes()) == load(VECTORS / "conv_xnnpack" / "etdump.etdp")
    assert [p.name for p in tmp_path.iterdir()] == ["x.etdp"]


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_small_decode_chunks_give_the_same_result(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events are decoded in chunks; chunk borders (and debug entries across them) are seamless."""
    import delegate_lens.etdump._reader as reader

    etdump, reference = _vector(name)
    monkeypatch.setattr(reader, "_EVENT_CHUNK", 5)
    chunked = load(VECTORS / name / "etdump.etdp")
    assert chunked == etdump
    assert to_json(chunked) == reference
