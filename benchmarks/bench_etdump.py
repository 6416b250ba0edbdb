"""Benchmark the ETDump codec on the shared vectors; prints medians and the machine.

    python benchmarks/bench_etdump.py [--repeat N]

Measures: ``load`` of gpt_portable_big (482,002 events), ``dumps`` of gpt_portable
(12,000 events) and of the big one, ``to_json`` of gpt_portable, and the peak RSS of a
child process that only imports the codec and loads the big vector (``ru_maxrss``).
Targets (issue 2): load <= 0.3 s, dumps <= 25 ms / <= 1 s, peak RSS <= 150 MB.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine import VECTORS, user_env
from machine import describe as describe_machine

BIG = VECTORS / "gpt_portable_big" / "etdump.etdp"
SMALL = VECTORS / "gpt_portable" / "etdump.etdp"

# ru_maxrss of a child also counts the parent's memory it was forked from (Linux keeps the
# high-water mark across exec), so the children are started before the parent loads anything
# big, and they also report VmHWM (the peak of their own address space only).
_CHILD = """
import resource, sys
from delegate_lens.etdump import load
etdump = load(sys.argv[1])
assert sum(len(r.columns) for r in etdump.run_data) > 0
hwm = 0
try:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
except OSError:
    pass
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, hwm)
"""


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds) per run; CPU time shows the cost when the machine is shared."""
    fn()  # warm up (page cache, first-touch allocations)
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def report(
    label: str, measured: tuple[list[float], list[float]], target: float | None = None
) -> None:
    samples, cpu = measured
    med = statistics.median(samples)
    spread = (
        f"min {min(samples) * 1e3:8.1f} ms · max {max(samples) * 1e3:8.1f} ms · "
        f"CPU median {statistics.median(cpu) * 1e3:7.1f} ms"
    )
    verdict = (
        ""
        if target is None
        else ("  OK" if med <= target else f"  OVER target {target * 1e3:.0f} ms")
    )
    print(f"{label:<34} median {med * 1e3:8.1f} ms · {spread} (n={len(samples)}){verdict}")


def peak_rss_mb(path: Path, repeat: int) -> tuple[list[float], list[float]]:
    """(ru_maxrss, VmHWM) in MB of fresh child processes that load ``path``."""
    maxrss, hwm = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)],
            capture_output=True,
            text=True,
            check=True,
            env=user_env(),
        ).stdout.split()
        maxrss.append(int(out[0]) / 1024)  # KiB on Linux
        hwm.append(int(out[1]) / 1024)
    return maxrss, hwm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per measure (default 9)")
    args = parser.parse_args()
    if not BIG.is_file():
        print(f"missing vector: {BIG}", file=sys.stderr)
        return 2

    print(f"machine: {describe_machine()}")
    maxrss, hwm = peak_rss_mb(BIG, max(3, args.repeat // 3))

    from delegate_lens.etdump import dumps, load, loads
    from delegate_lens.etdump.jsonview import to_json

    big_bytes = BIG.read_bytes()
    small = load(SMALL)
    big = loads(big_bytes)
    n_big = sum(len(r.columns) for r in big.run_data)
    n_small = sum(len(r.columns) for r in small.run_data)
    print(
        f"vectors: {BIG.name} of gpt_portable_big ({len(big_bytes):,} bytes, {n_big:,} events); "
        f"gpt_portable ({n_small:,} events)"
    )

    report("load big (file -> ETDump)", timed(lambda: load(BIG), args.repeat), 0.3)
    report("loads big (bytes -> ETDump)", timed(lambda: loads(big_bytes), args.repeat), 0.3)
    report("dumps gpt_portable", timed(lambda: dumps(small), max(args.repeat, 21)), 0.025)
    report("dumps big", timed(lambda: dumps(big), args.repeat), 1.0)
    report("to_json gpt_portable", timed(lambda: to_json(small), args.repeat))
    for label, rss in (
        ("peak RSS loading big (ru_maxrss)", maxrss),
        ("peak RSS loading big (VmHWM)", hwm),
    ):
        med = statistics.median(rss)
        print(
            f"{label:<34} median {med:8.1f} MB · min {min(rss):.1f} · max {max(rss):.1f} "
            f"(n={len(rss)}){'  OK' if med <= 150 else '  OVER target 150 MB'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
