"""The ``chrome-trace`` export: Trace Event JSON for Perfetto UI and chrome://tracing.

One track (``tid``) per run of the ETDump, in file order. Each profile event of the run is
a complete (``"X"``) slice; slices nest by time: ``Method::execute`` holds the
``OPERATOR_CALL`` / ``DELEGATE_CALL`` slices, which hold the kernel (``native_call_*``) and
the events the delegate logged. Viewers need proper nesting on a track, so a child that
sticks out of its parent (a delegate clock that is not quite the runtime's) is clipped to
the parent and gets ``"clipped": true`` in its args. Each slice's args hold the instruction
id, op types, debug handles, module paths, backend and the (parsed) delegate metadata.

Times are written in microseconds from the first event of the file (cycles are written as
if they were microseconds).
"""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from delegate_lens.inspector.linking import FRAMEWORK_EVENTS
from delegate_lens.inspector.timescale import TimeScale, units_per_second

if TYPE_CHECKING:
    from delegate_lens.inspector.api import Inspector
    from delegate_lens.inspector.tables import BlockTable

__all__ = ["build_trace", "write_chrome_trace"]

_PID = 1


def _level(name: str, delegated: bool) -> int:
    if name in FRAMEWORK_EVENTS:
        return 0
    if name in ("OPERATOR_CALL", "DELEGATE_CALL"):
        return 1
    return 2 if not delegated else 3


def _module_paths(hierarchy: dict[str, Any]) -> list[str]:
    paths: list[str] = []
    for frames in hierarchy.values():
        if frames:
            path = list(frames.values())[-1][0]
            if path not in paths:
                paths.append(path)
    return paths


def _sample_metadata(parsed: Any, raws: list[bytes], k: int, n: int) -> Any:
    if isinstance(parsed, list) and len(parsed) == n and parsed is not raws:
        return _jsonable(parsed[k])
    if isinstance(parsed, dict):
        return {
            str(key): _jsonable(v[k] if isinstance(v, list) and len(v) == n else v)
            for key, v in parsed.items()
        }
    return raws[k].hex() if raws and raws[k] else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _row_args(inspector: Inspector, table: BlockTable, j: int) -> dict[str, Any]:
    key = table.keys[j]
    link = table.links[j]
    args: dict[str, Any] = {"block": table.index}
    if key.instruction_id >= 0:
        args["instruction_id"] = key.instruction_id
    if key.identifier is not None:
        args["delegate_debug_identifier"] = key.identifier
    if link.op_types:
        args["op_types"] = link.op_types
    if link.debug_handles is not None:
        args["debug_handles"] = link.debug_handles
    paths = _module_paths(link.module_hierarchy)
    if paths:
        args["module"] = paths
    if link.delegate_backend_name:
        args["backend"] = link.delegate_backend_name
    return args


def build_trace(inspector: Inspector) -> dict[str, Any]:
    """The trace as a dict (``{"traceEvents": [...], ...}``)."""
    fc = inspector.file_columns
    source = inspector.source_time_scale
    target = inspector.target_time_scale
    ups = 1_000_000 if source is TimeScale.CYCLES else units_per_second(source)

    def to_us(ticks: int) -> float:
        # divide by an integer where possible: exact thousandths print short (2.784, not
        # 2.7840000000000003)
        return ticks / (ups // 1_000_000) if ups >= 1_000_000 else ticks * (1_000_000 / ups)

    ticks_per_target = (
        1.0 if source is TimeScale.CYCLES else units_per_second(source) / units_per_second(target)
    )
    # run -> list of [start, end, level, name, args, iid, delegated]
    tracks: dict[int, list[list[Any]]] = {}
    for table in inspector.tables:
        block = table.block
        n = table.n_runs
        rows = np.flatnonzero(block.has_perf)
        static = {int(j): _row_args(inspector, table, int(j)) for j in rows}
        metadata = {int(j): inspector.row_metadata(table, int(j)) for j in rows}
        for j in rows.tolist():
            key = table.keys[j]
            events = block.events[:, j]
            if j in table.converted_start:
                starts = np.rint(table.converted_start[j] * ticks_per_target).astype(np.int64)
            else:
                starts = fc.start_time[events].astype(np.int64)
            durations = np.rint(table.samples[j] * ticks_per_target).astype(np.int64)
            delegated = key.identifier is not None
            level = _level(key.name, delegated)
            raws, parsed = metadata[j]
            for k in range(n):
                args = dict(static[j])
                args["run"] = int(block.runs[k])
                if raws:
                    args["metadata"] = _sample_metadata(parsed, raws, k, n)
                start = int(starts[k])
                tracks.setdefault(int(block.runs[k]), []).append(
                    [
                        start,
                        start + int(durations[k]),
                        level,
                        key.name,
                        args,
                        key.instruction_id,
                        delegated,
                    ]
                )
    origin = min((s[0] for slices in tracks.values() for s in slices), default=0)
    trace_events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": _PID, "args": {"name": "delegate-lens"}}
    ]
    for run in sorted(tracks):
        name = fc.run_names[run] or ""
        trace_events.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": _PID,
                "tid": run,
                "args": {"name": f"run {run}: {name}"},
            }
        )
        trace_events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": _PID,
                "tid": run,
                "args": {"sort_index": run},
            }
        )
        for start, end, _lvl, slice_name, args in _nest(tracks[run]):
            trace_events.append(
                {
                    "name": slice_name,
                    "cat": "delegate" if "delegate_debug_identifier" in args else "runtime",
                    "ph": "X",
                    "pid": _PID,
                    "tid": run,
                    "ts": to_us(start - origin),
                    "dur": to_us(end - start),
                    "args": args,
                }
            )
    return {
        "traceEvents": trace_events,
        "displayTimeUnit": "ns",
        "otherData": {
            "producer": "delegate-lens",
            "source_time_scale": source.value,
            "target_time_scale": target.value,
        },
    }


def _nest(slices: list[list[Any]]) -> list[tuple[int, int, int, str, dict[str, Any]]]:
    """Clip slices so that they nest properly: first into the call of their instruction
    (kernel -> OPERATOR_CALL, delegate event -> DELEGATE_CALL), then by time."""
    calls: dict[tuple[str, int], list[Any]] = {}
    for s in slices:
        if s[3] in ("OPERATOR_CALL", "DELEGATE_CALL"):
            calls.setdefault(("op" if s[3] == "OPERATOR_CALL" else "del", s[5]), s)
    for s in slices:
        if s[2] < 2:
            continue
        parent = calls.get(("del" if s[6] else "op", s[5]))
        if parent is None:
            continue
        start = min(max(s[0], parent[0]), parent[1])
        end = min(max(s[1], start), parent[1])
        if (start, end) != (s[0], s[1]):
            s[4]["clipped"] = True
            s[0], s[1] = start, end
    # same start: outer levels first; within a level, zero-length slices first (siblings
    # rather than children of a longer slice starting at the same instant), then longest
    ordered = sorted(slices, key=lambda s: (s[0], s[2], s[1] > s[0], -s[1]))
    stack: list[list[Any]] = []
    out = []
    for s in ordered:
        while (
            stack
            and stack[-1][1] <= s[0]
            and not (stack[-1][1] == s[0] == s[1] and stack[-1][0] < s[0])
        ):
            stack.pop()
        if stack and s[1] > stack[-1][1]:
            s[1] = stack[-1][1]
            s[4]["clipped"] = True
        stack.append(s)
        out.append((s[0], s[1], s[2], s[3], s[4]))
    return out


def write_chrome_trace(inspector: Inspector, stream: IO[str]) -> None:
    """Write the Trace Event JSON."""
    json.dump(build_trace(inspector), stream, separators=(",", ":"))
    stream.write("\n")
