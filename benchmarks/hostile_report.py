"""The ``report`` class of ``benchmarks/hostile.py`` (issue 35, item 8): ``delegate-lens
report`` of an ETDump and an ETRecord whose every name is hostile to a page
(``tests/report_hostile.py``: ``<!--<script>``, ``</script><script>…``, attribute breakers,
U+2028, ``{{DATA}}``, very long and non-BMP names), titled by its file name, by a hostile
``--title`` and by one that is not UTF-8.

A bad file is a page whose markup a name changed: other ``<script>`` elements than the
template's five, an HTML comment, or embedded data that is not the JSON of every row. (The
report's tests open the same pages in headless Chromium.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from hostile_common import Tally, run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from report_hostile import TITLE, write_hostile_files

SCRIPTS = 5  # three vendored libraries, the data, the page's own script
_DATA = re.compile(r'<script id="report-data" type="application/json">(.*?)</script>', re.S)


def _page_problem(page: str, n_rows: int) -> str | None:
    if page.lower().count("<script") != SCRIPTS or page.count("</script>") != SCRIPTS:
        return "a name added or ended a <script> element"
    if "<!--" in page:
        return "a name opened an HTML comment"
    match = _DATA.search(page)
    if match is None or set(match.group(1)) & set("<>&\u2028\u2029"):
        return "markup characters in the embedded data"
    if len(json.loads(match.group(1))["rows"]["name"]) != n_rows:
        return "the embedded data lost rows"
    return None


def report_pages(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("report")
    files = write_hostile_files(work)
    inputs = ["report", str(files.etdump), "--etrecord", str(files.etrecord)]
    for k, title in enumerate([None, TITLE, "not UTF-8: \udcff"]):
        out = work / f"page-{k}.html"
        argv = [*inputs, "-o", str(out)] + ([] if title is None else ["--title", title])
        code, _, _ = run(tally, argv, timeout=args.timeout, inputs=[files.etdump])
        problem = "no page written" if code != 0 or not out.is_file() else None
        problem = problem or _page_problem(out.read_text("utf-8"), files.n_rows)
        if problem:
            tally.bad_files += 1
            tally.notes.append(f"{problem}: report --title {title!r}")
    return tally
