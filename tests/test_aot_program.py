"""Ahead of time, after lowering: the program (instructions, maps, saving), the ETRecord
(round trips, several methods, ``generate_etrecord``), the public names imported lazily,
and delegation info. Debug handles and lowering are tested in ``test_aot.py``."""

from __future__ import annotations

import operator
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

# test_aot.py's fixtures (the exported MLP and its edge program) and its lowering helper
from test_aot import _lower  # noqa: E402
from test_aot import edge as edge  # noqa: E402
from test_aot import mlp_ep as mlp_ep  # noqa: E402
from test_aot_helpers import (  # noqa: E402
    RecordingBackend,
    export_mlp,
    handles_partitioner,
    op_nodes,
    registered,
)

import delegate_lens as dl  # noqa: E402
from delegate_lens.errors import MissingExtraError, UsageError  # noqa: E402
from delegate_lens.program import (  # noqa: E402
    DelegateCallInstruction,
    OperatorInstruction,
    deserialize,
)

pytestmark = pytest.mark.torch


# --------------------------------------------------------------------------- program


def test_program_instructions_and_maps(
    mlp_ep: torch.export.ExportedProgram, edge: dl.EdgeProgramManager, tmp_path: Path
) -> None:
    backend = RecordingBackend("TestBackend", "fuse", seed=3)
    lowered = _lower(edge, {"a": [1, 2]}, backend)
    pm = lowered.to_program()
    method = pm.program.method("forward")
    kinds = [type(i).__name__ for i in method.instructions]
    assert kinds[0] == "DelegateCallInstruction"
    assert all(k == "OperatorInstruction" for k in kinds[1:])
    assert pm.debug_handle_map["forward"][0] == (1, 2)
    assert pm.delegate_map["forward"] == {
        0: {"name": "TestBackend", "delegate_map": lowered.lowered_modules()[0].debug_handle_map}
    }
    assert pm.instruction_id_to_num_outs_map == {"forward": {0: 1}}
    for index, inst in enumerate(method.instructions[1:], start=1):
        assert isinstance(inst, OperatorInstruction)
        assert pm.debug_handle_map["forward"][index] == inst.debug_handles
    # the buffer is the program; save is atomic and complete
    loaded = deserialize(pm.buffer)
    assert loaded == pm.program
    path = pm.save(tmp_path / "model.dlpg")
    assert path.read_bytes() == pm.buffer
    assert [p.name for p in tmp_path.iterdir()] == ["model.dlpg"]
    with pytest.raises(UsageError, match="no-such-dir"):
        pm.save(tmp_path / "no-such-dir" / "model.dlpg")
    (tmp_path / "a-dir").mkdir()
    with pytest.raises(UsageError, match="a-dir"):
        pm.save(tmp_path / "a-dir")  # a directory is in the way: nothing is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "model.dlpg"]
    assert not list((tmp_path / "a-dir").iterdir())
    with open(tmp_path / "copy.dlpg", "wb") as handle:
        pm.write_to_file(handle)
    assert (tmp_path / "copy.dlpg").read_bytes() == pm.buffer
    # weights are in the program: constants for l2 and ln, not for l1 (delegated)
    constants = [v for v in method.values if getattr(v, "data", None) is not None]
    assert sorted(tuple(v.shape) for v in constants if len(v.shape) == 2) == [(3, 8)]
    assert isinstance(method.instructions[0], DelegateCallInstruction)
    assert loaded.delegates[0].backend_id == "TestBackend"


def test_unlowered_program_runs_every_operator(edge: dl.EdgeProgramManager) -> None:
    pm = edge.to_program()
    # to_executorch(), the reference's name, is the same program
    assert edge.to_executorch().buffer == pm.buffer
    with pytest.raises(UsageError, match="backend configs"):
        edge.to_executorch(object())
    method = pm.program.method("forward")
    assert len(method.instructions) == len(
        [n for n in op_nodes(edge.exported_program()) if n.target is not operator.getitem]
    )
    assert pm.delegate_map == {"forward": {}}
    assert pm.instruction_id_to_num_outs_map == {"forward": {}}
    with pytest.raises(UsageError, match="generate_etrecord"):
        dl.to_edge(export_mlp()).to_program().get_etrecord()


# --------------------------------------------------------------------------- ETRecord


@pytest.mark.parametrize("mode", ["str", "int", "generated", "none"])
def test_etrecord_round_trip(edge: dl.EdgeProgramManager, tmp_path: Path, mode: str) -> None:
    backend = RecordingBackend("TestBackend", mode)
    lowered = _lower(edge, {"a": [1, 2, 3]}, backend)
    pm = lowered.to_program()
    record = pm.get_etrecord()
    path = record.save(tmp_path / "etrecord.bin")
    back = dl.parse_etrecord(path)
    assert back.methods == ("forward",)
    assert back.debug_handle_map == pm.debug_handle_map
    expected_map = lowered.lowered_modules()[0].debug_handle_map or {}
    assert back.delegate_map == {
        "forward": {0: {"name": "TestBackend", "delegate_map": expected_map}}
    }
    assert back.instruction_id_to_num_outs_map == {"forward": {0: 2}}  # relu and ln out
    graph = back.graph("forward")
    edge_nodes = [n for n in op_nodes(edge.exported_program()) if n.target is not operator.getitem]
    assert [(n.name, n.debug_handle) for n in graph.nodes if n.debug_handle is not None] == [
        (n.name, n.meta["debug_handle"]) for n in edge_nodes
    ]
    addmm = next(n for n in graph.nodes if n.op_type == "aten.addmm.default")
    assert addmm.debug_handle == 1 and "test_aot_helpers.py" in (addmm.stack_trace or "")
    assert [f.path for f in addmm.module_stack] == ["", "l1"]
    assert back.export_graph_id == id(edge.source_programs["forward"].graph)


def test_etrecord_programs_deserialize_with_handles(
    edge: dl.EdgeProgramManager, tmp_path: Path
) -> None:
    pm = edge.to_program()
    path = dl.generate_etrecord(tmp_path / "r.bin", edge, pm)
    record = dl.parse_etrecord(path)
    program = record.edge_program("forward")
    got = {n.name: n.meta.get("debug_handle") for n in op_nodes(program)}
    want = {n.name: n.meta["debug_handle"] for n in op_nodes(edge.exported_program())}
    assert {k: v for k, v in got.items() if v is not None} == {
        k: v for k, v in want.items() if k in got and got[k] is not None
    }
    assert set(want) - set(got) <= {n for n in want if n.startswith("getitem")}
    assert record.exported_program is not None


def test_etrecord_with_several_methods(mlp_ep: torch.export.ExportedProgram) -> None:
    edge = dl.to_edge({"forward": mlp_ep, "encode": mlp_ep}, generate_etrecord=True)
    backend = RecordingBackend("B", "int")
    with registered(backend):
        lowered = edge.to_backend({"encode": handles_partitioner({"a": [5, 6]}, "B")})
    record = lowered.to_program().get_etrecord()
    assert set(record.methods) == {"forward", "encode"}
    assert record.delegate_map["forward"] == {}
    assert len(record.delegate_map["encode"]) == 1
    # as the reference, the ATen program stored is forward's
    assert record.has_exported_program
    assert record.export_graph_id == id(mlp_ep.graph)


def test_two_different_methods_end_to_end(
    mlp_ep: torch.export.ExportedProgram, tmp_path: Path
) -> None:
    """to_edge({forward, other}) -> to_backend -> to_program -> ETRecord file -> our reader
    (both methods' nodes, handles and maps) and the runtime (both methods run)."""

    class Conv(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.hardswish(torch.relu(self.conv(x))).flatten(1).sum(-1)

    torch.manual_seed(1)
    conv_x = torch.randn(1, 2, 5, 5)
    conv_ep = torch.export.export(Conv().eval(), (conv_x,))
    edge = dl.to_edge({"forward": mlp_ep, "other": conv_ep}, generate_etrecord=True)
    assert edge.methods == ["forward", "other"]
    from delegate_lens.backends_demo import DemoPartitioner
    from delegate_lens.pluginmanager import reset_plugin_manager

    reset_plugin_manager()  # the installed plugins, the demo backend among them
    try:
        lowered = edge.to_backend(DemoPartitioner())
    finally:
        reset_plugin_manager()
    pm = lowered.to_program()
    path = dl.generate_etrecord(tmp_path / "two.etrecord", lowered, pm)
    record = dl.parse_etrecord(path)
    assert record.methods == ("forward", "other")
    for method in ("forward", "other"):
        want = {
            n.name: n.meta["debug_handle"]
            for n in op_nodes(edge.exported_program(method))
            if n.target is not operator.getitem
        }
        graph = record.graph(method)
        assert {n.name: n.debug_handle for n in graph.nodes} == want
        assert all(n.stack_trace for n in graph.nodes)
        assert record.debug_handle_map[method] == pm.debug_handle_map[method]
        assert record.delegate_map[method] == pm.delegate_map[method]
        entries = record.delegate_map[method].values()
        assert entries and all(e["name"] == "DemoBackend" and e["delegate_map"] for e in entries)
        assert {h for hs in pm.debug_handle_map[method].values() for h in hs} == set(want.values())
    # hardswish decomposes into several nodes that share one handle
    other_nodes = record.graph("other").nodes
    assert len({n.debug_handle for n in other_nodes}) < len(other_nodes)
    from delegate_lens.runtime import Program

    program = Program.load(Path(pm.save(tmp_path / "two.pte")).read_bytes())
    x = torch.randn(2, 4)
    for got, want_t in zip(program.load_method("forward").execute([x]), mlp_ep.module()(x)):
        torch.testing.assert_close(got, want_t)
    (got,) = program.load_method("other").execute([conv_x])
    torch.testing.assert_close(got, conv_ep.module()(conv_x))


def test_methods_whose_entries_would_clash_are_refused(
    mlp_ep: torch.export.ExportedProgram, tmp_path: Path
) -> None:
    edge = dl.to_edge({"a": mlp_ep, "a_constants": mlp_ep})
    with pytest.raises(UsageError, match="'edge_dialect_exported_program/a_constants'"):
        dl.generate_etrecord(tmp_path / "x.bin", edge, edge.to_program())
    assert not (tmp_path / "x.bin").exists()


def test_generate_etrecord_takes_a_dict_of_exported_programs(
    mlp_ep: torch.export.ExportedProgram, tmp_path: Path
) -> None:
    other = export_mlp()
    edge = dl.to_edge({"encode": other, "forward": mlp_ep})
    pm = edge.to_program()
    record = dl.parse_etrecord(
        dl.generate_etrecord(tmp_path / "a.bin", edge, pm, {"encode": other, "forward": mlp_ep})
    )
    assert record.methods == ("encode", "forward")
    assert record.export_graph_id == id(mlp_ep.graph)
    assert record.exported_program_graph() is not None
    record = dl.parse_etrecord(dl.generate_etrecord(tmp_path / "b.bin", edge, pm, {"x": other}))
    assert record.export_graph_id == id(other.graph)
    edge2 = dl.to_edge({"encode": other, "decode": mlp_ep})
    record = dl.parse_etrecord(dl.generate_etrecord(tmp_path / "c.bin", edge2, edge2.to_program()))
    assert not record.has_exported_program  # several methods, none is forward
    with pytest.raises(UsageError, match="exported_program must be"):
        dl.generate_etrecord(tmp_path / "d.bin", edge, pm, exported_program=edge)
    assert not (tmp_path / "d.bin").exists()
    with pytest.raises(UsageError, match="edge_manager must be the EdgeProgramManager"):
        dl.generate_etrecord(tmp_path / "d.bin", pm, edge)  # swapped
    with pytest.raises(UsageError, match="program_manager must be the ProgramManager"):
        dl.generate_etrecord(tmp_path / "d.bin", edge, mlp_ep)
    assert not (tmp_path / "d.bin").exists()


ISSUE_4_NAMES = [
    "DelegateMappingBuilder",
    "CompileSpec",
    "PreprocessResult",
    "BackendDetails",
    "Partitioner",
    "PartitionResult",
    "DelegationSpec",
    "to_edge",
    "to_edge_transform_and_lower",
    "EdgeProgramManager",
    "ProgramManager",
    "ETRecord",
    "parse_etrecord",
    "generate_etrecord",
    "get_delegation_info",
    "print_delegated_graph",
    "MappingError",
]
TORCH_FREE = [
    "DelegateMappingBuilder",
    "CompileSpec",
    "PreprocessResult",
    "BackendDetails",
    "Partitioner",
    "PartitionResult",
    "DelegationSpec",
    "ETRecord",
    "parse_etrecord",
    "generate_etrecord",
    "MappingError",
]


def test_every_public_name_is_importable_lazily() -> None:
    code = (
        "import sys, delegate_lens as d\n"
        "assert 'torch' not in sys.modules\n"
        f"assert not set({ISSUE_4_NAMES!r}) - set(dir(d)) - {{'MappingError'}}\n"
        f"assert not set({ISSUE_4_NAMES!r}) & set(vars(d)) - {{'MappingError'}}, 'eager'\n"
        f"for name in {TORCH_FREE!r}: getattr(d, name)\n"
        "assert 'torch' not in sys.modules, 'a torch-free name imported torch'\n"
        f"from delegate_lens import {', '.join(ISSUE_4_NAMES)}\n"
        "assert callable(to_edge) and 'torch' in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- delegation info


def test_delegation_info(edge: dl.EdgeProgramManager, capsys: pytest.CaptureFixture[str]) -> None:
    lowered = _lower(edge, {"a": [1, 2], "b": [4]}, RecordingBackend("TestBackend"))
    info = dl.get_delegation_info(lowered.exported_program().graph_module)
    assert info.num_delegated_subgraphs == 2
    # handles 1 (permute, addmm), 2 (relu), 4 (permute, addmm) inside; 3 (layer norm), 5, 6 out,
    # with the 3 getitem nodes picking outputs: counted as the reference counts them
    assert info.num_delegated_nodes == 5
    assert info.num_non_delegated_nodes == 6
    by_op = info.delegation_by_operator
    assert by_op["getitem"].non_delegated == 3
    assert by_op["aten_addmm_default"].delegated == 2  # spelled as ExecuTorch's edge graph
    assert info.rows()[-1] == ("Total", 5, 6)
    frame = info.get_operator_delegation_dataframe()
    assert next(iter(frame.columns)) == "op_type" and frame.iloc[-1]["op_type"] == "Total"
    dl.print_delegated_graph(lowered)
    out = capsys.readouterr().out
    assert "delegate 'TestBackend'" in out and "    addmm" in out


def test_delegation_dataframe_without_pandas(
    edge: dl.EdgeProgramManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = dl.get_delegation_info(edge.exported_program())
    assert info.num_delegated_subgraphs == 0
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match="pandas"):
        info.get_operator_delegation_dataframe()
