"""docs/plugins.md: every ```python block runs (in order, one namespace); toml blocks parse."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from delegate_lens import hookspecs
from delegate_lens.config import reset_config
from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOC = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def _blocks(language: str) -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match.group(2))
        for match in _FENCE.finditer(text)
        if match.group(1) == language
    ]


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
    blocks = _blocks("python")
    assert len(blocks) >= 10
    namespace: dict[str, object] = {"__name__": "docs_plugins_example"}
    for line, source in blocks:
        code = compile(source, f"{DOC}:{line}", "exec")
        exec(code, namespace)


def test_every_hook_has_an_example() -> None:
    code = "\n".join(source for _, source in _blocks("python"))
    for hook in (name for name in dir(hookspecs) if name.startswith("dl_")):
        assert f"def {hook}(" in code, f"docs/plugins.md has no example implementing {hook}"


def test_toml_examples_parse() -> None:
    blocks = _blocks("toml")
    assert blocks
    for line, source in blocks:
        try:
            tomllib.loads(source)
        except tomllib.TOMLDecodeError as exc:
            pytest.fail(f"docs/plugins.md:{line}: {exc}")
    packaging = next(tomllib.loads(s) for _, s in blocks if "entry-points" in s)
    assert "delegate_lens" in packaging["project"]["entry-points"]
