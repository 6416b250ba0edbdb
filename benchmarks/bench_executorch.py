"""Benchmark the executorch bridge (issue 23); prints medians and the machine.

    python benchmarks/bench_executorch.py [--models N] [--runs N] [--repeat N]
        [--only check|profile|portable|child]

Needs the ``executorch`` extra. Three measures in this process, after a warm-up (the
import of executorch, some seconds, is not timed), and one of whole processes:

* ``check``: ``check_backend`` on XNNPACK from the wheel with ``--models`` generated models
  (export, real lowering, real ETRecord, real runtime with ETDump and debug buffer, every
  rule): total seconds and seconds per model, and which rules XNNPACK breaks;
* ``profile``: one real program (an MLP of 6 Linear+ReLU layers, 256 wide, lowered to
  XNNPACK; its ETRecord written by ExecuTorch with representative inputs), ``--runs``
  executions with ETDump and a debug buffer, then the Inspector and the numeric gap, two
  ways side by side, alternating, medians of ``--repeat``:
  ``delegate_lens.profile(...)`` + ``calculate_numeric_gap``, and the reference's own
  Python flow for the same work (``_load_for_executorch`` of the file, with ETDump and
  debug buffer, ``run_method`` N times, ``write_etdump_result_to_file``,
  ``executorch.devtools.Inspector`` and its ``calculate_numeric_gap``);
* ``portable``: the same side by side on the reference's ``gpt_portable`` program (no
  delegate: many operator events), runtime with ETDump then the Inspector's tables;
* ``child``: what running the runtime in a child process costs ``delegate-lens profile``
  of a small program (the reference's ``mlp_xnnpack``, ``--runs`` runs, ``-o DIR``): whole
  processes, the command as shipped against the same command with the runtime in its own
  process (``delegate_lens_executorch.child.ISOLATE = False``, unprotected), in turn,
  ``--repeat`` pairs after a warm-up; medians of wall and CPU seconds (the runtime's
  child included) and of the ratio pair by pair (bar: under 1.10).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine import VECTORS, user_env
from machine import describe as describe_machine

XNNPACK = "executorch.backends.xnnpack.partition.xnnpack_partitioner:XnnpackPartitioner"


def bench_check(models: int) -> None:
    from delegate_lens_executorch.conformance import check_partitioner

    check_partitioner(XNNPACK, max_examples=1, seed=1)  # warm: imports, first lowering
    t0 = time.perf_counter()
    report = check_partitioner(XNNPACK, max_examples=models, seed=0)
    seconds = time.perf_counter() - t0
    print(
        f"check-backend XNNPACK: {report.models_checked} models in {seconds:.1f} s "
        f"({seconds / max(report.models_checked, 1):.2f} s per model); "
        f"broken rules: {', '.join(report.failed_rules) or 'none'}"
    )


def _program(folder: Path) -> tuple[Path, Path, list[Any]]:
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(6):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).eval()
    inputs = [torch.randn(8, 256)]
    edge = to_edge_transform_and_lower(
        torch.export.export(model, tuple(inputs)),
        partitioner=[XnnpackPartitioner()],
        generate_etrecord=True,
    )
    manager = edge.to_executorch()
    record = manager.get_etrecord()
    record.update_representative_inputs(inputs)
    pte, etrecord = folder / "model.pte", folder / "etrecord.bin"
    pte.write_bytes(manager.buffer)
    record.save(str(etrecord))
    return pte, etrecord, inputs


def _ours(pte: Path, etrecord: Path, inputs: list[Any], runs: int) -> int:
    import delegate_lens

    inspector = delegate_lens.profile(pte, etrecord=etrecord, inputs=inputs, runs=runs, debug=True)
    gaps = inspector.calculate_numeric_gap(inputs=inputs, as_dataframe=False)
    return len(gaps.rows)


def _reference(pte: Path, etrecord: Path, inputs: list[Any], runs: int, tmp: Path) -> int:
    from executorch.devtools import Inspector
    from executorch.extension.pybindings import portable_lib

    module = portable_lib._load_for_executorch(
        str(pte), enable_etdump=True, debug_buffer_size=16 << 20
    )
    for _ in range(runs):
        module.run_method("forward", tuple(inputs))
    etdump, buffer = tmp / "ref.etdp", tmp / "ref.bin"
    module.write_etdump_result_to_file(str(etdump), str(buffer))
    inspector = Inspector(
        etdump_path=str(etdump), etrecord=str(etrecord), debug_buffer_path=str(buffer)
    )
    return len(inspector.calculate_numeric_gap("MSE"))


def _median(fn: Callable[[], int], times: list[float]) -> int:
    t0 = time.perf_counter()
    rows = fn()
    times.append(time.perf_counter() - t0)
    return rows


def bench_profile(runs: int, repeat: int) -> None:
    from delegate_lens_executorch.runtime import native_quiet

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pte, etrecord, inputs = _program(tmp)
        ours: list[float] = []
        reference: list[float] = []
        with native_quiet():  # the runtime.s log lines
            _ours(pte, etrecord, inputs, 1)  # warm both
            _reference(pte, etrecord, inputs, 1, tmp)
            for _ in range(repeat):
                rows_ours = _median(lambda: _ours(pte, etrecord, inputs, runs), ours)
                rows_ref = _median(lambda: _reference(pte, etrecord, inputs, runs, tmp), reference)
        a, b = statistics.median(ours), statistics.median(reference)
        print(
            f"profile, {runs} runs + Inspector + numeric gap: delegate-lens {a:.3f} s "
            f"({rows_ours} gap rows), reference flow {b:.3f} s ({rows_ref} gap rows), "
            f"ratio {b / a:.2f}x (medians of {repeat})"
        )


def bench_portable(runs: int, repeat: int) -> None:
    """The reference's gpt_portable program (no delegate, many operator events): the
    runtime with ETDump, then the Inspector's tables (no debug buffer, no numeric gap)."""
    import torch
    from delegate_lens_executorch.runtime import native_quiet
    from executorch.devtools import Inspector
    from executorch.extension.pybindings import portable_lib
    from machine import VECTORS

    import delegate_lens

    pte, etrecord = (
        VECTORS / "gpt_portable" / "model.pte",
        VECTORS / "gpt_portable" / "etrecord.bin",
    )
    inputs = [torch.randint(0, 256, (1, 16))]

    def ours() -> int:
        inspector = delegate_lens.profile(pte, etrecord=etrecord, inputs=inputs, runs=runs)
        return sum(len(block.events) for block in inspector.event_blocks)

    def reference(tmp: Path) -> int:
        module = portable_lib._load_for_executorch(str(pte), enable_etdump=True)
        for _ in range(runs):
            module.run_method("forward", tuple(inputs))
        module.write_etdump_result_to_file(str(tmp / "ref.etdp"), None)
        inspector = Inspector(etdump_path=str(tmp / "ref.etdp"), etrecord=str(etrecord))
        return sum(len(block.events) for block in inspector.event_blocks)

    with tempfile.TemporaryDirectory() as tmp_name, native_quiet():
        tmp = Path(tmp_name)
        ours(), reference(tmp)  # warm both
        a_times: list[float] = []
        b_times: list[float] = []
        for _ in range(repeat):
            rows_ours = _median(ours, a_times)
            rows_ref = _median(lambda: reference(tmp), b_times)
    a, b = statistics.median(a_times), statistics.median(b_times)
    print(
        f"profile gpt_portable, {runs} runs + Inspector: delegate-lens {a:.3f} s "
        f"({rows_ours} rows), reference flow {b:.3f} s ({rows_ref} rows), "
        f"ratio {b / a:.2f}x (medians of {repeat})"
    )


_CLI = (
    "import sys\n"
    "import delegate_lens_executorch.child as child\n"
    "child.ISOLATE = sys.argv.pop(1) == 'child'\n"
    "from delegate_lens.cli import main\n"
    "sys.exit(main())\n"
)


def _timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys, its children included) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=user_env())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def bench_child(runs: int, repeat: int) -> None:
    """``profile`` with the runtime in a child process against the runtime in-process."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        np.save(tmp / "x.npy", np.random.default_rng(0).standard_normal((2, 16), np.float32))
        pte = VECTORS / "mlp_xnnpack" / "model.pte"

        def argv(mode: str) -> list[str]:
            command = ["profile", str(pte), "--inputs", str(tmp / "x.npy"), "--runs", str(runs)]
            return [sys.executable, "-c", _CLI, mode, *command, "-o", str(tmp / mode)]

        _timed(argv("child")), _timed(argv("in-process"))  # warm: the page cache
        figures: dict[str, list[tuple[float, float]]] = {"child": [], "in-process": []}
        for _ in range(repeat):
            for mode in figures:
                figures[mode].append(_timed(argv(mode)))
    wall = {mode: statistics.median(w for w, _ in f) for mode, f in figures.items()}
    cpu = {mode: statistics.median(c for _, c in f) for mode, f in figures.items()}
    ratios = [a[0] / b[0] for a, b in zip(figures["child"], figures["in-process"], strict=True)]
    print(
        f"profile mlp_xnnpack, {runs} runs, -o DIR: runtime in a child {wall['child']:.3f} s "
        f"wall ({cpu['child']:.3f} s CPU), in-process {wall['in-process']:.3f} s wall "
        f"({cpu['in-process']:.3f} s CPU); child/in-process {statistics.median(ratios):.3f} "
        f"(median of {repeat} pairs; bar: < 1.10); load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=("check", "profile", "portable", "child"))
    args = parser.parse_args()
    print(describe_machine())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # executorch's own deprecation chatter
        if args.only in (None, "profile"):
            bench_profile(args.runs, args.repeat)
        if args.only in (None, "portable"):
            bench_portable(args.runs, args.repeat)
        if args.only in (None, "child"):
            bench_child(args.runs, args.repeat)
        if args.only in (None, "check"):
            bench_check(args.models)


if __name__ == "__main__":
    main()
