"""The HTML report of the big vector (issue 11: written in under 3 s; say file size and time).

Measures the whole command a user runs, as a fresh process per run:

    delegate-lens report gpt_portable_big/etdump.etdp --etrecord etrecord.bin -o report.html

wall and CPU time (medians over runs) and the file's size; then, in this process, a breakdown of one
run: Inspector (decode, group, link), data model, HTML rendering, and the size of each part
of the page (vendored libraries, data).

Usage: python benchmarks/bench_report.py [--vector gpt_portable_big] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import REPO, VECTORS, delegate_lens_command, user_env
from machine import describe as describe_machine


def command(vector: Path, out: Path) -> list[str]:
    head = delegate_lens_command()
    return [
        *head,
        "report",
        str(vector / "etdump.etdp"),
        "--etrecord",
        str(vector / "etrecord.bin"),
        "-o",
        str(out),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vector", default="gpt_portable_big")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    vector = VECTORS / args.vector
    print(describe_machine())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        cmd = command(vector, out)
        times, cpu = [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=user_env())
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        size = out.stat().st_size
    print(f"command: {' '.join(cmd[1:])}")
    print(
        f"whole command, {args.runs} runs: median {statistics.median(times):.2f} s "
        f"(min {min(times):.2f}, max {max(times):.2f}), CPU (user + system) median "
        f"{statistics.median(cpu):.2f} s; report {size / 1e6:.2f} MB"
    )

    from delegate_lens.inspector import Inspector
    from delegate_lens.report import build_report_data, render_html
    from delegate_lens.report._html import VENDOR_SCRIPTS, _asset

    t0 = time.perf_counter()
    inspector = Inspector(etdump_path=vector / "etdump.etdp", etrecord=str(vector / "etrecord.bin"))
    t1 = time.perf_counter()
    data = build_report_data(inspector)
    t2 = time.perf_counter()
    page = render_html(data)
    t3 = time.perf_counter()
    print(
        f"in process: Inspector {t1 - t0:.2f} s, data model {t2 - t1:.2f} s, HTML {t3 - t2:.3f} s"
    )
    vendor = sum(len(_asset("vendor", name).encode()) for name in VENDOR_SCRIPTS)
    parts = {key: len(json.dumps(value, separators=(",", ":"))) for key, value in data.items()}
    print(
        f"page {len(page.encode()) / 1e6:.2f} MB: vendored libraries {vendor / 1e3:.0f} kB, "
        f"data {sum(parts.values()) / 1e3:.0f} kB ("
        + ", ".join(
            f"{k} {v / 1e3:.0f} kB"
            for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
            if v > 1000
        )
        + f"); timeline: {len(data['timeline'])} sampled runs, "
        f"{sum(len(r['row']) for r in data['timeline'])} slices of {inspector.file_columns.run.size} events"
    )

    open_in_browser(page)


def open_in_browser(page: str, runs: int = 3) -> None:
    """Time from navigation until the page has drawn its graph (headless Chromium, as the
    browser tests drive it); skipped when Selenium or Chromium is missing."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from report_browser import browser_or_skip
    except ImportError:
        return
    try:
        driver = browser_or_skip()
    except BaseException as exc:  # pytest's Skipped: no browser here
        print(f"browser: not measured ({exc})")
        return
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.html"
            path.write_text(page, encoding="utf-8")
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                driver.get(path.as_uri())
                while not driver.execute_script("return !!(window.dlReport && dlReport.cy)"):
                    time.sleep(0.01)
                times.append(time.perf_counter() - start)
        print(
            f"headless Chromium: page loaded and graph drawn in median "
            f"{statistics.median(times):.2f} s over {runs} loads"
        )
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
