"""docs/backend-authors.md: every ```python block runs, in order, in one namespace."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docblocks import DOCS, blocks, exec_blocks

DOC = DOCS / "backend-authors.md"


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from delegate_lens.pluginmanager import reset_plugin_manager

    # the example registers its own plugin; entry-point plugins are not needed
    monkeypatch.setenv("DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    reset_plugin_manager()
    yield
    reset_plugin_manager()


@pytest.mark.torch
def test_python_examples_run(isolated: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(blocks(DOC)) >= 6
    namespace = exec_blocks(DOC, "docs_backend_authors_example")
    out = capsys.readouterr().out
    assert "'add_relu#0'" in out and "'neg#1'" in out and "'add#2'" in out
    assert "[('p_bias', (2,)), ('p_weight', (2, 3))]" in out  # weights read in preprocess
    manager = namespace["manager"]
    [entry] = manager.delegate_map["forward"].values()  # type: ignore[attr-defined]
    dmap = entry["delegate_map"]
    assert len(dmap["add_relu#0"]) == 2  # fusion
    assert dmap["neg#1"] == dmap["add#2"] and len(dmap["neg#1"]) == 1  # decomposition


def test_toml_blocks_parse() -> None:
    import tomllib

    toml_blocks = blocks(DOC, "toml")
    assert toml_blocks
    for _, source in toml_blocks:
        tomllib.loads(source)
