"""Torch-free AOT value types: CompileSpec, PreprocessResult, BackendDetails plugins,
DelegationSpec / PartitionResult, and the built-in mapping validator."""

from __future__ import annotations

from typing import Any

import pytest

import delegate_lens as dl
from delegate_lens.backend import BackendPlugin, backend_plugin
from delegate_lens.builtins import mapping_validator
from delegate_lens.errors import MappingError, PluginError


class _Node:
    def __init__(self, handle: Any, op: str = "call_function") -> None:
        self.op = op
        self.meta = {} if handle is None else {"debug_handle": handle}


class _Program:
    """Duck-typed ExportedProgram: .graph_module.graph.nodes."""

    def __init__(self, handles: list[Any]) -> None:
        graph = type("G", (), {"nodes": [_Node(None, "placeholder"), *map(_Node, handles)]})()
        self.graph_module = type("GM", (), {"graph": graph})()


def test_compile_spec_and_preprocess_result() -> None:
    spec = dl.CompileSpec("threads", bytearray(b"\x04"))
    assert spec.value == b"\x04" and isinstance(spec.value, bytes)
    with pytest.raises(TypeError, match="encode"):
        dl.CompileSpec("k", "text")  # type: ignore[arg-type]
    assert dl.PreprocessResult() == dl.PreprocessResult(b"", None)
    assert dl.PreprocessResult(memoryview(b"ab")).processed_bytes == b"ab"
    # bytes(3) would be three zero bytes: an int (or a str) is an error, not a blob
    for bad in (3, "blob", None, [1, 2]):
        with pytest.raises(TypeError, match="processed_bytes must be bytes"):
            dl.PreprocessResult(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"CompileSpec\.value must be bytes"):
            dl.CompileSpec("k", bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mapping"):
        dl.PreprocessResult(b"x", [(0, (1,))])  # type: ignore[arg-type]
    assert dl.DelegationSpec("B", [spec]).compile_specs == (spec,)
    with pytest.raises(TypeError, match="CompileSpec"):
        dl.DelegationSpec("B", [("k", b"v")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="DelegationSpec"):
        dl.PartitionResult(None, {"t": "B"})  # type: ignore[dict-item]


class Echo(dl.BackendDetails):
    @staticmethod
    def preprocess(edge_program: Any, compile_specs: Any) -> dl.PreprocessResult:
        return dl.PreprocessResult(b"".join(s.value for s in compile_specs), {"all": (1,)})


def test_backend_plugin_answers_only_for_its_backend() -> None:
    plugin = backend_plugin(Echo)
    assert plugin.backend_id == "Echo"
    specs = [dl.CompileSpec("a", b"1"), dl.CompileSpec("b", b"2")]
    result = plugin.dl_preprocess(backend_id="Echo", edge_program=None, compile_specs=specs)
    assert result == dl.PreprocessResult(b"12", {"all": (1,)})
    assert plugin.dl_preprocess(backend_id="Other", edge_program=None, compile_specs=[]) is None
    named = backend_plugin("echo-v2", Echo)
    assert named.backend_id == "echo-v2"
    assert named.dl_preprocess(backend_id="Echo", edge_program=None, compile_specs=[]) is None


def test_backend_plugin_misuse() -> None:
    class Abstract(dl.BackendDetails):
        pass

    class Wrong(dl.BackendDetails):
        @staticmethod
        def preprocess(edge_program: Any, compile_specs: Any) -> Any:
            return b"bytes, not a result"

    with pytest.raises(PluginError, match="does not implement preprocess"):
        backend_plugin(Abstract)
    with pytest.raises(PluginError, match="not a BackendDetails subclass"):
        backend_plugin("x", object)  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="give a BackendDetails subclass"):
        backend_plugin("only-an-id")
    with pytest.raises(PluginError, match=r"'Wrong'.*PreprocessResult"):
        backend_plugin(Wrong).dl_preprocess(backend_id="Wrong", edge_program=None, compile_specs=[])
    assert isinstance(backend_plugin(Echo), BackendPlugin)


def test_backend_plugin_registers_with_pluggy() -> None:
    from delegate_lens.pluginmanager import build_plugin_manager

    pm = build_plugin_manager((), autoload=False)
    pm.register(backend_plugin(Echo))
    result = pm.hook.dl_preprocess(backend_id="Echo", edge_program=None, compile_specs=[])
    assert result == dl.PreprocessResult(b"", {"all": (1,)})


def test_validator_accepts_partition_handles() -> None:
    program = _Program([1, 2, 2, None, 5])
    assert dl.backend.partition_handles(program) == {1, 2, 5}
    mapping_validator.dl_delegate_mapping("B", program, {0: (1, 2), "x": (5,), 3: 2})
    mapping_validator.dl_delegate_mapping("B", program, None)
    mapping_validator.dl_delegate_mapping("B", program, {})


@pytest.mark.parametrize(
    ("mapping", "needle"),
    [
        ({"fused": (1, 9)}, "'B'.*'fused'.*debug handle 9"),
        ({0: ()}, "non-empty"),
        ({-1: (1,)}, "negative"),
        ({2**31: (1,)}, "'B'.*2147483648 does not fit.*int32"),
        ({"": (1,)}, "empty"),
        ({1.5: (1,)}, "not an int or a str"),
        ({True: (1,)}, "not an int or a str"),
        ([(0, (1,))], "must be a mapping"),
        ({"x": "12"}, "non-empty sequence"),
        ({0: (1,), "0": (2,)}, "'B'.*identifiers 0 and '0' are the same"),
        ({"x": [True]}, "'x'.*True is not an int"),
        ({"x": (1.0,)}, "'x'.*1.0 is not an int"),
        ({"x": True}, "'x'.*True is not an int"),
        ({"7": (1,), 7: (2,)}, "identifiers '7' and 7 are the same"),
    ],
)
def test_validator_rejects(mapping: Any, needle: str) -> None:
    with pytest.raises(MappingError, match=needle):
        mapping_validator.dl_delegate_mapping("B", _Program([1, 2]), mapping)
