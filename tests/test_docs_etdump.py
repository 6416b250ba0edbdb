"""docs/etdump.md: every ```python block runs, in order, in one namespace, from the repo."""

from __future__ import annotations

import pytest
from docblocks import DOCS, blocks, exec_blocks

REPO = DOCS.parent
DOC = DOCS / "etdump.md"


def test_doc_has_python_examples() -> None:
    assert len(blocks(DOC)) >= 2


def test_python_examples_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)  # the examples use paths relative to the repository
    exec_blocks(DOC, "__docs__")
    out = capsys.readouterr().out
    assert "Fully Connected (NC, F32) GEMM #1" in out
