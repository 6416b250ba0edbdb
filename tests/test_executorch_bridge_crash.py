"""The real runtime's crashes are one error line (issue 35, item 1): ExecuTorch aborts or
faults (SIGABRT, SIGSEGV) on some damaged programs, while loading, running or writing the
ETDump. Everything that touches the runtime runs in one child process; a death there is
``error: model.pte: the ExecuTorch runtime crashed (SIGSEGV) while running 'forward'``,
exit 2, and nothing written. Before, ``profile`` and ``verify`` died with it (exit 134 or
139, no word) and a crashed ``profile`` left its hidden staging folder behind.

The mutants are the reference's own XNNPACK program (``tests/data/vectors/mlp_xnnpack``)
with one byte inverted, found by running every such mutant: one the runtime aborts on at
its first run (a damaged operator entry), one it faults on (a damaged table offset), and
one it aborts on while loading (the file identifier's version). The commands run in
child processes, so that a crash fails the test instead of ending the test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import VECTORS, needs_reference

from delegate_lens.cli import main

pytestmark = [pytest.mark.usefixtures("fresh_plugin_manager"), needs_reference]

PTE = VECTORS / "mlp_xnnpack" / "model.pte"
ABORTS_RUNNING = 805  # the byte whose inversion makes the first run abort (SIGABRT)
FAULTS_RUNNING = 499  # ... fault (SIGSEGV)
ABORTS_LOADING = 7  # ... the load abort (SIGABRT)


def mutant(folder: Path, offset: int) -> Path:
    """The vector program with the byte at ``offset`` inverted, as ``folder/m<offset>.pte``."""
    data = bytearray(PTE.read_bytes())
    data[offset] ^= 0xFF
    path = folder / f"m{offset}.pte"
    path.write_bytes(bytes(data))
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(0).standard_normal((2, 16), dtype=np.float32))
    return path


def _cli(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-800:])
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("offset", "signal"), [(ABORTS_RUNNING, "SIGABRT"), (FAULTS_RUNNING, "SIGSEGV")]
)
def test_profile_of_a_program_the_runtime_crashes_running(
    tmp_path: Path, inputs: Path, offset: int, signal: str
) -> None:
    program = mutant(tmp_path, offset)
    out = tmp_path / "out"
    err = _one_error_line(_cli("profile", program, "--inputs", inputs, "--runs", "3", "-o", out))
    assert err.startswith(
        f"error: {program}: the ExecuTorch runtime crashed ({signal}) while running 'forward'"
    ), err
    # nothing written, no staging folder left
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([program.name, inputs.name])


def test_profile_of_a_program_the_runtime_crashes_loading(tmp_path: Path, inputs: Path) -> None:
    program = mutant(tmp_path, ABORTS_LOADING)
    err = _one_error_line(_cli("profile", program, "--inputs", inputs, "-o", tmp_path / "out"))
    assert err.startswith(
        f"error: {program}: the ExecuTorch runtime crashed (SIGABRT) while loading"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([program.name, inputs.name])


@pytest.mark.slow
def test_verify_of_a_bundled_program_the_runtime_crashes_running(tmp_path: Path) -> None:
    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite

    program = mutant(tmp_path, ABORTS_RUNNING).read_bytes()
    x = np.ones((2, 16), np.float32)
    case = MethodTestCase([x], [np.zeros((2, 16), np.float32)])
    path = BundledProgram(program, [MethodTestSuite("forward", [case])]).save(tmp_path / "m.bpte")
    etdump, buffer = tmp_path / "v.etdp", tmp_path / "v.bin"
    err = _one_error_line(_cli("verify", path, "--etdump", etdump, "--debug-buffer", buffer))
    assert err.startswith(
        f"error: {path}: its program: the ExecuTorch runtime crashed (SIGABRT) while running "
        "'forward' (test case 0)"
    ), err
    assert not etdump.exists() and not buffer.exists()


_PYTHON_API = """
import sys
import numpy as np
import delegate_lens
from delegate_lens.errors import RuntimeBackendError
x = np.ones((2, 16), np.float32)
try:
    delegate_lens.profile(sys.argv[1], inputs=[x], runs=2)
except RuntimeBackendError as error:
    print(type(error).__name__, error)
inspector = delegate_lens.profile(sys.argv[2], inputs=[x], runs=2)
assert [b.name for b in inspector.event_blocks] == ["Default", "Execute"]
runtime = [m for m in sys.modules if m.startswith("executorch.")]
print("runtime modules here:", runtime)
"""


@pytest.mark.slow
def test_the_python_api_raises_and_never_loads_the_runtime_here(tmp_path: Path) -> None:
    program = mutant(tmp_path, FAULTS_RUNNING)
    done = subprocess.run(
        [sys.executable, "-c", _PYTHON_API, str(program), str(PTE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-800:]
    crashed, modules = done.stdout.splitlines()
    assert crashed.startswith(
        f"RuntimeBackendError {program}: the ExecuTorch runtime crashed (SIGSEGV) while "
        "running 'forward'"
    ), crashed
    assert modules == "runtime modules here: []"  # every call into it ran in the child


_IMPORTS = """
import sys
from delegate_lens_executorch.runtime import runtime_library
library = runtime_library()
assert hasattr(library, "_load_for_executorch_from_buffer")
print(sorted(m for m in sys.modules if m.startswith("executorch.exir")))
"""


def test_the_child_imports_the_compiled_runtime_alone() -> None:
    """The pybindings' Python face imports ``executorch.exir`` first (seconds)."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout == "[]\n", done.stderr[-800:]


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_profile_removes_staging_folders_left_by_processes_gone(
    tmp_path: Path, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    stale = tmp_path / f".out.{_dead_pid()}-abcdefgh.tmp"
    live = tmp_path / ".out.1-abcdefgh.tmp"  # (process 1 always runs)
    old, young, foreign = (
        tmp_path / f".profile-{name}" for name in ("abcd1234", "efgh5678", "ijkl9012")
    )
    for folder in (stale, live, old, young, foreign):
        folder.mkdir()
        (folder / "etdump.etdp").write_bytes(b"half")
    (foreign / "notes.txt").write_text("not a file a profile writes")
    hours_ago = time.time() - 2 * 3600
    for folder in (old, foreign):
        os.utime(folder, (hours_ago, hours_ago))
    assert main(["profile", str(PTE), "--inputs", str(inputs), "-o", str(out)]) == 0
    capsys.readouterr()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["out", inputs.name, live.name, young.name, foreign.name])
