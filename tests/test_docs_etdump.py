"""docs/etdump.md: every ```python block runs, in order, in one namespace, from the repo."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "etdump.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def _python_blocks() -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 2, m.group(2))
        for m in _FENCE.finditer(text)
        if m.group(1) == "python"
    ]


def test_doc_has_python_examples() -> None:
    assert len(_python_blocks()) >= 2


def test_python_examples_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)  # the examples use paths relative to the repository
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for line, code in _python_blocks():
        exec(compile(code, f"{DOC}:{line}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Fully Connected (NC, F32) GEMM #1" in out
