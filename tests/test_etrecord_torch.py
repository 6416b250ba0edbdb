"""Deserializing ETRecord programs into torch, only on request."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import VECTORS

from delegate_lens.errors import ETRecordFormatError
from delegate_lens.etrecord import (
    ARTIFACT_SUFFIXES,
    ETRecord,
    dumps_json,
    generate_etrecord,
    parse_etrecord,
)

pytestmark = pytest.mark.torch

torch = pytest.importorskip("torch")


class _Tiny(torch.nn.Module):  # type: ignore[misc, name-defined]
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.lin(x)) * 2


def _own_entries() -> tuple[dict[str, bytes], dict[str, int]]:
    """An ETRecord written with torch's serializer, handles added as our writer does."""
    from torch._export.serde.serialize import serialize

    program = torch.export.export(_Tiny(), (torch.randn(2, 4),))
    artifact = serialize(program)
    document = json.loads(artifact.exported_program)
    handles: dict[str, int] = {}
    for index, node in enumerate(document["graph_module"]["graph"]["nodes"], start=1):
        node.setdefault("metadata", {})["debug_handle"] = str(index)
        handles[node["name"]] = index
    entry = "edge_dialect_exported_program/forward"
    entries = {"ETRECORD_V0": b"", entry: json.dumps(document).encode()}
    for suffix, data in zip(
        ARTIFACT_SUFFIXES, (artifact.state_dict, artifact.constants, artifact.example_inputs)
    ):
        entries[entry + suffix] = data
    entries["debug_handle_map"] = dumps_json(
        {"forward": {i: h for i, h in enumerate(handles.values())}}
    )
    entries["delegate_map"] = dumps_json({"forward": {}})
    return entries, handles


def test_our_own_etrecord_deserializes_with_handles_restored(tmp_path: Path) -> None:
    entries, handles = _own_entries()
    path = ETRecord.from_entries(entries).save(tmp_path / "own.etrecord")
    record = parse_etrecord(path)
    graph = record.graph()
    assert {n.name: n.debug_handle for n in graph.nodes} == handles
    assert graph.nodes_by_name["linear"].module_stack[-1].path == "lin"
    program = record.edge_program("forward")
    assert isinstance(program, torch.export.ExportedProgram)
    assert record.edge_program("forward") is program  # cached
    calls = [n for n in program.graph.nodes if n.op == "call_function"]
    assert {n.name: n.meta["debug_handle"] for n in calls} == handles
    x = torch.randn(2, 4)
    assert program.module()(x).shape == (2, 3)
    assert record.exported_program is None  # not stored


def test_reference_aten_program_and_aten_only_edge_program_load() -> None:
    record = parse_etrecord(VECTORS / "conv_xnnpack" / "etrecord.bin")
    edge = record.edge_program()
    calls = [n for n in edge.graph.nodes if n.op == "call_function"]
    assert [str(n.target) for n in calls] == [
        "aten.convolution.default",
        "aten.relu.default",
        "aten.convolution.default",
        "aten.relu.default",
        "aten.tan.default",
    ]
    assert [n.meta["debug_handle"] for n in calls] == [1, 2, 3, 4, 5]
    aten = record.exported_program
    assert aten is not None
    assert len([n for n in aten.graph.nodes if n.op == "call_function"]) == 5
    assert record.exported_program is aten


@pytest.mark.parametrize("name", ["mlp_xnnpack", "gpt_portable"])
def test_executorch_only_operators_load_without_executorch(name: str) -> None:
    # in a fresh interpreter without ExecuTorch: delegate-lens registers its dim-order
    # operators when the graph is loaded (tests/test_etrecord_executorch_ops.py)
    code = (
        "import sys\n"
        "from delegate_lens.etrecord import parse_etrecord\n"
        f"record = parse_etrecord({str(VECTORS / name / 'etrecord.bin')!r})\n"
        "program = record.edge_program()\n"
        "targets = {str(n.target) for n in program.graph.nodes}\n"
        "print(sorted(t for t in targets if t.startswith('dim_order_ops.')))\n"
        "print(any(m.split('.')[0] == 'executorch' for m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ops, imported = proc.stdout.strip().splitlines()[-2:]
    assert ops.startswith("['dim_order_ops.") and imported == "False"


def test_an_operator_nobody_registers_is_a_clear_error(tmp_path: Path) -> None:
    from delegate_lens.errors import ETRecordFormatError
    from delegate_lens.etrecord import parse_etrecord

    record = parse_etrecord(VECTORS / "mlp_xnnpack" / "etrecord.bin")
    entry = "edge_dialect_exported_program/forward"
    text = record._source.read_many([entry])[entry].decode()
    assert "dim_order_ops._clone_dim_order" in text or "dim_order_ops._to_dim_order_copy" in text
    renamed = text.replace("dim_order_ops.", "nobody_ops.")
    import zipfile

    copy = tmp_path / "renamed.bin"
    with (
        zipfile.ZipFile(VECTORS / "mlp_xnnpack" / "etrecord.bin") as src,
        zipfile.ZipFile(copy, "w") as dst,
    ):
        for info in src.infolist():
            data = src.read(info.filename)
            dst.writestr(info, renamed.encode() if info.filename == entry else data)
    with pytest.raises(ETRecordFormatError) as caught:
        parse_etrecord(copy).edge_program()
    message = str(caught.value)
    assert f"{entry!r}" in message and "nobody_ops." in message
    assert "not registered in torch" in message and "\n" not in message
    assert "ExecuTorch" not in message  # installing executorch would not help: no advice to


def test_generate_etrecord_saves_what_the_writer_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, _ = _own_entries()
    calls: list[tuple[Any, ...]] = []

    def build_etrecord(
        edge: Any, prog: Any, exported_program: Any = None, representative_inputs: Any = None
    ) -> ETRecord:
        calls.append((edge, prog, exported_program, representative_inputs))
        return ETRecord.from_entries(entries)

    fake = types.ModuleType("delegate_lens.etrecord._writer")
    fake.build_etrecord = build_etrecord  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "delegate_lens.etrecord._writer", fake)
    out = generate_etrecord(tmp_path / "g.etrecord", "edge", "prog", exported_program="ep")
    assert calls == [("edge", "prog", "ep", None)]  # None: the program's example inputs
    generate_etrecord(tmp_path / "h.etrecord", "edge", "prog", representative_inputs=["x"])
    assert calls[-1] == ("edge", "prog", None, ["x"])
    assert parse_etrecord(out).entries() == entries


def test_generate_etrecord_end_to_end(tmp_path: Path) -> None:
    import delegate_lens as dl

    exported = torch.export.export(_Tiny(), (torch.randn(2, 4),))
    edge = dl.to_edge(exported)
    program = edge.to_program()
    path = dl.generate_etrecord(tmp_path / "model.etrecord", edge, program)
    record = dl.parse_etrecord(path)
    graph = record.graph()
    handled = [n for n in graph.nodes if n.debug_handle is not None]
    assert handled and all(n.op_type.startswith("aten.") for n in handled)
    all_handles = {h for hs in record.debug_handle_map["forward"].values() for h in hs}
    assert all_handles <= set(graph.handles)
    loaded = record.edge_program()
    assert {n.meta.get("debug_handle") for n in loaded.graph.nodes} >= all_handles


@pytest.mark.parametrize(
    ("program", "words"),
    [
        (b"{bad", ["not valid JSON", "line 1"]),
        (b"[" * 100_000 + b"]" * 100_000, ["not valid JSON", "recursion"]),
    ],
)
def test_a_program_that_is_not_json_is_a_format_error_naming_the_entry(
    program: bytes, words: list[str]
) -> None:
    entries, _ = _own_entries()
    entries["edge_dialect_exported_program/forward"] = program
    record = ETRecord.from_entries(entries)
    with pytest.raises(ETRecordFormatError) as info:
        record.edge_program("forward")
    message = str(info.value)
    assert "entry 'edge_dialect_exported_program/forward'" in message
    for word in words:
        assert word in message
