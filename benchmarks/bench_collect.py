"""Benchmark ``collect`` and ``query`` (issue 12); prints medians, ``uptime`` and the machine.

    python benchmarks/bench_collect.py [--repeat N] [--small N] [--big N] [--events N]

Measures, each into a fresh dataset (medians of ``--repeat`` runs):

* collect of ``--big`` copies of the big vector (gpt_portable_big, 33.4 MB as the reference
  wrote it, 482,002 events; each copy's times shifted in place so that no copy is skipped
  as a duplicate), 1 and 2 workers;
* collect of ``--small`` small demo dumps (one ``delegate-lens demo`` ETDump, written
  once with torch, then varied with the codec: no torch per file), 1 and 2 workers;
* query: p50 of duration per operator and device over a dataset of ``--events`` events
  (parts written from the big vector's table with three device labels, cached per schema
  and write options);
* with the 1- and 2-worker runs, a reference pair: this process and a helper (started
  once, warm) each collect half of the inputs at once, without the engine (what two
  processes give on this machine now, at best), and the engine's speed relative to it;
* ``--only stages``: CPU time and page faults per file by stage (find, read, hash, decode,
  table, Parquet, and a whole ``collect_batch``), medians of ``--stage-repeat``;
* ``--only parquet`` (not by default): Parquet write options compared, CPU time and size;
* ``--only fresh`` (not by default): the small case with each run in a new interpreter, as
  the CLI runs (every process cold; imports not timed);
* ``--against DIR``: the same parts, by turns (``--rounds`` each), with this tree's
  package and with the one under ``DIR/core`` (another checkout, e.g. an older engine from
  ``git archive REV core | tar -x -C DIR``), each round in a new process: a before/after
  comparison in the same minutes.

MB/s per core = ETDump MB / seconds / workers. Targets: >= 100 MB/s per core, >= 1.7x with
2 workers, query < 1 s. Other jobs load this machine: ``uptime`` is printed with each figure.
Inputs are cached under ``$TMPDIR/delegate-lens-bench-collect``.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from collect_inputs import BIG, CACHE, big_copies, small_dumps
from machine import REPO, user_env
from machine import describe as describe_machine

from delegate_lens.dataset import DatasetStore, collect, query


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def time_collect(folder: Path, workers: int) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds of this process (meaningful for 1 worker only: with more,
    the workers' CPU time is theirs), ETDump bytes and events of one collect."""
    target = Path(tempfile.mkdtemp(prefix="bench-ds-"))
    try:
        start = time.perf_counter()
        start_cpu = time.process_time()
        report = collect([str(folder)], str(target), workers=workers)
        wall = time.perf_counter() - start
        cpu = time.process_time() - start_cpu
        assert not report.failed and not report.skipped
        return wall, cpu, report.nbytes, report.rows
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _halves(folder: Path) -> tuple[list[str], list[str]]:
    """The inputs in two halves: by subfolder when there are several, else by file."""
    subs = sorted(str(p) for p in folder.iterdir() if p.is_dir())
    items = subs if len(subs) > 1 else sorted(str(p) for p in folder.glob("*.etdp"))
    return items[: len(items) // 2], items[len(items) // 2 :]


def _helper(connection: Any) -> None:
    """A kept process collecting what it is sent (the reference pair's second process)."""
    while (message := connection.recv()) is not None:
        paths, target = message
        collect(paths, target)
        connection.send(None)


class TwoHalves:
    """The most two processes give on this machine now, without the engine: this process
    and a helper started once (warm: no process start, no cold first batch; the engine
    starts its workers with each run) each collect half of the inputs at once, each as
    one worker. Measured between the 1- and 2-worker runs, it separates what the machine
    gives two processes (its cores share caches, memory and, on a VM, the host) from
    what the engine loses."""

    def __init__(self, folder: Path) -> None:
        import multiprocessing

        self.halves = _halves(folder)
        self.connection, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.get_context("fork").Process(
            target=_helper, args=(theirs,), daemon=True
        )
        self.process.start()

    def time(self) -> float:
        target = Path(tempfile.mkdtemp(prefix="bench-halves-"))
        try:
            start = time.perf_counter()
            self.connection.send((self.halves[1], str(target / "b")))
            collect(self.halves[0], str(target / "a"))
            self.connection.recv()
            return time.perf_counter() - start
        finally:
            shutil.rmtree(target, ignore_errors=True)

    def close(self) -> None:
        self.connection.send(None)
        self.process.join()


def bench_collect(name: str, folder: Path, repeat: int) -> None:
    """1 and 2 workers, ``repeat`` times each, interleaved (1, 2, 1, 2, ...: this VM's
    speed drifts by tens of percent within a minute; interleaving puts both in the same
    conditions), then medians; the ratio is also given per pair, to show the spread.
    Between them, the reference pair (:class:`TwoHalves`): what two processes give here
    without the engine, and how close the engine comes to it."""
    warm = Path(tempfile.mkdtemp(prefix="bench-warm-"))  # imports happen here, not timed
    one = str(next(folder.rglob("*.etdp")))
    collect([one], str(warm / "ds"))
    pair = TwoHalves(folder)  # forked after the imports, before any worker
    pair.connection.send(([one], str(warm / "helper")))
    pair.connection.recv()
    shutil.rmtree(warm)
    files = len(list(folder.rglob("*.etdp")))
    walls: dict[int, list[float]] = {1: [], 2: []}
    pairs: list[float] = []
    cpus: list[float] = []
    nbytes = rows = 0
    for _ in range(repeat):
        for workers in (1, 2):
            wall, cpu, nbytes, rows = time_collect(folder, workers)
            walls[workers].append(wall)
            if workers == 1:
                cpus.append(cpu)
                pairs.append(pair.time())
    pair.close()
    for workers in (1, 2):
        t = statistics.median(walls[workers])
        on_cpu = ""
        if workers == 1:
            on_cpu = f", {nbytes / 1e6 / statistics.median(cpus):.1f} MB per CPU second"
        print(
            f"collect {name}, {workers} worker(s): {t:.3f} s median wall of {repeat}, "
            f"{nbytes / 1e6:.1f} MB, {rows} events, {nbytes / 1e6 / t / workers:.1f} MB/s "
            f"per core (wall){on_cpu}, {t * workers / files * 1e3:.3f} ms per file per worker"
        )
    print_ratio(f"collect {name}", walls)
    reference = statistics.median(walls[1]) / statistics.median(pairs)
    reached = sorted(p / w for p, w in zip(pairs, walls[2]))
    print(
        f"collect {name}: two processes without the engine (each half, at once): "
        f"{statistics.median(pairs):.3f} s median, {reference:.2f}x vs 1 worker; the "
        f"2-worker engine's speed relative to it: {statistics.median(reached):.2f} (median "
        f"of {repeat} runs side by side)"
    )


def print_ratio(label: str, walls: dict[int, list[float]]) -> None:
    """2 workers vs 1: the ratio of the medians, and of each interleaved pair (the
    spread)."""
    pairs = sorted(a / b for a, b in zip(walls[1], walls[2]))
    ratio = statistics.median(walls[1]) / statistics.median(walls[2])
    print(
        f"{label}: 2 workers vs 1: {ratio:.2f}x (ratio of medians; per pair "
        f"{', '.join(f'{r:.2f}' for r in pairs)})  [{uptime()}]"
    )


_FRESH_RUN = """
import json, shutil, sys, tempfile, time
from delegate_lens.dataset import collect
folder, workers = sys.argv[1], int(sys.argv[2])
target = tempfile.mkdtemp(prefix="bench-fresh-")
try:
    collect([sys.argv[3]], target + "/warm")  # one file, for the imports: not timed
    start = time.perf_counter()
    collect([folder], target + "/ds", workers=workers)
    print(json.dumps(time.perf_counter() - start))
finally:
    shutil.rmtree(target, ignore_errors=True)
"""


def bench_fresh(name: str, folder: Path, repeat: int) -> None:
    """1 and 2 workers, each run in a new interpreter (as the CLI runs: every process
    cold, imports done and not timed), interleaved; medians and the ratio of each pair."""
    one = str(next(folder.rglob("*.etdp")))
    walls: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(repeat):
        for workers in (1, 2):
            out = subprocess.run(
                [sys.executable, "-c", _FRESH_RUN, str(folder), str(workers), one],
                capture_output=True,
                text=True,
                check=True,
                env=user_env(),
            )
            walls[workers].append(float(out.stdout))
    for workers in (1, 2):
        print(
            f"collect {name} in a fresh process, {workers} worker(s): "
            f"{statistics.median(walls[workers]):.3f} s median wall of {repeat}"
        )
    print_ratio(f"collect {name} in a fresh process", walls)


def _faults() -> int:
    """Page faults of this process so far (a fault costs microseconds on a VM)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _mark(times: list[float], faults: list[int]) -> None:
    """The end of a stage: CPU time and page faults so far."""
    times.append(time.process_time())
    faults.append(_faults())


def bench_stages(big: Path, small: Path, repeat: int) -> None:
    """CPU time per file by stage, as ``collect_batch`` runs them (medians of ``repeat``):
    one big copy alone, and a group of 2,000 small dumps decoded together (per file);
    ``find`` is ``find_sources`` over all the small dumps, ``batch`` a whole
    ``collect_batch`` of the same files (the stages plus its bookkeeping and manifest)."""
    import io

    import pyarrow.parquet as pq

    from delegate_lens.dataset._batch import (
        _decode,
        _joined,
        _read_all,
        collect_batch,
        content_hash,
    )
    from delegate_lens.dataset._event_table import labelled_table
    from delegate_lens.dataset._sources import find_sources
    from delegate_lens.dataset._store import _write_options
    from delegate_lens.inspector._build import decoded_file_columns

    every = find_sources([str(small)])
    cases = [("big vector copy", find_sources([str(next(iter(sorted(big.glob("*.etdp")))))]))]
    cases.append(("small demo dump", every[:2000]))
    for name, sources in cases:
        stages: dict[str, list[float]] = {}
        nbytes = sum(s.size for s in sources)
        labels = {"device": "a"}
        faults: dict[str, list[float]] = {}
        for _ in range(repeat):
            t: list[float] = []
            f: list[int] = []
            mark = functools.partial(_mark, t, f)
            mark()
            read = _read_all(sources)
            mark()
            hashes = [content_hash(data) for data, _ in read]  # type: ignore[arg-type]
            mark()
            block = _joined([block for _, block in read])
            decoded = _decode([data for data, _ in read], block)  # type: ignore[misc]
            fc, run_file = decoded_file_columns(decoded), decoded.run_file
            mark()
            paths = [s.path for s in sources]
            table = labelled_table(fc, run_file, paths, hashes, [labels] * len(paths))
            mark()
            pq.write_table(table, io.BytesIO(), **_write_options(table))
            mark()
            for stage, a, b, fa, fb in zip(
                ("read", "hash", "decode", "table", "parquet"), t, t[1:], f, f[1:]
            ):
                stages.setdefault(stage, []).append((b - a) / len(sources))
                faults.setdefault(stage, []).append((fb - fa) / len(sources))
            stages.setdefault("total", []).append((t[-1] - t[0]) / len(sources))
            del read, fc, table
            if name.startswith("small"):
                start = time.process_time()
                find_sources([str(small)])
                stages.setdefault("find", []).append((time.process_time() - start) / len(every))
            target = Path(tempfile.mkdtemp(prefix="bench-stages-"))
            try:
                start = time.process_time()
                collect_batch(str(target), sources)
                stages.setdefault("batch", []).append((time.process_time() - start) / len(sources))
            finally:
                shutil.rmtree(target, ignore_errors=True)
        per_file = {k: statistics.median(v) * 1e6 for k, v in stages.items()}
        mb = nbytes / len(sources) / 1e6
        whole = per_file["batch"] + per_file.get("find", 0.0)
        print(
            f"stages, {name} ({mb:.4g} MB, CPU us per file, medians of {repeat}): "
            + ", ".join(
                f"{k} {v:,.0f}" if v >= 1000 else f"{k} {v:.3g}" for k, v in per_file.items()
            )
            + f" -> find+batch {mb / whole * 1e6:.1f} MB per CPU second  [{uptime()}]"
        )
        print(
            f"  page faults per file by stage ({name}, medians): "
            + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in faults.items())
        )


def _parquet_variants(table: Any) -> dict[str, dict[str, Any]]:
    """Write options to compare: ``store._write_options`` and variations of it."""
    from delegate_lens.dataset._store import _write_options

    base = _write_options(table)
    ints = list(base["column_encoding"])
    return {
        "current": base,
        "zstd level 3": {**base, "compression_level": 3},
        "lz4": {**base, "compression": "lz4"},
        "snappy": {**base, "compression": "snappy"},
        "none": {**base, "compression": "none"},
        "zstd, plain ints": {**base, "column_encoding": None},
        "lz4, plain ints": {**base, "compression": "lz4", "column_encoding": None},
        "zstd, ints byte split": {
            **base,
            "column_encoding": dict.fromkeys(ints, "BYTE_STREAM_SPLIT"),
        },
        "zstd, no dictionary": {**base, "use_dictionary": False},
        "zstd, 8 MB pages": {**base, "data_page_size": 8 << 20},
        "zstd, page v2": {**base, "data_page_version": "2.0"},
    }


def bench_parquet(big: Path, small: Path, repeat: int) -> None:
    """Parquet write options: CPU ms per ETDump MB and file size, on the table of one big
    vector copy and of 2,000 small dumps (with a device label), medians of ``repeat``."""
    import io

    import pyarrow.parquet as pq

    from delegate_lens.dataset._event_table import files_columns, labelled_table
    from delegate_lens.dataset._sources import find_sources

    cases = [("big vector copy", find_sources([str(next(iter(sorted(big.glob("*.etdp")))))]))]
    cases.append(("2,000 small dumps", find_sources([str(small)])[:2000]))
    for name, sources in cases:
        datas = [Path(s.path).read_bytes() for s in sources]
        mb = sum(map(len, datas)) / 1e6
        fc, run_file = files_columns(datas)
        paths = [s.path for s in sources]
        hashes = [f"{k:032x}" for k in range(len(paths))]
        table = labelled_table(fc, run_file, paths, hashes, [{"device": "a"}] * len(paths))
        for variant, options in _parquet_variants(table).items():
            times = []
            for _ in range(repeat):
                out = io.BytesIO()
                start = time.process_time()
                pq.write_table(table, out, **options)
                times.append(time.process_time() - start)
            ms = statistics.median(times) * 1e3
            print(
                f"parquet {name} ({table.num_rows} rows, {mb:.1f} MB ETDump), {variant}: "
                f"{ms:.1f} CPU ms ({ms / mb:.2f} per MB), {len(out.getvalue()) / 1e6:.2f} MB"
            )
    print(f"  [{uptime()}]")


def bench_query(events: int, repeat: int) -> None:
    import hashlib

    from delegate_lens.dataset._event_table import events_table, files_columns
    from delegate_lens.dataset._store import _write_options

    fc, _ = files_columns([BIG.read_bytes()])

    def copy(i: int) -> Any:
        labels = {"device": f"device{i % 3}", "build": f"b{i % 2}"}
        return events_table(fc, source=f"copy{i}.etdp", file_hash=f"{i:032x}", labels=labels)

    sample = copy(0)  # parts as this code writes them: another schema or options, another cache
    options = repr((sample.schema, _write_options(sample.schema)))
    key = hashlib.sha256(options.encode()).hexdigest()[:8]
    CACHE.mkdir(parents=True, exist_ok=True)
    folder = CACHE / f"query{events}-{key}"
    if not folder.is_dir():
        partial = folder.with_name(folder.name + ".partial")  # renamed when complete
        shutil.rmtree(partial, ignore_errors=True)
        store = DatasetStore(str(partial))
        store.create()
        written = i = 0
        while written < events:
            table = copy(i)
            store.write_part(table, [{"hash": f"{i:032x}", "source": f"copy{i}.etdp", "rows": 0}])
            written += table.num_rows
            i += 1
        partial.rename(folder)
    sql = (
        "SELECT event_name, labels['device'] AS device, count(*) AS n, "
        "quantile_cont(duration, 0.5) AS p50 FROM events GROUP BY ALL ORDER BY p50 DESC"
    )
    total = query(str(folder), "SELECT count(*) AS n FROM events")["n"][0].as_py()
    times = []
    cpu = []
    for _ in range(repeat):
        start = time.perf_counter()
        start_cpu = time.process_time()  # DuckDB's threads included
        result = query(str(folder), sql)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(
        f"query p50 per operator per device over {total} events: "
        f"{statistics.median(times):.3f} s median wall, {statistics.median(cpu):.3f} CPU s "
        f"({result.num_rows} groups)  [{uptime()}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big", type=int, default=4, help="copies of the big vector")
    parser.add_argument("--small", type=int, default=10_000, help="small demo dumps")
    parser.add_argument(
        "--small-repeat", type=int, default=0, help="runs of the small case (default --repeat)"
    )
    parser.add_argument("--stage-repeat", type=int, default=5, help="runs of the stages")
    parser.add_argument("--events", type=int, default=10_000_000, help="events to query")
    parser.add_argument(
        "--only",
        choices=("big", "small", "fresh", "stages", "parquet", "query"),
        action="append",
        help="run only these parts",
    )
    parser.add_argument("--against", metavar="DIR", help="compare with DIR/core, by turns")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each with --against")
    args = parser.parse_args()
    if args.against:
        against(args.against, args.rounds)
        return
    parts = set(args.only or ("big", "small", "stages", "query"))
    print(describe_machine())
    print(f"cpu count {os.cpu_count()}, inputs cached in {CACHE}")
    if "big" in parts:
        bench_collect(f"{args.big} x big vector", big_copies(args.big), args.repeat)
    if "small" in parts:
        small = small_dumps(args.small)
        bench_collect(f"{args.small} small demo dumps", small, args.small_repeat or args.repeat)
    if "fresh" in args.only or ():  # not by default: a process per run
        bench_fresh(
            f"{args.small} small demo dumps",
            small_dumps(args.small),
            args.small_repeat or args.repeat,
        )
    if "stages" in parts:
        bench_stages(
            big_copies(args.big), small_dumps(args.small), max(args.repeat, args.stage_repeat)
        )
    if "parquet" in args.only or ():  # not by default: a comparison of options
        bench_parquet(big_copies(args.big), small_dumps(args.small), max(args.repeat, 5))
    if "query" in parts:
        bench_query(args.events, max(args.repeat, 5))


def against(other: str, rounds: int) -> None:
    """Run this benchmark (its other arguments) with this tree's package and with
    ``other``'s, by turns, each round in a new process."""
    argv = [a for a in sys.argv[1:] if a != "--against" and not a.startswith("--against=")]
    if other in argv:
        argv.remove(other)
    argv = [a for i, a in enumerate(argv) if not (i and argv[i - 1] == "--rounds")]
    argv = [a for a in argv if a != "--rounds" and not a.startswith("--rounds=")]
    trees = {"this tree": str(REPO / "core"), other: str(Path(other) / "core")}
    for round_ in range(1, rounds + 1):
        for name, core in trees.items():
            print(f"=== {name}, round {round_}  [{uptime()}]", flush=True)
            env = {**user_env(), "PYTHONPATH": os.pathsep.join([core, str(REPO / "tests")])}
            subprocess.run([sys.executable, __file__, *argv], env=env, check=True)


if __name__ == "__main__":
    main()
