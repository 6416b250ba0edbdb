"""delegate-lens-model-explorer: ``inspect --format model-explorer -o DIR`` on the shared
vectors and the demo, checked against the ETRecord, the Inspector and Model Explorer's own
dataclasses (``ai-edge-model-explorer``, a dev dependency; that cross-check skips without it)."""

from __future__ import annotations

import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from delegate_lens_model_explorer import delegate_calls, write_model_explorer

from delegate_lens.cli import main
from delegate_lens.etrecord import parse_etrecord
from delegate_lens.exporters import get_exporters
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import AUTOLOAD_ENV, apply_plugin_options, reset_plugin_manager

VECTORS = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def vectors_dir() -> Path:
    """The repository's reference vectors (``tests/data/vectors``), unpacked once."""
    folder: Path = runpy.run_path(str(REPO / "tests" / "data" / "vectors" / "unpack.py"))[
        "unpack"
    ]()
    return folder


def export(out: Path, etdump: Path, *extra: str) -> int:
    return main(["inspect", str(etdump), "-f", "model-explorer", "-o", str(out), *extra])


def load(folder: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module", params=VECTORS)
def vector_out(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path
) -> tuple[Path, dict[str, Any]]:
    folder = vectors_dir / request.param
    out = tmp_path_factory.mktemp(request.param) / "me"
    assert export(out, folder / "etdump.etdp", "--etrecord", str(folder / "etrecord.bin")) == 0
    return folder, load(out)


def test_exporter_is_found_through_its_entry_point() -> None:
    exporter = get_exporters()["model-explorer"]
    assert exporter.folder and exporter.write is write_model_explorer


def test_graph_mirrors_the_etrecord(vector_out: tuple[Path, dict[str, Any]]) -> None:
    folder, files = vector_out
    record = parse_etrecord(folder / "etrecord.bin")
    graphs = files["graph.json"]["graphs"]
    assert [g["id"] for g in graphs] == list(record.methods)
    for graph in graphs:
        info = record.graph(graph["id"])
        nodes = {node["id"]: node for node in graph["nodes"]}
        assert len(nodes) == len(graph["nodes"])  # unique ids
        ops = [n for n in graph["nodes"] if n["label"] not in ("input", "output")]
        assert [n["id"] for n in ops] == [node.name for node in info.nodes]
        for node, op in zip(info.nodes, ops):
            attrs = {kv["key"]: kv["value"] for kv in op["attrs"]}
            assert attrs["target"] == node.target
            assert attrs.get("debug_handle") == (
                None if node.debug_handle is None else str(node.debug_handle)
            )
            assert attrs.get("stack_trace") == node.stack_trace
            assert op["namespace"].endswith(node.module_path.replace(".", "/"))
        for node in graph["nodes"]:  # every edge starts at a node of the graph
            for edge in node.get("incomingEdges", []):
                assert edge["sourceNodeId"] in nodes
        # an operator has incoming edges exactly when it reads a tensor
        raw = json.loads(record.entry(info.entry))["graph_module"]["graph"]["nodes"]
        for op, raw_node in zip(ops, raw):
            reads = '"as_tensor' in json.dumps(raw_node["inputs"])
            assert bool(op.get("incomingEdges")) == reads, op["id"]
        output = graph["nodes"][-1]
        assert output["label"] == "output" and output["incomingEdges"]
        # one group per delegate call, around exactly the nodes of its handles
        calls = delegate_calls(record, graph["id"])
        groups = {
            n["namespace"].split("/")[0] for n in ops if "[call " in n["namespace"].split("/")[0]
        }
        assert groups == {call.namespace for call in calls if call.handles & set(info.handles)}
        for call in calls:
            inside = {n["id"] for n in ops if n["namespace"].split("/")[0] == call.namespace}
            assert inside == {
                node.name
                for node in info.nodes
                if node.debug_handle in call.handles
                and not any(
                    c.instruction_id < call.instruction_id and node.debug_handle in c.handles
                    for c in calls
                )
            }


def test_overlays_address_graph_nodes(vector_out: tuple[Path, dict[str, Any]]) -> None:
    folder, files = vector_out
    node_ids = {g["id"]: {n["id"] for n in g["nodes"]} for g in files["graph.json"]["graphs"]}
    assert {"latency_p50.json", "latency_avg.json", "share_of_run.json"} <= set(files)
    assert ("delegate.json" in files) == (folder.name.endswith("xnnpack"))
    for name, data in files.items():
        if name == "graph.json":
            continue
        for graph_id, graph_data in data.items():
            assert graph_data["results"] and set(graph_data["results"]) <= node_ids[graph_id]
    for graph_id, p50 in files["latency_p50.json"].items():
        share = files["share_of_run.json"][graph_id]["results"]
        for node_id, result in p50["results"].items():
            assert result["value"] > 0 and 0 < share[node_id]["value"] <= 100


def test_files_load_into_model_explorers_dataclasses(
    vector_out: tuple[Path, dict[str, Any]],
) -> None:
    dacite = pytest.importorskip("dacite")
    builder = pytest.importorskip("model_explorer.graph_builder")
    node_data = pytest.importorskip("model_explorer.node_data_builder")
    _, files = vector_out
    strict = dacite.Config(strict=True)
    collection = dacite.from_dict(builder.GraphCollection, files["graph.json"], config=strict)
    assert len(collection.graphs) == len(files["graph.json"]["graphs"])
    for name, data in files.items():
        if name == "graph.json":
            continue
        # Model Explorer types a value as a number; its viewer also takes strings (the
        # delegate overlay's values are the call's group names)
        config = dacite.Config(strict=True, check_types=not name.startswith("delegate"))
        model = node_data.ModelNodeData(
            graphsData={
                k: dacite.from_dict(node_data.GraphNodeData, v, config=config)
                for k, v in data.items()
            }
        )
        again = json.loads(model.to_json_string())
        for graph_id, graph_data in data.items():  # Model Explorer writes back what we wrote
            assert {k: again[graph_id][k] for k in graph_data} == graph_data


def test_mlp_vector_groups_the_xnnpack_call(vectors_dir: Path, tmp_path: Path) -> None:
    folder = vectors_dir / "mlp_xnnpack"
    assert export(tmp_path, folder / "etdump.etdp", "--etrecord", str(folder / "etrecord.bin")) == 0
    files = load(tmp_path)
    graph = files["graph.json"]["graphs"][0]
    assert graph["groupNodeAttributes"]["XnnpackBackend[call 1]"]["debug_handles"] == "1,2,3,4,5"
    delegated = files["delegate.json"]["forward"]["results"]
    assert set(delegated) == {
        "aten_linear_default",
        "aten_relu_default",
        "aten_linear_default_1",
        "aten_relu_default_1",
        "dim_order_ops__to_dim_order_copy_default",
        "aten_add_tensor",
    }


def test_without_etrecord_or_folder_is_one_line_error(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etdump = vectors_dir / "mlp_xnnpack" / "etdump.etdp"
    with pytest.raises(SystemExit) as exc:
        export(tmp_path / "me", etdump)
    assert exc.value.code == 2
    assert "--etrecord" in capsys.readouterr().err.strip()
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    with pytest.raises(SystemExit):
        main(["inspect", str(etdump), "-f", "model-explorer"])
    assert "-o DIR" in capsys.readouterr().err
    a_file = tmp_path / "me.txt"
    a_file.write_text("mine")
    with pytest.raises(SystemExit):
        export(a_file, etdump, "--etrecord", str(etdump.parent / "etrecord.bin"))
    assert "writes a folder" in capsys.readouterr().err
    assert a_file.read_text() == "mine"


def test_existing_folder_gets_the_files_and_a_failure_leaves_it_alone(
    vectors_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = vectors_dir / "mlp_xnnpack"
    out = tmp_path / "me"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    args = ("--etrecord", str(folder / "etrecord.bin"))
    assert export(out, folder / "etdump.etdp", *args) == 0
    assert {"graph.json", "keep.txt", "latency_p50.json"} <= {p.name for p in out.iterdir()}

    import delegate_lens_model_explorer.overlays as overlays

    def broken(*_: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(overlays, "build_overlays", broken)
    fresh = tmp_path / "fresh"
    with pytest.raises(SystemExit):
        export(fresh, folder / "etdump.etdp", *args)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["me"]  # no fresh/, no temporary


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    pytest.importorskip("torch")
    mp = pytest.MonkeyPatch()
    mp.setenv(AUTOLOAD_ENV, "1")
    apply_plugin_options(["delegate_lens.backends_demo._plugin"])
    try:
        from delegate_lens.backends_demo._demo import run_demo

        out = tmp_path_factory.mktemp("demo")
        result = run_demo("mlp", runs=3, out_dir=out, echo=lambda line: None, show_table=False)
        yield dict(result.paths)
    finally:
        reset_plugin_manager()
        mp.undo()


@pytest.mark.slow
@pytest.mark.torch
def test_demo_decomposition_sums_its_events_and_gap_is_drawn(
    demo_files: dict[str, Path], tmp_path: Path
) -> None:
    inspector = Inspector(
        etdump_path=demo_files["etdump"],
        etrecord=str(demo_files["etrecord"]),
        debug_buffer_path=demo_files["debug_buffer"],
    )
    # no cached reference outputs yet: no numeric_gap overlay (an exporter runs no torch)
    (tmp_path / "before").mkdir()
    write_model_explorer(inspector, tmp_path / "before")
    assert not (tmp_path / "before" / "numeric_gap.json").exists()
    gaps = inspector.calculate_numeric_gap(cache=True, as_dataframe=False)  # writes the cache
    (tmp_path / "after").mkdir()
    written = write_model_explorer(inspector, tmp_path / "after")
    assert written[0].name == "graph.json"
    files = load(tmp_path / "after")
    drawn = files["numeric_gap.json"]["forward"]["results"]
    expected: dict[str, float] = {}
    for row in gaps.rows:
        largest = max(row["gap"])
        for op in row["aot_ops"]:
            expected[op] = max(expected.get(op, largest), largest)
    # every node named in a row gets that row's largest gap (ops the graph names otherwise,
    # e.g. the ATen "softmax" for the edge "_softmax", have no node to draw on)
    assert drawn == {op: {"value": value} for op, value in expected.items() if op in drawn}
    assert {"linear", "tan"} <= set(drawn)
    # the demo backend decomposes tan into identifiers 2, 3 and 4: the node's time per run
    # is the sum of those three delegate events, not the whole delegate call; p50 over runs
    block = next(b for b in inspector.event_blocks if b.method == "forward")
    by_id = {e.delegate_debug_identifier: e for e in block.events if e.is_delegated_op}
    p50 = files["latency_p50.json"]["forward"]["results"]
    tan = np.sum([by_id[i].perf_data.raw for i in (2, 3, 4)], axis=0)  # type: ignore[union-attr]
    assert p50["tan"]["value"] == pytest.approx(float(np.median(tan)))
    assert p50["linear_1"]["value"] == pytest.approx(by_id[1].perf_data.p50)  # type: ignore[union-attr]
    assert files["delegate.json"]["forward"]["results"]["tan"]["value"] == "DemoBackend[call 0]"
    assert "_softmax" not in files["delegate.json"]["forward"]["results"]
    identifiers = files["delegate_identifier.json"]["forward"]["results"]
    assert identifiers["tan"] == {"value": "2,3,4,6"}  # decomposed, and the whole-call event 6
    assert identifiers["linear_1"] == {"value": "1,6"}
