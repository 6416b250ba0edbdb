"""``delegate-lens profile`` / ``delegate_lens.profile`` on real programs (issue 23, item 2):
the reference's own XNNPACK program from the reference vectors, run by the real runtime.

Skips (with the reason) only where executorch is not installed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from delegate_lens.cli import main

pytestmark = [
    pytest.mark.usefixtures("fresh_plugin_manager"),
    pytest.mark.skipif(
        importlib.util.find_spec("executorch") is None,
        reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
    ),
]


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch
    from conftest import VECTORS

    folder = tmp_path_factory.mktemp("mlp")
    torch.manual_seed(0)
    torch.save([torch.randn(2, 16)], folder / "inputs.pt")
    torch.save([torch.randn(3, 5)], folder / "wrong.pt")
    return {
        "pte": VECTORS / "mlp_xnnpack" / "model.pte",
        "etrecord": VECTORS / "mlp_xnnpack" / "etrecord.bin",
        "expected": VECTORS / "mlp_xnnpack" / "expected.json",
        "inputs": folder / "inputs.pt",
        "wrong": folder / "wrong.pt",
    }


def _names(blocks: list[dict[str, object]] | list[object], block: str) -> list[str]:
    for b in blocks:
        name = b["name"] if isinstance(b, dict) else b.name  # type: ignore[attr-defined]
        if name == block:
            events = b["events"] if isinstance(b, dict) else b.events  # type: ignore[attr-defined]
            return [e["name"] if isinstance(e, dict) else e.name for e in events]
    return []


@pytest.mark.slow
def test_profile_cli_writes_every_file(
    mlp: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from delegate_lens.etdump import load
    from delegate_lens.inspector import Inspector

    out = tmp_path / "out"
    argv = ["profile", str(mlp["pte"]), "--etrecord", str(mlp["etrecord"])]
    argv += ["--inputs", str(mlp["inputs"]), "--runs", "5", "--debug", "-o", str(out)]
    assert main(argv) == 0
    listed = capsys.readouterr().out.split()
    names = ["debug.bin", "etdump.etdp", "inspector.txt", "numeric_gaps.txt", "report.html"]
    assert listed == [str(out / n) for n in names]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left
    # the ETDump holds the load block and 5 executions, as the reference's own run did
    dump = load(out / "etdump.etdp")
    expected = json.loads(mlp["expected"].read_text())
    assert len(dump.run_data) == 1 + expected["runs"] == 6
    inspector = Inspector(
        etdump_path=out / "etdump.etdp",
        etrecord=str(mlp["etrecord"]),
        debug_buffer_path=out / "debug.bin",
    )
    # the same rows the reference Inspector reported for the reference's own run
    for block in ("Default", "Execute"):
        assert _names(inspector.event_blocks, block) == _names(expected["blocks"], block)
    assert all(
        e.perf_data is not None and len(e.perf_data.raw) == 5
        for e in inspector.event_blocks[1].events
    )
    gaps = (out / "numeric_gaps.txt").read_text()
    assert "first divergence: none" in gaps  # the runtime matches the graph on these inputs
    assert "XnnpackBackend" in (out / "inspector.txt").read_text()
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.slow
def test_profile_python_returns_the_inspector(mlp: dict[str, Path], tmp_path: Path) -> None:
    import torch

    import delegate_lens

    inputs = torch.load(mlp["inputs"])
    inspector = delegate_lens.profile(mlp["pte"], etrecord=mlp["etrecord"], inputs=inputs, runs=3)
    execute = inspector.event_blocks[-1]
    delegate = [e for e in execute.events if e.name == "DELEGATE_CALL"]
    assert len(delegate) == 1 and len(delegate[0].perf_data.raw) == 3  # type: ignore[union-attr]
    assert delegate[0].delegate_backend_name == "XnnpackBackend"
    assert delegate[0].op_types  # linked to the ETRecord's operators


@pytest.mark.slow
def test_profile_without_debug_drops_stale_files(mlp: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "numeric_gaps.txt").write_text("from an earlier profile")
    (out / "mine.txt").write_text("not ours")
    argv = ["profile", str(mlp["pte"]), "--inputs", str(mlp["inputs"]), "-o", str(out)]
    assert main(argv) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["etdump.etdp", "inspector.txt", "mine.txt", "report.html"]


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def test_profile_of_what_is_not_a_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mlp: dict[str, Path]
) -> None:
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"PK\x03\x04 this is a zip, not a program")
    err = _fails(
        capsys, ["profile", str(bad), "--inputs", str(mlp["inputs"]), "-o", str(tmp_path / "o")]
    )
    assert "bad.pte" in err and "not an ExecuTorch program" in err
    truncated = tmp_path / "cut.pte"
    truncated.write_bytes(mlp["pte"].read_bytes()[:2000])
    err = _fails(
        capsys,
        ["profile", str(truncated), "--inputs", str(mlp["inputs"]), "-o", str(tmp_path / "o")],
    )
    assert "cut.pte" in err and "cannot load" in err and "size" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pte", "cut.pte"]


def test_profile_runtime_error_inside_the_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mlp: dict[str, Path]
) -> None:
    out = tmp_path / "o"
    err = _fails(
        capsys, ["profile", str(mlp["pte"]), "--inputs", str(mlp["wrong"]), "-o", str(out)]
    )
    assert "failed in the ExecuTorch runtime" in err
    assert "it takes [2, 16], given [3, 5]" in err
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no staging folder


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ([], "no inputs"),
        (["--inputs", "{missing}"], "missing.pt"),
        (["--inputs", "{pte}"], "not inputs: not a torch.save file"),
        (["--method", "nope", "--inputs", "{inputs}"], "no method 'nope'"),
        (["--runs", "0"], "must be >= 1"),
        (["--inputs", "{inputs}", "-o", "{pte}"], "is a file"),
    ],
)
def test_profile_bad_arguments(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mlp: dict[str, Path],
    extra: list[str],
    words: str,
) -> None:
    values = {"missing": tmp_path / "missing.pt", "pte": mlp["pte"], "inputs": mlp["inputs"]}
    argv = ["profile", str(mlp["pte"]), *(a.format(**values) for a in extra)]
    assert words in _fails(capsys, argv)
    assert list(tmp_path.iterdir()) == []


_USE_AFTER_FREE = """
import sys
import torch
from delegate_lens_executorch.runtime import execute, load_module
pte = open(sys.argv[1], "rb").read()
x = torch.randn(2, 16)
ref = execute(load_module(pte, "q"), "forward", [x], origin="q", runs=1)
for _ in range(5):
    loaded = load_module(bytes(bytearray(pte)), "p")  # bytes only the call holds
    junk = [bytes([i % 251]) * len(pte) for i in range(300)]  # reuse freed memory
    out = execute(loaded, "forward", [x], origin="p", runs=3)
    assert torch.equal(out[0], ref[0]), (out, ref)
print("ok")
"""


def test_a_loaded_program_keeps_its_bytes(mlp: dict[str, Path]) -> None:
    """The pybindings run from a pointer into the bytes they were given: a module whose
    bytes were freed crashed (4 runs in 4 before LoadedModule kept them). In a child
    process, so that a crash fails this test instead of ending the run."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _USE_AFTER_FREE, str(mlp["pte"])],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr)


def test_profile_takes_its_inputs_from_a_bundled_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from delegate_lens.bundled_program import BundledProgram

    reference = Path(__file__).parent / "data" / "bundled_program" / "reference_add.bpte"
    pte = tmp_path / "add.pte"
    pte.write_bytes(BundledProgram.load(reference).program_buffer)
    out = tmp_path / "out"
    argv = ["profile", str(pte), "--bundled", str(reference), "--runs", "2", "-o", str(out)]
    assert main(argv) == 0
    listed = capsys.readouterr().out.split()
    assert [Path(p).name for p in listed] == ["etdump.etdp", "inspector.txt", "report.html"]
    from delegate_lens.etdump import load

    assert len(load(out / "etdump.etdp").run_data) == 3  # loading, then the 2 runs
