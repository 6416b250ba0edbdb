"""``delegate-lens verify`` of bundled programs whose program is a real ExecuTorch one
(issue 23, item 3): made by the reference, or by our BundledProgram around a real program;
run on the real runtime, printed as for our own programs.

Skips (with the reason) only where executorch is not installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from delegate_lens.cli import main

pytestmark = [
    pytest.mark.usefixtures("fresh_plugin_manager"),
    pytest.mark.skipif(
        importlib.util.find_spec("executorch") is None,
        reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
    ),
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning"),
]
REFERENCE = Path(__file__).parent / "data" / "bundled_program" / "reference_add.bpte"


def test_reference_bundled_program_runs_on_the_real_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from delegate_lens.etdump import load

    etdump, buffer = tmp_path / "v.etdp", tmp_path / "v.bin"
    argv = ["verify", str(REFERENCE), "--etdump", str(etdump), "--debug-buffer", str(buffer)]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        "forward[0]  max abs error 0.000e+00  max rel error 0.000e+00  PASS",
        "forward[1]  max abs error 0.000e+00  max rel error 0.000e+00  PASS",
        "2 of 2 test case(s) passed",
    ]
    dump = load(etdump)
    assert len(dump.run_data) == 3  # loading, then one block per test case
    debug_events = [e for run in dump.run_data for e in run.events if e.debug_event is not None]
    assert debug_events and buffer.stat().st_size > 0


@pytest.fixture(scope="module")
def real_program() -> tuple[bytes, np.ndarray, np.ndarray]:
    """A model lowered to XNNPACK by real ExecuTorch: its program, an input, eager output."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()).eval()
    x = torch.randn(2, 4)
    with warnings.catch_warnings():  # executorch's own deprecation chatter
        warnings.simplefilter("ignore")
        edge = to_edge_transform_and_lower(
            torch.export.export(model, (x,)), partitioner=[XnnpackPartitioner()]
        )
        program = edge.to_executorch().buffer
    with torch.no_grad():
        expected = model(x)
    return program, x.numpy(), expected.numpy()


@pytest.mark.slow
@pytest.mark.parametrize("shift", [0.0, 0.5])
def test_our_bundled_program_around_a_real_program(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    real_program: tuple[bytes, np.ndarray, np.ndarray],
    shift: float,
) -> None:
    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite

    program, x, expected = real_program
    case = MethodTestCase([x], [expected + np.float32(shift)])
    path = BundledProgram(program, [MethodTestSuite("forward", [case])]).save(tmp_path / "p.bpte")
    status = main(["verify", str(path), "--rtol", "1e-4", "--atol", "1e-5"])
    (line, summary) = capsys.readouterr().out.splitlines()
    if shift:
        assert status == 1 and line.startswith("forward[0]") and " FAIL" in line
        assert "max abs error 5.000e-01" in line
        assert summary == "0 of 1 test case(s) passed"
    else:
        assert status == 0 and line.endswith("PASS") and summary == "1 of 1 test case(s) passed"


def test_a_bundled_program_whose_real_program_is_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from delegate_lens.bundled_program import BundledProgram

    reference = BundledProgram.load(REFERENCE)
    cut = BundledProgram(reference.program_buffer[:900], reference.method_test_suites)
    path = cut.save(tmp_path / "cut.bpte")
    etdump = tmp_path / "out.etdp"
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", str(path), "--etdump", str(etdump)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut.bpte" in err and "cannot load" in err, err
    assert not etdump.exists()


@pytest.mark.slow
def test_a_runtime_error_inside_a_case_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    real_program: tuple[bytes, np.ndarray, np.ndarray],
) -> None:
    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite

    program, _x, expected = real_program
    wrong = MethodTestCase([np.zeros((5, 7), np.float32)], [expected])
    path = BundledProgram(program, [MethodTestSuite("forward", [wrong])]).save(tmp_path / "w.bpte")
    etdump = tmp_path / "out.etdp"
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", str(path), "--etdump", str(etdump)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "failed in the ExecuTorch runtime" in captured.err
    assert "it takes [2, 4], given [5, 7]" in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.bpte"]


DAMAGED = Path(__file__).parent / "data" / "hostile" / "damaged-scalar-type.bpte"


def test_a_program_the_runtime_aborts_on_is_one_line_not_a_crash() -> None:
    # a mutant of reference_add.bpte (benchmarks/hostile.py): an input tensor of scalar type
    # 36, on which ExecuTorch's runtime asserts and aborts the process (SIGABRT, exit 134)
    proc = subprocess.run(
        [sys.executable, "-m", "delegate_lens", "verify", str(DAMAGED)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert "its program: the ExecuTorch runtime crashed (SIGABRT) while loading" in proc.stderr
    assert proc.stdout == ""
