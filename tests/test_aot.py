"""Ahead of time: debug handles, lowering through plugins, program, ETRecord, delegation info."""

from __future__ import annotations

import operator
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from test_aot_helpers import (  # noqa: E402
    RecordingBackend,
    TagPartitioner,
    export_mlp,
    handles_partitioner,
    op_nodes,
    registered,
)

import delegate_lens as dl  # noqa: E402
from delegate_lens.errors import MappingError, MissingExtraError, PluginError, UsageError  # noqa: E402
from delegate_lens.program import (  # noqa: E402
    DelegateCallInstruction,
    OperatorInstruction,
    deserialize,
)

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def mlp_ep() -> torch.export.ExportedProgram:
    return export_mlp()


@pytest.fixture(scope="module")
def edge(mlp_ep: torch.export.ExportedProgram) -> dl.EdgeProgramManager:
    return dl.to_edge(mlp_ep, generate_etrecord=True)


# --------------------------------------------------------------------------- handles


def test_every_operator_node_has_a_positive_handle(edge: dl.EdgeProgramManager) -> None:
    nodes = op_nodes(edge.exported_program())
    assert nodes
    for node in nodes:
        handle = node.meta["debug_handle"]
        assert isinstance(handle, int) and handle > 0, node.name


def test_one_handle_per_source_operator(
    mlp_ep: torch.export.ExportedProgram, edge: dl.EdgeProgramManager
) -> None:
    sources = [n for n in op_nodes(mlp_ep) if n.target is not operator.getitem]
    nodes = op_nodes(edge.exported_program())
    handles = sorted({n.meta["debug_handle"] for n in nodes})
    assert handles == list(range(1, len(sources) + 1))
    # linear decomposes into permute + addmm (both handle 1): they share it
    first = [n for n in nodes if n.meta["debug_handle"] == 1]
    assert {str(n.target) for n in first} == {"aten.permute.default", "aten.addmm.default"}
    # and the source op types in order: linear, relu, layer_norm, linear, softmax, add
    by_handle: dict[int, set[str]] = {}
    for n in nodes:
        by_handle.setdefault(n.meta["debug_handle"], set()).add(n.target.__name__)
    assert "native_layer_norm.default" in by_handle[3]


def test_stack_traces_and_module_stacks_are_kept(edge: dl.EdgeProgramManager) -> None:
    for node in op_nodes(edge.exported_program()):
        if node.target is operator.getitem:
            continue
        assert "test_aot_helpers.py" in node.meta["stack_trace"], node.name
        assert node.meta["nn_module_stack"], node.name
    ln = next(n for n in op_nodes(edge.exported_program()) if "layer_norm" in n.name)
    paths = [path for path, _ in ln.meta["nn_module_stack"].values()]
    assert "ln" in paths


def test_to_edge_does_not_touch_the_input(mlp_ep: torch.export.ExportedProgram) -> None:
    dl.to_edge(mlp_ep)
    assert all("debug_handle" not in n.meta for n in mlp_ep.graph.nodes)


def test_methods_dict(mlp_ep: torch.export.ExportedProgram) -> None:
    m = dl.to_edge({"forward": mlp_ep, "other": mlp_ep})
    assert m.methods == ["forward", "other"]
    assert m.exported_program("other") is not m.exported_program("forward")
    assert m.exported_program(method_name="other") is m.exported_program("other")  # ExecuTorch's
    with pytest.raises(UsageError, match="nope"):
        m.exported_program("nope")
    with pytest.raises(UsageError, match="ExportedProgram"):
        dl.to_edge({"forward": 3})  # type: ignore[dict-item]
    with pytest.raises(UsageError):
        dl.to_edge("not a program")


# --------------------------------------------------------------------------- lowering


def _lower(
    edge: dl.EdgeProgramManager, groups: dict[str, list[int]], backend: RecordingBackend
) -> dl.EdgeProgramManager:
    with registered(backend):
        return edge.to_backend(handles_partitioner(groups, backend.backend_id))


def test_lowering_replaces_partition_and_keeps_results(
    mlp_ep: torch.export.ExportedProgram, edge: dl.EdgeProgramManager
) -> None:
    backend = RecordingBackend("TestBackend", "str")
    lowered = _lower(edge, {"a": [1, 2], "b": [4]}, backend)
    # the partitions given to preprocess carry exactly their handles
    assert [c["handles"] for c in backend.calls] == [{1, 2}, {4}]
    modules = lowered.lowered_modules()
    assert [m.backend_id for m in modules] == ["TestBackend", "TestBackend"]
    assert [m.debug_handles for m in modules] == [(1, 2), (4,)]
    assert modules[0].processed_bytes.startswith(b"TestBackend:")
    outer = lowered.exported_program()
    remaining = {n.meta.get("debug_handle") for n in op_nodes(outer)} - {None}
    assert remaining == {3, 5, 6}
    # l1's and l2's weights moved into the partitions
    assert (
        "l1.weight" not in outer.state_dict and "l1.weight" in modules[0].original_module.state_dict
    )
    assert "ln.weight" in outer.state_dict
    x = torch.randn(2, 4)
    for got, want in zip(outer.module()(x), mlp_ep.module()(x)):
        torch.testing.assert_close(got, want)
    # the unlowered edge program is left alone
    assert len(op_nodes(edge.exported_program())) > len(op_nodes(outer))


def test_no_plugin_for_backend(edge: dl.EdgeProgramManager) -> None:
    with registered(), pytest.raises(PluginError, match="'NoSuchBackend'"):
        edge.to_backend(handles_partitioner({"a": [2]}, "NoSuchBackend"))


def test_validator_rejects_handles_outside_the_partition(edge: dl.EdgeProgramManager) -> None:
    backend = RecordingBackend("Sloppy", "bad")
    with pytest.raises(MappingError) as info:
        _lower(edge, {"a": [2, 3]}, backend)
    message = str(info.value)
    assert "'Sloppy'" in message and "'bogus'" in message and "1003" in message


class FixedMap:
    """A ``dl_preprocess`` plugin returning one given map for backend "Fixed"."""

    def __init__(self, mapping: object) -> None:
        self.mapping = mapping

    @dl.hookimpl
    def dl_preprocess(self, backend_id: str) -> dl.PreprocessResult | None:
        return dl.PreprocessResult(b"", self.mapping) if backend_id == "Fixed" else None  # type: ignore[arg-type]


def test_numpy_integers_in_a_backend_map_become_ints(edge: dl.EdgeProgramManager) -> None:
    np = pytest.importorskip("numpy")
    mapping = {np.int64(0): np.array([2, 3, 2]), "one": np.int32(3), 2: [np.int16(2)]}
    with registered(FixedMap(mapping)):
        lowered = edge.to_backend(handles_partitioner({"a": [2, 3]}, "Fixed"))
    got = lowered.lowered_modules()[0].debug_handle_map
    assert got == {0: (2, 3), "one": (3,), 2: (2,)}
    assert all(type(h) is int for hs in got.values() for h in hs)
    assert type(next(iter(got))) is int
    record = lowered.to_program().get_etrecord()  # JSON-serializable
    (entry,) = dl.ETRecord.from_entries(record.entries()).delegate_map["forward"].values()
    assert entry["delegate_map"] == {0: (2, 3), "one": (3,), 2: (2,)}


@pytest.mark.parametrize("handles", [[2.0], [True], (2, "3"), 2.0, "23", {2: 3}])
def test_non_integer_handles_in_a_backend_map_are_mapping_errors(
    edge: dl.EdgeProgramManager, handles: object
) -> None:
    with registered(FixedMap({"k": handles})), pytest.raises(MappingError, match=r"'Fixed'.*'k'"):
        edge.to_backend(handles_partitioner({"a": [2, 3]}, "Fixed"))


def test_preprocess_returning_junk_is_a_plugin_error(edge: dl.EdgeProgramManager) -> None:
    class Junk:
        @dl.hookimpl
        def dl_preprocess(self, backend_id: str) -> object:
            return "not a result" if backend_id == "Junk" else None

    with registered(Junk()), pytest.raises(PluginError, match=r"'Junk'.*PreprocessResult"):
        edge.to_backend(handles_partitioner({"a": [2]}, "Junk"))


def test_backend_details_plugin(edge: dl.EdgeProgramManager) -> None:
    from delegate_lens.backend import backend_plugin

    class Doubler(dl.BackendDetails):
        @staticmethod
        def preprocess(edge_program, compile_specs):  # type: ignore[no-untyped-def]
            b = dl.DelegateMappingBuilder(generated_identifiers=True)
            for node in edge_program.graph.nodes:
                if node.op == "call_function":
                    b.insert_delegate_mapping_entry(nodes=node)
            return dl.PreprocessResult(
                b"".join(s.value for s in compile_specs), b.get_delegate_mapping()
            )

    spec = dl.CompileSpec("k", b"v1")
    part = TagPartitioner(lambda n: "t" if n.meta.get("debug_handle") == 2 else None, "Doubler")

    class WithSpecs(TagPartitioner):
        def partition(self, exported_program):  # type: ignore[no-untyped-def]
            result = super().partition(exported_program)
            return dl.PartitionResult(
                result.tagged_exported_program,
                {t: dl.DelegationSpec("Doubler", [spec]) for t in result.partition_tags},
            )

    with registered(backend_plugin(Doubler)):
        lowered = edge.to_backend(WithSpecs(part.choose, part.backends))
    (module,) = lowered.lowered_modules()
    assert module.processed_bytes == b"v1" and module.compile_specs == [spec]
    assert module.debug_handle_map == {0: (2,)}


def test_partition_that_would_make_a_cycle_is_refused(edge: dl.EdgeProgramManager) -> None:
    # handles 1 and 3 with 2 (relu) outside: 3 depends on 2, which depends on 1
    backend = RecordingBackend("B")
    with pytest.raises(UsageError, match="cycle"):
        _lower(edge, {"a": [1, 3]}, backend)


def test_unknown_tag_is_refused(edge: dl.EdgeProgramManager) -> None:
    class Forgetful(dl.Partitioner):
        def partition(self, exported_program):  # type: ignore[no-untyped-def]
            op_nodes(exported_program)[0].meta["delegation_tag"] = "lost"
            return dl.PartitionResult(exported_program, {})

    with registered(), pytest.raises(UsageError, match="lost"):
        edge.to_backend(Forgetful())


def test_to_edge_transform_and_lower_keeps_requested_ops(
    mlp_ep: torch.export.ExportedProgram,
) -> None:
    class KeepLinear(TagPartitioner):
        def ops_to_not_decompose(self, ep):  # type: ignore[no-untyped-def]
            return [torch.ops.aten.linear.default], None

    part = KeepLinear(lambda n: n.name if "linear" in str(n.target) else None, "B")
    backend = RecordingBackend("B")
    with registered(backend):
        lowered = dl.to_edge_transform_and_lower(mlp_ep, partitioner=[part])
    assert len(lowered.lowered_modules()) == 2
    targets = [str(n.target) for c in backend.calls for n in op_nodes(c["program"])]
    assert targets == ["aten.linear.default", "aten.linear.default"]


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


def test_placeholder_named_like_a_builtin() -> None:
    # nn.Sequential's input is called "input"; a copied graph renames it "input_1"
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = torch.randn(1, 4)
    exported = torch.export.export(model, (x,))
    backend = RecordingBackend("B")
    edge = dl.to_edge(exported)
    lowered = _lower(edge, {"a": [1], "b": [3]}, backend)
    torch.testing.assert_close(lowered.exported_program().module()(x), model(x))
    program = lowered.to_program().program.method("forward")
    assert [type(i).__name__ for i in program.instructions] == [
        "DelegateCallInstruction",
        "OperatorInstruction",
        "DelegateCallInstruction",
    ]


def test_partitioner_by_backend_id(edge: dl.EdgeProgramManager) -> None:
    class Provider:
        @dl.hookimpl
        def dl_partitioner(self, backend_id: str) -> dl.Partitioner | None:
            if backend_id != "B":
                return None
            return handles_partitioner({"a": [5]}, "B")

    backend = RecordingBackend("B")
    with registered(Provider(), backend):
        lowered = edge.to_backend("B")
        with pytest.raises(PluginError, match="'Nobody'"):
            edge.to_backend(["Nobody"])
    assert [m.debug_handles for m in lowered.lowered_modules()] == [(5,)]


def test_partitioner_plugin_that_raises_is_named(edge: dl.EdgeProgramManager) -> None:
    class Crashing:
        @dl.hookimpl
        def dl_partitioner(self, backend_id: str) -> dl.Partitioner | None:
            raise KeyError(backend_id)

    with registered() as pm, pytest.raises(PluginError) as info:
        pm.register(Crashing(), name="crashing")
        edge.to_backend("B")
    assert (
        str(info.value) == "plugin 'crashing' (registered) failed in dl_partitioner: KeyError: 'B'"
    )


def test_partitioner_returning_junk(edge: dl.EdgeProgramManager) -> None:
    class Junk(dl.Partitioner):
        def partition(self, exported_program):  # type: ignore[no-untyped-def]
            return {"t": "B"}

    with registered(), pytest.raises(PluginError, match=r"Junk\.partition returned dict"):
        edge.to_backend(Junk())
    with pytest.raises(UsageError, match="unknown methods"):
        edge.to_backend({"nope": Junk()})


def test_partitioners_apply_in_turn(
    mlp_ep: torch.export.ExportedProgram, edge: dl.EdgeProgramManager
) -> None:
    first, second = RecordingBackend("First"), RecordingBackend("Second", "int")
    with registered(first, second):
        lowered = edge.to_backend(
            [handles_partitioner({"a": [1]}, "First"), handles_partitioner({"b": [4, 5]}, "Second")]
        )
        with pytest.raises(UsageError, match="already a delegate call"):
            lowered.to_backend(
                TagPartitioner(lambda n: "t" if "delegate" in n.name else None, "First")
            )
    assert [m.backend_id for m in lowered.lowered_modules()] == ["First", "Second"]
    x = torch.randn(2, 4)
    for got, want in zip(lowered.exported_program().module()(x), mlp_ep.module()(x)):
        torch.testing.assert_close(got, want)
    pm = lowered.to_program()
    assert [e["name"] for e in pm.delegate_map["forward"].values()] == ["First", "Second"]
    assert len(pm.program.delegates) == 2
