"""Start-up of the CLI: our own modules' import time for ``inspect`` (issue 25 item 3: under 80 ms).

Runs, as a fresh process per run (one warm-up, then ``--runs``),

    python -X importtime -m delegate_lens inspect gpt_portable_big/etdump.etdp \
        --etrecord gpt_portable_big/etrecord.bin > /dev/null

and sums, per run, the *self* times that ``-X importtime`` prints for ``delegate_lens`` and
``delegate_lens.*`` modules (the figure of the target). Printed beside it, each summed the
same way: the plugins' modules (``delegate_lens_*``), numpy, and every other module; and
which optional extras (pandas, rich, pyarrow, torch, ...) the command imported at all.
Each figure is the median over the runs. ``--top N`` lists our N costliest modules (median
self time).

The timed environment is a user's: bytecode caching on (``PYTHONDONTWRITEBYTECODE`` is
removed), so the warm-up run writes any missing ``.pyc`` and the counted runs read them.

``--api`` times the Python API's imports instead (``from delegate_lens.inspector import
Inspector``), the start of every notebook that opens an ETDump.

``--clock cpu`` times each import in CPU seconds of the importing thread instead of
``-X importtime``'s wall seconds (same sums): on a machine other processes load, wall
times grow with the load, CPU times far less.

``--no-bytecode`` compiles every module at every start (an empty bytecode folder that is
never written): the cost of running without ``.pyc`` files.

Usage: python benchmarks/bench_startup.py [--vector gpt_portable_big] [--runs 5] [--top 15]
       [--format table] [--api] [--clock wall|cpu] [--no-bytecode] [-- EXTRA CLI ARGS]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from machine import VECTORS, user_env
from machine import describe as describe_machine

_CPU_CLOCK = """\
import atexit, importlib._bootstrap as bootstrap, sys, time
load, stack, rows = bootstrap._load_unlocked, [], []
def timed_load(spec):
    stack.append(0.0)
    start = time.thread_time()
    try:
        return load(spec)
    finally:
        total = time.thread_time() - start
        children = stack.pop()
        if stack:
            stack[-1] += total
        rows.append((spec.name, total - children, total))
bootstrap._load_unlocked = timed_load
@atexit.register
def report():
    for name, own, total in rows:
        sys.stderr.write(f"import time: {int(own * 1e6)} | {int(total * 1e6)} | {name}\\n")
"""
"""Prepended to the command with ``--clock cpu``: each module's import timed in CPU seconds
of the importing thread (``time.thread_time``), printed as ``-X importtime`` prints, so
that a loaded machine (other processes on the cores) inflates the figure far less."""

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")
EXTRAS = ("numpy", "pandas", "pyarrow", "rich", "torch", "duckdb", "scipy", "dask")


def parse_importtime(stderr: str) -> dict[str, int]:
    """Module name -> self time in microseconds, from ``-X importtime`` output."""
    selves: dict[str, int] = {}
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if m:
            selves[m.group(3)] = selves.get(m.group(3), 0) + int(m.group(1))
    return selves


def group(name: str) -> str:
    """Which figure a module counts in: ours, plugin, numpy or other."""
    top = name.partition(".")[0]
    if top == "delegate_lens":
        return "ours"
    if top.startswith("delegate_lens_"):
        return "plugins"
    if top == "numpy":
        return "numpy"
    return "other"


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[dict[str, int], float]:
    """Self times of one run's imports, and the run's wall seconds."""
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False
    )
    wall = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-2000:]}")
    return parse_importtime(stderr), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vector", default="gpt_portable_big")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=0, help="list our N costliest modules")
    parser.add_argument("--format", default="table", help="inspect --format (default table)")
    parser.add_argument(
        "--api",
        action="store_true",
        help="time the Python API's imports instead: 'from delegate_lens.inspector import Inspector'",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: -X importtime (default); cpu: the importing thread's CPU time, for a "
        "loaded machine",
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="compile every module at every start (no .pyc read or written): what a start "
        "costs where bytecode is missing",
    )
    parser.add_argument("extra", nargs="*", help="more inspect arguments (after --)")
    args = parser.parse_args()

    vector = VECTORS / args.vector
    inspect_args = [
        "inspect",
        str(vector / "etdump.etdp"),
        "--etrecord",
        str(vector / "etrecord.bin"),
        "--format",
        args.format,
        *args.extra,
    ]
    api = "from delegate_lens.inspector import Inspector"
    if args.clock == "wall":
        head = [sys.executable, "-X", "importtime"]
        cmd = [*head, "-c", api] if args.api else [*head, "-m", "delegate_lens", *inspect_args]
    else:
        run_cli = (
            "import runpy\nrunpy.run_module('delegate_lens', run_name='__main__', alter_sys=True)"
        )
        tail = api if args.api else run_cli
        cmd = [sys.executable, "-c", _CPU_CLOCK + tail, *([] if args.api else inspect_args)]
    print(describe_machine())
    shown = [c if c.count("\n") == 0 else "<cpu clock>" for c in cmd]
    print(
        f"clock: {args.clock}; command:",
        " ".join(Path(c).name if os.sep in c else c for c in shown),
    )
    env = user_env()
    empty = tempfile.TemporaryDirectory()
    if args.no_bytecode:  # an empty bytecode folder, never written: every module compiled
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = empty.name
    run_once(cmd, env)  # warm-up: writes missing .pyc files (unless --no-bytecode)
    sums: dict[str, list[float]] = defaultdict(list)
    per_module: dict[str, list[int]] = defaultdict(list)
    walls: list[float] = []
    extras_seen: set[str] = set()
    for _ in range(args.runs):
        selves, wall = run_once(cmd, env)
        walls.append(wall)
        totals: dict[str, int] = defaultdict(int)
        for name, us in selves.items():
            totals[group(name)] += us
            if group(name) == "ours":
                per_module[name].append(us)
            top = name.partition(".")[0]
            if top in EXTRAS:
                extras_seen.add(top)
        for key in ("ours", "plugins", "numpy", "other"):
            sums[key].append(totals[key] / 1000.0)
        print(
            f"  run: ours {totals['ours'] / 1000:.1f} ms, numpy {totals['numpy'] / 1000:.1f} ms, "
            f"wall {wall:.3f} s"
        )
    med = {key: statistics.median(values) for key, values in sums.items()}
    print(f"median of {args.runs} runs (self times summed, ms):")
    print(f"  delegate_lens.* (ours)      {med['ours']:7.1f}   target < 80")
    print(f"  plugins (delegate_lens_*)   {med['plugins']:7.1f}")
    print(f"  numpy                       {med['numpy']:7.1f}")
    print(f"  everything else             {med['other']:7.1f}")
    print(f"  whole process wall          {statistics.median(walls) * 1000:7.1f}")
    print("  optional extras imported:  ", ", ".join(sorted(extras_seen)) or "none")
    if args.top:
        print(f"our {args.top} costliest modules (median self ms):")
        ranked = sorted(((statistics.median(v), k) for k, v in per_module.items()), reverse=True)
        for ms, name in ranked[: args.top]:
            print(f"  {ms / 1000:6.2f}  {name}")


if __name__ == "__main__":
    main()
