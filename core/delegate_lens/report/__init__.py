"""``delegate-lens report``: one self-contained HTML page of an ETDump (+ ETRecord).

:func:`build_report_data` computes the data model from the Inspector's tables and the
ETRecord's graph; :func:`render_html` inlines it with the page's script and the vendored
graph libraries; :func:`write_report` writes the page atomically.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from delegate_lens.report._data import build_report_data
from delegate_lens.report._html import render_html
from delegate_lens.report._notebook import compare_html, gap_html, inspector_html

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector

__all__ = [
    "build_report_data",
    "compare_html",
    "gap_html",
    "inspector_html",
    "render_html",
    "write_report",
]


def write_report(
    inspector: Inspector,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    extra_measures: Mapping[str, Mapping[str, float]] | None = None,
    runs: Iterable[int] = (),
) -> Path:
    """Write the HTML report of ``inspector`` to ``path`` (atomically); returns the path.

    ``extra_measures``: more ways to colour the graph, ``{measure: {node name: value}}``;
    ``runs``: ETDump run indices the timeline offers besides its samples.
    """
    from delegate_lens.fileio import write_atomic

    data = build_report_data(inspector, title=title, extra_measures=extra_measures, runs=runs)
    page = render_html(data)
    return write_atomic(path, lambda stream: stream.write(page))
