"""The HTML report's data model and page, without a browser: reference vectors, the demo's
files (fusion, decomposition), an ETDump alone, the command line."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from delegate_lens.cli import main
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager
from delegate_lens.report import build_report_data, render_html, write_report
from delegate_lens.report._html import VENDOR_SCRIPTS
from delegate_lens.report._timeline import MAX_RUNS_PER_BLOCK

VECTORS = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable")


# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")


def _inspector(vector: Path, etrecord: bool = True) -> Inspector:
    debug = vector / "debug.bin"
    return Inspector(
        etdump_path=vector / "etdump.etdp",
        etrecord=str(vector / "etrecord.bin") if etrecord else None,
        debug_buffer_path=debug if debug.exists() else None,
    )


def _page_data(html: str) -> Any:
    match = re.search(
        r'<script id="report-data" type="application/json">(.*?)</script>', html, re.S
    )
    assert match, "no report-data element"
    return json.loads(match.group(1))


@pytest.mark.parametrize("name", VECTORS)
def test_rows_graph_and_clusters_follow_the_inspector_and_etrecord(
    vectors_dir: Path, name: str
) -> None:
    inspector = _inspector(vectors_dir / name)
    data = build_report_data(inspector)
    record = inspector.etrecord
    # every row of every block, in block order
    names = [e.name for b in inspector.event_blocks for e in b.events]
    assert data["rows"]["name"] == names
    p50 = [
        e.perf_data.p50 if e.perf_data else None for b in inspector.event_blocks for e in b.events
    ]
    assert [None if v is None else pytest.approx(v, rel=1e-8) for v in p50] == data["rows"]["p50"]
    [graph] = data["graphs"]
    nodes = record.graph("forward").nodes
    assert [n["name"] for n in graph["nodes"]] == [n.name for n in nodes]
    # one cluster per delegate call, holding the nodes of the call's debug handles
    calls = record.delegate_map["forward"]
    assert [c["instruction_id"] for c in graph["clusters"]] == sorted(calls)
    for cluster in graph["clusters"]:
        handles = set(record.debug_handle_map["forward"][cluster["instruction_id"]])
        assert {nodes[i].debug_handle for i in cluster["nodes"]} == handles
        assert cluster["backend"] == calls[cluster["instruction_id"]]["name"]
    # edges join producers to consumers and point forward in the (topological) graph
    assert graph["edges"] and all(a < b for a, b in graph["edges"])
    summary = data["summary"][0]
    assert sum(summary["total"]) == len(nodes)
    assert summary["total"][0] == sum(len(c["nodes"]) for c in graph["clusters"])


@pytest.mark.parametrize("name", VECTORS)
def test_graph_view_is_the_etrecord_graph_joined_to_the_rows(vectors_dir: Path, name: str) -> None:
    """The report draws its graph from the Inspector's graph view alone."""
    from delegate_lens.etdump import FRAMEWORK_EVENTS

    inspector = _inspector(vectors_dir / name)
    record = inspector.etrecord
    view = inspector.graph_view()
    assert view is not None and view.origin == record.origin
    [graph] = view.methods
    assert graph.method == "forward" and record.methods == ("forward",)
    nodes = record.graph("forward").nodes
    assert [(n.name, n.op_type, n.debug_handle, n.module_stack) for n in graph.nodes] == [
        (n.name, n.op_type, n.debug_handle, n.module_stack) for n in nodes
    ]
    calls = record.delegate_map["forward"]
    assert [c.instruction_id for c in graph.delegate_calls] == sorted(calls)
    for call in graph.delegate_calls:
        assert call.backend == calls[call.instruction_id]["name"]
        assert call.nodes and {nodes[i].debug_handle for i in call.nodes} <= set(call.handles)
    # a node's rows: every row but the framework's whose debug handles hold the node's
    for node in graph.nodes:
        expected = [
            (table.index, j)
            for table in inspector.tables
            for j, link in enumerate(table.links)
            if table.keys[j].name not in FRAMEWORK_EVENTS
            and node.debug_handle is not None
            and node.debug_handle
            in (
                [link.debug_handles]
                if isinstance(link.debug_handles, int)
                else link.debug_handles or ()
            )
        ]
        assert list(node.rows) == expected
    assert sum(len(n.rows) for n in graph.nodes) > 0
    assert _inspector(vectors_dir / name, etrecord=False).graph_view() is None


def test_portable_node_times_add_up_to_the_kernels(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir / "gpt_portable")
    data = build_report_data(inspector)
    [graph] = data["graphs"]
    main_block = graph["main_block"]
    events = inspector.event_blocks[main_block].events
    kernels = [
        sum(e.perf_data.raw)
        for e in events
        if e.name.startswith("native_call_") and e.debug_handles is not None
    ]
    execute = next(sum(e.perf_data.raw) for e in events if e.name == "Method::execute")
    # every kernel is charged to the one node of the op it ran, nothing else is: no
    # OPERATOR_CALL, no view sharing the addmm's handle (a view_copy kernel of a handle
    # with two view_copy nodes goes to the one program order says it ran)
    shares = graph["measures"]["share"]
    attribution = inspector.get_attribution()[main_block]
    assert all(len(p) <= 1 for p in attribution.row_positions)
    assert math.isclose(sum(shares.values()), sum(kernels) / execute, rel_tol=1e-6)
    assert max(shares.values()) < 1
    # no delegate: everything is portable
    share = next(s for s in data["shares"] if s["block"] == main_block)
    assert share["delegated_share"] == 0
    runs = inspector.tables[main_block].n_runs
    assert share["portable"] == pytest.approx(sum(kernels) / runs, rel=1e-6)
    assert share["execute"] == pytest.approx(execute / runs, rel=1e-6)
    assert data["summary"][0]["num_delegated_subgraphs"] == 0
    # a kernel's time goes to the op it is named after, not the views sharing its handle
    top = data["top_operators"]
    assert top[0]["op_type"] == "aten.addmm.default"
    assert all(isinstance(o["count"], int) for o in top)
    assert {o["denominator"] for o in top} == {"Method::execute"}
    assert sum(o["share"] for o in top) <= 1 + 1e-9
    hottest = max(graph["measures"]["p50"], key=graph["measures"]["p50"].get)
    assert hottest.startswith("aten_addmm_default")


def test_xnnpack_call_time_is_unattributed_not_spread_over_its_cluster(
    vectors_dir: Path,
) -> None:
    # XNNPACK gave no Debug Handle Map: its events link to no node; what they do not
    # explain of the call is the backend's unattributed time, on no node
    inspector = _inspector(vectors_dir / "mlp_xnnpack")
    data = build_report_data(inspector)
    [graph] = data["graphs"]
    block = inspector.event_blocks[graph["main_block"]]
    kernel = next(e for e in block.events if e.name.startswith("native_call_"))
    values = graph["measures"]["p50"]
    assert list(values) == ["dim_order_ops__to_dim_order_copy_default"]
    assert math.isclose(values["dim_order_ops__to_dim_order_copy_default"], kernel.perf_data.p50)
    top = {o["op_type"]: o for o in data["top_operators"]}
    assert "DELEGATE_CALL" not in top
    assert top["XnnpackBackend (unattributed)"]["kind"] == "unattributed"
    assert math.isclose(sum(o["share"] for o in data["top_operators"]), 1.0, rel_tol=1e-6)


def test_extra_measures_colour_the_graph_by_node_name(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir / "mlp_xnnpack")
    gap = {"aten_linear_default": 0.25, "aten_add_tensor": 1e-3}
    data = build_report_data(inspector, extra_measures={"numeric gap": gap})
    assert data["graphs"][0]["measures"]["numeric gap"] == gap
    assert list(data["graphs"][0]["measures"]) == ["p50", "share", "numeric gap"]


def test_timeline_samples_runs_and_nests_slices(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir / "gpt_portable")
    data = build_report_data(inspector)
    timeline = data["timeline"]
    execute_block = next(b for b in data["blocks"] if b["runs"] == 50)
    sampled = [r for r in timeline if r["block"] == execute_block["index"]]
    assert 3 <= len(sampled) <= MAX_RUNS_PER_BLOCK
    whys = ", ".join(r["why"] for r in sampled)
    for why in ("first", "fastest", "median", "slowest", "last"):
        assert why in whys
    # the slowest sampled run is the slowest of the block
    table = inspector.tables[execute_block["index"]]
    execute_row = next(j for j, k in enumerate(table.keys) if k.name == "Method::execute")
    slowest = next(r for r in sampled if "slowest" in r["why"])
    assert slowest["run"] == int(table.block.runs[table.samples[execute_row].argmax()])
    rows = data["rows"]
    for run in sampled:
        assert len(run["row"]) == int(table.block.has_perf.sum())
        top = [i for i, d in enumerate(run["depth"]) if d == 0]
        assert [rows["name"][run["row"][i]] for i in top] == ["Method::execute"]
        end = run["start"][top[0]] + run["dur"][top[0]]
        assert all(s + d <= end * (1 + 1e-9) for s, d in zip(run["start"], run["dur"]))


def test_chosen_runs_join_the_timeline_samples(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir / "gpt_portable", etrecord=False)
    data = build_report_data(inspector, runs=[7, 1])
    whys = {r["run"]: r["why"] for r in data["timeline"]}
    assert whys[7] == "chosen" and whys[1] == "first, chosen"
    assert [r["run"] for r in data["timeline"]] == sorted(whys)


def test_etdump_alone_gives_tables_and_timeline_without_graph(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir / "mlp_xnnpack", etrecord=False)
    data = build_report_data(inspector)
    assert data["graphs"] == [] and data["summary"] == []
    assert data["meta"]["etrecord"] is None
    assert len(data["rows"]["name"]) == sum(t.n_rows for t in inspector.tables)
    assert data["timeline"]
    # unlinked: the delegate's events count under their names, the call only for the rest
    names = {o["op_type"] for o in data["top_operators"]}
    assert "DELEGATE_CALL (unattributed)" in names and "DELEGATE_CALL" not in names
    assert "Add (ND) #1" in names
    assert sum(o["share"] for o in data["top_operators"]) <= 1 + 1e-9


def test_page_is_self_contained_and_holds_the_data(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir / "mlp_xnnpack")
    data = build_report_data(inspector, title="</script><b>x</b>")
    html = render_html(data)
    assert _page_data(html) == json.loads(json.dumps(data))
    assert "<script src" not in html and "<link" not in html
    assert not re.search(
        r"""(src|href)=["']?https?:""", html.replace('href="https://ui.perfetto.dev"', "")
    )
    assert "<title>&lt;/script&gt;&lt;b&gt;x&lt;/b&gt; · delegate-lens report</title>" in html
    for name in VENDOR_SCRIPTS:
        assert f"/* {name} */" in html
    from importlib import resources

    vendor = resources.files("delegate_lens.report").joinpath("vendor")
    for name in ("cytoscape", "dagre", "cytoscape-dagre"):
        assert "Permission is hereby granted" in vendor.joinpath(f"{name}.LICENSE").read_text()


def test_write_report_replaces_atomically(vectors_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    out.write_text("old")
    path = write_report(_inspector(vectors_dir / "conv_xnnpack"), out)
    assert path == out
    assert _page_data(out.read_text())["meta"]["events"] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_cli_writes_the_report_and_prints_its_path(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vector = vectors_dir / "mlp_xnnpack"
    out = tmp_path / "report.html"
    args = ["report", str(vector / "etdump.etdp"), "--etrecord", str(vector / "etrecord.bin")]
    assert main([*args, "--debug-buffer", str(vector / "debug.bin"), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    data = _page_data(out.read_text())
    assert data["rows"]["n_debug_data"].count(0) < len(data["rows"]["n_debug_data"])


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing-folder", "does not exist"),
        ("not-an-etdump", "etdump"),
        ("bad-etrecord", "etrecord"),
        ("missing-run", "run 99 is not in the etdump"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_and_no_file(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    vector = vectors_dir / "mlp_xnnpack"
    etdump, etrecord = vector / "etdump.etdp", vector / "etrecord.bin"
    out = tmp_path / "report.html"
    if case == "missing-folder":
        out = tmp_path / "nowhere" / "report.html"
    elif case == "missing-run":
        pass
    elif case == "not-an-etdump":
        etdump = tmp_path / "x.etdp"
        etdump.write_bytes(b"not an etdump at all")
    else:
        etrecord = tmp_path / "x.bin"
        etrecord.write_bytes(b"PK junk")
    more = ["--run", "99"] if case == "missing-run" else []
    with pytest.raises(SystemExit) as exc:
        main(["report", str(etdump), "--etrecord", str(etrecord), "-o", str(out), *more])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1 and errors[0].startswith("error: ")
    assert message in err.lower()
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow
def test_big_vector_report_samples_the_timeline(vectors_dir: Path, tmp_path: Path) -> None:
    vector = vectors_dir / "gpt_portable_big"
    out = tmp_path / "big.html"
    assert (
        main(
            [
                "report",
                str(vector / "etdump.etdp"),
                "--etrecord",
                str(vector / "etrecord.bin"),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    data = _page_data(out.read_text())
    assert data["meta"]["runs"] == 2001
    assert len(data["timeline"]) <= MAX_RUNS_PER_BLOCK * len(data["blocks"])
    assert sum(len(r["row"]) for r in data["timeline"]) < 2000
    assert out.stat().st_size < 2_000_000


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch")
    from delegate_lens.backends_demo._demo import run_demo

    result = run_demo(
        runs=3, out_dir=tmp_path_factory.mktemp("demo"), echo=lambda _: None, show_table=False
    )
    return result.paths


@pytest.mark.torch
def test_demo_fusion_and_decomposition_are_visible(
    demo_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(AUTOLOAD_ENV)  # the demo backend's plugin parses its metadata
    reset_plugin_manager()
    inspector = Inspector(
        etdump_path=demo_files["etdump"],
        etrecord=str(demo_files["etrecord"]),
        debug_buffer_path=demo_files["debug_buffer"],
    )
    data = build_report_data(inspector)
    [graph] = data["graphs"]
    names = [n["name"] for n in graph["nodes"]]
    [cluster] = graph["clusters"]
    assert cluster["backend"] == "DemoBackend"
    assert sorted(names[i] for i in cluster["nodes"]) == [
        "add",
        "linear",
        "linear_1",
        "relu",
        "tan",
    ]
    # linear + relu fused under one identifier; tan decomposed into three events
    [group] = graph["groups"]
    assert sorted(names[i] for i in group["nodes"]) == ["linear", "relu"]
    tan = graph["nodes"][names.index("tan")]
    assert tan["decomposed"] is not None and len(tan["decomposed"]) == 3
    assert graph["nodes"][names.index("_softmax")]["cluster"] is None
    # node times: the per-operator delegate events, never the whole-partition event; a
    # fused group's time shows whole on each of its nodes (unsplit)
    block = inspector.event_blocks[graph["main_block"]]
    per_op = [
        e
        for e in block.events
        if e.is_delegated_op and e.debug_handles is not None and len(e.debug_handles) < 5
    ]
    values = graph["measures"]["p50"]
    [fused] = [e for e in per_op if len(set(e.op_types)) == 2]
    assert values["linear"] == pytest.approx(fused.perf_data.p50, rel=1e-6)
    assert values["relu"] == pytest.approx(fused.perf_data.p50, rel=1e-6)
    tan = np.sum([e.perf_data.raw for e in per_op if e.op_types == ["aten.tan.default"]], axis=0)
    assert values["tan"] == pytest.approx(float(np.median(tan)), rel=1e-6)
    kernel = next(e.perf_data.p50 for e in block.events if e.name.startswith("native_call_"))
    assert values["_softmax"] == pytest.approx(kernel, rel=1e-6)
    # parsed delegate metadata of the first sample, per delegate row
    kernels = {m["kernel"] for m in data["metadata"].values()}
    assert "demo_linear_relu_f32" in kernels


@pytest.mark.torch
def test_two_methods_give_two_graphs_each_with_its_own_runs() -> None:
    from two_methods import traced_encoder_decoder

    manager, tracer = traced_encoder_decoder(runs=3)
    inspector = Inspector(etdump_data=tracer.get_etdump_data(), etrecord=manager.get_etrecord())
    data = build_report_data(inspector)
    graphs = {g["method"]: g for g in data["graphs"]}
    assert set(graphs) == {"forward", "decode"}
    for method, graph in graphs.items():
        assert data["blocks"][graph["main_block"]]["method"] == method
        linked = {r for n in graph["nodes"] for r in n["rows"]}
        assert linked
        assert {data["blocks"][data["rows"]["block"][r]]["method"] for r in linked} == {method}
        assert graph["measures"]["p50"]
    ops = {n["op"] for n in graphs["decode"]["nodes"]}
    assert "aten.tan.default" in ops and "aten.linear.default" not in ops
    assert "<script" in render_html(data)


def test_browser_tests_skip_with_a_reason_without_chromium(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("selenium")
    from report_browser import browser_or_skip

    monkeypatch.setenv("DL_CHROMIUM", str(tmp_path / "no-chromium"))
    with pytest.raises(pytest.skip.Exception, match=r"Chromium is missing .*apt-get install"):
        browser_or_skip(str(tmp_path))
