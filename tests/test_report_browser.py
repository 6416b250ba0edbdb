"""The HTML report in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``,
driven by Selenium; skipped with the reason when they are missing).

Each page is opened from a file (no server, no network): no console errors or warnings;
one cluster per delegate call and one node per graph node; clicking a node (a real mouse
click) shows its rows; the rows table sorts and filters; the timeline draws the run's
slices. Screenshots of every view land in ``test-artifacts/report/`` (or
``$DL_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from report_browser import browser_or_skip, console_messages

from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager
from delegate_lens.report import write_report

ARTIFACTS = Path(os.environ.get("DL_TEST_ARTIFACTS") or REPO / "test-artifacts") / "report"


# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = browser_or_skip(str(tmp_path_factory.mktemp("chromium-profile")))
    try:
        yield driver
    finally:
        driver.quit()


def _report(
    vectors_dir: Path, tmp_path: Path, name: str, etrecord: bool = True
) -> tuple[Path, Inspector]:
    vector = vectors_dir / name
    debug = vector / "debug.bin"
    inspector = Inspector(
        etdump_path=vector / "etdump.etdp",
        etrecord=str(vector / "etrecord.bin") if etrecord else None,
        debug_buffer_path=debug if debug.exists() else None,
    )
    out = write_report(inspector, tmp_path / f"{name}.html")
    return out, inspector


def _open(driver: Any, path: Path) -> None:
    console_messages(driver)  # drop what an earlier page logged
    driver.get(path.as_uri())
    for _ in range(100):
        if driver.execute_script("return !!(window.dlReport && dlReport.current)"):
            return
        time.sleep(0.05)
    raise AssertionError(f"the report page did not start: {console_messages(driver)}")


def _show(driver: Any, view: str, shot: str) -> None:
    driver.find_element("css selector", f'.tab[data-view="{view}"]').click()
    time.sleep(0.2)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{shot}-{view}.png"))


def _click_node(driver: Any, node_id: str) -> None:
    """A real mouse click at the node's place on the canvas."""
    from selenium.webdriver.common.action_chains import ActionChains

    x, y = driver.execute_script(
        "var p = dlReport.cy.getElementById(arguments[0]).renderedPosition(); return [p.x, p.y];",
        node_id,
    )
    box = driver.find_element("id", "cy")
    size = box.size
    ActionChains(driver).move_to_element_with_offset(
        box, int(x - size["width"] / 2), int(y - size["height"] / 2)
    ).click().perform()
    time.sleep(0.2)


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
def test_graph_clusters_nodes_and_click_details(
    browser: Any, vectors_dir: Path, tmp_path: Path, name: str
) -> None:
    path, inspector = _report(vectors_dir, tmp_path, name)
    _open(browser, path)
    _show(browser, "graph", name)
    record = inspector.etrecord
    n_nodes = len(record.graph("forward").nodes)
    # open every module: one drawn node per graph node, one cluster per delegate call
    browser.execute_script("dlReport.setDepth(-1)")
    counts = browser.execute_script(
        "var cy = dlReport.cy; return [cy.nodes('.op').length, cy.nodes('.cluster').length,"
        " cy.nodes('.module').length, cy.edges().length];"
    )
    assert counts[:3] == [n_nodes, len(record.delegate_map["forward"]), 0]
    assert counts[3] > 0
    # the first operator with rows: a real click shows its rows and op type
    graph = browser.execute_script("return dlReport.data.graphs[0]")
    i = next(k for k, n in enumerate(graph["nodes"]) if n["rows"])
    browser.execute_script(
        "dlReport.cy.fit(dlReport.cy.getElementById(arguments[0]), 200)", f"n{i}"
    )
    _click_node(browser, f"n{i}")
    details = browser.find_element("id", "details").text
    node = graph["nodes"][i]
    assert node["name"] in details and node["op"] in details
    rows = browser.execute_script("return dlReport.data.rows.name")
    for r in node["rows"]:
        assert rows[r] in details
    assert f"{len(node['rows'])} row(s)" in details
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"{name}-graph-details.png"))
    assert console_messages(browser) == []


def test_big_graph_opens_collapsed_and_expands_on_click(
    browser: Any, vectors_dir: Path, tmp_path: Path
) -> None:
    path, inspector = _report(vectors_dir, tmp_path, "gpt_portable")
    _open(browser, path)
    n_nodes = len(inspector.etrecord.graph("forward").nodes)
    modules = browser.execute_script("return dlReport.cy.nodes('.module').map(n => n.id())")
    shown = browser.execute_script("return dlReport.cy.nodes().length")
    assert modules and shown < n_nodes / 2  # collapsed by module
    block = next(m for m in modules if m.endswith(":blocks.0"))
    members = browser.execute_script(
        "return dlReport.cy.getElementById(arguments[0]).data('members').length", block
    )
    _click_node(browser, block)
    after = browser.execute_script("return dlReport.cy.nodes().length")
    assert (
        after > shown
        and browser.execute_script("return dlReport.cy.getElementById(arguments[0]).length", block)
        == 0
    )
    assert members > 1
    assert console_messages(browser) == []


def test_rows_table_sorts_and_filters(browser: Any, vectors_dir: Path, tmp_path: Path) -> None:
    path, _ = _report(vectors_dir, tmp_path, "gpt_portable")
    _open(browser, path)
    _show(browser, "tables", "gpt_portable")

    def column(index: int) -> list[str]:
        return browser.execute_script(
            "return Array.from(document.querySelectorAll('#rows-table tbody tr'))"
            ".map(tr => tr.children[arguments[0]].textContent)",
            index,
        )

    headers = [th.text for th in browser.find_elements("css selector", "#rows-table th")]
    p50 = next(k for k, h in enumerate(headers) if h.startswith("p50"))
    browser.find_elements("css selector", "#rows-table th")[p50].click()
    values = [float(v) for v in column(p50) if v]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    browser.find_elements("css selector", "#rows-table th")[p50].click()
    values = [float(v) for v in column(p50) if v]
    assert values == sorted(values)
    name = next(k for k, h in enumerate(headers) if h == "name")
    browser.find_elements("css selector", "#rows-table th")[name].click()
    names = column(name)
    assert names == sorted(names, key=lambda s: s.lower()) or names == sorted(names)
    total = len(names)
    browser.find_element("id", "rows-filter").send_keys("layer_norm")
    time.sleep(0.1)
    filtered = column(name)
    assert 0 < len(filtered) < total
    assert all("layer_norm" in n or n == "OPERATOR_CALL" for n in filtered)
    assert console_messages(browser) == []


@pytest.mark.parametrize("etrecord", [True, False], ids=["etrecord", "etdump-alone"])
def test_timeline_draws_the_runs_slices(
    browser: Any, vectors_dir: Path, tmp_path: Path, etrecord: bool
) -> None:
    path, inspector = _report(vectors_dir, tmp_path, "mlp_xnnpack", etrecord=etrecord)
    _open(browser, path)
    if not etrecord:
        assert browser.find_element("id", "graph-empty").is_displayed() is False  # tables first
        browser.find_element("css selector", '.tab[data-view="graph"]').click()
        assert "No ETRecord" in browser.find_element("id", "graph-empty").text
    _show(browser, "timeline", "mlp_xnnpack" + ("" if etrecord else "-alone"))
    run = browser.execute_script(
        "return dlReport.data.timeline[+document.getElementById('timeline-run').value]"
    )
    table = inspector.tables[run["block"]]
    assert len(run["row"]) == int(table.block.has_perf.sum())
    assert browser.execute_script("return dlReport.timeline.drawn") == len(run["row"])
    painted = browser.execute_script(
        "var c = document.getElementById('timeline'), d = c.getContext('2d')"
        ".getImageData(0, 0, c.width, c.height).data, n = 0;"
        "for (var i = 0; i < d.length; i += 4) if (d[i+3] && (d[i] !== d[i+1] || d[i+1] !== d[i+2])) n++;"
        "return n;"
    )
    assert painted > 1000  # coloured slices, not an empty canvas
    # the wheel zooms in at the cursor: fewer slices are in view, then reset shows all again
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin

    canvas = browser.find_element("id", "timeline")
    origin = ScrollOrigin.from_element(canvas, -canvas.size["width"] // 2 + 5, 0)
    for _ in range(12):
        ActionChains(browser).scroll_from_origin(origin, 0, -120).perform()
    time.sleep(0.2)
    zoomed = browser.execute_script("return dlReport.timeline.drawn")
    assert 0 < zoomed < len(run["row"])
    browser.find_element("id", "timeline-reset").click()
    assert browser.execute_script("return dlReport.timeline.drawn") == len(run["row"])
    assert console_messages(browser) == []


@pytest.mark.slow
def test_big_vector_report_opens(browser: Any, vectors_dir: Path, tmp_path: Path) -> None:
    path, _ = _report(vectors_dir, tmp_path, "gpt_portable_big")
    _open(browser, path)  # the page starts (within _open's wait), however slow the machine
    for view in ("graph", "timeline", "tables"):
        _show(browser, view, "gpt_portable_big")
    assert browser.execute_script("return dlReport.timeline.drawn") > 0
    assert console_messages(browser) == []


@pytest.mark.torch
def test_demo_report_shows_fusion_and_decomposition(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from delegate_lens.backends_demo._demo import run_demo
    from delegate_lens.cli._demo_cmd import _write_report

    monkeypatch.delenv(AUTOLOAD_ENV)  # the demo backend's plugin parses its metadata
    reset_plugin_manager()
    result = run_demo(runs=3, out_dir=tmp_path / "demo", echo=lambda _: None, show_table=False)
    path = _write_report(result.paths, result.out_dir)
    _open(browser, path)
    _show(browser, "graph", "demo")
    counts = browser.execute_script(
        "var cy = dlReport.cy; return [cy.nodes('.cluster').length, cy.nodes('.fused').length,"
        " cy.nodes('.decomposed').map(n => n.data('label').split('\\n')[0]),"
        " cy.nodes('.fused').children().map(n => n.data('label').split('\\n')[0]).sort()];"
    )
    assert counts == [1, 1, ["tan"], ["linear", "relu"]]
    i = browser.execute_script(
        "return dlReport.data.graphs[0].nodes.findIndex(n => n.name === 'tan')"
    )
    _click_node(browser, f"n{i}")
    details = browser.find_element("id", "details").text
    assert "decomposed into" in details and "demo_sin_f32" in details
    _show(browser, "timeline", "demo")
    assert browser.execute_script("return dlReport.timeline.drawn") > 5
    assert console_messages(browser) == []


def _chain_inspector(n: int) -> Inspector:
    """``n`` operators in a chain, 25 per ``layers.<i>`` module (5 per ``.s<j>``), run twice."""
    import json

    from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dumps
    from delegate_lens.etrecord import ETRecord

    nodes = []
    for i in range(n):
        layer, sub = divmod(i, 25)
        nodes.append(
            {
                "name": f"op_{i}",
                "target": "executorch.exir.dialects.edge.ops.aten.add.Tensor",
                "inputs": [{"name": "self", "arg": {"as_tensor": {"name": f"op_{i - 1}"}}}],
                "outputs": [{"as_tensor": {"name": f"op_{i}"}}],
                "metadata": {
                    "debug_handle": str(i + 1),
                    "nn_module_stack": f"L__self__,,M;L__self__l{layer},layers.{layer},Block;"
                    f"L__self__l{layer}s{sub // 5},layers.{layer}.s{sub // 5},Sub",
                },
            }
        )
    key = "edge_dialect_exported_program/forward"
    entries = {
        "ETRECORD_V0": b"",
        key: json.dumps({"graph_module": {"graph": {"nodes": nodes}}}).encode(),
    }
    for suffix in ("_state_dict", "_constants", "_example_inputs"):
        entries[key + suffix] = b""
    entries["debug_handle_map"] = json.dumps(
        {"forward": {str(i): i + 1 for i in range(n)}}
    ).encode()
    entries["delegate_map"] = json.dumps({"forward": {}}).encode()
    runs = []
    for _ in range(2):
        events, t = [], 10
        for i in range(n):
            events.append(
                Event(
                    profile_event=ProfileEvent(
                        name="native_call_add.out",
                        instruction_id=i,
                        start_time=t + 5,
                        end_time=t + 105 + i,
                    )
                )
            )
            events.append(
                Event(
                    profile_event=ProfileEvent(
                        name="OPERATOR_CALL", instruction_id=i, start_time=t, end_time=t + 110 + i
                    )
                )
            )
            t += 120 + i
        events.append(
            Event(
                profile_event=ProfileEvent(
                    name="Method::execute",
                    instruction_id=0,
                    chain_index=-1,
                    start_time=0,
                    end_time=t + 10,
                )
            )
        )
        runs.append(RunData(name="Execute", events=events))
    return Inspector(
        etdump_data=dumps(ETDump(run_data=runs)), etrecord=ETRecord.from_entries(entries)
    )


def test_thousand_node_graph_opens_collapsed(browser: Any, tmp_path: Path) -> None:
    path = write_report(_chain_inspector(1000), tmp_path / "chain.html")
    _open(browser, path)  # the page starts (within _open's wait), however slow the machine
    counts = browser.execute_script(
        "var cy = dlReport.cy; return [cy.nodes('.module').length, cy.nodes('.op').length,"
        " dlReport.graphState.depth];"
    )
    assert counts == [40, 0, 1]  # 40 layers, each one node
    _show(browser, "graph", "chain1000")
    _click_node(browser, "m::layers.39")  # the last layer opens into its 5 sub-modules
    assert browser.execute_script("return dlReport.cy.nodes('.module').length") == 39 + 5
    assert console_messages(browser) == []
