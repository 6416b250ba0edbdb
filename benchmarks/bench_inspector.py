"""The Inspector on the big vector (issue 6: whole process <= 1.0 s, peak RSS <= 200 MB).

Measures the whole command a user runs,

    delegate-lens inspect gpt_portable_big/etdump.etdp --etrecord etrecord.bin --format json > /dev/null

as a fresh process per run: wall time (median over runs) and the child's peak resident set
size (``ru_maxrss`` from ``wait4``, median and max). Then, in this process, a breakdown of
one run: imports, ETDump decode, grouping/linking/statistics, JSON writing.

Usage: python benchmarks/bench_inspector.py [--vector gpt_portable_big] [--runs 7]
       [--format json]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import time
from pathlib import Path

from machine import VECTORS, delegate_lens_command
from machine import describe as describe_machine


def command(vector: Path, fmt: str) -> list[str]:
    head = delegate_lens_command()
    return [
        *head,
        "inspect",
        str(vector / "etdump.etdp"),
        "--etrecord",
        str(vector / "etrecord.bin"),
        "--format",
        fmt,
    ]


def run_once(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one child process,
    stdout to /dev/null."""
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def breakdown(vector: Path, fmt: str) -> list[tuple[str, float]]:
    t0 = time.perf_counter()
    from delegate_lens import etdump
    from delegate_lens.exporters import get_exporters
    from delegate_lens.inspector import Inspector

    exporter = get_exporters()[fmt]
    t1 = time.perf_counter()
    etdump.load(vector / "etdump.etdp")
    t2 = time.perf_counter()
    inspector = Inspector(etdump_path=vector / "etdump.etdp", etrecord=str(vector / "etrecord.bin"))
    t3 = time.perf_counter()
    sink = io.StringIO()
    exporter.write(inspector, sink)
    t4 = time.perf_counter()
    return [
        ("imports (inspector, codec, plugin host)", t1 - t0),
        ("ETDump decode alone", t2 - t1),
        ("Inspector(...) incl. decode and ETRecord", t3 - t2),
        (f"--format {fmt} writing ({len(sink.getvalue()) / 1e6:.1f} MB)", t4 - t3),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vector", default="gpt_portable_big")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--format", default="json")
    args = parser.parse_args()
    vector = VECTORS / args.vector
    cmd = command(vector, args.format)
    print(f"machine: {describe_machine()}")
    print(f"command: {' '.join(cmd)} > /dev/null")
    run_once(cmd)  # warm the page cache
    walls, cpus, rss = [], [], []
    for _ in range(args.runs):
        wall, cpu, peak = run_once(cmd)
        walls.append(wall)
        cpus.append(cpu)
        rss.append(peak)
    print(
        f"whole process, {args.runs} runs: median {statistics.median(walls):.3f} s "
        f"(min {min(walls):.3f}, max {max(walls):.3f}); target <= 1.0 s"
    )
    print(
        f"CPU time (user + system): median {statistics.median(cpus):.3f} s "
        f"(min {min(cpus):.3f}); close to the wall time on an idle machine"
    )
    print(
        f"peak RSS: median {statistics.median(rss):.1f} MB (max {max(rss):.1f} MB); "
        "target <= 200 MB"
    )
    print("in-process breakdown of one run:")
    for label, seconds in breakdown(vector, args.format):
        print(f"  {label:<48} {seconds:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
