"""docs/numerics.md, section "intermediate taps": its python blocks run (in order, one
namespace, nothing else of the page) and print what the page shows (a shown decimal may
differ by one unit in its last digit)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from docblocks import DOCS, blocks, same_output

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("builtin_plugins_only")]

DOC = DOCS / "numerics.md"
HEADING = "## Through delegates that log nothing: intermediate taps"


def _section_blocks(language: str) -> list[tuple[int, str]]:
    start = DOC.read_text(encoding="utf-8").splitlines().index(HEADING) + 1
    return [(line, text) for line, text in blocks(DOC, language) if line > start]


def test_tap_examples_print_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, shown = _section_blocks("python"), _section_blocks("text")
    assert len(code) == len(shown) == 2
    namespace: dict[str, object] = {"__name__": "docs_numerics_taps"}
    for (line, source), (_, expected) in zip(code, shown):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source, f"{DOC}:{line}", "exec"), namespace)
        assert same_output(out.getvalue(), expected), (line, out.getvalue(), expected)
