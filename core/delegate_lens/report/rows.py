"""The report's tables: every Inspector row (columnar), top operators, delegated vs portable
share per block, and the delegation summary of the ETRecord's graph.

Rows are numbered across blocks in block order (``row id``); the graph, the timeline and the
details panel refer to rows by that id.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from delegate_lens.inspector.linking import FRAMEWORK_EVENTS

if TYPE_CHECKING:
    from delegate_lens.inspector.api import Inspector
    from delegate_lens.inspector.tables import BlockTable

__all__ = [
    "RowIds",
    "block_shares",
    "kernel_op_positions",
    "row_columns",
    "top_operators",
    "work_rows",
]

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


def is_leaf(name: str) -> bool:
    """A row that is the work itself: not a framework row nor an ``OPERATOR_CALL`` (which
    repeats its kernel's row)."""
    return name not in FRAMEWORK_EVENTS and name != "OPERATOR_CALL"


def kernel_op_positions(name: str, op_types: list[str]) -> list[int]:
    """Positions in ``op_types`` of the operator a portable kernel row ran: a row
    ``native_call_<op>.out`` runs the op types named ``<op>`` (``aten.<op>.default``), even
    when its instruction's debug handle also covers other nodes (e.g. the views around an
    ``addmm``). Every position when the name says nothing or matches none."""
    every = list(range(len(op_types)))
    if not name.startswith("native_call_"):
        return every
    kernel = name[len("native_call_") :].split(".")[0]
    matching = [k for k, op in enumerate(op_types) if _op_name(op) == kernel]
    return matching or every


def _op_name(op_type: str) -> str:
    parts = op_type.split(".")
    return parts[-2] if len(parts) >= 2 else op_type


def _handle_set(handles: int | list[int] | None) -> frozenset[int]:
    if handles is None:
        return frozenset()
    return frozenset([handles] if isinstance(handles, int) else handles)


def work_rows(table: BlockTable) -> list[int]:
    """The rows of a block whose times add up without counting anything twice: kernels
    and delegate events, not framework rows nor ``OPERATOR_CALL``. A delegate call counts
    as a whole when its delegate logged no event linked to handles, else its linked events
    count instead, leaving out an event whose handles hold all the others' (a whole-partition
    event)."""
    linked: dict[int, list[int]] = {}  # instruction -> linked delegate-logged rows
    for j, key in enumerate(table.keys):
        link = table.links[j]
        if (
            key.identifier is not None
            and table.block.has_perf[j]
            and link.debug_handles is not None
        ):
            linked.setdefault(key.instruction_id, []).append(j)
    covering: set[int] = set()
    for rows in linked.values():
        sets = {j: _handle_set(table.links[j].debug_handles) for j in rows}
        for j, mine in sets.items():
            others = [h for k, h in sets.items() if k != j]
            if others and frozenset().union(*others) <= mine and mine not in others:
                covering.add(j)
    out = []
    for j, key in enumerate(table.keys):
        if not table.block.has_perf[j] or not is_leaf(key.name) or j in covering:
            continue
        if key.name == "DELEGATE_CALL" and key.instruction_id in linked:
            continue
        if key.identifier is not None and key.instruction_id not in linked:
            continue  # its delegate call counts as a whole
        out.append(j)
    return out


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
    """Op types by total time: the sum over the work rows running the op of the row's
    average time divided among the row's op types (a fused row counts once in all)."""
    totals: dict[str, list[float]] = {}
    for table in inspector.tables:
        for j in work_rows(table):
            _add_op_time(totals, table, j)
    grand = sum(v[0] for v in totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda item: -item[1][0])[:limit]
    return [
        {"op_type": op, "total": _num(t), "rows": _num(c), "share": _num(t / grand)}
        for op, (t, c) in ranked
    ]


def _add_op_time(totals: dict[str, list[float]], table: BlockTable, j: int) -> None:
    key = table.keys[j]
    ops = table.links[j].op_types
    ops = [ops[k] for k in kernel_op_positions(key.name, ops)] if ops else [key.name]
    avg = float(table.stats[3, j]) * table.n_runs
    share = avg / len(ops)
    for op in ops:
        entry = totals.setdefault(op, [0.0, 0.0])
        entry[0] += share
        entry[1] += 1.0 / len(ops)


def block_shares(inspector: Inspector) -> list[dict[str, Any]]:
    """Per block: time of delegate calls, of portable kernels and of ``Method::execute``
    (p50 sums), and the delegated share of the work."""
    out = []
    for table in inspector.tables:
        delegated = portable = 0.0
        execute: float | None = None
        for j, key in enumerate(table.keys):
            if not table.block.has_perf[j]:
                continue
            p50 = float(table.stats[1, j])
            if key.name == "Method::execute":
                execute = (execute or 0.0) + p50
            elif key.name == "DELEGATE_CALL":
                delegated += p50
            elif key.identifier is None and is_leaf(key.name):
                portable += p50
        work = delegated + portable
        out.append(
            {
                "block": table.index,
                "name": table.name,
                "method": table.method,
                "runs": table.n_runs,
                "execute": None if execute is None else _num(execute),
                "delegated": _num(delegated),
                "portable": _num(portable),
                "delegated_share": _num(delegated / work) if work else None,
            }
        )
    return out
