"""docs/aot.md: every ```python block runs, in order, in one namespace."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "aot.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 2, m.group(2))
        for m in _FENCE.finditer(text)
        if m.group(1) == "python"
    ]


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from delegate_lens.pluginmanager import reset_plugin_manager

    monkeypatch.setenv("DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD", "1")
    reset_plugin_manager()
    yield
    reset_plugin_manager()


def test_mapping_example_runs_without_torch(capsys: pytest.CaptureFixture[str]) -> None:
    line, source = _blocks()[0]
    namespace: dict[str, object] = {"__name__": "docs_aot_mapping"}
    exec(compile(source, f"{DOC}:{line}", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "{0: (1, 2), 1: (3,)}"


@pytest.mark.torch
def test_python_examples_run(isolated: None, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _blocks()
    assert len(blocks) == 2
    namespace: dict[str, object] = {"__name__": "docs_aot_example"}
    for line, source in blocks:
        exec(compile(source, f"{DOC}:{line}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "delegate 'TinyBackend'" in out
    assert "{2: {'name': 'TinyBackend', 'delegate_map': {0: (2,)}}}" in out
    assert "('aten.relu.default', 2)" in out
