"""The HTML report of files whose names are hostile to a page (``tests/report_hostile.py``:
``<!--<script>``, ``</script><script>…``, attribute breakers, U+2028, ``{{DATA}}``, very
long and non-BMP names): no name changes how the page parses.

Without a browser: the embedded data holds no character that HTML or JavaScript could read
as markup, and reads back equal to the data; the page has the template's elements and no
others. In headless Chromium (skipped with the reason where it is missing): the page starts
with no console message, no injected script ran, and every view fills (a row per Inspector
row, a node per graph node, the names shown as text, exactly).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_browser import browser_or_skip, console_messages
from report_hostile import BACKEND, PWNED, TITLE, HostileFiles, write_hostile_files

from delegate_lens.cli import main
from delegate_lens.inspector import Inspector
from delegate_lens.report import build_report_data, render_html, write_report

# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")

SCRIPTS = 5
"""``<script>`` elements of every page: three vendored libraries, the data, the page's own."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileFiles:
    return write_hostile_files(tmp_path_factory.mktemp("hostile"))


def _inspector(files: HostileFiles) -> Inspector:
    """The Inspector, its delegate metadata parsed to text (hostile strings too)."""
    return Inspector(
        etdump_path=files.etdump,
        etrecord=str(files.etrecord),
        delegate_metadata_parser=lambda raws: [raw.decode() for raw in raws],
    )


def _data_text(page: str) -> str:
    match = re.search(
        r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert match, "no report-data element"
    return match.group(1)


def test_embedded_data_holds_no_markup_and_reads_back_equal(hostile: HostileFiles) -> None:
    data = build_report_data(_inspector(hostile), title=TITLE)
    page = render_html(data)
    text = _data_text(page)
    assert not set(text) & set("<>&\u2028\u2029")
    assert json.loads(text) == json.loads(json.dumps(data))
    # the template's elements only: no name opened or closed one
    assert page.count("<script") == SCRIPTS and page.count("</script>") == SCRIPTS
    assert page.lower().count("<script") == SCRIPTS and "<!--" not in page
    assert page.count("<title>") == 1 and page.count("</title>") == 1
    title = re.search(r"<title>(.*)</title>", page, re.S)
    assert title and title.group(1).startswith("&lt;!--&lt;script&gt;{{DATA}}&lt;/title&gt;")


def test_a_template_slot_in_a_name_stays_text(hostile: HostileFiles) -> None:
    slots = "{{SCRIPT}} {{DATA}} {{VENDOR}} {{STYLE}}"
    page = render_html(build_report_data(_inspector(hostile), title=slots))
    assert f"<title>{slots} · delegate-lens report</title>" in page
    assert page.count("<script") == SCRIPTS and page.count("<style>") == 1
    assert json.loads(_data_text(page))["meta"]["title"] == slots


def test_names_outside_unicode_text_are_written(tmp_path: Path, hostile: HostileFiles) -> None:
    """A lone surrogate (a file name or an argument that is not UTF-8) is written as an
    escape in the data and as U+FFFD in the HTML text, not refused."""
    out = tmp_path / "surrogate.html"
    assert main(["report", str(hostile.etdump), "-o", str(out), "--title", "a\udcffb"]) == 0
    page = out.read_text("utf-8")
    assert "<title>a\ufffdb" in page
    assert json.loads(_data_text(page))["meta"]["title"] == "a\udcffb"


# ---------------------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = browser_or_skip(str(tmp_path_factory.mktemp("chromium-profile")))
    try:
        yield driver
    finally:
        driver.quit()


def _open(driver: Any, path: Path) -> None:
    console_messages(driver)  # drop what an earlier page logged
    driver.get(path.as_uri())
    for _ in range(100):
        if driver.execute_script("return !!(window.dlReport && dlReport.current)"):
            return
        time.sleep(0.05)
    raise AssertionError(f"the report page did not start: {console_messages(driver)}")


def _report(files: HostileFiles, tmp_path: Path, how: str) -> tuple[Path, str]:
    """The page, written by the command line (title: the ETDump's hostile file name) or by
    ``write_report`` (a hostile title, parsed hostile metadata); and its title."""
    out = tmp_path / f"{how}.html"
    if how == "cli":
        argv = ["report", str(files.etdump), "--etrecord", str(files.etrecord), "-o", str(out)]
        assert main(argv) == 0
        return out, files.etdump.name
    write_report(_inspector(files), out, title=TITLE)
    return out, TITLE


def _text_has(driver: Any, selector: str, text: str) -> bool:
    return bool(
        driver.execute_script(
            "return document.querySelector(arguments[0]).textContent.indexOf(arguments[1]) >= 0",
            selector,
            text,
        )
    )


@pytest.mark.parametrize("how", ["cli", "api"])
def test_hostile_names_render_as_text_in_chromium(
    browser: Any, hostile: HostileFiles, tmp_path: Path, how: str
) -> None:
    path, title = _report(hostile, tmp_path, how)
    _open(browser, path)
    assert browser.execute_script(f"return typeof window.{PWNED}") == "undefined"
    page = browser.execute_script(
        "return [document.scripts.length, document.images.length,"
        " document.querySelectorAll('[onmouseover], [onerror], [x]').length,"
        " document.title, document.getElementById('title').textContent]"
    )
    assert page == [SCRIPTS, 0, 0, f"{title} · delegate-lens report", title]
    data = browser.execute_script("return dlReport.data")
    inspector = Inspector(etdump_path=hostile.etdump, etrecord=str(hostile.etrecord))
    names = [key.name for table in inspector.tables for key in table.keys]
    assert data["rows"]["name"] == names and len(names) == hostile.n_rows

    # graph: one node per graph node, each node's details show its names as text
    browser.execute_script("dlReport.setDepth(-1)")
    counts = browser.execute_script(
        "var cy = dlReport.cy; return [cy.nodes('.op').length, cy.nodes('.cluster').length,"
        " cy.nodes('.fused').length, cy.nodes('.decomposed').length]"
    )
    assert counts == [len(hostile.names), 1, 1, 1]
    # collapsed by module (hostile paths in the nodes' ids): one node per module, opened
    browser.execute_script("dlReport.setDepth(1)")
    modules = browser.execute_script("return dlReport.cy.nodes('.module').map(n => n.id())")
    assert len(modules) == len(hostile.names)
    browser.execute_script("dlReport.cy.getElementById(arguments[0]).emit('tap')", modules[0])
    assert browser.execute_script("return dlReport.cy.nodes('.module').length") == len(modules) - 1
    browser.execute_script("dlReport.setDepth(-1)")
    nodes = data["graphs"][0]["nodes"]
    for i, node in enumerate(nodes):
        browser.execute_script("dlReport.showDetails(arguments[0])", f"n{i}")
        for text in (node["name"], node["op"], node["trace"], node["module"][-1][0]):
            assert _text_has(browser, "#details", text), (i, text[:40])
    browser.execute_script("dlReport.showDetails('c0')")
    assert _text_has(browser, "#details", "Delegate call: " + BACKEND)

    # timeline: the run's slices drawn, the runs named by their (hostile) names
    browser.find_element("css selector", '.tab[data-view="timeline"]').click()
    assert browser.execute_script("return dlReport.timeline.drawn") > 0
    for run in data["timeline"]:
        assert _text_has(browser, "#timeline-run", f"run {run['run']}: {run['name']}")

    # tables: a row per Inspector row, the names as they are
    browser.find_element("css selector", '.tab[data-view="tables"]').click()
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('#rows-table tbody tr'))"
        ".map(tr => tr.children[1].textContent)"
    )
    assert shown == names
    for op in {o for ops in data["rows"]["op_types"] for o in ops}:
        assert _text_has(browser, "#rows-table", op)
    if how == "api":  # parsed metadata (text from the file) shows in a node's rows
        assert data["metadata"]
        row = int(next(iter(data["metadata"])))
        node = next(i for i, n in enumerate(nodes) if row in n["rows"])
        browser.find_element("css selector", '.tab[data-view="graph"]').click()
        browser.execute_script("dlReport.showDetails(arguments[0])", f"n{node}")
        assert _text_has(
            browser,
            "#details",
            json.dumps(data["metadata"][str(row)], indent=1, ensure_ascii=False),
        )
    assert browser.execute_script(f"return typeof window.{PWNED}") == "undefined"
    assert console_messages(browser) == []


def test_notebook_displays_of_hostile_names_in_chromium(
    browser: Any, hostile: HostileFiles, tmp_path: Path
) -> None:
    """The Inspector's notebook frame and a comparison's plain HTML, side by side in one
    page as in a notebook: names stay text, and the report starts inside its frame."""
    from delegate_lens.compare import compare
    from delegate_lens.report import compare_html, inspector_html

    inspector = _inspector(hostile)
    result = compare(inspector, inspector)
    path = tmp_path / "notebook.html"
    cells = inspector_html(inspector, title=TITLE) + compare_html(result)
    path.write_text(f'<!DOCTYPE html><meta charset="utf-8"><body>{cells}</body>', "utf-8")
    console_messages(browser)
    browser.get(path.as_uri())
    outer = browser.execute_script(
        "return [document.scripts.length, document.images.length,"
        " document.querySelectorAll('iframe').length,"
        " document.querySelectorAll('[onmouseover], [onerror], [x]').length,"
        " document.querySelector('iframe').title]"
    )
    assert outer == [0, 0, 1, 0, f"delegate-lens report: {TITLE}"]
    for name in {row.identity.name for row in result.rows}:
        assert _text_has(browser, "div.dl-ratio-names", name)
    browser.switch_to.frame(browser.find_element("css selector", "iframe.dl-notebook"))
    try:
        for _ in range(100):
            if browser.execute_script("return !!(window.dlReport && dlReport.current)"):
                break
            time.sleep(0.05)
        inside = browser.execute_script(
            f"return [typeof window.{PWNED}, document.scripts.length, document.title,"
            " dlReport.data.rows.name.length, dlReport.cy.nodes('.op').length]"
        )
        assert inside == [
            "undefined",
            SCRIPTS,
            f"{TITLE} · delegate-lens report",
            hostile.n_rows,
            len(hostile.names),
        ]
    finally:
        browser.switch_to.default_content()
    assert browser.execute_script(f"return typeof window.{PWNED}") == "undefined"
    assert console_messages(browser) == []
