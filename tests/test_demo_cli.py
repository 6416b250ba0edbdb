"""`delegate-lens demo` end to end into a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from delegate_lens.cli import main

# a fresh plugin manager with every installed plugin, as for a user
pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")


@pytest.mark.torch
@pytest.mark.parametrize(("model", "identifiers"), [("mlp", "str"), ("convnet", "int")])
def test_demo_writes_files_and_prints_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, identifiers: str
) -> None:
    from delegate_lens.etdump import load
    from delegate_lens.etrecord import parse_etrecord
    from delegate_lens.runtime import Program

    out = tmp_path / "demo"
    status = main(
        ["demo", "--model", model, "--runs", "3", "--out", str(out), "--identifiers", identifiers]
    )
    assert status == 0
    text = capsys.readouterr().out
    assert f"delegate-lens verify {out / 'program.bpte'}" in text
    for step in range(1, 7):
        assert f"[{step}/6]" in text
    assert sorted(p.name for p in out.iterdir()) == [
        "debug.bin",
        "etdump.etdp",
        "etrecord.bin",
        "program.bpte",
        "program.dlp",
        "report.html",
    ]
    assert f"report: {out / 'report.html'}" in text
    runs = load(out / "etdump.etdp").run_data
    assert [r.name for r in runs] == ["Default", "Execute", "Execute", "Execute"]
    assert (out / "debug.bin").stat().st_size > 0
    assert Program.load(out / "program.dlp").method_names == ["forward"]
    # the bundled program's golden outputs verify; a perturbed one fails with exit 1
    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite

    capsys.readouterr()
    assert main(["verify", str(out / "program.bpte")]) == 0
    assert capsys.readouterr().out.endswith("3 of 3 test case(s) passed\n")
    bundled = BundledProgram.load(out / "program.bpte")
    case = bundled.test_case("forward", 1)
    wrong = [case.expected_outputs[0] * 1.001]
    suite = MethodTestSuite(
        "forward", [bundled.test_case("forward", 0), MethodTestCase(case.inputs, wrong)]
    )
    BundledProgram(bundled.program, [suite]).save(tmp_path / "wrong.bpte")
    assert main(["verify", str(tmp_path / "wrong.bpte")]) == 1
    assert "forward[1]" in capsys.readouterr().out
    record = parse_etrecord(out / "etrecord.bin")
    [entry] = [e for e in record.delegate_map["forward"].values()][:1]
    assert entry["name"] == "DemoBackend"
    kind = str if identifiers == "str" else int
    assert all(isinstance(k, kind) for k in entry["delegate_map"])
    # the Inspector's table of the run, with delegate rows
    assert "DELEGATE_CALL" in text and "DemoBackend" in text
    assert "DemoBackend metadata (parsed by its dl_parse_delegate_metadata" in text
    assert "demo_conv2d_relu_f32" in text if model == "convnet" else "demo_linear_relu_f32" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "0"], "--runs must be at least 1"),
        (["--debug-buffer-size", "-5"], "--debug-buffer-size must be >= 0"),
    ],
)
def test_demo_bad_arguments_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(tmp_path / "x"), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "x").exists()


def test_demo_unknown_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--model", "resnet"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
