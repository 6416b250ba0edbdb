"""The ``chrome-trace`` export: Trace Event JSON for Perfetto UI and chrome://tracing.

One track (``tid``) per run of the ETDump, in file order, named after the run and the
ETRecord method it was linked to (``run 1: Execute (forward)``). Each profile event of the run is
a complete (``"X"``) slice; slices nest by time: ``Method::execute`` holds the
``OPERATOR_CALL`` / ``DELEGATE_CALL`` slices, which hold the kernel (``native_call_*``) and
the events the delegate logged. Viewers need proper nesting on a track, so a kernel or
delegate event that sticks out of its instruction's call (a delegate clock that is not
quite the runtime's), or any slice that overlaps the end of the slice it starts in, is
clipped and gets ``"clipped": true`` in its args. Each slice's args hold the instruction
id, op types, debug handles, module paths, backend and the (parsed) delegate metadata.

When the ETDump has allocation events, each run's track also carries a ``memory (bytes)``
counter (``"C"`` events): the bytes the run allocated per allocator, from its first event
to its last (then back to 0).

Times are microseconds from the first event of the file (cycles are written as if they
were microseconds). The slices of a block are computed with numpy for all its runs at once;
the text is written run by run.
"""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from delegate_lens.inspector.linking import FRAMEWORK_EVENTS
from delegate_lens.inspector.memory import allocator_label
from delegate_lens.inspector.timescale import TimeScale, units_per_second

if TYPE_CHECKING:
    from delegate_lens.inspector.api import Inspector
    from delegate_lens.inspector.tables import BlockTable

__all__ = ["write_chrome_trace"]

_PID = 1


def _level(name: str, delegated: bool) -> int:
    if name in FRAMEWORK_EVENTS:
        return 0
    if name in ("OPERATOR_CALL", "DELEGATE_CALL"):
        return 1
    return 3 if delegated else 2


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _sample_metadata(parsed: Any, raws: list[bytes], n: int) -> list[str | None]:
    """JSON text of each sample's metadata (None: nothing to show)."""
    out: list[str | None] = []
    for k in range(n):
        if isinstance(parsed, list) and len(parsed) == n and parsed is not raws:
            value: Any = parsed[k]
        elif isinstance(parsed, dict):
            value = {
                key: (v[k] if isinstance(v, list) and len(v) == n else v)
                for key, v in parsed.items()
            }
        else:
            value = raws[k].hex() if raws[k] else None
        out.append(None if value is None else json.dumps(_jsonable(value), default=str))
    return out


def _static_args(table: BlockTable, j: int) -> str:
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
    paths = link.module_paths
    if paths:
        args["module"] = paths
    if link.delegate_backend_name:
        args["backend"] = link.delegate_backend_name
    return json.dumps(args)[1:-1]


class _BlockSlices:
    """Every slice of one block, for all its runs: ``start``/``end`` are ``(runs, rows)``
    integer ticks of the runtime's clock (rows: the block's rows with samples)."""

    def __init__(self, inspector: Inspector, table: BlockTable, ticks_per_target: float) -> None:
        fc = inspector.file_columns
        block = table.block
        self.rows = [int(j) for j in np.flatnonzero(block.has_perf)]
        k = table.n_runs
        r = len(self.rows)
        start = np.zeros((k, r), dtype=np.int64)
        end = np.zeros((k, r), dtype=np.int64)
        for c, j in enumerate(self.rows):
            if j in table.converted_start:
                start[:, c] = np.rint(table.converted_start[j] * ticks_per_target)
            else:
                start[:, c] = fc.start_time[block.events[:, j]].astype(np.int64)
            end[:, c] = start[:, c] + np.rint(table.samples[j] * ticks_per_target).astype(np.int64)
        keys = [table.keys[j] for j in self.rows]
        level = np.array([_level(key.name, key.identifier is not None) for key in keys])
        # a kernel belongs in its OPERATOR_CALL, a delegate event in its DELEGATE_CALL
        calls: dict[tuple[bool, int], int] = {}
        for c, key in enumerate(keys):
            if key.name in ("OPERATOR_CALL", "DELEGATE_CALL"):
                calls.setdefault((key.name == "DELEGATE_CALL", key.instruction_id), c)
        clipped = np.zeros((k, r), dtype=bool)
        for c, key in enumerate(keys):
            if level[c] < 2:
                continue
            p = calls.get((key.identifier is not None, key.instruction_id))
            if p is None:
                continue
            s = np.clip(start[:, c], start[:, p], end[:, p])
            e = np.clip(end[:, c], s, end[:, p])
            clipped[:, c] = (s != start[:, c]) | (e != end[:, c])
            start[:, c] = s
            end[:, c] = e
        # same start: outer levels first; within a level zero-length slices first (siblings
        # rather than children of a longer slice starting at the same instant), then longest
        lv = np.broadcast_to(level, (k, r))
        self.order = np.lexsort((-end, end > start, lv, start), axis=-1)
        self.start = start
        self.end = end
        self.clipped = clipped
        self.names = [json.dumps(key.name) for key in keys]
        self.cats = ['"delegate"' if key.identifier is not None else '"runtime"' for key in keys]
        self.args = [_static_args(table, j) for j in self.rows]
        self.metadata: list[list[str | None] | None] = []
        for j in self.rows:
            raws, parsed = inspector.row_metadata(table, j)
            self.metadata.append(_sample_metadata(parsed, raws, k) if raws else None)


def write_chrome_trace(inspector: Inspector, stream: IO[str]) -> None:
    """Write the Trace Event JSON (see the module docstring)."""
    fc = inspector.file_columns
    source = inspector.source_time_scale
    target = inspector.target_time_scale
    ups = 1_000_000 if source is TimeScale.CYCLES else units_per_second(source)
    ticks_per_target = inspector.time_factor  # source ticks per target unit
    divisor = ups // 1_000_000 if ups >= 1_000_000 else 0
    multiplier = 1_000_000 / ups

    def us(ticks: int) -> str:
        # divide by an integer where possible: exact thousandths print short
        return repr(ticks / divisor if divisor else ticks * multiplier)

    blocks = [_BlockSlices(inspector, t, ticks_per_target) for t in inspector.tables]
    where: dict[int, tuple[int, int]] = {}  # run -> (block, position in block)
    for b, table in enumerate(inspector.tables):
        for pos, run in enumerate(table.block.runs.tolist()):
            where[run] = (b, pos)
    origin = min((int(s.start.min()) for s in blocks if s.start.size), default=0)

    stream.write('{"displayTimeUnit": "ns", "otherData": ')
    stream.write(
        json.dumps(
            {
                "producer": "delegate-lens",
                "source_time_scale": source.value,
                "target_time_scale": target.value,
            }
        )
    )
    stream.write(', "traceEvents": [\n')
    stream.write(
        f'{{"name": "process_name", "ph": "M", "pid": {_PID}, "args": {{"name": "delegate-lens"}}}}'
    )
    memory: dict[int, dict[str, int]] = {}  # run -> {allocator: bytes}, from allocations
    for usage in inspector.get_memory_usage():
        memory.setdefault(usage.run, {})[allocator_label(usage)] = usage.total_bytes
    for run in sorted(where):
        b, pos = where[run]
        sl = blocks[b]
        method = inspector.tables[b].method  # which method ran, when the ETRecord tells
        label = f"run {run}: {fc.run_names[run] or ''}" + (f" ({method})" if method else "")
        name = json.dumps(label)
        stream.write(
            f',\n{{"name": "thread_name", "ph": "M", "pid": {_PID}, "tid": {run}, '
            f'"args": {{"name": {name}}}}}'
            f',\n{{"name": "thread_sort_index", "ph": "M", "pid": {_PID}, "tid": {run}, '
            f'"args": {{"sort_index": {run}}}}}'
        )
        starts = sl.start[pos].tolist()
        ends = sl.end[pos].tolist()
        clipped = sl.clipped[pos].tolist()
        stack: list[int] = []  # end ticks of the open slices
        parts = []
        for c in sl.order[pos].tolist():
            s, e = starts[c], ends[c]
            while stack and stack[-1] <= s and not (stack[-1] == s == e):
                stack.pop()
            clip = clipped[c]
            if stack and e > stack[-1]:
                e = stack[-1]
                clip = True
            stack.append(e)
            extra = f', "run": {run}'
            meta = sl.metadata[c]
            if meta is not None and meta[pos] is not None:
                extra += f', "metadata": {meta[pos]}'
            if clip:
                extra += ', "clipped": true'
            parts.append(
                f',\n{{"name": {sl.names[c]}, "cat": {sl.cats[c]}, "ph": "X", "pid": {_PID}, '
                f'"tid": {run}, "ts": {us(s - origin)}, "dur": {us(e - s)}, '
                f'"args": {{{sl.args[c]}{extra}}}}}'
            )
        stream.write("".join(parts))
        if run in memory and starts:
            # counters: what the run allocated, per allocator, held from its start to its end
            args = json.dumps(memory[run])
            zero = json.dumps(dict.fromkeys(memory[run], 0))
            for ts, values in ((min(starts), args), (max(ends), zero)):
                stream.write(
                    f',\n{{"name": "memory (bytes)", "ph": "C", "pid": {_PID}, "tid": {run}, '
                    f'"ts": {us(ts - origin)}, "args": {values}}}'
                )
    stream.write("\n]}\n")
