"""docs/plugins.md: every ```python block runs (in order, one namespace); toml blocks parse."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docblocks import DOCS, blocks, exec_blocks

from delegate_lens import hookspecs
from delegate_lens.config import reset_config
from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOC = DOCS / "plugins.md"


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("DELEGATE_LENS_CONFIG", "DELEGATE_LENS_OPTIONS", AUTOLOAD_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    reset_plugin_manager()
    reset_config()
    yield
    reset_plugin_manager()
    reset_config()


def test_python_examples_run(isolated: None) -> None:
    assert len(blocks(DOC)) >= 10
    exec_blocks(DOC, "docs_plugins_example")


def test_every_hook_has_an_example() -> None:
    code = "\n".join(source for _, source in blocks(DOC))
    for hook in (name for name in dir(hookspecs) if name.startswith("dl_")):
        assert f"def {hook}(" in code, f"docs/plugins.md has no example implementing {hook}"


def test_toml_examples_parse() -> None:
    toml_blocks = blocks(DOC, "toml")
    assert toml_blocks
    for line, source in toml_blocks:
        try:
            tomllib.loads(source)
        except tomllib.TOMLDecodeError as exc:
            pytest.fail(f"docs/plugins.md:{line}: {exc}")
    packaging = next(tomllib.loads(s) for _, s in toml_blocks if "entry-points" in s)
    assert "delegate_lens" in packaging["project"]["entry-points"]
