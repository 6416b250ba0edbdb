"""ETRecord archives, bad input: a missing or malformed entry is named (with the node it is
about), a file that is not an ETRecord is our error, and mutated archives or JSON entries
parse or raise our error, never another. Round trips and graph reading are tested in
``test_etrecord_format.py``."""

from __future__ import annotations

import contextlib
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_etrecord_format import MLP, SUFFIXES, make_entries, node, program

from delegate_lens.errors import ETRecordFormatError
from delegate_lens.etrecord import ETRecord, parse_etrecord


def _error(entries: dict[str, bytes]) -> str:
    with pytest.raises(ETRecordFormatError) as info:
        ETRecord.from_entries(entries, origin="bad.etrecord").validate()
    message = str(info.value)
    assert message.startswith("bad.etrecord: ")
    return message


@pytest.mark.parametrize(
    "missing",
    [
        "ETRECORD_V0",
        "debug_handle_map",
        "delegate_map",
        "edge_dialect_exported_program/forward_state_dict",
        "edge_dialect_exported_program/forward_constants",
        "edge_dialect_exported_program/forward_example_inputs",
    ],
)
def test_missing_entry_is_named(missing: str) -> None:
    entries = make_entries()
    del entries[missing]
    assert repr(missing) in _error(entries)


def test_missing_edge_program_and_exported_program_artifacts() -> None:
    entries = make_entries()
    del entries["edge_dialect_exported_program/forward"]
    for suffix in SUFFIXES:
        del entries["edge_dialect_exported_program/forward" + suffix]
    assert "edge_dialect_exported_program/<method>" in _error(entries)
    entries = make_entries(extra={"exported_program": program([])})
    assert "'exported_program_state_dict'" in _error(entries)


@pytest.mark.parametrize("kept", [SUFFIXES, SUFFIXES[:1], SUFFIXES[1:]])
def test_missing_program_document_is_named_not_its_artifact(kept: tuple[str, ...]) -> None:
    entries = make_entries()
    del entries["edge_dialect_exported_program/forward"]
    for suffix in set(SUFFIXES) - set(kept):
        del entries["edge_dialect_exported_program/forward" + suffix]
    message = _error(entries)
    assert "missing entry 'edge_dialect_exported_program/forward' " in message
    assert "_state_dict_state_dict" not in message


def test_a_method_named_like_an_artifact_is_a_method() -> None:
    nodes = [node("aten_relu_default", "aten.relu.default", 1)]
    entries = make_entries(methods={"forward_constants": nodes}, debug_handle_map={})
    record = ETRecord.from_entries(entries)
    assert record.methods == ("forward_constants",)
    assert record.graph("forward_constants").nodes[0].debug_handle == 1


@pytest.mark.parametrize(
    ("entry", "data", "words"),
    [
        ("debug_handle_map", b"{not json", ["'debug_handle_map'", "not valid JSON"]),
        ("debug_handle_map", b"\xff\xfe", ["'debug_handle_map'", "not valid JSON"]),
        ("debug_handle_map", b"[1, 2]", ["'debug_handle_map'", "JSON object"]),
        ("debug_handle_map", b'{"forward": {"x": 1}}', ["'debug_handle_map'", "'x'"]),
        ("debug_handle_map", b'{"forward": {"0": "1"}}', ["['forward']['0']", "debug handle"]),
        ("debug_handle_map", b'{"forward": {"0": [1, true]}}', ["['0']"]),
        ("debug_handle_map", b'{"forward": {"0": 1.5}}', ["['0']"]),
        ("delegate_map", b'{"forward": {"0": {"name": 3}}}', ["'delegate_map'", "'name'"]),
        (
            "delegate_map",
            b'{"forward": {"0": {"name": "B", "delegate_map": [1]}}}',
            ["JSON object"],
        ),
        (
            "delegate_map",
            b'{"forward": {"0": {"name": "B", "delegate_map": {"a": "x"}}}}',
            ["['a']", "debug handle"],
        ),
        ("delegate_map", b'{"forward": []}', ["['forward']"]),
        ("instruction_id_to_num_outs_map", b'{"forward": {"0": "1"}}', ["number of outputs"]),
        ("instruction_id_to_num_outs_map", b"nope", ["not valid JSON"]),
        ("export_graph_id", b"abc", ["'export_graph_id'", "decimal"]),
        (
            "edge_dialect_exported_program/forward",
            b"{",
            ["'edge_dialect_exported_program/forward'"],
        ),
        ("edge_dialect_exported_program/forward", b"{}", ["'graph_module'"]),
        (
            "edge_dialect_exported_program/forward",
            b'{"graph_module": {"graph": {"nodes": {}}}}',
            ["not a list"],
        ),
        (
            "edge_dialect_exported_program/forward",
            b'{"graph_module": {"graph": {"nodes": [{"name": 1}]}}}',
            ["node 0", "'name'"],
        ),
        (
            "edge_dialect_exported_program/forward",
            b'{"graph_module": {"graph": {"nodes": [{"name": "n", "target": 5}]}}}',
            ["node 'n'", "'target'"],
        ),
    ],
)
def test_bad_entries_are_named(entry: str, data: bytes, words: list[str]) -> None:
    entries = make_entries()
    entries[entry] = data
    message = _error(entries)
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("handle", ["abc", "1.5", "(1, 2)", "", "0x10"])
def test_non_integer_node_debug_handle_names_the_node(handle: str) -> None:
    entries = make_entries(methods={"forward": [node("bad_node", "aten.add.Tensor", handle)]})
    message = _error(entries)
    assert "'edge_dialect_exported_program/forward'" in message
    assert "'bad_node'" in message and "debug_handle" in message


def test_malformed_module_stack_names_the_node() -> None:
    entries = make_entries(
        methods={"forward": [node("n1", "aten.add.Tensor", 1, nn_module_stack="a,b")]}
    )
    assert "'n1'" in _error(entries) and "nn_module_stack" in _error(entries)


def test_from_entries_rejects_non_bytes() -> None:
    with pytest.raises(ETRecordFormatError, match="'debug_handle_map' must be bytes"):
        ETRecord.from_entries({**make_entries(), "debug_handle_map": "{}"})  # type: ignore[dict-item]


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04 truncated", b"not a zip at all" * 10])
def test_not_a_zip(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "x.etrecord"
    path.write_bytes(data)
    with pytest.raises(ETRecordFormatError, match=r"x\.etrecord: not an ETRecord"):
        parse_etrecord(path)


def test_a_zip_without_the_marker(tmp_path: Path) -> None:
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "hi")
    with pytest.raises(ETRecordFormatError, match="'ETRECORD_V0'"):
        parse_etrecord(path)


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        parse_etrecord(tmp_path / "absent.etrecord")


def _exercise(record: ETRecord) -> None:
    record.validate()
    seen: list[Any] = [record.debug_handle_map, record.delegate_map, record.entries()]
    for method in record.methods:
        graph = record.graph(method)
        seen += [(n.module_hierarchy, n.from_node) for n in graph.nodes]
    assert seen


MLP_BYTES = MLP.read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(MLP_BYTES) - 1), st.integers(0, 255)), min_size=1, max_size=8
    ),
    cut=st.one_of(st.none(), st.integers(0, len(MLP_BYTES))),
)
def test_mutated_archives_parse_or_raise_our_error(
    edits: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(MLP_BYTES)
    for position, value in edits:
        data[position] = value
    if cut is not None:
        del data[cut:]
    try:
        record = parse_etrecord(bytes(data))
        _exercise(record)
    except ETRecordFormatError as exc:
        assert str(exc).startswith("<bytes>: ")


@settings(max_examples=200, deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6)
)
def test_mutated_json_entries_parse_or_raise_our_error(edits: list[tuple[int, int]]) -> None:
    """Byte edits inside the JSON entries (the zip itself stays valid)."""
    entries = parse_etrecord(MLP).entries()
    names = ["debug_handle_map", "delegate_map", "edge_dialect_exported_program/forward"]
    for i, (position, value) in enumerate(edits):
        name = names[i % len(names)]
        blob = bytearray(entries[name])
        blob[position % len(blob)] = value
        entries[name] = bytes(blob)
    with contextlib.suppress(ETRecordFormatError):
        _exercise(ETRecord.from_entries(entries))


def test_temp_files_are_not_left_when_the_directory_is_missing(tmp_path: Path) -> None:
    record = parse_etrecord(MLP)
    with pytest.raises(FileNotFoundError):
        record.save(tmp_path / "no" / "such" / "dir.etrecord")
    assert os.listdir(tmp_path) == []
