"""Trace one ``collect`` batch by batch: where each process spends its time, and its page
faults (a diagnostic for the local engine; the figures to quote come from bench_collect).

    python benchmarks/trace_collect.py [--workers N] [--runs N] [--folder DIR]

For each batch, in this process and in every started worker: when it started (ms into the
run), its files, wall and CPU milliseconds, page faults, and microseconds per file; then
per process: files, collect time and faults, and the time spent finding files. The
default folder is bench_collect's 10,000 small demo dumps (made on first use). Runs after
a one-file warm-up; the last run is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine import describe as describe_machine

from delegate_lens.dataset import _batching as batching
from delegate_lens.dataset import _engines as engines
from delegate_lens.dataset import _workers as workers
from delegate_lens.dataset import collect


def _usage() -> tuple[int, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt, usage.ru_utime + usage.ru_stime


class Log:
    """Events from every process, appended to one file (each line written whole)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, kind: str, *values: object) -> None:
        line = " ".join(map(str, (os.getpid(), time.perf_counter(), kind, *values)))
        with open(self.path, "a") as stream:
            stream.write(line + "\n")

    def lines(self) -> list[list[str]]:
        return [line.split() for line in self.path.read_text().splitlines()]


def _traced(log: Log, collect_batch: Callable[..., Any]) -> Callable[..., Any]:
    def traced(location: str, sources: Any, known: Any = frozenset()) -> Any:
        faults, cpu = _usage()
        log.write("begin", len(sources), faults, cpu)
        try:
            return collect_batch(location, sources, known)
        finally:
            faults, cpu = _usage()
            log.write("end", len(sources), faults, cpu)

    return traced


def install(log: Log) -> None:
    """Log every batch (this process's and, forked, the workers'), and every find step."""
    engines.collect_batch = _traced(log, engines.collect_batch)
    workers.collect_batch = _traced(log, workers.collect_batch)
    find = batching._Ahead.fill

    def fill(self: Any, files: int, enough: int | None = None) -> None:
        start, before = time.perf_counter(), len(self)
        find(self, files, enough)
        log.write("find", len(self) - before, time.perf_counter() - start)

    batching._Ahead.fill = fill  # type: ignore[method-assign]


def report(log: Log) -> None:
    rows = log.lines()
    t0 = float(rows[0][1])
    main = rows[0][0]
    started: dict[str, tuple[float, int, float]] = {}
    per_process: dict[str, tuple[int, float, int]] = {}  # files, wall s, faults
    finding = 0.0
    print("process  start ms  files  wall ms   cpu ms  faults  us/file")
    for pid, at, kind, *values in rows:
        when = float(at)
        if kind == "begin":
            started[pid] = (when, int(values[1]), float(values[2]))
        elif kind == "end":
            begin, faults, cpu = started.pop(pid)
            files = int(values[0])
            wall = when - begin
            who = "this" if pid == main else f"w{pid}"
            print(
                f"{who:>7}  {(begin - t0) * 1e3:8.1f}  {files:5d}  {wall * 1e3:7.1f}  "
                f"{(float(values[2]) - cpu) * 1e3:7.1f}  {int(values[1]) - faults:6d}  "
                f"{wall / files * 1e6:7.1f}"
            )
            total = per_process.get(who, (0, 0.0, 0))
            per_process[who] = (
                total[0] + files,
                total[1] + wall,
                total[2] + int(values[1]) - faults,
            )
        elif kind == "find":
            finding += float(values[1])
    print(f"run: {(float(rows[-1][1]) - t0) * 1e3:.1f} ms; finding files {finding * 1e3:.1f} ms")
    for who, (files, wall, faults) in per_process.items():
        print(
            f"  {who}: {files} files, {wall * 1e3:.1f} ms collecting "
            f"({wall / max(files, 1) * 1e6:.1f} us per file), {faults} page faults"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    folder = args.folder
    if folder is None:
        from collect_inputs import small_dumps

        folder = small_dumps(10_000)
    print(describe_machine())
    scratch = Path(tempfile.mkdtemp(prefix="trace-collect-"))
    try:
        log = Log(scratch / "log.txt")
        collect([str(next(folder.rglob("*.etdp")))], str(scratch / "warm"))
        install(log)
        for run in range(args.runs):
            log.path.unlink(missing_ok=True)
            log.write("run")
            start = time.perf_counter()
            faults, cpu = _usage()
            report_ = collect([str(folder)], str(scratch / f"ds{run}"), workers=args.workers)
            wall = time.perf_counter() - start
            after, cpu_after = _usage()
            log.write("done")
            print(
                f"run {run + 1}: {wall:.3f} s, {report_.summary()}; this process "
                f"{cpu_after - cpu:.3f} CPU s, {after - faults} page faults"
            )
        report(log)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
