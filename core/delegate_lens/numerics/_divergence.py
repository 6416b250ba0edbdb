"""``first_divergence``: the earliest diverged row none of whose upstream rows diverged.

numpy-free and torch-free: rows are the gap table's dicts (with their private ``_handles``),
the data flow is the reference graph's (:attr:`AotOutputs.inputs_of`).
"""

from __future__ import annotations

from typing import Any

from delegate_lens.numerics._aot_outputs import AotOutputs


def mark_first_divergence(rows: list[dict[str, Any]], aot: AotOutputs) -> None:
    """Mark the earliest diverged row (graph order) none of whose upstream rows diverged."""
    row_of: dict[int, int] = {}
    for i, row in enumerate(rows):
        for h in row["_handles"]:
            row_of[h] = i

    def upstream(i: int) -> set[int]:
        own = rows[i]["_handles"]
        seen: set[int] = set(own)
        frontier = [p for h in own for p in aot.inputs_of.get(h, ()) if p not in own]
        found: set[int] = set()
        while frontier:
            h = frontier.pop()
            if h in seen:
                continue
            seen.add(h)
            if h in row_of and row_of[h] != i:
                found.add(row_of[h])
            else:
                frontier.extend(aot.inputs_of.get(h, ()))
        return found

    for i, row in enumerate(rows):  # graph order: the first origin found is the earliest
        if row["diverged"] and not any(rows[k]["diverged"] for k in upstream(i)):
            row["first_divergence"] = True
            return
