"""Our ETRecords in the reference toolchain's schema shape, and (optionally) read by it.

The cross-check runs the reference ExecuTorch (installed by ``scripts/install.sh --dev``)
in a subprocess, or the Python that ``DELEGATE_LENS_REFERENCE_PYTHON`` names; it skips, with
the reason, only where neither has it (``conftest.REFERENCE_PYTHON``).
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from conftest import NO_REFERENCE, REFERENCE_PYTHON, VECTORS, needs_reference  # noqa: E402
from test_aot_helpers import RecordingBackend, export_mlp, handles_partitioner, registered  # noqa: E402

import delegate_lens as dl  # noqa: E402
from delegate_lens.etrecord._writer import reference_document  # noqa: E402

pytestmark = pytest.mark.torch

VECTOR = VECTORS / "mlp_xnnpack" / "etrecord.bin"


@pytest.fixture(scope="module")
def record_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    edge = dl.to_edge(export_mlp(), generate_etrecord=True)
    with registered(RecordingBackend("TestBackend", "fuse", seed=5)):
        lowered = edge.to_backend(handles_partitioner({"a": [1, 2], "b": [4]}, "TestBackend"))
    path = tmp_path_factory.mktemp("ref") / "etrecord.bin"
    return lowered.to_program().get_etrecord().save(path)


def _documents(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as z:
        return {
            n: json.loads(z.read(n))
            for n in z.namelist()
            if n == "exported_program"
            or (
                n.startswith("edge_dialect_exported_program/")
                and not n.endswith(("_state_dict", "_constants", "_example_inputs"))
            )
        }


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_documents_have_the_reference_shape(record_path: Path) -> None:
    reference = json.loads(zipfile.ZipFile(VECTOR).read("edge_dialect_exported_program/forward"))
    docs = _documents(record_path)
    assert set(docs) == {"exported_program", "edge_dialect_exported_program/forward"}
    for doc in docs.values():
        assert doc["schema_version"] == reference["schema_version"] == {"major": 5, "minor": 4}
        assert set(doc) == set(reference)
        assert set(doc["graph_module"]) == set(reference["graph_module"])
        assert set(doc["graph_module"]["graph"]) == set(reference["graph_module"]["graph"])
        for node in doc["graph_module"]["graph"]["nodes"]:
            assert set(node) == {"name", "target", "inputs", "outputs", "metadata"}
        assert not _keys(doc) & {"as_optional_tensor", "kind", "torch_version"}
    edge_nodes = docs["edge_dialect_exported_program/forward"]["graph_module"]["graph"]["nodes"]
    assert all(
        n["target"].startswith("executorch.exir.dialects.edge.ops.aten.") for n in edge_nodes
    )
    aten_nodes = docs["exported_program"]["graph_module"]["graph"]["nodes"]
    assert all(n["target"].startswith("torch.ops.aten.") for n in aten_nodes)
    assert [list(n["metadata"])[-2:] for n in edge_nodes] == [["debug_handle", "from_node"]] * len(
        edge_nodes
    )


def test_unrepresentable_documents_are_kept_as_torch_wrote_them() -> None:
    doc = {
        "graph_module": {
            "graph": {"nodes": [], "sym_float_values": {"s0": {"as_expr": {}}}},
            "metadata": {},
            "treespec_namedtuple_fields": {},
        },
        "schema_version": {"major": 8, "minor": 20},
    }
    assert reference_document(doc) is None
    doc["graph_module"]["graph"]["sym_float_values"] = {}
    doc["graph_module"]["graph"]["nodes"] = [
        {"name": "n", "inputs": [{"name": "x", "arg": {"as_sym_float": {}}, "kind": 1}]}
    ]
    assert reference_document(doc) is None
    doc["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"] = {
        "as_optional_tensor": {"as_tensor": {"name": "t"}}
    }
    down = reference_document(doc)
    assert down is not None
    assert down["graph_module"]["graph"]["nodes"][0]["inputs"] == [
        {"name": "x", "arg": {"as_tensor": {"name": "t"}}}
    ]
    assert doc["schema_version"] == {"major": 8, "minor": 20}  # input untouched


def test_torch_still_reads_the_reference_shape(record_path: Path) -> None:
    record = dl.parse_etrecord(record_path)
    x = torch.randn(2, 4)
    program = record.edge_program()
    torch.testing.assert_close(program.module()(x), export_mlp().module()(x))
    assert record.exported_program is not None


_CHECK = """
import json, sys
from executorch.devtools.etrecord import parse_etrecord
r = parse_etrecord(sys.argv[1])
g = r.edge_dialect_program.graph
print(json.dumps({
    "debug_handle_map": r._debug_handle_map,
    "delegate_map": r._delegate_map,
    "ops": [
        [getattr(n.target, "__name__", str(n.target)), n.meta.get("debug_handle")]
        for n in g.nodes
        if n.op == "call_function" and "getitem" not in str(n.target)
    ],
    "has_exported_program": r.exported_program is not None,
}))
"""


@pytest.mark.slow
@needs_reference
def test_reference_parse_etrecord_reads_ours(record_path: Path) -> None:
    assert REFERENCE_PYTHON is not None, NO_REFERENCE
    proc = subprocess.run(
        [REFERENCE_PYTHON, "-c", _CHECK, str(record_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = dl.parse_etrecord(record_path)
    assert seen["debug_handle_map"] == json.loads(ours.entry("debug_handle_map"))
    assert seen["delegate_map"] == json.loads(ours.entry("delegate_map"))
    graph = ours.graph("forward")
    # the reference names ops as ours does, e.g. "aten.addmm.default", with the same handles
    assert seen["ops"] == [[n.op_type, n.debug_handle] for n in graph.nodes if n.op_type]
    assert seen["has_exported_program"]


_INSPECT = """
import json, sys
from executorch.devtools import Inspector
inspector = Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2])
rows = [
    [str(e.name), [str(o) for o in e.op_types], bool(e.is_delegated_op),
     None if e.delegate_backend_name is None else str(e.delegate_backend_name)]
    for block in inspector.event_blocks
    for e in block.events
]
print(json.dumps(rows))
"""


@pytest.mark.slow
@needs_reference
@pytest.mark.parametrize("identifiers", ["int", "str"])
def test_reference_inspector_links_our_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identifiers: str
) -> None:
    """The demo's ETRecord + ETDump, read by the reference Inspector: delegate events link
    back to the operators of our Debug Handle Maps."""
    from delegate_lens.backends_demo._demo import run_demo
    from delegate_lens.pluginmanager import reset_plugin_manager

    assert REFERENCE_PYTHON is not None, NO_REFERENCE
    monkeypatch.setenv("DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD", "1")
    reset_plugin_manager()
    from delegate_lens.pluginmanager import get_plugin_manager

    demo = __import__("delegate_lens.backends_demo._plugin", fromlist=["plugin"])
    if not get_plugin_manager().is_registered(demo):  # a built-in of the demo, or not
        get_plugin_manager().register(demo)
    try:
        result = run_demo(
            "convnet",
            runs=2,
            out_dir=tmp_path,
            identifiers=identifiers,
            debug_buffer_size=0,
            echo=lambda _: None,
            show_table=False,
        )
    finally:
        reset_plugin_manager()
    proc = subprocess.run(
        [
            REFERENCE_PYTHON,
            "-c",
            _INSPECT,
            str(result.paths["etdump"]),
            str(result.paths["etrecord"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    delegated = [r for r in rows if r[2]]
    assert delegated, rows
    for name, op_types, _, backend in delegated:
        assert backend == "DemoBackend", name
        assert op_types and all(o.startswith("aten.") for o in op_types), (name, op_types)
    portable = [r for r in rows if r[0].startswith("native_call_")]
    assert all(r[1] and all(o.startswith("aten.") for o in r[1]) for r in portable), portable


# --------------------------------------------------------------------------- non-finite floats


class _NonFinite(torch.nn.Module):
    """Attention's mask (``masked_fill(mask, -inf)``), a ``+inf`` bound and a NaN fill."""

    def forward(self, x: Any) -> Any:
        mask = x > 0
        masked = x.masked_fill(mask, float("-inf"))
        bounded = torch.clamp(x, max=float("inf"))
        nan = x.masked_fill(mask, float("nan"))
        return masked + bounded, nan


def _float_args(program: Any) -> list[float]:
    return [
        a
        for n in program.graph.nodes
        if n.op == "call_function"
        for a in [*n.args, *n.kwargs.values()]
        if isinstance(a, float)
    ]


@pytest.fixture(scope="module")
def non_finite_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    example = (torch.tensor([[-1.0, 2.0, 0.5], [3.0, -4.0, 0.0]]),)
    edge = dl.to_edge(torch.export.export(_NonFinite(), example), generate_etrecord=True)
    path = tmp_path_factory.mktemp("nonfinite") / "etrecord.bin"
    return edge.to_program().get_etrecord().save(path)


def test_non_finite_floats_are_written_as_the_reference_writes_them() -> None:
    node = {
        "name": "n",
        "inputs": [
            {"name": "a", "arg": {"as_float": "-Infinity"}},
            {"name": "b", "arg": {"as_floats": ["NaN", 1.5, "Infinity"]}},
            {"name": "c", "arg": {"as_string": "-Infinity"}},  # a string stays one
        ],
    }
    doc = {"graph_module": {"graph": {"nodes": [node]}}, "schema_version": {}}
    down = reference_document(doc)
    assert down is not None
    args = [i["arg"] for i in down["graph_module"]["graph"]["nodes"][0]["inputs"]]
    assert args[0] == {"as_float": float("-inf")}
    assert args[1]["as_floats"][1:] == [1.5, float("inf")] and args[1]["as_floats"][0] != 0.0
    assert args[2] == {"as_string": "-Infinity"}
    text = json.dumps(down)  # JSON's non-standard tokens, as the reference's serializer
    assert '"as_float": -Infinity' in text and '"as_floats": [NaN, 1.5, Infinity]' in text


def test_non_finite_floats_round_trip(non_finite_path: Path) -> None:
    raw = zipfile.ZipFile(non_finite_path).read("edge_dialect_exported_program/forward")
    assert b'"-Infinity"' not in raw and b'"as_float": -Infinity' in raw
    assert b'"as_float": NaN' in raw and b'"as_float": Infinity' in raw
    program = dl.parse_etrecord(non_finite_path).edge_program()
    floats = _float_args(program)
    assert float("-inf") in floats and float("inf") in floats
    assert any(f != f for f in floats)  # NaN
    x = torch.tensor([[1.0, -2.0, 0.0], [-0.5, 0.25, 7.0]])
    for got, want in zip(program.module()(x), _NonFinite()(x), strict=True):
        torch.testing.assert_close(got, want, equal_nan=True)


_NON_FINITE_CHECK = """
import sys, torch
from executorch.devtools.etrecord import parse_etrecord
program = parse_etrecord(etrecord_path=sys.argv[1]).edge_dialect_program
args = [repr(a) for n in program.graph.nodes if n.op == "call_function"
        for a in [*n.args, *n.kwargs.values()] if isinstance(a, (float, str))]
print(args)
torch.save(list(program.module()(torch.load(sys.argv[2]))), sys.argv[3])
"""


@pytest.mark.slow
@needs_reference
def test_reference_reads_non_finite_floats(non_finite_path: Path, tmp_path: Path) -> None:
    """The reference's parse_etrecord gives the floats back (not the strings torch writes),
    and its edge program computes what the model does."""
    assert REFERENCE_PYTHON is not None, NO_REFERENCE
    x = torch.tensor([[1.0, -2.0, 0.0], [-0.5, 0.25, 7.0]])
    torch.save(x, tmp_path / "x.pt")
    files = [str(non_finite_path), str(tmp_path / "x.pt"), str(tmp_path / "out.pt")]
    proc = subprocess.run(
        [REFERENCE_PYTHON, "-c", _NON_FINITE_CHECK, *files],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    args = proc.stdout.strip().splitlines()[-1]
    assert "-inf" in args and "nan" in args and "Infinity" not in args, args
    for got, want in zip(torch.load(tmp_path / "out.pt"), _NonFinite()(x), strict=True):
        torch.testing.assert_close(got, want, equal_nan=True)
