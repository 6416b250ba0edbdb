"""docs/numerics.md: every ```python block runs (in order, one namespace) in a temporary
folder, and the numbers it shows are what the code gives.

The gaps are float rounding noise (or fp16 rounding for the diverged rows): their last
digits depend on the CPU and on the maths libraries (numpy's SIMD ``exp``, the BLAS), so
the shown numbers are compared with the computed ones with a tolerance, never as text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docblocks import DOCS, blocks, exec_blocks

DOC = DOCS / "numerics.md"
# torch; a fresh plugin manager with every installed plugin, as for a user
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]

THRESHOLD = 1e-10  # MSE's default threshold, as the doc says


def _shown_gap_agrees(shown: float, computed: float, diverged: bool) -> bool:
    """A diverged row's gap (fp16 rounding) to 20 %; a row below the threshold (float32
    noise) to within a factor of 4, and below the threshold."""
    if diverged:
        return computed == pytest.approx(shown, rel=0.2)
    return shown < THRESHOLD and computed < THRESHOLD and 0.25 < computed / shown < 4


def _text_block(starting: str) -> str:
    (block,) = (text for _, text in blocks(DOC, "text") if text.startswith(starting))
    return block


def _shown_python_gaps() -> list[float]:
    """The gaps of the python example's printed rows (``[...] [...] ['5.1e-16'] False``)."""
    block = _text_block("['linear', 'relu']")
    return [float(g) for g in re.findall(r"\['([0-9.e+-]+)'\] (?:True|False)$", block, re.M)]


def _shown_cli_gaps() -> list[float]:
    """The MSE column of the command's table (the last number of each row)."""
    block = _text_block("handles")
    rows = [line for line in block.splitlines() if re.match(r"^\d[\d,]*\s", line)]
    return [float(re.findall(r"\b\d\.\d+e[-+]\d+\b", line)[-1]) for line in rows]


def test_shown_gaps_are_compared_with_a_tolerance() -> None:
    assert _shown_gap_agrees(4.68e-11, 4.69e-11, diverged=False)  # another CPU's last digit
    assert _shown_gap_agrees(3.13e-09, 3.14e-09, diverged=True)
    assert not _shown_gap_agrees(3.13e-09, 6.3e-09, diverged=True)
    assert not _shown_gap_agrees(4.7e-11, 3.1e-09, diverged=False)  # crossed the threshold
    assert not _shown_gap_agrees(5.1e-16, 4.7e-11, diverged=False)


def test_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(blocks(DOC)) >= 8
    ns = exec_blocks(DOC, "docs_numerics_example")
    out = capsys.readouterr().out
    table = ns["table"]
    assert "first divergence: ['tan'] ['tan/div#4'] DemoBackend" in out
    assert [r["first_divergence"] for r in table] == [False, False, True, False, False]
    assert "no representative inputs" in out
    assert ns["rows"]["gap"] == table["gap"]
    assert ns["worst"].first_divergence["aot_ops"] == ["tan"]
    assert (tmp_path / "mlp.etrecord.numerics.npz").is_file()
    # the gaps the doc shows (the example's output and the command's table) are the
    # computed ones, to the precision a different CPU or BLAS leaves them
    computed = [(row["gap"][0], bool(row["diverged"])) for row in table]
    for shown in (_shown_python_gaps(), _shown_cli_gaps()):
        assert len(shown) == len(computed)
        for value, (gap, diverged) in zip(shown, computed):
            assert _shown_gap_agrees(value, gap, diverged), (value, gap)
