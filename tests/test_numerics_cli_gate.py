"""`delegate-lens numerics` as a CI gate: comparing nothing (an empty, truncated or another
run's debug buffer) is an error, and ``--fail-on-divergence`` exits 1 on a divergence.

On the reference vector mlp_xnnpack with the reference-written ETRecord that holds
representative inputs: the run equals the reference graph (no divergence); with shifted
inputs the reference outputs differ (a divergence)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from delegate_lens.cli import main

pytestmark = pytest.mark.torch  # the reference graph runs

DATA = Path(__file__).parent / "data" / "numerics_mlp_xnnpack"


def _args(vectors_dir: Path, buffer: Path) -> list[str]:
    v = vectors_dir / "mlp_xnnpack"
    etrecord = DATA / "etrecord_with_inputs.bin"
    return [
        "numerics",
        str(v / "etdump.etdp"),
        "--etrecord",
        str(etrecord),
        "--debug-buffer",
        str(buffer),
    ]


@pytest.mark.parametrize("keep", [100])  # (an empty buffer: test_cli_messages, as inspect)
def test_a_buffer_giving_no_output_is_an_error(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], keep: int
) -> None:
    buffer = tmp_path / "short.bin"
    buffer.write_bytes((vectors_dir / "mlp_xnnpack" / "debug.bin").read_bytes()[:keep])
    out = tmp_path / "gaps.json"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([*_args(vectors_dir, buffer), "-f", "json", "-o", str(out)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err  # one line: no warning per operator
    assert captured.err.startswith(f"error: {buffer}: no output compared")
    assert f"({keep} bytes) holds none of the 1 logged output(s)" in captured.err
    assert "first divergence" not in captured.out and not out.exists()


def test_fail_on_divergence_gates(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(vectors_dir, vectors_dir / "mlp_xnnpack" / "debug.bin")
    assert main([*args, "--fail-on-divergence"]) == 0  # the run is the reference graph
    assert "first divergence: none" in capsys.readouterr().out
    shifted = json.loads((DATA / "reference_gaps.json").read_text())["shifted_inputs"]
    inputs = tmp_path / "x.npy"
    np.save(inputs, np.asarray(shifted["inputs"][0], dtype=np.float32))
    diverging = [*args, "--inputs", str(inputs)]
    assert main(diverging) == 0  # a report, not a gate, unless asked
    assert "first divergence: linear, relu" in capsys.readouterr().out
    assert main([*diverging, "--fail-on-divergence", "-f", "csv"]) == 1
    (*_, row) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert row["diverged"] == "1" and row["first_divergence"] == "1"
