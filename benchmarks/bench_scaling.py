"""Scaling to LLM-sized ETDumps (issue 25): whole-process time and memory per command
over 1x, 2x, 5x, 10x, 20x the big vector.

    python benchmarks/bench_scaling.py [--sizes 1,2] [--repeat 3] [--full]
        [--commands inspect,api,inspector,report,chrome-trace,perfetto,collect]
        [--reference-python /path/to/venv/bin/python]

Inputs: ``gpt_portable_big`` (482,002 events, 2,000 runs) with its runs repeated N times,
each copy's times shifted past the previous copy, written with delegate-lens's own
ETDump writer (cached under ``$TMPDIR/delegate-lens-bench-scaling``); the vector's
ETRecord for all.

Commands, each a fresh process (the child's ``wait4`` rusage: wall, user CPU, peak
``ru_maxrss``), stdout to /dev/null, after one uncounted warm-up whose output goes to a
file (its size gives the output bytes per event). With ``--to-file``, ``inspect``,
``chrome-trace`` and ``perfetto`` write their output to a new file each run (removed, and
the system's writeback waited for, between runs): the figures then include the kernel's
cost of writing the bytes (on the 2-core VM of the notes, about 0.8 s per GB):

* ``inspect``: ``delegate-lens inspect F --etrecord R`` (the table);
* ``api``: ``python -c`` ``Inspector(etdump_path=F, etrecord=R).to_dataframe()``;
* ``inspector``: the same without the DataFrame (the Inspector and its tables);
* ``report``: ``delegate-lens report F --etrecord R -o OUT.html``;
* ``chrome-trace`` / ``perfetto``: ``inspect --format ...``;
* ``collect``: ``delegate-lens collect -q F --etrecord R -o DATASET`` (a new dataset each run).

Printed per command and size: medians over ``--repeat`` runs of wall, user CPU and CPU
(user + system: page faults of big inputs are system time) seconds and peak RSS (MB, and bytes per event), output bytes per event; then per command
the slopes over the sizes (least squares per million events: seconds, MB = marginal bytes
per event) and ``chrome-trace`` / ``inspect`` by size. With ``--reference-python`` (a
Python with the reference ``executorch`` installed), its ``Inspector(...).to_dataframe()``
runs beside ours at 1x and 2x (``--reference-sizes``), with the ratio.

The default run is short (sizes 1 and 2, 3 repeats); ``--full`` takes 1,2,5,10,20 (the
20x file is 9.6 M events: minutes per command, several GB of memory).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs
from machine import VECTORS, delegate_lens_command, user_env
from machine import describe as describe_machine

BIG = VECTORS / "gpt_portable_big"
ETRECORD = BIG / "etrecord.bin"
CACHE = Path(tempfile.gettempdir()) / "delegate-lens-bench-scaling"
COMMANDS = ("inspect", "api", "inspector", "report", "chrome-trace", "perfetto", "collect")
FULL_SIZES = (1, 2, 5, 10, 20)
WRITERS = ("inspect", "chrome-trace", "perfetto")  # what --to-file sends to a file

OURS_API = (
    "import sys\n"
    "from delegate_lens.inspector import Inspector\n"
    "df = Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2]).to_dataframe()\n"
    "assert len(df) > 0\n"
)
OURS_INSPECTOR = (  # the Python API without a DataFrame: the Inspector and its tables
    "import sys\n"
    "from delegate_lens.inspector import Inspector\n"
    "inspector = Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2])\n"
    "assert sum(table.n_rows for table in inspector.tables) > 0\n"
)
REFERENCE_API = (
    "import sys\n"
    "from executorch.devtools import Inspector\n"
    "df = Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2]).to_dataframe()\n"
    "assert len(df) > 0\n"
)


@attrs.frozen
class Sample:
    wall: float
    user: float
    sys: float
    rss_mb: float


@attrs.frozen
class Figures:
    """Medians of one command on one input."""

    command: str
    times: int  # the input's size, in copies of the big vector
    events: int
    wall: float
    user: float
    cpu: float  # user + system
    rss_mb: float
    wall_spread: tuple[float, float]
    output_bytes: int | None


def load_average() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load average unknown"


def build(times: int) -> tuple[Path, int]:
    """The big vector's runs ``times`` times, written with our writer (cached). Built in a
    child process: a child's ``ru_maxrss`` counts what its parent held when it forked."""
    path = CACHE / f"gpt_portable_big_{times}x.etdp"
    count = path.with_suffix(".events")
    if not (path.exists() and count.exists()):
        subprocess.run([sys.executable, __file__, "--build", str(times)], check=True)
    return path, int(count.read_text())


def _build_here(times: int) -> None:
    from delegate_lens.etdump import ETDump, RunData, dump, load

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"gpt_portable_big_{times}x.etdp"
    started = time.perf_counter()
    base = load(BIG / "etdump.etdp")
    n = sum(len(run.columns) for run in base.run_data)
    first = min(int(run.columns.start_time.min()) for run in base.run_data if len(run.columns))
    last = max(int(run.columns.end_time.max()) for run in base.run_data if len(run.columns))
    span = last - first + 1
    runs = []
    for copy in range(times):
        for run in base.run_data:
            cols = run.columns
            shifted = attrs.evolve(
                cols,
                start_time=cols.start_time + copy * span,
                end_time=cols.end_time + copy * span,
                file_span=None,
            )
            runs.append(
                RunData.from_columns(run.name, run.bundled_input_index, run.allocators, shifted)
            )
    dump(ETDump(version=base.version, run_data=runs), path)
    path.with_suffix(".events").write_text(str(n * times))
    seconds = time.perf_counter() - started
    size = path.stat().st_size / 1e6
    print(f"built {path.name}: {n * times:,} events, {size:.1f} MB in {seconds:.1f} s")


def command_line(
    command: str, etdump: Path, out: Path | None, reference_python: str | None = None
) -> list[str]:
    """The command (``out``: where the output goes when it needs a file)."""
    head = delegate_lens_command()
    etrecord = str(ETRECORD)
    if command == "api":
        return [sys.executable, "-c", OURS_API, str(etdump), etrecord]
    if command == "inspector":
        return [sys.executable, "-c", OURS_INSPECTOR, str(etdump), etrecord]
    if command == "reference-api":
        assert reference_python is not None
        return [reference_python, "-c", REFERENCE_API, str(etdump), etrecord]
    if command == "report":
        assert out is not None
        return [*head, "report", str(etdump), "--etrecord", etrecord, "-o", str(out)]
    if command == "collect":
        assert out is not None
        return [*head, "collect", "-q", str(etdump), "--etrecord", etrecord, "-o", str(out)]
    fmt = "table" if command == "inspect" else command
    cmd = [*head, "inspect", str(etdump), "--etrecord", etrecord, "--format", fmt]
    return cmd + (["-o", str(out)] if out is not None else [])


def run_once(cmd: list[str]) -> Sample:
    """One child process, stdout to /dev/null: wall, user and system CPU, peak RSS."""
    with open(os.devnull, "wb") as devnull:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.PIPE, env=user_env())
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"command failed ({code}): {' '.join(cmd)}\n{stderr}")
    return Sample(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024.0)


def measure(
    command: str,
    etdump: Path,
    times: int,
    events: int,
    repeat: int,
    reference_python: str | None = None,
    to_file: bool = False,
) -> Figures:
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        folder = Path(tmp)
        needs_file = command in ("report", "collect") or (to_file and command in WRITERS)
        # warm-up: page cache, bytecode; its output goes to a file to be measured
        out = folder / "warmup.out"
        to_file = command not in ("api", "inspector", "reference-api")
        run_once(command_line(command, etdump, out if to_file else None, reference_python))
        output_bytes = _size(out) if out.exists() else None
        samples = []
        for i in range(repeat):
            target = folder / f"run{i}.out" if needs_file else None
            samples.append(run_once(command_line(command, etdump, target, reference_python)))
            if target is not None:
                _remove(target)
                if to_file:
                    os.sync()  # the next run does not wait for this one's writeback
    walls = [s.wall for s in samples]
    return Figures(
        command=command,
        times=times,
        events=events,
        wall=statistics.median(walls),
        user=statistics.median(s.user for s in samples),
        cpu=statistics.median(s.user + s.sys for s in samples),
        rss_mb=statistics.median(s.rss_mb for s in samples),
        wall_spread=(min(walls), max(walls)),
        output_bytes=output_bytes,
    )


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (0 with fewer than two distinct xs)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


HEADER = (
    f"{'command':<14}{'size':>5}{'M events':>10}{'wall s':>9}{'(min-max)':>15}"
    f"{'user s':>9}{'cpu s':>9}{'RSS MB':>9}{'RSS B/ev':>10}{'out B/ev':>10}"
)


def print_table(rows: list[Figures], header: bool = True) -> None:
    if header:
        print(HEADER)
    for f in rows:
        out = f"{f.output_bytes / f.events:.1f}" if f.output_bytes is not None else "-"
        spread = f"({f.wall_spread[0]:.2f}-{f.wall_spread[1]:.2f})"
        print(
            f"{f.command:<14}{f.times:>4}x{f.events / 1e6:>10.3f}{f.wall:>9.3f}{spread:>15}"
            f"{f.user:>9.3f}{f.cpu:>9.3f}{f.rss_mb:>9.1f}{f.rss_mb * 2**20 / f.events:>10.1f}{out:>10}"
        )


def print_slopes(rows: list[Figures]) -> None:
    print("\nper million events (least squares over the sizes; RSS MB/M = marginal B/event):")
    print(f"{'command':<14}{'wall s/M':>10}{'user s/M':>10}{'cpu s/M':>10}{'RSS MB/M':>10}")
    for command in dict.fromkeys(f.command for f in rows):
        mine = [f for f in rows if f.command == command]
        if len({f.times for f in mine}) < 2:
            continue
        xs = [f.events / 1e6 for f in mine]
        wall = slope(xs, [f.wall for f in mine])
        user = slope(xs, [f.user for f in mine])
        cpu = slope(xs, [f.cpu for f in mine])
        rss = slope(xs, [f.rss_mb * 2**20 / 1e6 for f in mine])
        print(f"{command:<14}{wall:>10.3f}{user:>10.3f}{cpu:>10.3f}{rss:>10.1f}")


def print_ratios(rows: list[Figures], a: str, b: str, label: str) -> None:
    by = {(f.command, f.times): f for f in rows}
    lines = []
    for times in sorted({f.times for f in rows}):
        x, y = by.get((a, times)), by.get((b, times))
        if x and y:
            lines.append(
                f"  {times}x: wall {x.wall / y.wall:.2f}, user CPU {x.user / y.user:.2f}, "
                f"CPU (user + system) {x.cpu / y.cpu:.2f}"
            )
    if lines:
        print(f"\n{label}:")
        print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2", help="copies of the big vector (default 1,2)")
    parser.add_argument("--full", action="store_true", help="sizes 1,2,5,10,20")
    parser.add_argument("--repeat", type=int, default=3, help="counted runs per figure")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--reference-python", help="a Python with executorch (side by side)")
    parser.add_argument("--reference-sizes", default="1,2")
    parser.add_argument(
        "--to-file",
        action="store_true",
        help="inspect, chrome-trace and perfetto write a new file each run (-o), not stdout",
    )
    parser.add_argument("--build", type=int, help=argparse.SUPPRESS)  # the child that builds
    args = parser.parse_args()
    if args.build:
        _build_here(args.build)
        return 0
    sizes = list(FULL_SIZES) if args.full else [int(s) for s in args.sizes.split(",")]
    commands = [c for c in args.commands.split(",") if c]
    unknown = sorted(set(commands) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown command {unknown[0]!r}; choose from {', '.join(COMMANDS)}")
    if args.repeat < 1:
        parser.error("--repeat takes at least 1")

    print(f"machine: {describe_machine()}")
    print(f"runs: median of {args.repeat} per figure after a warm-up; whole processes")
    where = "a new file each run (-o)" if args.to_file else "stdout, to /dev/null"
    print(f"output of inspect, chrome-trace, perfetto: {where}")
    inputs = {times: build(times) for times in sizes}
    rows: list[Figures] = []
    for times in sizes:
        path, events = inputs[times]
        print(f"\n{times}x ({events:,} events), {load_average()}")
        print(HEADER, flush=True)
        for command in commands:
            rows.append(measure(command, path, times, events, args.repeat, to_file=args.to_file))
            print_table(rows[-1:], header=False)
            sys.stdout.flush()
    print(f"\nall sizes, {load_average()}:")
    print_table(rows)
    print_slopes(rows)
    print_ratios(rows, "chrome-trace", "inspect", "chrome-trace / inspect (target <= 1.5)")
    print_ratios(rows, "perfetto", "inspect", "perfetto / inspect")

    if args.reference_python:
        ref_rows: list[Figures] = []
        for times in [int(s) for s in args.reference_sizes.split(",")]:
            path, events = inputs[times] if times in inputs else build(times)
            print(f"\nreference side by side at {times}x, {load_average()}", flush=True)
            ref_rows.append(
                measure("reference-api", path, times, events, args.repeat, args.reference_python)
            )
            ref_rows.append(measure("api", path, times, events, args.repeat))
            print_table(ref_rows[-2:])
        print_ratios(ref_rows, "reference-api", "api", "reference / delegate-lens, Python API")
    print(f"\nend: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
