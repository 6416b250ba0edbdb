"""Aligned plain-text tables, as the CLI and the Inspector print them, and the reference's
``fancy_grid`` table (``print_data_tabular``, ``print_delegation_info``)."""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from collections.abc import Sequence


def align_columns(
    rows: Sequence[Sequence[str]], *, right: Container[int] = (), rule: bool = False
) -> list[str]:
    """The lines of ``rows`` (the first one is the header) with aligned columns.

    Columns are as wide as their widest cell and two spaces apart; the columns whose index
    is in ``right`` are right-aligned, the others left-aligned; trailing spaces are cut.
    With ``rule``, a line of dashes under each column follows the header.
    """
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        ).rstrip()

    lines = [line(row) for row in rows]
    if rule:
        lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float, not a bool (a number column of the grid)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return format(value, "g")
    return str(value)


def _after_point(text: str, value: object) -> int:
    """Digits after the decimal point (``e`` counts as one), -1 for an int or a non-number
    (how tabulate aligns a column of numbers)."""
    if not is_number(value) or isinstance(value, int) or math.isinf(value) or text == "nan":
        return -1
    pos = text.rfind(".")
    if pos < 0:
        pos = text.lower().rfind("e")
    return len(text) - pos - 1 if pos >= 0 else -1


def _column(header: str, values: Sequence[object], numeric: bool) -> tuple[str, list[str]]:
    texts = [_cell(v) for v in values]
    if numeric:
        decimals = [_after_point(t, v) for t, v in zip(texts, values)]
        most = max(decimals, default=-1)
        texts = [t + " " * (most - d) for t, d in zip(texts, decimals)]
    width = max([len(header) + 2, *(len(t) for t in texts)])
    if numeric:
        return header.rjust(width), [t.rjust(width) for t in texts]
    return header.ljust(width), [t.ljust(width) for t in texts]


def format_fancy_grid(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """``tabulate(frame, headers="keys", tablefmt="fancy_grid")`` of a DataFrame with these
    columns and a default index (the reference's printed table)."""
    columns: list[tuple[str, list[object]]] = [("", list(range(len(rows))))]
    columns += [(h, [row[i] for row in rows]) for i, h in enumerate(headers)]
    cells: list[tuple[str, list[str]]] = []
    for header, values in columns:
        present = [v for v in values if v is not None]
        numeric = bool(present) and all(is_number(v) for v in present)
        cells.append(_column(header, values, numeric))
    widths = [len(head) for head, _ in cells]

    def rule(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def line(parts: list[str]) -> str:
        return "│ " + " │ ".join(parts) + " │"

    out = [rule("╒", "═", "╤", "╕"), line([head for head, _ in cells])]
    out.append(rule("╞", "═", "╪", "╡"))
    for i in range(len(rows)):
        if i:
            out.append(rule("├", "─", "┼", "┤"))
        out.append(line([body[i] for _, body in cells]))
    out.append(rule("╘", "═", "╧", "╛"))
    return "\n".join(out)
