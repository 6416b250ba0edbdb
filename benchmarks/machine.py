"""What the benchmarks share: one line describing the machine a benchmark ran on (every
benchmark prints it), where the reference vectors are, and how to run the CLI."""

from __future__ import annotations

import os
import platform
import runpy
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


VECTORS: Path = runpy.run_path(str(REPO / "tests" / "data" / "vectors" / "unpack.py"))["unpack"]()
"""The reference vectors kept in the repository (``tests/data/vectors``), the compressed
ones unpacked once."""


def delegate_lens_command() -> list[str]:
    """The installed ``delegate-lens`` console script, else ``python -m delegate_lens``."""
    exe = shutil.which("delegate-lens")
    return [exe] if exe else [sys.executable, "-m", "delegate_lens"]


def user_env() -> dict[str, str]:
    """The environment for a timed command: as a user's, with bytecode caching on. An
    installed package has its ``.pyc`` files (pip compiles them); a session that sets
    ``PYTHONDONTWRITEBYTECODE`` would otherwise recompile every module in every run."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _compiled_walk() -> bool:
    from delegate_lens.etdump import compiled_walk_available

    return compiled_walk_available()


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
        f"compiled ETDump walk {'on' if _compiled_walk() else 'off'}",
        *([extra] if extra else []),
        load,
    ]
    return ", ".join(parts)
