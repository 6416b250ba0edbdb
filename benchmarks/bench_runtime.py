"""Cost of tracing in the simulated runtime (issue 5).

Two figures, medians over repeated batches:

* **one delegate event** — what a backend pays per logged event with an ``ETDumpGen``:
  real time (``event_tracer_start_profiling_delegate`` + ``..._end_...`` with bytes
  metadata), post time (``event_tracer_log_profiling_delegate``), real time with a
  structured metadata value encoded by the demo backend's ``dl_encode_delegate_metadata``,
  and, for contrast, the no-op tracer (``None``). Target: <= 2 us for one event.
* **5,000 small operator instructions** — one method (alternating ``aten.add.Tensor``,
  ``aten.mul.Tensor`` and ``aten.relu.default`` on 16-element tensors) run untraced and
  traced by an ``ETDumpGen`` without a debug buffer (the events, not the tensor copies);
  also reported with a debug buffer. Target: traced <= 1.5x untraced.

Usage: python benchmarks/bench_runtime.py [--events 20000] [--batches 25] [--runs 41] [-p no:NAME]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from machine import describe as describe_machine


def _per_event(fn: Callable[[int], None], n: int, batches: int) -> float:
    """Median over batches of the time per event in ns."""
    fn(min(n, 1000))  # warm up
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        fn(n)
        samples.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(samples)


def bench_events(n: int, batches: int) -> dict[str, float]:
    from delegate_lens.runtime import (
        ETDumpGen,
        event_tracer_end_profiling_delegate,
        event_tracer_log_profiling_delegate,
        event_tracer_start_profiling_delegate,
    )

    meta = b"\x01" * 24
    structured = {"kernel": "demo_linear_f32", "flops": 1024, "bytes_moved": 4096}
    results: dict[str, float] = {}

    def fresh() -> Any:
        gen = ETDumpGen()
        gen.create_event_block("Execute")
        gen.set_chain_debug_handle(0, 1)
        gen.delegate_backend_id = "DemoBackend"
        return gen

    def real_time(k: int, gen: Any = None, metadata: Any = meta, ident: int = 3) -> None:
        gen = fresh() if gen is None else gen
        for _ in range(k):
            entry = event_tracer_start_profiling_delegate(gen, None, ident)
            event_tracer_end_profiling_delegate(gen, entry, metadata)

    def post_time(k: int) -> None:
        gen = fresh()
        for i in range(k):
            event_tracer_log_profiling_delegate(gen, "op#1", None, i, i + 5, meta)

    def structured_time(k: int) -> None:
        real_time(k, metadata=structured)

    def noop(k: int) -> None:
        for _ in range(k):
            entry = event_tracer_start_profiling_delegate(None, None, 3)
            event_tracer_end_profiling_delegate(None, entry, meta)

    results["real-time event (start+end, bytes metadata)"] = _per_event(real_time, n, batches)
    results["post-time event (log_profiling_delegate)"] = _per_event(post_time, n, batches)
    results["real-time event, structured metadata via plugin"] = _per_event(
        structured_time, n // 4, batches
    )
    results["no-op tracer (None), start+end"] = _per_event(noop, n, batches)

    ETDumpGen().get_etdump_data()  # import the codec before timing
    builds = []
    for _ in range(5):
        gen = fresh()
        real_time(n, gen)
        t0 = time.perf_counter_ns()
        gen.get_etdump_data()
        builds.append((time.perf_counter_ns() - t0) / n)
    results["building the ETDump afterwards, per event"] = statistics.median(builds)
    return results


def _chain_program(n: int) -> Any:
    import numpy as np

    from delegate_lens.program import (
        MethodData,
        OperatorInstruction,
        ProgramData,
        TensorValue,
        serialize,
    )

    const = TensorValue("float32", (16,), np.full(16, 0.5, np.float32).tobytes())
    values: list[Any] = [TensorValue("float32", (16,)), const]
    insts = []
    for i in range(n):
        src = 0 if i == 0 else len(values) - 1
        values.append(TensorValue("float32", (16,)))
        out = len(values) - 1
        kind = i % 3
        if kind == 0:
            insts.append(OperatorInstruction("aten.add.Tensor", [src, 1], [out]))
        elif kind == 1:
            insts.append(OperatorInstruction("aten.mul.Tensor", [src, 1], [out]))
        else:
            insts.append(OperatorInstruction("aten.relu.default", [src], [out]))
    return serialize(ProgramData([MethodData("forward", [0], [len(values) - 1], values, insts)]))


def bench_method(n_instructions: int, runs: int) -> dict[str, float]:
    import torch

    from delegate_lens.runtime import ETDumpGen, Program

    program = Program.load(_chain_program(n_instructions))
    x = torch.randn(16)
    plain = program.load_method()

    methods = {
        "untraced": plain,
        "traced": program.load_method(event_tracer=ETDumpGen()),
        "debug": program.load_method(event_tracer=ETDumpGen(debug_buffer_size=64 << 20)),
    }
    for method in methods.values():
        method.execute([x])  # warm up
    # Interleave run by run, so a burst of load from other processes on a shared machine
    # hits both sides of a ratio alike; report medians of the times and of the per-run ratios.
    times: dict[str, list[float]] = {key: [] for key in methods}
    for _ in range(runs):
        for key, method in methods.items():
            t0 = time.perf_counter_ns()
            method.execute([x])
            times[key].append((time.perf_counter_ns() - t0) / 1e6)
    untraced = times["untraced"]
    return {
        "untraced (ms)": statistics.median(untraced),
        "traced, ETDumpGen (ms)": statistics.median(times["traced"]),
        "traced / untraced": statistics.median(
            t / u for t, u in zip(times["traced"], untraced, strict=True)
        ),
        "traced with debug buffer (ms)": statistics.median(times["debug"]),
        "debug buffer / untraced": statistics.median(
            d / u for d, u in zip(times["debug"], untraced, strict=True)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--instructions", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument(
        "-p",
        dest="plugin_options",
        action="append",
        default=[],
        metavar="PLUGIN",
        help="plugin options as in the CLI (-p MODULE, -p no:NAME)",
    )
    args = parser.parse_args()
    if args.plugin_options:
        from delegate_lens.pluginmanager import apply_plugin_options

        apply_plugin_options(args.plugin_options)
    import torch

    torch.set_num_threads(1)  # tiny kernels: avoid OpenMP hand-offs on a shared 2-core box
    print(f"machine: {describe_machine(f'torch {torch.__version__} (1 intra-op thread)')}")
    print("one delegate event (median per event over batches):")
    for label, ns in bench_events(args.events, args.batches).items():
        print(f"  {label:<52} {ns / 1000:8.3f} us")
    print(
        f"method of {args.instructions} operator instructions (medians of {args.runs} interleaved runs):"
    )
    for label, value in bench_method(args.instructions, args.runs).items():
        print(f"  {label:<52} {value:8.3f}")


if __name__ == "__main__":
    main()
