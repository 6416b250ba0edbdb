"""A person-readable summary of an ETDump, computed on the columns (fast on big files)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import numpy as np

from delegate_lens.etdump._columns import EventKind, concat_columns
from delegate_lens.etdump._objects import ETDump


@attrs.frozen
class NameStats:
    """Events sharing a name: how many, and the total/mean duration of the profiled ones.

    ``count`` is every event of the name; ``profiled`` the profile events among them, the
    only ones with times (``total_ticks`` and ``mean_ticks`` are theirs); ``debug`` the
    debug events (intermediate outputs, no times); what remains (``others``) are events of
    another kind (allocations, empty events)."""

    name: str
    count: int
    total_ticks: int
    mean_ticks: float
    profiled: int = 0
    debug: int = 0

    @property
    def others(self) -> int:
        """Events that are neither profile nor debug events."""
        return self.count - self.profiled - self.debug


@attrs.frozen
class Summary:
    version: int
    runs: list[tuple[str | None, int, int]]  # (run name, how many runs, events in them)
    events: int
    by_kind: dict[str, int]
    by_name: list[NameStats]  # most frequent first; unnamed delegate events by identifier
    start: int | None  # earliest start_time of a profile event
    end: int | None  # latest end_time of a profile event
    wrapped: int  # profile events whose end_time < start_time (32-bit clock wrap)
    allocators: list[str | None]


def _merged(etdump: ETDump) -> tuple[dict[str, Any], list[str]]:
    """All runs' columns as one set of arrays, names as codes into one string list."""
    index: dict[str, int] = {}
    cols = concat_columns(
        [run.columns for run in etdump.run_data], lambda s: index.setdefault(s, len(index))
    )
    return cols, list(index)


def _labels(cols: dict[str, Any], strings: list[str]) -> Any:
    """Name codes per event; unnamed delegate events are labelled by their identifier."""
    labels = cols["name"].astype(np.int64)
    by_str = (labels < 0) & (cols["delegate_debug_id_str"] >= 0)
    labels[by_str] = cols["delegate_debug_id_str"][by_str]
    by_int = (labels < 0) & (cols["delegate_debug_id_int"] != -1)
    if by_int.any():
        ids, inverse = np.unique(cols["delegate_debug_id_int"][by_int], return_inverse=True)
        base = len(strings)
        strings.extend(f"(delegate id {int(k)})" for k in ids)
        labels[by_int] = base + inverse.reshape(-1)
    return labels


def summarize(etdump: ETDump) -> Summary:
    cols, strings = _merged(etdump)
    runs: Counter[str | None] = Counter()
    run_events: Counter[str | None] = Counter()
    order: list[str | None] = []
    for run in etdump.run_data:
        if run.name not in runs:
            order.append(run.name)
        runs[run.name] += 1
        run_events[run.name] += len(run.events)  # not run.columns: built anew for a list
    kind = cols["kind"]
    by_kind = {k.name.lower(): int(np.count_nonzero(kind == k)) for k in EventKind}
    prof = kind == EventKind.PROFILE
    start = cols["start_time"][prof]
    end = cols["end_time"][prof]
    duration = (end - start).astype(np.float64)  # uint64 wrap handled below
    wrapped = end < start
    duration[wrapped] = (end[wrapped].astype(np.float64) + 2.0**32) - start[wrapped]
    by_name: list[NameStats] = []
    names = _labels(cols, strings)
    if len(names):
        counts = np.bincount(names + 1, minlength=len(strings) + 1)
        totals = np.bincount(names[prof] + 1, weights=duration, minlength=len(strings) + 1)
        profiled = np.bincount(names[prof] + 1, minlength=len(strings) + 1)
        debug = np.bincount(names[kind == EventKind.DEBUG] + 1, minlength=len(strings) + 1)
        for code in np.argsort(-counts, kind="stable"):
            if counts[code] == 0:
                break
            label = "(no name)" if code == 0 else strings[code - 1]
            mean = float(totals[code] / profiled[code]) if profiled[code] else 0.0
            by_name.append(
                NameStats(
                    label,
                    int(counts[code]),
                    int(totals[code]),
                    mean,
                    int(profiled[code]),
                    int(debug[code]),
                )
            )
    allocators = [a.name for run in etdump.run_data for a in run.allocators]
    return Summary(
        version=etdump.version,
        runs=[(name, runs[name], run_events[name]) for name in order],
        events=len(kind),
        by_kind=by_kind,
        by_name=by_name,
        start=int(start.min()) if len(start) else None,
        end=int(end.max()) if len(end) else None,
        wrapped=int(np.count_nonzero(wrapped)),
        allocators=list(dict.fromkeys(allocators)),
    )


def _ticks(value: float) -> str:
    """Ticks with a hint in seconds, assuming nanoseconds (the reference runtime's clock)."""
    if value >= 1e9:
        return f"{value:,.0f} ticks (~{value / 1e9:.3f} s if ns)"
    if value >= 1e6:
        return f"{value:,.0f} ticks (~{value / 1e6:.3f} ms if ns)"
    return f"{value:,.0f} ticks"


def format_summary(summary: Summary, *, title: str = "ETDump", top: int = 40) -> str:
    n_runs = sum(n for _name, n, _e in summary.runs)
    lines = [
        f"{title}: version {summary.version}, {n_runs:,} run{'' if n_runs == 1 else 's'}, "
        f"{summary.events:,} event{'' if summary.events == 1 else 's'}"
    ]
    lines.append("runs:")
    for name, count, events in summary.runs:
        label = "(no name)" if name is None else name
        lines.append(
            f"  {label:<24} x{count:<6} {events:>10,} events ({events / count:,.1f} per run)"
        )
    lines.append("events by kind:")
    for kind, count in summary.by_kind.items():
        if count or kind != "none":
            lines.append(f"  {kind:<24} {count:>10,}")
    if summary.start is not None and summary.end is not None:
        lines.append(
            f"time span: {summary.start:,} .. {summary.end:,} = {_ticks(max(summary.end - summary.start, 0))}"
        )
        if summary.wrapped:
            lines.append(f"  ({summary.wrapped:,} events wrapped around a 32-bit clock)")
    else:
        lines.append("time span: no profile events")
    if summary.allocators:
        lines.append(
            "allocators: " + ", ".join("(no name)" if a is None else a for a in summary.allocators)
        )
    else:
        lines.append("allocators: none")
    lines.append(f"events by name ({len(summary.by_name)} names):")
    shown = summary.by_name[:top]
    width = max((len(s.name) for s in shown), default=4)
    # the times are the profile events': their count stands beside them, the debug events
    # (no times) apart, and events of other kinds only when there are any
    others = any(s.others for s in shown)
    head = f"  {'name':<{width}} {'profile':>10} {'mean ticks':>14} {'total ticks':>18}"
    head += f" {'debug':>10}" + (f" {'other':>10}" if others else "")
    lines.append(head)
    for s in shown:
        if s.profiled:
            ticks = f"{s.mean_ticks:>14,.0f} {s.total_ticks:>18,}"
        else:  # no profile events: no times
            ticks = f"{'-':>14} {'-':>18}"
        line = f"  {s.name:<{width}} {s.profiled:>10,} {ticks} {s.debug:>10,}"
        lines.append(line + (f" {s.others:>10,}" if others else ""))
    if len(summary.by_name) > top:
        lines.append(f"  ... {len(summary.by_name) - top} more names")
    return "\n".join(lines)
