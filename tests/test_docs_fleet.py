"""docs/fleet.md: every ```python block runs, in order, in one namespace, from the repo."""

from __future__ import annotations

import pytest
from docblocks import DOCS, blocks, exec_blocks

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

REPO = DOCS.parent
DOC = DOCS / "fleet.md"


def test_doc_has_python_examples() -> None:
    assert len(blocks(DOC)) >= 2


def test_python_examples_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)  # the examples use paths relative to the repository
    namespace = exec_blocks(DOC, "__docs__")
    assert namespace["regressions"].num_rows > 0
    out = capsys.readouterr().out
    assert "collected 2 file(s) (119 events" in out and "XnnpackBackend" in out


def test_documented_columns_are_the_schema() -> None:
    from delegate_lens.dataset import COLUMNS, schema

    text = DOC.read_text(encoding="utf-8")
    for name in COLUMNS:
        assert f"`{name}`" in text, name
    assert [f.name for f in schema(["device"])] == list(COLUMNS)
