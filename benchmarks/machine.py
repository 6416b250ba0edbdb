"""One line describing the machine a benchmark ran on (every benchmark prints it)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(extra: str = "") -> str:
    """OS, architecture, CPUs, CPU model, Python, numpy, load average (+ ``extra``)."""
    import numpy

    try:
        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except (AttributeError, OSError):
        load = "load average unknown"
    parts = [
        f"{platform.system()} {platform.release()} {platform.machine()}",
        f"{os.cpu_count()} CPUs ({cpu_model()})",
        f"Python {platform.python_version()}",
        f"numpy {numpy.__version__}",
        *([extra] if extra else []),
        load,
    ]
    return ", ".join(parts)
