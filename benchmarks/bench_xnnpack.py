"""What ``--program`` costs ``inspect`` on an XNNPACK ETDump (issue 34: at most 10% more).

The ETDump is the reference vector ``conv_xnnpack`` (ExecuTorch 1.5.1's XNNPACK delegate,
four operator events, a DELEGATE_CALL, a portable kernel and Method::execute per run) with its
``Execute`` run repeated until the file holds ``--scale`` times the events of the 50-run GPT
vector (``gpt_portable``: 12,052 events; the default 10x is about 120,000 events). It is timed
as the whole command a user runs, a fresh process per run,

    delegate-lens inspect etdump.etdp --etrecord etrecord.bin [--program model.pte] -f json

with and without ``--program``, alternating, medians over ``--runs``. The program adds one
read of the ``.pte`` and one recovery per delegate call, not per event.

Usage: python benchmarks/bench_xnnpack.py [--scale 10] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from machine import VECTORS, delegate_lens_command, user_env
from machine import describe as describe_machine

GPT_EVENTS = 12_052
"""Events of ``tests/data/vectors/gpt_portable/etdump.etdp`` (50 runs of a 4-layer GPT)."""


def big_etdump(scale: float, out: Path) -> int:
    """Write the scaled ETDump to ``out``; its number of events."""
    from delegate_lens.etdump import ETDump, dump, load

    base = load(VECTORS / "conv_xnnpack" / "etdump.etdp")
    heads = [r for r in base.run_data if r.name != "Execute"]
    execute = next(r for r in base.run_data if r.name == "Execute")
    per_run = len(execute.events)
    wanted = int(GPT_EVENTS * scale)
    runs = max(1, (wanted - sum(len(r.events) for r in heads)) // per_run)
    dump(ETDump(version=base.version, run_data=[*heads, *([execute] * runs)]), out)
    return sum(len(r.events) for r in heads) + runs * per_run


def run_once(cmd: list[str]) -> float:
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        proc = subprocess.run(cmd, stdout=devnull, stderr=subprocess.PIPE, env=user_env())
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    vector = VECTORS / "conv_xnnpack"
    with tempfile.TemporaryDirectory() as tmp:
        etdump = Path(tmp) / "etdump.etdp"
        events = big_etdump(args.scale, etdump)
        size = etdump.stat().st_size / 1e6
        plain = [
            *delegate_lens_command(),
            "inspect",
            str(etdump),
            "--etrecord",
            str(vector / "etrecord.bin"),
            "-f",
            "json",
        ]
        given = [*plain, "--program", str(vector / "model.pte")]
        run_once(plain)  # warm the caches once
        run_once(given)
        without, with_program = [], []
        for _ in range(args.runs):
            without.append(run_once(plain))
            with_program.append(run_once(given))
    a, b = statistics.median(without), statistics.median(with_program)
    print(describe_machine())
    print(f"ETDump: {events:,} events ({args.scale:g}x the GPT vector), {size:.1f} MB")
    print(f"inspect -f json without --program: {a:.3f} s (median of {args.runs})")
    print(f"inspect -f json with    --program: {b:.3f} s (median of {args.runs})")
    cost = (b / a - 1.0) * 100.0
    print(f"cost of --program: {cost:+.1f}% (bar: <= +10%)  {'OK' if cost <= 10.0 else 'OVER'}")


if __name__ == "__main__":
    main()
