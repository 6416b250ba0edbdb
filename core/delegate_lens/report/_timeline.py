"""Timeline slices of a few sampled runs of each block (not all: the big vector has 2,000
runs and 482k slices, which Perfetto handles better through the ``chrome-trace`` export).

The slices are those of the ``chrome-trace`` export (same nesting and clipping); each
sampled run gives columns ``row`` (global row id), ``start`` and ``dur`` (target time unit,
from the run's first slice) and ``depth`` (nesting level on the run's track).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.errors import UsageError
from delegate_lens.inspector import block_slices
from delegate_lens.report._tables import RowIds

if TYPE_CHECKING:
    from delegate_lens.inspector import BlockTable, Inspector


MAX_RUNS_PER_BLOCK = 6


def sample_runs(table: BlockTable, limit: int = MAX_RUNS_PER_BLOCK) -> list[tuple[int, str]]:
    """Positions of the runs to show and why: first, fastest, median, slowest, last (by
    ``Method::execute`` when the block has one, else by the sum of its rows)."""
    k = table.n_runs
    if k <= limit:
        return [(p, "") for p in range(k)]
    execute = [j for j, key in enumerate(table.keys) if key.name == "Method::execute"]
    rows = execute or [j for j in range(table.n_rows) if table.block.has_perf[j]]
    totals = np.nansum(table.samples[rows], axis=0) if rows else np.zeros(k)
    order = np.argsort(totals, kind="stable")
    picks = [
        (0, "first"),
        (int(order[0]), "fastest"),
        (int(order[k // 2]), "median"),
        (int(order[-1]), "slowest"),
        (k - 1, "last"),
    ]
    out: dict[int, str] = {}
    for pos, why in picks:
        out[pos] = f"{out[pos]}, {why}" if pos in out else why
    return sorted(out.items())[:limit]


def timeline_runs(
    inspector: Inspector, row_ids: RowIds, chosen: Iterable[int] = ()
) -> list[dict[str, Any]]:
    """The sampled runs of every block, and the ``chosen`` runs (indices in the ETDump),
    in file order of the runs. A chosen run that the file does not have is a UsageError."""
    fc = inspector.file_columns
    factor = inspector.time_factor
    wanted = set(chosen)
    n_runs = len(fc.run_names)
    bad = sorted(r for r in wanted if not 0 <= r < n_runs)
    if bad:
        raise UsageError(f"run {bad[0]} is not in the ETDump (it has runs 0 to {n_runs - 1})")
    out = []
    for table in inspector.tables:
        if not table.block.has_perf.any():
            continue
        runs = table.block.runs.tolist()
        picks = dict(sample_runs(table))
        for pos, run in enumerate(runs):
            if run in wanted:
                picks[pos] = f"{picks[pos]}, chosen" if picks.get(pos) else "chosen"
        # the slices of the shown runs only (each run's are its own), not of every run
        slices = block_slices(inspector, table.with_runs(sorted(picks)))
        ids = [row_ids.of(table.index, j) for j in slices.rows]
        for at, (pos, why) in enumerate(sorted(picks.items())):
            starts = slices.start[at].tolist()
            ends = slices.end[at].tolist()
            origin = min(starts) if starts else 0
            row_col, start_col, dur_col, depth_col = [], [], [], []
            stack: list[int] = []
            for c in slices.order[at].tolist():
                s, e = starts[c], ends[c]
                while stack and stack[-1] <= s and not (stack[-1] == s == e):
                    stack.pop()
                if stack and e > stack[-1]:
                    e = stack[-1]
                depth_col.append(len(stack))
                stack.append(e)
                row_col.append(ids[c])
                start_col.append(float(f"{(s - origin) / factor:.9g}"))
                dur_col.append(float(f"{(e - s) / factor:.9g}"))
            run = runs[pos]
            out.append(
                {
                    "run": run,
                    "block": table.index,
                    "name": fc.run_names[run] or "",
                    "why": why,
                    "row": row_col,
                    "start": start_col,
                    "dur": dur_col,
                    "depth": depth_col,
                }
            )
    out.sort(key=lambda r: r["run"])
    return out
