"""The model-explorer exporter on a vector (default the big one): the whole command a user
runs, as a fresh process per run,

    delegate-lens inspect gpt_portable_big/etdump.etdp --etrecord etrecord.bin \\
        --format model-explorer -o DIR

(wall time, median over runs, and the folder's size), then, in this process, the split
between the Inspector and the export (graph JSON + overlays) of one run.

Usage: python benchmarks/bench_model_explorer.py [--vector gpt_portable_big] [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from machine import VECTORS, delegate_lens_command, user_env
from machine import describe as describe_machine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vector", default="gpt_portable_big")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    vector = VECTORS / args.vector
    work = Path(tempfile.mkdtemp(prefix="bench-me-"))
    head = delegate_lens_command()
    etdump, etrecord = str(vector / "etdump.etdp"), str(vector / "etrecord.bin")
    print(f"machine: {describe_machine()}")
    walls = []
    try:
        for run in range(args.runs):
            out = work / f"me{run}"
            cmd = [*head, "inspect", etdump, "--etrecord", etrecord]
            cmd += ["--format", "model-explorer", "-o", str(out)]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=user_env())
            walls.append(time.perf_counter() - start)
        print(f"command: {' '.join(cmd)}")
        size = sum(p.stat().st_size for p in (work / "me0").iterdir())
        files = sorted(p.name for p in (work / "me0").iterdir())
        print(f"whole command: median {statistics.median(walls):.3f} s over {args.runs} runs")
        print(f"folder: {size:,} bytes in {len(files)} files ({', '.join(files)})")

        from delegate_lens_model_explorer import write_model_explorer

        from delegate_lens.inspector import Inspector

        start = time.perf_counter()
        inspector = Inspector(etdump_path=etdump, etrecord=etrecord)
        built = time.perf_counter()
        folder = work / "in-process"
        folder.mkdir()
        write_model_explorer(inspector, folder)
        done = time.perf_counter()
        print(f"in process: Inspector {built - start:.3f} s, export {done - built:.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
