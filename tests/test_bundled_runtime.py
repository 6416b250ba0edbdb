"""Running bundled test cases: load_bundled_input / verify_method_outputs, the ETDump's
bundled_input_index through the Inspector, and `delegate-lens verify`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_bundled_program import REFERENCE, add_case, add_program

from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite
from delegate_lens.cli import main
from delegate_lens.errors import BundledProgramError, RuntimeBackendError

pytestmark = pytest.mark.torch


def bundle(perturb: float = 0.0) -> BundledProgram:
    bad = add_case(3)
    expected = [bad.expected_outputs[0] + np.float32(perturb), bad.expected_outputs[1]]
    return BundledProgram(
        add_program(),
        [
            MethodTestSuite(
                "forward", [add_case(1), add_case(2), MethodTestCase(bad.inputs, expected)]
            ),
            MethodTestSuite("scale", [MethodTestCase([np.arange(4, dtype=np.float32), 3])]),
        ],
    )


def test_load_run_verify_and_the_etdump_block_index(tmp_path: Path) -> None:
    from delegate_lens import Inspector
    from delegate_lens.runtime import ETDumpGen, Program, load_bundled_input, verify_method_outputs

    bundled = bundle(perturb=0.5)
    tracer = ETDumpGen()
    method = Program(bundled.program).load_method("forward", event_tracer=tracer)
    results = []
    for index in range(3):
        load_bundled_input(method, bundled, index)
        method.execute()
        results.append(verify_method_outputs(method, bundled, index))
    method.execute([np.zeros((2, 3), np.float32), np.zeros(3, np.int64)])  # not bundled
    load_bundled_input(method, bundled, 1)
    method.execute()
    assert [r.passed for r in results] == [True, True, False]
    assert results[0].max_abs_error == 0.0
    assert results[2].max_abs_error == pytest.approx(0.5)
    assert results[2].line().startswith("forward[2]  max abs error 5.000e-01")
    with pytest.raises(BundledProgramError, match="no test_index 3"):
        load_bundled_input(method, bundled, 3)

    etdump = tmp_path / "run.etdp"
    tracer.write(etdump)
    inspector = Inspector(etdump_path=str(etdump))
    blocks = [(b.name, b.bundled_input_index, len(b.run_indices)) for b in inspector.event_blocks]
    # runs with the same inputs' index merge; a run on other inputs keeps -1
    assert blocks == [
        ("Default", -1, 1),
        ("Execute", 0, 1),
        ("Execute", 1, 2),
        ("Execute", 2, 1),
        ("Execute", -1, 1),
    ]
    from delegate_lens.etdump import load

    assert [r.bundled_input_index for r in load(etdump).run_data] == [-1, 0, 1, 2, -1, 1]


def test_execute_without_inputs_needs_loaded_ones() -> None:
    from delegate_lens.runtime import Program

    method = Program(add_program()).load_method("forward")
    with pytest.raises(RuntimeBackendError, match="no inputs given and none set"):
        method.execute()


def test_verify_command_passes_and_writes_etdump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bundle().save(tmp_path / "ok.bpte")
    etdump, debug = tmp_path / "v.etdp", tmp_path / "v.bin"
    assert main(["verify", str(path), "--etdump", str(etdump), "--debug-buffer", str(debug)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "forward[0]  max abs error 0.000e+00  max rel error 0.000e+00  PASS",
        "forward[1]  max abs error 0.000e+00  max rel error 0.000e+00  PASS",
        "forward[2]  max abs error 0.000e+00  max rel error 0.000e+00  PASS",
        "scale[0]  no expected outputs bundled  PASS",
    ]
    assert lines[-1] == "4 of 4 test case(s) passed"
    assert debug.stat().st_size > 0
    assert main(["inspect", str(etdump), "--format", "json", "-o", str(tmp_path / "i.json")]) == 0
    report = json.loads((tmp_path / "i.json").read_text())
    # Default (load), forward 0, 1, 2 (scale's load events join the open block), scale 0
    assert [b["bundled_input_index"] for b in report["blocks"]] == [-1, 0, 1, 2, 0]
    capsys.readouterr()
    assert main(["inspect", str(etdump)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["event_block_name", "bundled_input_index"]
    assert any(line.split()[:2] == ["Execute", "2"] for line in table)


def test_verify_command_fails_with_exit_1_on_a_perturbed_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bundle(perturb=1e-3).save(tmp_path / "bad.bpte")
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "forward[2]  max abs error 1.000e-03" in out and "FAIL  (output 0 differs" in out
    assert out.splitlines()[-1] == "3 of 4 test case(s) passed"
    assert main(["verify", str(path), "--atol", "1e-2"]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.bpte"], "missing.bpte: cannot read the bundled program"),
        (["trunc.bpte"], "trunc.bpte: bundled program: "),
        # a real ExecuTorch program: the bridge runs it (test_executorch_bridge_verify.py);
        # without the bridge, one line naming the extra
        (
            [str(REFERENCE), "-p", "no:executorch"],
            "needs real ExecuTorch: pip install 'delegate-lens[executorch]'",
        ),
        (["ok.bpte", "--debug-buffer", "d.bin"], "--debug-buffer needs --etdump"),
        (["ok.bpte", "--rtol", "-1"], "must be >= 0"),
    ],
)
def test_verify_command_bad_input_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    data = bundle().save(tmp_path / "ok.bpte").read_bytes()
    (tmp_path / "trunc.bpte").write_bytes(data[: len(data) // 2])
    with pytest.raises(SystemExit) as exc:
        main(
            ["verify", *args, "--etdump", "out.etdp"]
            if "--debug-buffer" not in args
            else ["verify", *args]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not (tmp_path / "out.etdp").exists()
