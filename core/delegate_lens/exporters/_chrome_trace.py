"""The ``chrome-trace`` export: Trace Event JSON for Perfetto UI and chrome://tracing.

One track (``tid``) per run of the ETDump, in file order, named after the run and the
ETRecord method it was linked to (``run 1: Execute (forward)``). Each profile event of the run is
a complete (``"X"``) slice; slices nest by time: ``Method::execute`` holds the
``OPERATOR_CALL`` / ``DELEGATE_CALL`` slices, which hold the kernel (``native_call_*``) and
the events the delegate logged. Viewers need proper nesting on a track, so a kernel or
delegate event that sticks out of its instruction's call (a delegate clock that is not
quite the runtime's), or any slice that overlaps the end of the slice it starts in, is
clipped and gets ``"clipped": true`` in its args (see :mod:`delegate_lens.exporters._slices`).
Each slice's args hold the instruction id, op types, debug handles, module paths, backend
and the (parsed) delegate metadata.

When the ETDump has allocation events, each run's track also carries a ``memory (bytes)``
counter (``"C"`` events): the bytes the run allocated per allocator, from its first event
to its last (then back to 0).

Times are microseconds from the first event of the file (cycles are written as if they
were microseconds), printed as Python prints the float (``12.345``). The text is made
from columns, a chunk of runs (about :data:`_CHUNK_EVENTS` slices) at a time, in the
writer's threads (:mod:`delegate_lens.exporters._trace_sink`): the chunk's slices are made
with numpy (a :class:`~delegate_lens.exporters.SliceSource`: never a whole block's), then
nested and printed by the lines of :mod:`delegate_lens.exporters._compiled`: the compiled
ones (``_trace_lines.pyx``, without the GIL) or their Python twin (one text template per
row and one ``%`` per run), the same bytes either way.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.exporters import _compiled
from delegate_lens.exporters._slices import Nested
from delegate_lens.exporters._trace_sink import Buffers, Sink

if TYPE_CHECKING:
    from delegate_lens.exporters._rows import TableRow, TraceBlock, TraceInput
    from delegate_lens.exporters._slices import Slices

_PID = 1
_CHUNK_EVENTS = 1 << 14  # slices turned into text at a time
_EXACT = 10**15  # below this, the decimal text below is exactly Python's repr of the float

_THREAD = (  # a run's track: its name and place
    f',\n{{"name": "thread_name", "ph": "M", "pid": {_PID}, "tid": %d, '
    '"args": {"name": "run %d%s}}'
    f',\n{{"name": "thread_sort_index", "ph": "M", "pid": {_PID}, "tid": %d, '
    '"args": {"sort_index": %d}}'
).encode()


def json_value(value: object) -> Any:
    """``value`` as JSON can hold it: bytes as hex, numpy scalars as Python numbers,
    tuples as lists, dict keys as text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return value


def _sample_metadata(parsed: object, raws: list[bytes], n: int) -> list[str | None]:
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
        out.append(None if value is None else json.dumps(json_value(value), default=str))
    return out


def _static_args(row: TableRow) -> str:
    args: dict[str, Any] = {"block": row.block_index}
    if row.instruction_id >= 0:
        args["instruction_id"] = row.instruction_id
    if row.identifier is not None:
        args["delegate_debug_identifier"] = row.identifier
    if row.op_types:
        args["op_types"] = row.op_types
    if row.debug_handles is not None:
        args["debug_handles"] = row.debug_handles
    if row.module_paths:
        args["module"] = row.module_paths
    if row.delegate_backend_name:
        args["backend"] = row.delegate_backend_name
    return json.dumps(args)[1:-1]


def _objects(items: list[bytes]) -> npt.NDArray[np.object_]:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class _Microseconds:
    """Tick columns as the text of ``ticks / divisor`` (or ``ticks * multiplier``) in
    microseconds, in two parts per value: the integer and the ``.fraction`` (bytes)."""

    def __init__(self, ups: int) -> None:
        """``ups``: ticks per second of the source clock."""
        self.divisor = ups // 1_000_000 if ups >= 1_000_000 else 0
        self.multiplier = 1_000_000 // ups if not self.divisor else 1
        self.factor = 1_000_000 / ups
        digits = len(str(self.divisor)) - 1
        fractions = [f".{f:0{digits}d}".rstrip("0") for f in range(self.divisor or 1)]
        self.fractions = _objects([(f if len(f) > 1 else ".0").encode() for f in fractions])
        # what the lines (._compiled) take to print a number: divisor (0: multiply instead),
        # multiplier, the fraction texts, and the limit of the exact range
        self.compiled_args = (
            self.divisor if self.divisor > 1 else 0,
            self.multiplier,
            self.fractions.tolist(),
            _EXACT // self.multiplier,
        )

    def one(self, ticks: int) -> str:
        """Python's repr of the microseconds (what the slow path prints)."""
        return repr(ticks / self.divisor if self.divisor else ticks * self.factor)

    def parts(self, ticks: npt.NDArray[np.int64]) -> tuple[list[int], list[bytes], list[int]]:
        """Integers, fractions and the indices of the values they cannot print exactly
        as the float's repr (negative or huge: :meth:`one` prints those)."""
        if self.divisor > 1:
            whole, frac = np.divmod(ticks, self.divisor)
            ints: list[int] = whole.tolist()
            fracs: list[bytes] = self.fractions[frac].tolist()
        else:
            ints = (ticks * self.multiplier).tolist()
            fracs = [b".0"] * len(ints)
        bad = np.flatnonzero((ticks < 0) | (ticks >= _EXACT // self.multiplier)).tolist()
        return ints, fracs, bad


class _ChromeBlock:
    """A block's slices with the text around each row's numbers (bytes, ASCII:
    ``json.dumps`` escapes the rest) for the lines (:mod:`._compiled`): ``heads`` up to the
    run, ``mids`` from the args to the run; and ``exact``, one template per row with ``%s``
    for the run, each number's two parts and the extra args (:meth:`exact_text`)."""

    def __init__(self, block: TraceBlock) -> None:
        self.source = block.slices
        self.method = block.method
        self.heads: list[bytes] = []
        self.mids: list[bytes] = []
        for j in self.source.rows:
            row = block.rows[j]
            cat = '"delegate"' if row.identifier is not None else '"runtime"'
            head = (
                f'{{"name": {json.dumps(row.event_name)}, "cat": {cat}, "ph": "X", "pid": {_PID}, '
            )
            self.heads.append(f',\n{head}"tid": '.encode("ascii"))
            self.mids.append(f', "args": {{{_static_args(row)}, "run": '.encode("ascii"))
        self.exact = _objects(
            [
                h.replace(b"%", b"%%")
                + b'%s, "ts": %s%s, "dur": %s%s'
                + m.replace(b"%", b"%%")
                + b"%s%s}}"
                for h, m in zip(self.heads, self.mids, strict=True)
            ]
        )
        self.metadata: dict[int, list[str | None]] = {}  # col -> JSON text per run position
        for c, (raws, parsed) in block.metadata.items():
            self.metadata[c] = _sample_metadata(parsed, raws, len(block.runs))

    def extras(self, nested: Nested, positions: npt.NDArray[np.intp]) -> list[bytes] | None:
        """The args after ``"run"`` of each slice (flat, run by run): its metadata and
        ``"clipped"``; None when no slice has any."""
        clipped = nested.clipped.any()
        if not self.metadata and not clipped:
            return None
        extra = np.full(nested.cols.shape, b"", dtype=object)
        for c, texts in self.metadata.items():
            for i, s in zip(*np.nonzero(nested.cols == c), strict=True):
                text = texts[positions[i]]
                if text is not None:
                    extra[i, s] = f', "metadata": {text}'.encode("ascii")
        if clipped:
            extra[nested.clipped] += b', "clipped": true'
        out: list[bytes] = extra.ravel().tolist()
        return out

    def text(
        self,
        runs: list[int],
        positions: list[int],
        made_slices: tuple[int, Slices],
        origin: int,
        us: _Microseconds,
        buffers: Buffers,
    ) -> list[bytes] | list[memoryview]:
        """The slice lines of some runs of this block, run by run, from ``made_slices``
        (their first position, and the slices of the runs from it on; this runs in a thread
        of the writer's). The C lines go into a buffer of ``buffers``, which holds it until
        the lines are written."""
        r = len(self.source.rows)
        if not r:
            return [b""] * len(runs)
        where = np.array(positions, dtype=np.intp)
        first, sl = made_slices
        if not self.metadata:  # straight from the slices: nested as they are written
            made = _compiled.block_lines(
                self.heads,
                self.mids,
                np.ascontiguousarray(sl.start),
                np.ascontiguousarray(sl.end),
                np.ascontiguousarray(sl.clipped).view(np.uint8),
                np.ascontiguousarray(sl.order, dtype=np.intp),
                where - first,
                runs,
                origin,
                *us.compiled_args,
                buffers.take(),
            )
            if made is not None:  # else a value the text cannot print: as below
                return buffers.views(*made)
        nested = sl.nested(where - first)
        extra = self.extras(nested, where)
        made = _compiled.run_lines(
            self.heads,
            self.mids,
            np.ascontiguousarray(nested.start - origin),
            np.ascontiguousarray(nested.end - nested.start),
            np.ascontiguousarray(nested.cols, dtype=np.intp),
            runs,
            extra,
            *us.compiled_args,
            buffers.take(),
        )
        if made is not None:
            return buffers.views(*made)
        return self.exact_text(runs, nested, extra, origin, us)

    def exact_text(
        self,
        runs: list[int],
        nested: Nested,
        extra: list[bytes] | None,
        origin: int,
        us: _Microseconds,
    ) -> list[bytes]:
        """The slice lines of runs with a time the decimal text cannot print exactly as the
        float's repr (negative or huge): those times printed by :meth:`_Microseconds.one`,
        the others as the lines print them."""
        r = len(self.source.rows)
        ts_int, ts_frac, ts_bad = us.parts((nested.start - origin).ravel())
        dur_int, dur_frac, dur_bad = us.parts((nested.end - nested.start).ravel())
        names = np.repeat(_objects([b"%d" % run for run in runs]), r).tolist()
        k = 7  # values per slice
        values: list[Any] = [None] * (k * len(names))
        values[0::k] = names
        values[1::k] = [b"%d" % v for v in ts_int]
        values[2::k] = ts_frac
        values[3::k] = [b"%d" % v for v in dur_int]
        values[4::k] = dur_frac
        values[5::k] = names
        values[6::k] = [b""] * len(names) if extra is None else extra
        for i in ts_bad:
            values[k * i + 1 : k * i + 3] = [
                us.one(int(nested.start.flat[i]) - origin).encode(),
                b"",
            ]
        for i in dur_bad:
            d = int(nested.end.flat[i]) - int(nested.start.flat[i])
            values[k * i + 3 : k * i + 5] = [us.one(d).encode(), b""]
        n = k * r
        cols = nested.cols
        return [
            b"".join(self.exact[cols[i]].tolist()) % tuple(values[n * i : n * (i + 1)])
            for i in range(len(runs))
        ]


def _chunks(runs: list[int], sizes: dict[int, int]) -> Iterator[list[int]]:
    chunk: list[int] = []
    events = 0
    for run in runs:
        chunk.append(run)
        events += sizes[run]
        if events >= _CHUNK_EVENTS:
            yield chunk
            chunk, events = [], 0
    if chunk:
        yield chunk


def write_chrome_trace(trace: TraceInput, stream: IO[str]) -> None:
    """Write the Trace Event JSON of ``trace`` (see the module docstring)."""
    us = _Microseconds(trace.units_per_second)
    blocks = [_ChromeBlock(block) for block in trace.blocks]
    starts = [cb.source.first_start for cb in blocks]
    origin = min((s for s in starts if s is not None), default=0)
    other = json.dumps(
        {
            "producer": "delegate-lens",
            "source_time_scale": trace.source_time_scale,
            "target_time_scale": trace.target_time_scale,
        }
    )
    write = Sink(stream)
    try:
        _write_events(trace, blocks, origin, us, other, write)
    except BaseException:
        write.abandon()
        raise
    write.close()


def _write_events(
    trace: TraceInput,
    blocks: list[_ChromeBlock],
    origin: int,
    us: _Microseconds,
    other: str,
    write: Sink,
) -> None:
    where: dict[int, tuple[int, int]] = {}  # run -> (block, position in block)
    for b, block in enumerate(trace.blocks):
        for pos, run in enumerate(block.runs):
            where[run] = (b, pos)
    head = (
        f'{{"displayTimeUnit": "ns", "otherData": {other}, "traceEvents": [\n'
        f'{{"name": "process_name", "ph": "M", "pid": {_PID}, '
        '"args": {"name": "delegate-lens"}}'
    ).encode()
    write.submit(lambda _buffers: [head])
    sizes = {run: len(blocks[b].source.rows) for run, (b, _pos) in where.items()}
    text = _ChunkText(trace, blocks, where, origin, us)
    for chunk in _chunks(sorted(where), sizes):
        write.submit(functools.partial(text, chunk))
    write.submit(lambda _buffers: [b"\n]}\n"])


@attrs.define(eq=False)
class _ChunkText:
    """The text of a chunk of runs, in run order: each run's track, slice lines and memory
    counters. Runs in the writer's threads, a chunk each: the slices (numpy), the lines
    (C, without the GIL)."""

    trace: TraceInput
    blocks: list[_ChromeBlock]
    where: dict[int, tuple[int, int]]  # run -> (block, position in block)
    origin: int
    us: _Microseconds
    labels: dict[str, bytes] = attrs.field(factory=dict)  # track names past "run N"

    def __call__(self, chunk: list[int], buffers: Buffers) -> list[bytes | memoryview]:
        where, blocks, memory = self.where, self.blocks, self.trace.memory
        by_block: dict[int, list[int]] = {}
        for run in chunk:
            by_block.setdefault(where[run][0], []).append(run)
        texts: dict[int, bytes | memoryview] = {}
        made: dict[int, tuple[int, Slices]] = {}
        for b, runs in by_block.items():
            positions = [where[r][1] for r in runs]
            first = positions[0]
            made[b] = (first, blocks[b].source.runs(first, positions[-1] + 1))
            lines = blocks[b].text(runs, positions, made[b], self.origin, self.us, buffers)
            texts.update(zip(runs, lines, strict=True))
        parts: list[bytes | memoryview] = []
        for run in chunk:
            b, pos = where[run]
            method = blocks[b].method  # which method ran, when the ETRecord tells
            rest = f": {self.trace.run_names[run] or ''}" + (f" ({method})" if method else "")
            label = self.labels.get(rest)
            if label is None:  # the JSON string '"run N' + rest + '"', less '"run N'
                label = self.labels[rest] = json.dumps(rest)[1:].encode()
            parts.append(_THREAD % (run, run, label, run, run))
            parts.append(texts.pop(run))
            if run in memory and blocks[b].source.rows:
                # counters: what the run allocated, per allocator, held from its start to its end
                args = json.dumps(memory[run])
                zero = json.dumps(dict.fromkeys(memory[run], 0))
                first, sl = made[b]
                low = int(sl.start[pos - first].min())
                high = int(sl.end[pos - first].max())
                for ts, values in ((low, args), (high, zero)):
                    parts.append(
                        (
                            f',\n{{"name": "memory (bytes)", "ph": "C", "pid": {_PID}, '
                            f'"tid": {run}, "ts": {self.us.one(ts - self.origin)}, '
                            f'"args": {values}}}'
                        ).encode()
                    )
        return parts
