"""docs/aot.md: every ```python block runs, in order, in one namespace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from docblocks import DOCS, blocks, exec_blocks

DOC = DOCS / "aot.md"


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from delegate_lens.pluginmanager import reset_plugin_manager

    monkeypatch.setenv("DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD", "1")
    reset_plugin_manager()
    yield
    reset_plugin_manager()


def test_mapping_example_runs_without_torch(capsys: pytest.CaptureFixture[str]) -> None:
    line, source = blocks(DOC)[0]
    namespace: dict[str, object] = {"__name__": "docs_aot_mapping"}
    exec(compile(source, f"{DOC}:{line}", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "{0: (1, 2), 1: (3,)}"


@pytest.mark.torch
def test_python_examples_run(isolated: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(blocks(DOC)) == 2
    exec_blocks(DOC, "docs_aot_example")
    out = capsys.readouterr().out
    assert "delegate 'TinyBackend'" in out
    assert "{2: {'name': 'TinyBackend', 'delegate_map': {0: (2,)}}}" in out
    assert "('aten.relu.default', 2)" in out
