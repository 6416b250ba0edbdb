"""Write a :class:`CompareResult` as an aligned table, JSON, CSV or Markdown."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from typing import IO

from delegate_lens._texttable import align_columns
from delegate_lens.compare._identity import DEFAULT_MIN_MATCHED
from delegate_lens.compare._result import CompareResult, OneSidedRow, RowComparison, RowIdentity
from delegate_lens.errors import UsageError

_ROW_HEADERS = [
    "block",
    "name",
    "backend",
    "debug_handles",
    "matched_by",
    "n_base",
    "n_new",
    "base_p50",
    "new_p50",
    "delta",
    "ratio",
    "ratio_ci",
    "verdict",
]


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.4g}"


def _ratio(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _handles(identity: RowIdentity) -> str:
    handles = identity.debug_handles
    if handles is None:
        return "-"
    if isinstance(handles, int):
        return str(handles)
    return ",".join(str(h) for h in handles)


def _row_cells(row: RowComparison) -> list[str]:
    ident = row.identity
    return [
        ident.block,
        ident.name,
        ident.delegate_backend_name or "-",
        _handles(ident),
        row.match,
        str(row.base_samples.size),
        str(row.new_samples.size),
        _num(row.base_median),
        _num(row.new_median),
        _num(row.delta),
        _ratio(row.ratio),
        f"[{_ratio(row.ratio_ci[0])}, {_ratio(row.ratio_ci[1])}]",
        row.verdict,
    ]


def _one_sided_cells(row: OneSidedRow) -> list[str]:
    ident = row.identity
    n = str(row.samples.size)
    return [ident.block, ident.name, ident.delegate_backend_name or "-", _handles(ident), n]


def result_sections(result: CompareResult) -> list[tuple[str, list[list[str]], set[int]]]:
    """(title, rows with the header first, right-aligned columns) of each section."""
    unit = result.time_unit
    rows = [[h.replace("p50", f"p50 ({unit})") for h in _ROW_HEADERS]]
    rows += [_row_cells(row) for row in result.rows]
    sections = [("rows", rows, {5, 6, 7, 8, 9, 10})]
    blocks = [
        [
            "block",
            f"base_total ({unit})",
            f"new_total ({unit})",
            "ratio",
            "base_delegated",
            "new_delegated",
        ]
    ]
    blocks += [
        [
            b.block,
            _num(b.base_total),
            _num(b.new_total),
            _ratio(b.ratio),
            _pct(b.base_delegated_share),
            _pct(b.new_delegated_share),
        ]
        for b in result.blocks
    ]
    sections.append(("blocks", blocks, {1, 2, 3, 4, 5}))
    if result.backends:
        backends = [
            [
                "backend",
                "calls (base/new)",
                f"base_time ({unit})",
                f"new_time ({unit})",
                "ratio",
                "base_share",
                "new_share",
            ]
        ]
        backends += [
            [
                b.backend,
                f"{b.base_calls}/{b.new_calls}",
                _num(b.base_time),
                _num(b.new_time),
                _ratio(b.ratio),
                _pct(b.base_share),
                _pct(b.new_share),
            ]
            for b in result.backends
        ]
        sections.append(("delegate backends", backends, {1, 2, 3, 4, 5, 6}))
    for title, side_rows in (("only in base", result.only_base), ("only in new", result.only_new)):
        if side_rows:
            table = [["block", "name", "backend", "debug_handles", "n"]]
            table += [_one_sided_cells(row) for row in side_rows]
            sections.append((title, table, {4}))
    return sections


def summary_lines(result: CompareResult) -> list[str]:
    """The lines above the tables: the two sides, the settings, the counts, the programs' match
    and the verdicts (a warning when few rows matched)."""
    counts = ", ".join(f"{n} by {kind}" for kind, n in result.match_counts().items())
    return [
        f"base: {result.base}",
        f"new:  {result.new}",
        f"threshold {100 * result.threshold:g}%, alpha {result.alpha:g}, test {result.test}; "
        f"{len(result.rows)} rows matched ({counts}); {len(result.only_base)} only in base, "
        f"{len(result.only_new)} only in new",
        result.programs.describe(),
        f"{len(result.regressions)} slower, {len(result.improvements)} faster",
    ] + (
        [
            f"warning: only {100 * result.programs.matched_share:.3g}% of the operator rows "
            "matched (allowed): the verdicts speak for those rows only"
        ]
        if result.programs.below_min or result.programs.matched_share < DEFAULT_MIN_MATCHED
        else []
    )


def _write_table(result: CompareResult, stream: IO[str]) -> None:
    lines = summary_lines(result)
    for title, rows, right in result_sections(result):
        lines += ["", f"{title}:"]
        lines += align_columns(rows, right=right, rule=True)
    stream.write("\n".join(lines) + "\n")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _write_markdown(result: CompareResult, stream: IO[str]) -> None:
    summary = summary_lines(result)
    lines = ["### delegate-lens compare", ""]
    lines += [f"- {_md_cell(line)}" for line in summary]
    for title, rows, right in result_sections(result):
        lines += ["", f"**{title}**", ""]
        lines.append("| " + " | ".join(_md_cell(c) for c in rows[0]) + " |")
        lines.append(
            "|" + "|".join("---:" if i in right else "---" for i in range(len(rows[0]))) + "|"
        )
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows[1:]]
    stream.write("\n".join(lines) + "\n")


_CSV_HEADERS = [
    "side",
    "block",
    "name",
    "instruction_id",
    "delegate_debug_identifier",
    "delegate_backend_name",
    "debug_handles",
    "op_types",
    "matched_by",
    "n_base",
    "n_new",
    "base_median",
    "new_median",
    "delta",
    "delta_ci_low",
    "delta_ci_high",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "p_value",
    "verdict",
]


def _csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return value


def _identity_cells(ident: RowIdentity) -> list[object]:
    return [
        ident.block,
        ident.name,
        ident.instruction_id,
        ident.delegate_debug_identifier,
        ident.delegate_backend_name,
        "" if ident.debug_handles is None else _handles(ident),
        ";".join(ident.op_types),
    ]


def _write_csv(result: CompareResult, stream: IO[str]) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(_CSV_HEADERS)
    for row in result.rows:
        cells = ["both", *_identity_cells(row.identity), row.match]
        cells += [row.base_samples.size, row.new_samples.size, row.base_median, row.new_median]
        cells += [row.delta, *row.delta_ci, row.ratio, *row.ratio_ci, row.p_value, row.verdict]
        writer.writerow([_csv_value(v) for v in cells])
    for side_row in (*result.only_base, *result.only_new):
        n = side_row.samples.size
        base = side_row.side == "base"
        cells = [side_row.side, *_identity_cells(side_row.identity), ""]
        cells += [n if base else 0, 0 if base else n]
        cells += [side_row.median if base else None, None if base else side_row.median]
        cells += [None] * 8 + [f"only in {side_row.side}"]
        writer.writerow([_csv_value(v) for v in cells])


def _write_json(result: CompareResult, stream: IO[str], samples: bool = False) -> None:
    json.dump(result.asdict(samples), stream, indent=1, allow_nan=False)
    stream.write("\n")


FORMATS: dict[str, Callable[[CompareResult, IO[str]], None]] = {
    "table": _write_table,
    "json": _write_json,
    "csv": _write_csv,
    "markdown": _write_markdown,
}
"""Output formats of ``delegate-lens compare --format``."""


def write_result(
    result: CompareResult, stream: IO[str], format: str = "table", samples: bool = False
) -> None:
    """Write ``result`` to a text stream in one of :data:`FORMATS` (``samples``: JSON
    also lists every sample of both sides)."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (formats: {', '.join(FORMATS)})")
    if format == "json":
        _write_json(result, stream, samples)
    else:
        FORMATS[format](result, stream)
