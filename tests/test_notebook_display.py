"""Jupyter display: an Inspector, a numeric-gap table and a comparison show themselves
(``_repr_html_``), checked in the real headless Chromium of the report tests.

The three displays are put in one notebook-like page (cells 900 px wide) opened from a
file: the Inspector's report runs in its frame (graph drawn, timeline painted, tables
filled), nothing is fetched from the network, no console error, and each display fits its
cell. Without a browser: the HTML is built without importing torch or pandas.
Screenshots land in ``test-artifacts/notebook/`` (or ``$DL_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from report_browser import browser_or_skip, console_messages

from delegate_lens.compare import compare
from delegate_lens.inspector import Inspector

ARTIFACTS = Path(os.environ.get("DL_TEST_ARTIFACTS") or REPO / "test-artifacts") / "notebook"
CELL_WIDTH = 900

pytestmark = pytest.mark.usefixtures("builtin_plugins_only")


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A demo-backend run whose fp16 tan diverges: ETDump, debug buffer, ETRecord and the
    reference outputs' cache (made with torch, once)."""
    pytest.importorskip("torch")
    import torch

    import delegate_lens as dl
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.backends_demo._partitioner import DemoPartitioner
    from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager
    from delegate_lens.runtime import ETDumpGen, Program

    folder = tmp_path_factory.mktemp("notebook")
    saved = os.environ.get(AUTOLOAD_ENV)
    os.environ[AUTOLOAD_ENV] = "1"
    reset_plugin_manager()
    try:
        model, inputs = make_model("mlp")
        specs = [dl.CompileSpec("precision", b"fp16"), dl.CompileSpec("precision_kernels", b"div")]
        edge = dl.to_edge_transform_and_lower(
            torch.export.export(model, inputs),
            partitioner=[DemoPartitioner(specs)],
            generate_etrecord=True,
        )
        manager = edge.to_program()
        manager.get_etrecord().save(folder / "mlp.etrecord")
        tracer = ETDumpGen(debug_buffer_size=1 << 20)
        method = Program.load(manager.buffer).load_method("forward", event_tracer=tracer)
        for _ in range(3):
            method.execute(list(inputs))
        tracer.write(folder / "mlp.etdp", folder / "mlp.debug.bin")
        for name, step in (("base", 7), ("new", 11)):  # every event 11/7 as long in "new"
            ticks = itertools.count(0, step)
            timed = ETDumpGen(clock=lambda ticks=ticks: next(ticks))
            method = Program.load(manager.buffer).load_method("forward", event_tracer=timed)
            for _ in range(12):  # enough for the medians' confidence intervals
                method.execute(list(inputs))
            (folder / f"{name}.etdp").write_bytes(timed.get_etdump_data())
        files = {
            "etdump": folder / "mlp.etdp",
            "etrecord": folder / "mlp.etrecord",
            "debug": folder / "mlp.debug.bin",
            "base": folder / "base.etdp",
            "new": folder / "new.etdp",
        }
        _inspector(files).calculate_numeric_gap("MSE", cache=True, as_dataframe=False)
        files["cache"] = folder / "mlp.etrecord.numerics.npz"
        assert files["cache"].exists()
        return files
    finally:
        if saved is None:
            os.environ.pop(AUTOLOAD_ENV, None)
        else:
            os.environ[AUTOLOAD_ENV] = saved
        reset_plugin_manager()


def _inspector(files: dict[str, Path]) -> Inspector:
    return Inspector(
        etdump_path=files["etdump"],
        etrecord=str(files["etrecord"]),
        debug_buffer_path=files["debug"],
    )


def _comparison(files: dict[str, Path]) -> Any:
    return compare(
        files["base"],
        files["new"],
        base_etrecord=str(files["etrecord"]),
        new_etrecord=str(files["etrecord"]),
    )


def _displays(files: dict[str, Path]) -> dict[str, str]:
    inspector = _inspector(files)
    gap = inspector.calculate_numeric_gap(
        "MSE", aot_outputs=str(files["cache"]), as_dataframe=False
    )
    result = _comparison(files)
    return {
        "inspector": inspector._repr_html_(),
        "gap": gap._repr_html_(),
        "compare": result._repr_html_(),
    }


def test_html_is_made_without_torch_or_pandas(demo_files: dict[str, Path]) -> None:
    code = f"""
import sys
from delegate_lens.compare import compare
from delegate_lens.inspector import Inspector
ins = Inspector(etdump_path={str(demo_files["etdump"])!r}, etrecord={str(demo_files["etrecord"])!r},
                debug_buffer_path={str(demo_files["debug"])!r})
gap = ins.calculate_numeric_gap("MSE", aot_outputs={str(demo_files["cache"])!r}, as_dataframe=False)
pages = [ins._repr_html_(), gap._repr_html_(), compare(ins, ins)._repr_html_()]
assert all(len(p) > 1000 for p in pages)
print(sorted(m for m in ("torch", "pandas") if m in sys.modules))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_gap_and_compare_html_say_what_their_objects_say(demo_files: dict[str, Path]) -> None:
    inspector = _inspector(demo_files)
    gap = inspector.calculate_numeric_gap(
        "MSE", aot_outputs=str(demo_files["cache"]), as_dataframe=False
    )
    page = gap._repr_html_()
    assert "<script" not in page and "<iframe" not in page  # shows in untrusted notebooks
    assert page.count("<rect") == len(gap)  # one bar per row (all gaps are positive here)
    assert page.count('<tr class="first">') == 1
    assert "first divergence: tan" in page
    result = _comparison(demo_files)
    assert result.regressions
    html = result._repr_html_()
    assert "<script" not in html
    assert html.count("<circle") == len(result.rows)
    assert html.count('<tr class="slower">') == len(result.regressions)
    assert f"{len(result.rows)} rows matched" in html


# --------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = browser_or_skip(str(tmp_path_factory.mktemp("chromium-profile")))
    try:
        yield driver
    finally:
        driver.quit()


def _notebook_page(displays: dict[str, str], path: Path) -> Path:
    cells = "".join(
        f'<div class="cell" id="cell-{name}"><div class="output">{html}</div></div>'
        for name, html in displays.items()
    )
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><style>"
        f"body{{margin:0;background:#fff}} .cell{{width:{CELL_WIDTH}px;margin:16px;"
        "padding:8px;border-left:4px solid #ddd}}</style></head>"
        f"<body>{cells}</body></html>",
        encoding="utf-8",
    )
    return path


def _wait(driver: Any, script: str, what: str) -> None:
    for _ in range(200):
        if driver.execute_script(script):
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: {console_messages(driver)}")


def _shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def test_displays_render_in_chromium(
    browser: Any, demo_files: dict[str, Path], tmp_path: Path
) -> None:
    page = _notebook_page(_displays(demo_files), tmp_path / "notebook.html")
    console_messages(browser)
    browser.get(page.as_uri())
    # every display fits its cell: no wider than the cell, no taller than a screen
    for name in ("inspector", "gap", "compare"):
        box = browser.execute_script(
            "var r = document.querySelector('#cell-' + arguments[0] + ' .output')"
            ".firstElementChild.getBoundingClientRect(); return [r.width, r.height];",
            name,
        )
        assert 0 < box[0] <= CELL_WIDTH and 100 < box[1] <= 900, (name, box)
    # the gap's chart and table, the comparison's chart and tables, drawn without a script
    assert browser.execute_script("return document.querySelectorAll('.dl-gap-chart rect').length")
    first = browser.execute_script(
        "return Array.from(document.querySelectorAll('#cell-gap tr.first td'), td => td.textContent)"
    )
    assert first[1] == "tan" and first[-1] == "first divergence"
    assert browser.execute_script(
        "return document.querySelectorAll('.dl-ratio-chart circle').length"
    )
    # the report runs in its frame, isolated from the page
    assert browser.execute_script("return window.dlReport === undefined")
    frame = browser.find_element("css selector", "#cell-inspector iframe")
    browser.switch_to.frame(frame)
    try:
        _wait(browser, "return !!(window.dlReport && dlReport.current)", "the report did not start")
        assert browser.execute_script("return dlReport.current") == "graph"
        n_nodes = browser.execute_script("return dlReport.cy.nodes('.op').length")
        assert n_nodes > 0
        assert browser.execute_script("return dlReport.cy.nodes('.cluster').length") == 1
        # the graph gets most of the frame's height
        assert browser.execute_script("return document.getElementById('cy').clientHeight") > 300
        _shot(browser, "inspector-graph")
        browser.find_element("css selector", '.tab[data-view="timeline"]').click()
        _wait(browser, "return dlReport.timeline.drawn > 0", "the timeline drew nothing")
        _shot(browser, "inspector-timeline")
        browser.find_element("css selector", '.tab[data-view="tables"]').click()
        rows = browser.execute_script(
            "return document.querySelectorAll('#rows-table tbody tr').length"
        )
        assert rows > 5
        _shot(browser, "inspector-tables")
        # offline: every resource the page loaded is inline (no http, no file)
        loaded = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert [u for u in loaded if not u.startswith(("data:", "about:", "blob:"))] == []
    finally:
        browser.switch_to.default_content()
    assert console_messages(browser) == []
    browser.execute_script("document.getElementById('cell-gap').scrollIntoView()")
    _shot(browser, "gap-and-compare")


def test_report_doc_notebook_example_runs(
    vectors_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/report.md, "In a notebook": its ``ipython`` block runs and prints what it says."""
    import contextlib
    import io
    import shutil

    from docblocks import DOCS, blocks

    for name in ("etdump.etdp", "etrecord.bin", "debug.bin"):
        shutil.copy(vectors_dir / "mlp_xnnpack" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    [(line, source)] = blocks(DOCS / "report.md", "ipython")
    namespace: dict[str, Any] = {"__name__": "docs_report_notebook"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, f"report.md:{line}", "exec"), namespace)
    assert out.getvalue() == '<iframe class="dl-notebook"\n'
    assert "height:900px" in namespace["taller"] and "mlp on XNNPACK" in namespace["taller"]
