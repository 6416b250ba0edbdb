"""The report's tables: every Inspector row (columnar), top operators and the delegated vs
portable share per block (both from the Inspector's one attribution of time).

Rows are numbered across blocks in block order (``row id``); the graph, the timeline and the
details panel refer to rows by that id.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from delegate_lens.inspector import RowRole
from delegate_lens.inspector._internal import EXECUTE

if TYPE_CHECKING:
    from delegate_lens.inspector import BlockTable, Inspector


STATS = ("p10", "p50", "p90", "avg", "min", "max")


def _num(value: float) -> float | None:
    """A float for JSON (None for NaN), rounded to 9 significant digits."""
    if math.isnan(value):
        return None
    return float(f"{value:.9g}")


class RowIds:
    """Global row ids: the rows of block ``b`` start at ``offset[b]``."""

    def __init__(self, tables: list[BlockTable]) -> None:
        self.offset: list[int] = []
        total = 0
        for table in tables:
            self.offset.append(total)
            total += table.n_rows
        self.total = total

    def of(self, block: int, row: int) -> int:
        return self.offset[block] + row


def _iter_rows(inspector: Inspector) -> Iterator[tuple[BlockTable, int]]:
    for table in inspector.tables:
        for j in range(table.n_rows):
            yield table, j


def row_columns(inspector: Inspector) -> dict[str, list[Any]]:
    """One list per column, one entry per row of every block (the rows table)."""
    cols: dict[str, list[Any]] = {
        name: []
        for name in (
            "block",
            "name",
            "instruction_id",
            "identifier",
            "delegated",
            "backend",
            "n",
            *STATS,
            "op_types",
            "handles",
            "modules",
            "n_debug_data",
        )
    }
    for table, j in _iter_rows(inspector):
        key = table.keys[j]
        link = table.links[j]
        has_perf = bool(table.block.has_perf[j])
        cols["block"].append(table.index)
        cols["name"].append(key.name)
        cols["instruction_id"].append(key.instruction_id if key.instruction_id >= 0 else None)
        cols["identifier"].append(key.identifier)
        cols["delegated"].append(key.identifier is not None)
        cols["backend"].append(link.delegate_backend_name)
        cols["n"].append(table.n_runs if has_perf else 0)
        for s, stat in enumerate(STATS):
            cols[stat].append(_num(float(table.stats[s, j])))
        cols["op_types"].append(list(link.op_types))
        handles = link.debug_handles
        cols["handles"].append([handles] if isinstance(handles, int) else handles)
        cols["modules"].append(link.module_paths)
        cols["n_debug_data"].append(len(table.debug_data.get(j, ())))
    return cols


def top_operators(inspector: Inspector, limit: int = 30) -> list[dict[str, Any]]:
    """The largest charges of every block's attribution (:meth:`Inspector.get_attribution`),
    by decreasing share: op type, kind, events per run, time per run, total time over the
    block's runs, share of the block's denominator (named in ``denominator``)."""
    rows: list[dict[str, Any]] = []
    for attribution in inspector.get_attribution():
        for charge in attribution.charges:
            rows.append(
                {
                    "block": attribution.index,
                    "block_name": attribution.block,
                    "op_type": charge.key,
                    "kind": charge.kind,
                    "count": charge.count,
                    "time_per_run": _num(charge.time_per_run),
                    "total": _num(charge.total_time),
                    "runs": attribution.n_runs,
                    "share": _num(charge.share),
                    "denominator": attribution.denominator,
                }
            )
    rows.sort(key=lambda r: (-(r["share"] or 0.0), -(r["total"] or 0.0), r["op_type"]))
    return rows[:limit]


def block_shares(inspector: Inspector) -> list[dict[str, Any]]:
    """Per block, means per run from its attribution: ``Method::execute`` (None when not
    logged), the delegate calls, the portable kernels, and the delegated share of the
    block's denominator."""
    out = []
    for table, attribution in zip(inspector.tables, inspector.get_attribution(), strict=True):
        delegated = sum(float(v.mean()) for v in attribution.backend_samples.values())
        portable = sum(
            float(table.samples[j].mean())
            for j, role in enumerate(attribution.roles)
            if role == RowRole.KERNEL
        )
        execute = attribution.run_time if attribution.denominator == EXECUTE else None
        whole = attribution.run_time
        out.append(
            {
                "block": table.index,
                "name": table.name,
                "method": table.method,
                "runs": table.n_runs,
                "execute": None if execute is None else _num(execute),
                "delegated": _num(delegated),
                "portable": _num(portable),
                "delegated_share": _num(delegated / whole) if whole > 0 else None,
                "denominator": attribution.denominator,
            }
        )
    return out


def module_tree(inspector: Inspector, max_depth: int = 3, limit: int = 400) -> list[dict[str, Any]]:
    """Time rolled up by module hierarchy (:meth:`Inspector.get_module_summary`), depth 1
    to ``max_depth``, as a tree in path order (a module's children follow it), per block
    that has anything charged; then the top level, unlinked and unattributed rows."""
    out: list[dict[str, Any]] = []
    for table, attribution in zip(inspector.tables, inspector.get_attribution(), strict=True):
        if not attribution.charges:
            continue
        modules: dict[str, Any] = {}
        others: dict[str, Any] = {}
        for depth in range(1, max_depth + 1):
            for row in inspector.get_module_summary(table.name, depth=depth):
                if row.kind != "module":
                    others.setdefault(row.module, row)
                elif row.depth == depth:
                    modules.setdefault(row.module, row)
        ordered = sorted(modules.values(), key=lambda r: _path_key(r.module))
        ordered += sorted(others.values(), key=lambda r: -r.total_time)
        for row in ordered:
            out.append(
                {
                    "block": table.index,
                    "module": row.module,
                    "type": row.module_type,
                    "depth": row.depth,
                    "kind": row.kind,
                    "count": row.count,
                    "time_per_run": _num(row.time_per_run),
                    "share": _num(row.share),
                    "denominator": row.denominator,
                }
            )
    return out[:limit]


def _path_key(path: str) -> list[tuple[int, int | str]]:
    """Sort key of a module path: numbered children in number order (layers.2 < layers.10)."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in path.split(".")]
