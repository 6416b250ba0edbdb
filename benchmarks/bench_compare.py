"""`delegate-lens compare` on two big-vector ETDumps (issue 12: under 1 s).

Measures the whole command a user runs,

    delegate-lens compare big/etdump.etdp copy/etdump.etdp --etrecord etrecord.bin > /dev/null

as a fresh process per run (median wall time), where the second ETDump is a copy of the
first in another folder (so the two files are read separately). Then, in this process, a
breakdown: reading both sides (two Inspectors, loaded in two threads as ``compare`` does),
the comparison itself on the loaded tables (matching, statistics of 241 rows x 2,000
samples per side, summaries), and writing the table.

Usage: python benchmarks/bench_compare.py [--vector gpt_portable_big] [--runs 5]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from machine import VECTORS, delegate_lens_command, user_env
from machine import describe as describe_machine


def command(base: Path, new: Path, etrecord: Path) -> list[str]:
    head = delegate_lens_command()
    return [*head, "compare", str(base), str(new), "--etrecord", str(etrecord)]


def run_once(cmd: list[str]) -> float:
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        proc = subprocess.run(
            cmd, stdout=devnull, stderr=subprocess.PIPE, check=False, env=user_env()
        )
        wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: a regression found, still a complete run
        raise SystemExit(f"command failed ({proc.returncode}): {proc.stderr.decode()}")
    return wall


def breakdown(base: Path, new: Path, etrecord: Path, runs: int) -> list[tuple[str, float]]:
    t0 = time.perf_counter()
    from delegate_lens.compare import compare, write_result
    from delegate_lens.compare._api import _two_inspectors

    t1 = time.perf_counter()
    loads, compares, writes = [], [], []
    for _ in range(runs):
        t2 = time.perf_counter()
        (a, _), (b, _) = _two_inspectors(base, str(etrecord), new, str(etrecord))
        t3 = time.perf_counter()
        result = compare(a, b)
        t4 = time.perf_counter()
        write_result(result, io.StringIO(), "table")
        t5 = time.perf_counter()
        loads.append(t3 - t2)
        compares.append(t4 - t3)
        writes.append(t5 - t4)
    return [
        ("imports", t1 - t0),
        ("both Inspectors (two threads), median", statistics.median(loads)),
        ("compare(loaded inspectors), median", statistics.median(compares)),
        ("table writing, median", statistics.median(writes)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vector", default="gpt_portable_big")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    vector = VECTORS / args.vector
    etrecord = vector / "etrecord.bin"
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        copy = Path(tmp) / "etdump.etdp"
        shutil.copyfile(vector / "etdump.etdp", copy)
        base = vector / "etdump.etdp"
        cmd = command(base, copy, etrecord)
        print(f"machine: {describe_machine()}")
        print(f"command: {' '.join(cmd)} > /dev/null")
        run_once(cmd)  # warm the page cache and write .pyc files, as an install has
        walls = [run_once(cmd) for _ in range(args.runs)]
        print(
            f"whole process, {args.runs} runs: median {statistics.median(walls):.3f} s "
            f"(min {min(walls):.3f}, max {max(walls):.3f}); target < 1 s"
        )
        print("in-process breakdown:")
        for label, seconds in breakdown(base, copy, etrecord, args.runs):
            print(f"  {label:<44} {seconds:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
