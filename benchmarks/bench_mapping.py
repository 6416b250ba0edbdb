"""Benchmark: 100,000 DelegateMappingBuilder inserts (target: median <= 0.5 s).

Usage: ``python benchmarks/bench_mapping.py [--repeat 7] [--entries 100000]``.
Three workloads, each timed ``--repeat`` times (median reported):

* ``handles``: manual string identifiers, 3 handles per entry;
* ``nodes``: generated identifiers from graph-node-like objects (2 nodes per entry);
* ``upsert``: 100,000 upserts into 1,000 identifiers (unions).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from machine import describe as describe_machine

from delegate_lens import DelegateMappingBuilder


class _Node:
    __slots__ = ("meta",)

    def __init__(self, handle: int) -> None:
        self.meta = {"debug_handle": handle}


def bench_handles(n: int) -> Callable[[], Any]:
    ids = [f"op_{i}" for i in range(n)]
    handles = [[i + 1, i + 2, i + 3] for i in range(n)]

    def run() -> Any:
        b = DelegateMappingBuilder()
        insert = b.insert_delegate_mapping_entry
        for ident, hs in zip(ids, handles):
            insert(handles=hs, identifier=ident)
        return b.get_delegate_mapping()

    return run


def bench_nodes(n: int) -> Callable[[], Any]:
    nodes = [[_Node(i + 1), _Node(i + 2)] for i in range(n)]

    def run() -> Any:
        b = DelegateMappingBuilder(generated_identifiers=True)
        insert = b.insert_delegate_mapping_entry
        for ns in nodes:
            insert(nodes=ns)
        return b.get_delegate_mapping()

    return run


def bench_upsert(n: int) -> Callable[[], Any]:
    ids = [i % 1000 for i in range(n)]
    nodes = [[_Node(i % 5000 + 1)] for i in range(n)]

    def run() -> Any:
        b = DelegateMappingBuilder()
        upsert = b.upsert_delegate_mapping_entry
        for ident, ns in zip(ids, nodes):
            upsert(ns, identifier=ident)
        return b.get_delegate_mapping()

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--entries", type=int, default=100_000)
    args = parser.parse_args()
    print(f"machine: {describe_machine()}")
    worst = 0.0
    for name, factory in (
        ("handles", bench_handles),
        ("nodes", bench_nodes),
        ("upsert", bench_upsert),
    ):
        run = factory(args.entries)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        worst = max(worst, median)
        print(f"{name:8s} {args.entries} calls: median {median:.3f} s (min {min(times):.3f} s)")
    print(f"target <= 0.5 s: {'OK' if worst <= 0.5 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
