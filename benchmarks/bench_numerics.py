"""calculate_numeric_gap on the gpt demo with 200 debug runs (issue 9: under 2 s, excluding
the one-off AOT capture).

Makes the run once (export, lower to the demo backend in fp16 mode, 200 runs traced with
a debug buffer), captures the reference outputs once (torch; cached beside the ETRecord),
then times, as medians over ``--repeat`` rounds in this process:

* ``gap``: ``Inspector.calculate_numeric_gap("MSE", aot_outputs=<cache>)`` on a built
  Inspector (matching, dequantizing hooks, comparing, first divergence) — the figure the
  issue bounds;
* ``inspector + gap``: building the Inspector from the files, then the same;
* ``capture``: the one-off AOT capture (for orientation; not part of the bound).

Usage: python benchmarks/bench_numerics.py [--runs 200] [--repeat 7] [--model gpt]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine import describe as describe_machine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--model", default="gpt", choices=("mlp", "convnet", "gpt"))
    args = parser.parse_args()

    import torch
    from numerics_helpers import demo_run

    from delegate_lens import Inspector
    from delegate_lens.numerics import CACHE_SUFFIX, capture_intermediate_outputs

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        paths = demo_run(
            Path(folder),
            args.model,
            {"precision": b"fp16"},
            runs=args.runs,
            debug_buffer_size=256 << 20,
        )
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        capture_intermediate_outputs(paths["etrecord"], cache=True)
        capture = time.perf_counter() - t0
        cache = str(paths["etrecord"]) + CACHE_SUFFIX

        def build() -> Inspector:
            return Inspector(
                etdump_path=paths["etdump"],
                etrecord=paths["etrecord"],
                debug_buffer_path=paths["debug_buffer"],
            )

        gap_times, total_times = [], []
        rows = 0
        first = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            inspector = build()
            t1 = time.perf_counter()
            table = inspector.calculate_numeric_gap("MSE", aot_outputs=cache, as_dataframe=False)
            t2 = time.perf_counter()
            gap_times.append(t2 - t1)
            total_times.append(t2 - t0)
            rows = len(table)
            first = table.first_divergence
        sizes = {k: paths[k].stat().st_size for k in ("etdump", "debug_buffer")}
    print(describe_machine())
    print(
        f"model {args.model}, fp16, {args.runs} debug runs (made in {made:.1f} s; "
        f"etdump {sizes['etdump']:,} B, debug buffer {sizes['debug_buffer']:,} B); "
        f"{rows} rows; first divergence: "
        f"{', '.join(first['aot_ops']) if first else 'none'}"
    )
    print(f"gap             median {statistics.median(gap_times):.3f} s  (bound: 2 s)")
    print(f"inspector + gap median {statistics.median(total_times):.3f} s")
    print(f"capture (once)  {capture:.3f} s")


if __name__ == "__main__":
    main()
