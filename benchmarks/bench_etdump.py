"""Benchmark the ETDump codec on the reference vectors; prints medians and the machine.

    python benchmarks/bench_etdump.py [--repeat N]

Measures: ``load`` of gpt_portable_big (482,002 events), ``dumps`` of gpt_portable
(12,000 events) and of the big one, ``to_json`` of gpt_portable, and the peak RSS of a
child process that only imports the codec and loads the big vector (``ru_maxrss``).
Targets (issue 2): load <= 0.3 s, dumps <= 25 ms / <= 1 s, peak RSS <= 150 MB.

Decode against the floor (issue 25: at most 1.5x), measured by turns in one process:

* ``decode (read + columns)``: the file's bytes read, then ``decode_columns`` (what
  ``load`` does before making run objects);
* ``decode (mapped file)``: ``mapped.decode_file`` (what the Inspector does);
* ``floor``: the file's bytes read, then one numpy pass over them as bytes
  (``np.frombuffer(data, np.uint8).sum()``: every byte read once, as a decoder must);
* ``floor, word pass``: the same with the pass over 8-byte words (memory speed: the
  least any pass can cost; stricter than any decoder can be, printed for scale).
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

import numpy as np
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


def _floor() -> None:
    data = BIG.read_bytes()
    np.frombuffer(data, dtype=np.uint8).sum()


def _floor_words() -> None:
    data = BIG.read_bytes()
    np.frombuffer(data, dtype=np.uint64, count=len(data) // 8).sum()


def decode_vs_floor(repeat: int) -> None:
    """Decoding against the floor, each measure's runs taken by turns (so a change of the
    machine's load hits them alike); the ratios are of the medians."""
    from delegate_lens.etdump._mapped import decode_file
    from delegate_lens.etdump._reader import decode_columns

    measures: dict[str, Callable[[], object]] = {
        "decode (read + columns)": lambda: decode_columns(BIG.read_bytes()),
        "decode (mapped file)": lambda: decode_file(BIG),
        "floor (read + one byte pass)": _floor,
        "floor, word pass": _floor_words,
    }
    wall: dict[str, list[float]] = {k: [] for k in measures}
    cpu: dict[str, list[float]] = {k: [] for k in measures}
    for fn in measures.values():
        fn()  # warm up
    for _ in range(max(repeat, 15)):
        for label, fn in measures.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[label].append(time.perf_counter() - t0)
            cpu[label].append(time.process_time() - c0)
    for label in measures:
        report(label, (wall[label], cpu[label]))
    floor = statistics.median(wall["floor (read + one byte pass)"])
    words = statistics.median(wall["floor, word pass"])
    for label in ("decode (read + columns)", "decode (mapped file)"):
        med = statistics.median(wall[label])
        verdict = "OK" if med <= 1.5 * floor else "OVER target 1.5"
        print(
            f"{label:<34} {med / floor:.2f}x the floor ({verdict}); "
            f"{med / words:.2f}x the word pass"
        )


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
    from delegate_lens.etdump._jsonview import to_json

    big_bytes = BIG.read_bytes()
    small = load(SMALL)
    big = loads(big_bytes)
    n_big = sum(len(r.columns) for r in big.run_data)
    n_small = sum(len(r.columns) for r in small.run_data)
    print(
        f"vectors: {BIG.name} of gpt_portable_big ({len(big_bytes):,} bytes, {n_big:,} events); "
        f"gpt_portable ({n_small:,} events)"
    )

    decode_vs_floor(args.repeat)
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
