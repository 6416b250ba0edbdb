"""The notebook displays' layout in a page like an exported notebook (nbconvert's HTML), in
the real headless Chromium of the report tests (skipped with the reason without one).

The page puts each display in an output of a cell 900 px wide under the rules JupyterLab's
rendered-HTML style gives every output (tables laid out ``fixed``, cells padded,
``white-space: normal``, right-aligned, ``svg { height: auto }``), as an exported notebook
has them. Measured in the browser:

* the Inspector's graph (Cytoscape's canvases in the report's frame): the pixels it paints
  fill most of the graph's box, centred, nothing at its edges, and the delegate cluster's
  title lies inside the box - also when the output is laid out only after the report
  started (hidden at first) or is widened afterwards;
* the comparison: every header cell shows its whole text (no overflow, no clipping, inside
  its cell and its scroll box), and the ratio chart fills its frame's width.

Screenshots land in ``test-artifacts/notebook/`` (or ``$DL_TEST_ARTIFACTS``).
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

from delegate_lens.compare import compare
from delegate_lens.inspector import Inspector

ARTIFACTS = Path(os.environ.get("DL_TEST_ARTIFACTS") or REPO / "test-artifacts") / "notebook"
CELL_WIDTH = 900

pytestmark = pytest.mark.usefixtures("builtin_plugins_only")

# What JupyterLab's rendered-HTML style (the ``jp-RenderedHTMLCommon`` rules that an
# nbconvert export inlines) does to the HTML of an output, and the cell around it.
_NOTEBOOK_CSS = """
body { margin: 0; background: #fff; font-family: sans-serif; }
.jp-Cell { margin: 16px; }
.jp-OutputArea-child { display: flex; }
.jp-OutputPrompt { flex: 0 0 64px; color: #888; }
.jp-OutputArea-output { width: var(--cell); overflow: auto; }
.jp-RenderedHTMLCommon { padding-right: 20px; font-size: 14px; line-height: 1.5; }
.jp-RenderedHTMLCommon table { border-collapse: collapse; border: none; table-layout: fixed;
  margin: 0 auto 1em; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th, .jp-RenderedHTMLCommon tr {
  vertical-align: middle; padding: 0.5em; line-height: normal; white-space: normal;
  max-width: none; border: none; }
:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td,
:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon th,
:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon tr { text-align: right; }
.jp-RenderedHTMLCommon tbody tr:nth-child(even) { background: #f5f5f5; }
.jp-RenderedHTMLCommon svg { max-width: 100%; height: auto; }
.jp-RenderedHTMLCommon pre { margin: 0; padding: 0; border: 0; background: #fff;
  white-space: pre-wrap; }
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = browser_or_skip(str(tmp_path_factory.mktemp("chromium-profile")))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def displays(vectors_dir: Path) -> dict[str, str]:
    vector = vectors_dir / "mlp_xnnpack"
    inspector = Inspector(etdump_path=vector / "etdump.etdp", etrecord=str(vector / "etrecord.bin"))
    result = compare(inspector, inspector)
    return {"inspector": inspector._repr_html_() or "", "compare": result._repr_html_() or ""}


def _page(displays: dict[str, str], path: Path, width: int, hidden: bool) -> Path:
    """An exported-notebook-like page: one cell per display, its output ``width`` px wide
    (``hidden``: not displayed until :func:`_relayout` shows it)."""
    style = ' style="display:none"' if hidden else ""
    cells = "".join(
        f'<div class="jp-Cell" id="cell-{name}"><div class="jp-OutputArea"{style}>'
        f'<div class="jp-OutputArea-child"><div class="jp-OutputPrompt">Out[{i}]:</div>'
        '<div class="jp-RenderedHTMLCommon jp-RenderedHTML jp-OutputArea-output" '
        f'data-mime-type="text/html">{html}</div></div></div></div>'
        for i, (name, html) in enumerate(displays.items(), 1)
    )
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<style>{_NOTEBOOK_CSS}</style></head>"
        f'<body class="jp-Notebook" style="--cell:{width}px">{cells}</body></html>',
        encoding="utf-8",
    )
    return path


def _relayout(driver: Any, width: int) -> None:
    driver.execute_script(
        "document.body.style.setProperty('--cell', arguments[0] + 'px');"
        "document.querySelectorAll('.jp-OutputArea').forEach(e => e.style.display = '');",
        width,
    )


def _wait(driver: Any, script: str, what: str) -> None:
    for _ in range(200):
        if driver.execute_script(script):
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: {console_messages(driver)}")


def _shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


# After two animation frames (Cytoscape draws on one): the graph box's size, the box of
# the pixels painted on its canvases, and the cluster's title as Cytoscape places it, all
# in CSS pixels of the box.
_MEASURE_GRAPH = """
var done = arguments[arguments.length - 1];
requestAnimationFrame(() => requestAnimationFrame(() => {
  var box = document.getElementById('cy'), w = box.clientWidth, h = box.clientHeight;
  var x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  box.querySelectorAll('canvas').forEach(c => {
    if (!c.width || !c.height || getComputedStyle(c).visibility === 'hidden') return;
    var scale = c.width / c.clientWidth, px = c.getContext('2d')
      .getImageData(0, 0, c.width, c.height).data;
    for (var y = 0; y < c.height; y++) for (var x = 0; x < c.width; x++) {
      if (px[(y * c.width + x) * 4 + 3] === 0) continue;
      x1 = Math.min(x1, x / scale); x2 = Math.max(x2, (x + 1) / scale);
      y1 = Math.min(y1, y / scale); y2 = Math.max(y2, (y + 1) / scale);
    }
  });
  var t = dlReport.cy.nodes('.cluster').renderedBoundingBox(
    {includeNodes: false, includeEdges: false, includeLabels: true});
  done({w: w, h: h, painted: [x1, y1, x2, y2], title: [t.x1, t.y1, t.x2, t.y2]});
}));
"""


@pytest.mark.parametrize(
    ("load_width", "hidden"),
    [(CELL_WIDTH, False), (CELL_WIDTH, True), (560, False)],
    ids=["at-load", "laid-out-late", "widened"],
)
def test_inspector_graph_fills_its_frame(
    browser: Any, displays: dict[str, str], tmp_path: Path, load_width: int, hidden: bool
) -> None:
    page = _page(displays, tmp_path / "notebook.html", load_width, hidden)
    console_messages(browser)
    browser.get(page.as_uri())
    frame = browser.find_element("css selector", "#cell-inspector iframe")
    browser.switch_to.frame(frame)
    try:  # the report has drawn its graph (in a box of no size while hidden)
        _wait(browser, "return !!(window.dlReport && dlReport.cy)", "the report did not start")
    finally:
        browser.switch_to.default_content()
    _relayout(browser, CELL_WIDTH)
    browser.switch_to.frame(frame)
    try:
        size = browser.execute_script(
            "var b = document.getElementById('cy'); return [b.clientWidth, b.clientHeight]"
        )
        assert size[0] > 400 and size[1] > 300, size
        m = browser.execute_async_script(_MEASURE_GRAPH)
        for _ in range(20):  # until a refit (if any) has been drawn: two measures agree
            again = browser.execute_async_script(_MEASURE_GRAPH)
            if again == m:
                break
            m = again
    finally:
        browser.switch_to.default_content()
    _shot(browser, f"layout-graph-{'hidden' if hidden else load_width}")
    w, h = m["w"], m["h"]
    x1, y1, x2, y2 = m["painted"]
    # most of the box: the graph's width or height fills 80% of it, centred both ways
    assert (x2 - x1) >= 0.8 * w or (y2 - y1) >= 0.8 * h, m
    assert abs((x1 + x2) / 2 - w / 2) <= 0.1 * w and abs((y1 + y2) / 2 - h / 2) <= 0.1 * h, m
    # nothing cut at an edge, the cluster's title inside the box
    assert x1 >= 4 and y1 >= 4 and x2 <= w - 4 and y2 <= h - 4, m
    tx1, ty1, tx2, ty2 = m["title"]
    assert 0 <= tx1 < tx2 <= w and 0 <= ty1 < ty2 <= h, m
    assert ty1 - 2 <= y1 <= ty2  # the topmost pixels painted are the title's
    assert console_messages(browser) == []


# Every header cell of the comparison: its text, whether its content overflows it, and
# whether the text's box lies inside the cell and inside the scroll box around the table.
_MEASURE_HEADERS = """
var out = [];
document.querySelectorAll('#cell-compare th').forEach(th => {
  var range = document.createRange();
  range.selectNodeContents(th);
  var t = range.getBoundingClientRect(), c = th.getBoundingClientRect();
  var s = th.closest('.dl-scroll').getBoundingClientRect(), e = 0.5;
  out.push({text: th.textContent, shown: th.innerText, sw: th.scrollWidth, cw: th.clientWidth,
    in_cell: t.left >= c.left - e && t.right <= c.right + e && t.top >= c.top - e
      && t.bottom <= c.bottom + e,
    in_view: t.left >= s.left - e && t.right <= s.right + e});
});
return out;
"""


# The ratio chart: its frame, where its drawing lies (its viewBox mapped to the page, or
# its box without one), the right edge of the row names, its marks, the names' font size.
_MEASURE_RATIO_CHART = """
var svg = document.querySelector('#cell-compare .dl-ratio-chart');
var f = svg.closest('.dl-chart').getBoundingClientRect(), r = svg.getBoundingClientRect();
var drawing = [r.left, r.right], b = svg.viewBox.baseVal;
if (b && b.width) {
  var m = svg.getScreenCTM();
  drawing = [new DOMPoint(b.x, b.y).matrixTransform(m).x,
             new DOMPoint(b.x + b.width, b.y).matrixTransform(m).x];
}
var names = document.querySelector('#cell-compare .dl-ratio-names');
return {frame: [f.left, f.right], drawing: drawing,
  names_right: names ? names.getBoundingClientRect().right : f.left,
  marks: Array.from(svg.querySelectorAll('circle'), c => {
    var q = c.getBoundingClientRect(); return [q.left, q.right]; }),
  name_px: names ? parseFloat(getComputedStyle(names).fontSize)
    : parseFloat(getComputedStyle(svg.querySelector('text')).fontSize) * svg.getScreenCTM().a};
"""


def test_comparison_headers_show_their_whole_text(
    browser: Any, displays: dict[str, str], tmp_path: Path
) -> None:
    page = _page(displays, tmp_path / "notebook.html", CELL_WIDTH, hidden=False)
    browser.get(page.as_uri())
    browser.execute_script("document.getElementById('cell-compare').scrollIntoView()")
    _shot(browser, "layout-compare")
    cells = browser.execute_script(_MEASURE_HEADERS)
    texts = [c["text"] for c in cells]
    assert "base_p50 (ms)" in texts and "new_p50 (ms)" in texts and "debug_handles" in texts
    cut = [c for c in cells if not (c["sw"] <= c["cw"] and c["in_cell"] and c["in_view"])]
    assert cut == []
    assert all(c["shown"].split() == c["text"].split() for c in cells)
    # the ratio chart's drawing spans its frame (from the row names to the right edge),
    # its marks inside it, the names at their own size (nothing scaled up or down)
    chart = browser.execute_script(_MEASURE_RATIO_CHART)
    left, right = chart["frame"]
    x1, x2 = chart["drawing"]
    assert abs(right - x2) <= 0.02 * (right - left), chart
    assert abs(x1 - max(left, chart["names_right"])) <= 0.02 * (right - left), chart
    assert all(x1 <= a and b <= x2 for a, b in chart["marks"]), chart
    assert 10 <= chart["name_px"] <= 12, chart
