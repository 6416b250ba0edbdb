"""Aligned plain-text tables, as the CLI and the Inspector print them."""

from __future__ import annotations

from collections.abc import Container, Sequence

__all__ = ["align_columns"]


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
