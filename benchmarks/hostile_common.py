"""What every class of ``benchmarks/hostile.py`` shares: where the inputs are, one CLI
process run and classified (:func:`run`), and the per-class figures (:class:`Tally`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from machine import VECTORS as _VECTORS

VECTORS = (
    Path(os.environ["DELEGATE_LENS_VECTORS"])
    if os.environ.get("DELEGATE_LENS_VECTORS")
    else _VECTORS
)
"""The reference vectors: the repository's (``tests/data/vectors``), or DELEGATE_LENS_VECTORS."""
MLP = VECTORS / "mlp_xnnpack"
CLI = [sys.executable, "-m", "delegate_lens"]


class Tally:
    def __init__(self, name: str) -> None:
        self.name = name
        self.cases = self.clean = self.tracebacks = self.hangs = self.bad_files = 0
        self.signals = 0  # commands killed by a signal (a crash, not an error line)
        self.peak_kb = 0
        self.biggest_input = 0
        self.notes: list[str] = []

    def line(self) -> str:
        return (
            f"{self.name:<11} cases {self.cases:>5}  clean {self.clean:>5}  tracebacks "
            f"{self.tracebacks:>3}  signals {self.signals:>3}  hangs {self.hangs:>3}  "
            f"peak {self.peak_kb / 1024:7.1f} MB "
            f"(largest input {self.biggest_input / 1e6:6.2f} MB)  bad files {self.bad_files:>3}"
        )

    @property
    def ok(self) -> bool:
        big = self.biggest_input < 5e6 and self.peak_kb > 500 * 1024
        return not (self.tracebacks or self.signals or self.hangs or self.bad_files or big)


def run(
    tally: Tally,
    argv: Sequence[str],
    *,
    timeout: float,
    inputs: Sequence[Path] = (),
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[int | None, str, str]:
    """One CLI process: classify it into ``tally``; (exit code or None on a hang, out, err)."""
    tally.cases += 1
    for path in inputs:
        if path.is_file():
            tally.biggest_input = max(tally.biggest_input, path.stat().st_size)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [*CLI, *argv], stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd
        )
        deadline = time.monotonic() + timeout
        code: int | None = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                tally.peak_kb = max(tally.peak_kb, usage.ru_maxrss)
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                tally.hangs += 1
                tally.notes.append("hang: " + " ".join(argv))
                break
            time.sleep(0.01)
        proc.returncode = code if code is not None else -9
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if code is None:
        return None, stdout, stderr
    if code < 0:
        tally.signals += 1
    if "Traceback (most recent call last)" in stderr:
        tally.tracebacks += 1
        tally.notes.append("traceback: " + " ".join(argv) + ": " + stderr.strip().splitlines()[-1])
    elif code in (0, 1) or (
        code == 2
        and sum(line.startswith("error: ") for line in stderr.splitlines()) == 1
        and stderr.rstrip().splitlines()[-1].startswith("error: ")
    ):
        tally.clean += 1
    else:
        tally.notes.append(f"exit {code}: " + " ".join(argv) + ": " + stderr.strip()[-200:])
    return code, stdout, stderr
