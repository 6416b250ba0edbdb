"""Jupyter display (``_repr_html_``) of an Inspector, a numeric-gap table and a comparison.

* :func:`inspector_html` — the HTML report of :mod:`delegate_lens.report` (graph, timeline,
  tables) in a sandboxed ``<iframe srcdoc>`` sized for a notebook cell: everything inline
  (scripts, styles, data), nothing fetched, and nothing of the page leaks into the notebook
  (ids, styles, ``window.dlReport``), so several reports live in one notebook;
* :func:`gap_html` — a :class:`~delegate_lens.numerics.NumericGapTable`: its
  summary, a chart of the gap per row (log scale, the threshold drawn, diverged rows and
  the first divergence marked) and its rows;
* :func:`compare_html` — a :class:`~delegate_lens.compare.CompareResult`: its summary, a
  chart of each row's ratio with its confidence interval, and its tables.

The last two are plain HTML and CSS (no script), so they show in untrusted notebooks and
static renderers too. No view computes a number of its own: the texts come from the
table's and the result's own formatting. Neither torch nor pandas is imported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from delegate_lens.report._html import html_text

if TYPE_CHECKING:
    from delegate_lens.compare import CompareResult
    from delegate_lens.inspector import Inspector
    from delegate_lens.numerics import NumericGapTable


FRAME_HEIGHT = 600
"""Height of the report's frame in a cell, in CSS pixels (it fills the cell's width)."""

_FRAME_CSS = """
header { padding: 6px 12px 0; }
h1 { font-size: 15px; }
main { padding: 8px 12px; }
.graph-area { height: calc(100vh - 140px); min-height: 300px; }
#details { width: 300px; }
.scroll { max-height: calc(100vh - 200px); }
"""

_CSS = """
div.dl-nb { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330;
  max-width: 100%; box-sizing: border-box; text-align: left; }
div.dl-nb * { box-sizing: border-box; }
div.dl-nb .dl-head { background: #1d2330; color: #fff; padding: 6px 10px;
  border-radius: 6px 6px 0 0; }
div.dl-nb .dl-brand { color: #ffb347; font-weight: 600; }
div.dl-nb pre.dl-sum { margin: 0; padding: 6px 10px; border: 0; background: #f6f7f9;
  color: inherit; font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; }
div.dl-nb .dl-scroll { max-height: 320px; overflow: auto; border: 1px solid #d5d9e0;
  margin: 6px 0; }
div.dl-nb .dl-chart { max-height: 240px; overflow: auto; border: 1px solid #d5d9e0;
  margin: 6px 0; background: #fff; }
div.dl-nb .dl-chart svg { display: block; width: 100%; max-width: none; }
div.dl-nb .dl-ratio { display: flex; align-items: flex-start; }
div.dl-nb .dl-ratio-names { flex: 0 1 auto; max-width: 40%; padding: 0 8px 0 4px;
  font-size: 11px; line-height: 14px; }
div.dl-nb .dl-ratio-names div { height: 14px; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
div.dl-nb .dl-chart svg.dl-ratio-chart { flex: 1 1 0; min-width: 0; }
div.dl-nb table.dl-table { border-collapse: collapse; border: 0; table-layout: auto;
  width: 100%; margin: 0; font-size: 12px; color: inherit; background: #fff; }
div.dl-nb table.dl-table tr { background: #fff; }
div.dl-nb table.dl-table th, div.dl-nb table.dl-table td { border: 0;
  border-bottom: 1px solid #e5e8ee; padding: 2px 6px; text-align: left; vertical-align: top;
  line-height: 1.4; max-width: none; white-space: normal; overflow-wrap: break-word; }
div.dl-nb table.dl-table th { position: sticky; top: 0; z-index: 1; background: #eef1f5;
  font-weight: 600; overflow-wrap: normal; }
div.dl-nb table.dl-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
div.dl-nb table.dl-table tr.diverged td { background: #fff4e5; }
div.dl-nb table.dl-table tr.first td { background: #fde2e1; font-weight: 600; }
div.dl-nb table.dl-table tr.slower td { background: #fde2e1; }
div.dl-nb table.dl-table tr.faster td { background: #e6f4ea; }
div.dl-nb h4 { margin: 8px 0 2px; font-size: 13px; }
div.dl-nb details { margin: 4px 0; }
"""

_BAR = {"ok": "#7f8ea3", "diverged": "#f39c12", "first": "#d62728"}
_VERDICT_COLOUR = {"slower": "#d62728", "faster": "#2ca02c"}


def _frame(page: str, height: int, label: str) -> str:
    source = page.replace("&", "&amp;").replace('"', "&quot;")
    return (
        f'<iframe class="dl-notebook" title="{html_text(label)}" sandbox="allow-scripts" '
        f'style="box-sizing:border-box;width:100%;height:{int(height)}px;border:1px solid #d5d9e0;border-radius:6px" '
        f'srcdoc="{source}"></iframe>'
    )


def inspector_html(
    inspector: Inspector,
    *,
    height: int = FRAME_HEIGHT,
    title: str | None = None,
    extra_measures: Mapping[str, Mapping[str, float]] | None = None,
    runs: Iterable[int] = (),
) -> str:
    """The HTML report of ``inspector`` (see :func:`~delegate_lens.report.write_report`
    for ``title``, ``extra_measures`` and ``runs``) in a frame ``height`` pixels high."""
    from delegate_lens.report._data import build_report_data
    from delegate_lens.report._html import render_html

    data = build_report_data(inspector, title=title, extra_measures=extra_measures, runs=runs)
    page = render_html(data).replace("</head>", f"<style>{_FRAME_CSS}</style>\n</head>", 1)
    return _frame(page, height, f"delegate-lens report: {data['meta']['title']}")


# --------------------------------------------------------------------------- shared


_BREAK = re.compile(r"(?<=[_:/])(?=[A-Za-z0-9])|(?<=\.)(?=[A-Za-z])")
"""Where a long name may break (after ``_``, ``:``, ``/``, and a ``.`` before a letter, so
never inside a number), so a table's columns can narrow to fit the cell."""


def _breakable(text: str) -> str:
    """``text`` escaped, with a ``<wbr>`` at each :data:`_BREAK`."""
    return _BREAK.sub("<wbr>", escape(text))


def _table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    right: set[int],
    classes: Sequence[str] = (),
) -> str:
    head = "".join(f"<th>{_breakable(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = classes[i] if i < len(classes) and classes[i] else ""
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if k in right else f"<td>{_breakable(c)}</td>"
            for k, c in enumerate(row)
        )
        body.append(f'<tr class="{cls}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return (
        f'<table class="dl-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _box(title: str, summary: Sequence[str], parts: Sequence[str]) -> str:
    text = escape("\n".join(summary))
    return (
        f'<div class="dl-nb"><style>{_CSS}</style>'
        f'<div class="dl-head"><span class="dl-brand">delegate-lens</span> {escape(title)}</div>'
        f'<pre class="dl-sum">{text}</pre>{"".join(parts)}</div>'
    )


# --------------------------------------------------------------------------- numeric gap


def _gap_value(gaps: Sequence[float]) -> float | None:
    finite = [g for g in gaps if isinstance(g, float | int) and math.isfinite(g)]
    return max(finite) if finite else None


def _gap_chart(table: NumericGapTable, kinds: list[str]) -> str:
    values = [_gap_value(row["gap"]) for row in table.rows]
    positive = [v for v in values if v is not None and v > 0]
    if not positive:
        return ""
    low = math.floor(math.log10(min([*positive, table.threshold]))) - 1
    high = math.ceil(math.log10(max([*positive, table.threshold])))
    width, height, pad = 800, 160, 4
    step = (width - 2 * pad) / max(1, len(values))

    def y(value: float) -> float:
        frac = (math.log10(value) - low) / max(1e-9, high - low)
        return height - pad - frac * (height - 2 * pad)

    bars = []
    for i, (value, kind, row) in enumerate(zip(values, kinds, table.rows)):
        if value is None or value <= 0:
            continue
        top = y(value)
        label = f"{', '.join(row['aot_ops'])}: {table.distance} {value:.3g}"
        bars.append(
            f'<rect x="{pad + i * step + step * 0.1:.1f}" y="{top:.1f}" '
            f'width="{max(1.0, step * 0.8):.1f}" height="{height - pad - top:.1f}" '
            f'fill="{_BAR[kind]}"><title>{escape(label)}</title></rect>'
        )
    line = y(table.threshold)
    threshold = (
        f'<line x1="0" x2="{width}" y1="{line:.1f}" y2="{line:.1f}" stroke="#d62728" '
        f'stroke-dasharray="4 3"><title>threshold {table.threshold:g}</title></line>'
    )
    return (
        f'<div class="dl-chart"><svg class="dl-gap-chart" viewBox="0 0 {width} {height}" '
        f'preserveAspectRatio="none" style="height:{height}px" role="img" '
        f'aria-label="{escape(table.distance)} per row, log scale">'
        f"{''.join(bars)}{threshold}</svg></div>"
    )


def gap_html(table: NumericGapTable) -> str:
    """The numeric-gap table as HTML (summary, chart, rows, unmatched outputs)."""
    from delegate_lens.numerics import format_gap

    lines = table.format_lines()
    summary = lines[lines.index("") + 1 :] if "" in lines else []
    kinds = [
        "first" if row["first_divergence"] else ("diverged" if row["diverged"] else "ok")
        for row in table.rows
    ]
    header = ["handles", "aot_ops", "runtime_ops", "backend", "identifiers", table.distance, ""]
    cells = [
        [
            ",".join(map(str, row["aot_debug_handle"])),
            ", ".join(row["aot_ops"]),
            ", ".join(row["runtime_ops"]),
            row["delegate_backend"] or "",
            ", ".join(map(str, row["delegate_identifiers"])),
            " ".join(format_gap(g) for g in row["gap"]),
            {"first": "first divergence", "diverged": "diverged", "ok": ""}[kind],
        ]
        for row, kind in zip(table.rows, kinds)
    ]
    classes = ["" if k == "ok" else k for k in kinds]
    parts = [
        _gap_chart(table, kinds),
        f'<div class="dl-scroll">{_table(header, cells, {5}, classes)}</div>',
    ]
    if table.unmatched:
        items = "".join(
            f"<li>{escape(u.side)}: handles {escape(str(list(u.debug_handles)))} "
            f"({escape(', '.join(map(str, u.ops)) or '-')}): {escape(u.reason)}</li>"
            for u in table.unmatched
        )
        parts.append(
            f"<details><summary>{len(table.unmatched)} unmatched output(s)</summary>"
            f"<ul>{items}</ul></details>"
        )
    title = f"numeric gap · {len(table.rows)} rows · {table.distance}"
    return _box(title, summary, parts)


# --------------------------------------------------------------------------- comparison


def _ratio_chart(result: CompareResult) -> str:
    """Each row's name (HTML, at its own size) beside its ratio and interval, drawn in an
    SVG that fills the rest of the cell's width: positions are percentages of its width
    (no viewBox, so nothing is scaled and nothing is left empty beside the drawing)."""
    rows = [r for r in result.rows if r.ratio > 0 and math.isfinite(r.ratio)]
    if not rows:
        return ""
    ends = [v for r in rows for v in (r.ratio, *r.ratio_ci) if v > 0 and math.isfinite(v)]
    low, high = math.log(min([*ends, 1.0])), math.log(max([*ends, 1.0]))
    if high - low < 1e-6:  # every ratio 1: from 1/1.1 to 1.1, ratio 1 in the middle
        low, high = low - math.log(1.1), high + math.log(1.1)
    span = high - low
    row_h, margin = 14, 2.0  # px per row; % of the width kept free at each end

    def x(value: float) -> str:
        value = min(max(value, math.exp(low)), math.exp(high))
        return f"{margin + (math.log(value) - low) / span * (100 - 2 * margin):.2f}%"

    height = row_h * len(rows)
    names = []
    marks = [
        f'<line x1="{x(1.0)}" x2="{x(1.0)}" y1="0" y2="{height}" '
        'stroke="#999" stroke-dasharray="3 3"><title>ratio 1</title></line>'
    ]
    for i, row in enumerate(rows):
        mid = i * row_h + row_h / 2
        colour = _VERDICT_COLOUR.get(row.verdict, "#7f8ea3")
        lo, hi = (v if v > 0 and math.isfinite(v) else row.ratio for v in row.ratio_ci)
        name = f"{row.identity.block} · {row.identity.name}"
        names.append(f'<div title="{escape(name)}">{escape(name)}</div>')
        marks.append(
            f'<line x1="{x(lo)}" x2="{x(hi)}" y1="{mid:.1f}" y2="{mid:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>'
            f'<circle cx="{x(row.ratio)}" cy="{mid:.1f}" r="3.5" fill="{colour}">'
            f"<title>{escape(name)}: ratio {row.ratio:.3f} ({escape(row.verdict)})</title>"
            "</circle>"
        )
    return (
        f'<div class="dl-chart"><div class="dl-ratio"><div class="dl-ratio-names">'
        f"{''.join(names)}</div>"
        f'<svg class="dl-ratio-chart" width="100%" height="{height}" '
        f'style="height:{height}px" role="img" aria-label="new/base ratio per row">'
        f"{''.join(marks)}</svg></div></div>"
    )


def compare_html(result: CompareResult) -> str:
    """The comparison as HTML (summary, ratio chart, the tables of ``write_result``)."""
    from delegate_lens.compare._internal import result_sections, summary_lines

    parts = [_ratio_chart(result)]
    for title, rows, right in result_sections(result):
        classes: list[str] = []
        if title == "rows":
            classes = [r.verdict if r.verdict in ("slower", "faster") else "" for r in result.rows]
        parts.append(
            f"<h4>{escape(title)}</h4>"
            f'<div class="dl-scroll">{_table(rows[0], rows[1:], right, classes)}</div>'
        )
    title = f"comparison · {len(result.regressions)} slower, {len(result.improvements)} faster"
    return _box(title, summary_lines(result), parts)


def repr_html(obj: Inspector | NumericGapTable | CompareResult) -> str:
    """The display of whichever of the three ``obj`` is."""
    from delegate_lens.compare import CompareResult
    from delegate_lens.numerics import NumericGapTable

    if isinstance(obj, NumericGapTable):
        return gap_html(obj)
    if isinstance(obj, CompareResult):
        return compare_html(obj)
    return inspector_html(obj)
