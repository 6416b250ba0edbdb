"""Benchmark delegate_lens.testing; prints medians and the machine.

    python benchmarks/bench_testing.py [--repeat N] [--examples N] [--skip-conformance]

Measures: examples per second hypothesis draws from each mapping strategy
(``debug_handles``, ``delegate_mappings`` int / str / mixed, ``metadata("DemoBackend")``,
``etdump_runs``) inside a ``@given`` test doing nothing, and the wall time of the whole
conformance run on the demo backend (``check_backend("DemoBackend")``, its default budget).
Targets (issue 10): >= 200 examples/s for the mapping strategies; conformance < 60 s on
2 cores.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from machine import describe as describe_machine


def examples_per_second(strategy: Any, examples: int) -> float:
    from hypothesis import HealthCheck, given, settings

    count = [0]

    @settings(
        max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def draw(value: Any) -> None:
        count[0] += 1

    t0 = time.perf_counter()
    draw()
    return count[0] / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--skip-conformance", action="store_true")
    args = parser.parse_args()

    from delegate_lens.testing import strategies as dls

    print(describe_machine())
    from hypothesis import strategies as st

    cases: dict[str, Callable[[], Any]] = {
        "st.integers() (hypothesis's own floor)": lambda: st.integers(),
        "debug_handles()": lambda: dls.debug_handles(),
        "delegate_mappings(int)": lambda: dls.delegate_mappings(identifiers_kind="int"),
        "delegate_mappings(str)": lambda: dls.delegate_mappings(identifiers_kind="str"),
        "delegate_mappings(any, handles=range(16))": lambda: dls.delegate_mappings(range(16)),
        "metadata('DemoBackend')": lambda: dls.metadata("DemoBackend"),
        "etdump_runs()": lambda: dls.etdump_runs(),
    }
    for name, make in cases.items():
        rates = [examples_per_second(make(), args.examples) for _ in range(args.repeat)]
        print(
            f"{name:44} median {statistics.median(rates):8.0f} examples/s "
            f"({args.examples} examples x {args.repeat})"
        )
    if args.skip_conformance:
        return
    from delegate_lens.testing import check_backend

    times = []
    for _ in range(args.repeat):
        report = check_backend("DemoBackend")
        assert report.ok, report.to_table()
        times.append(report.seconds)
    print(
        f"check_backend('DemoBackend') ({report.models_checked} models, "
        f"{len(report.rules)} rules): median {statistics.median(times):.1f} s "
        f"(runs: {', '.join(f'{t:.1f}' for t in times)})"
    )


if __name__ == "__main__":
    main()
