"""docs/bundled-program.md: every ```python block runs, in order, in one namespace."""

from __future__ import annotations

from pathlib import Path

import pytest
from docblocks import DOCS, blocks, exec_blocks

from delegate_lens.cli import main

DOC = DOCS / "bundled-program.md"


@pytest.mark.torch
def test_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(blocks(DOC)) == 4
    monkeypatch.chdir(tmp_path)
    exec_blocks(DOC, "__docs__")
    out = capsys.readouterr().out
    assert "BundledProgram(test_cases={'forward': 3}, program=" in out
    assert "['forward'] ['float32[2, 16]']" in out
    assert "case 2: max abs error" in out
    assert "[('Default', -1), ('Execute', 0), ('Execute', 1), ('Execute', 2)]" in out
    assert main(["verify", "model.bpte"]) == 0
    assert capsys.readouterr().out.endswith("3 of 3 test case(s) passed\n")
