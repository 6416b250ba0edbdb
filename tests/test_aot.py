"""Ahead of time: debug handles, lowering through plugins and partitioners. The program,
the ETRecord and delegation info are tested in ``test_aot_program.py``."""

from __future__ import annotations

import operator

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
from delegate_lens.errors import MappingError, PluginError, UsageError  # noqa: E402

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
