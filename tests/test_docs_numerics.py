"""docs/numerics.md: every ```python block runs (in order, one namespace) in a temporary
folder, and the numbers it shows are what the code gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from docblocks import DOCS, blocks, exec_blocks

DOC = DOCS / "numerics.md"
# torch; a fresh plugin manager with every installed plugin, as for a user
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]


def test_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(blocks(DOC)) >= 8
    ns = exec_blocks(DOC, "docs_numerics_example")
    out = capsys.readouterr().out
    table = ns["table"]
    assert "first divergence: ['tan'] ['tan/div#4'] DemoBackend" in out
    assert [r["first_divergence"] for r in table] == [False, False, True, False, False]
    assert "no representative inputs" in out
    assert ns["rows"]["gap"] == table["gap"]
    assert ns["worst"].first_divergence["aot_ops"] == ["tan"]
    assert (tmp_path / "mlp.etrecord.numerics.npz").is_file()
    text = DOC.read_text()
    for row in table:  # the shown gaps are the computed ones (to 2 and 3 digits)
        assert f"'{row['gap'][0]:.1e}'" in text and f"{row['gap'][0]:.2e}" in text
