"""docs/testing-backends.md: every ```python block runs, in order, in one namespace."""

from __future__ import annotations

import pytest
from docblocks import DOCS, blocks, exec_blocks

DOC = DOCS / "testing-backends.md"


@pytest.mark.torch
def test_python_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    from delegate_lens.pluginmanager import reset_plugin_manager

    assert len(blocks(DOC)) >= 5
    reset_plugin_manager()
    try:
        namespace = exec_blocks(DOC, "docs_testing_backends_example")
    finally:
        reset_plugin_manager()
    out = capsys.readouterr().out
    assert "DemoBackend: passed; 3 model(s)" in out
    assert "class Model(torch.nn.Module)" in out
    assert namespace["report"].ok


def test_every_rule_is_documented() -> None:
    from delegate_lens.testing import RULES

    text = DOC.read_text(encoding="utf-8")
    for rule in RULES:
        assert f"| `{rule}` |" in text
    assert "delegate-lens check-backend" in text and "--delegate-lens-backend=" in text


def test_the_rule_table_names_each_rules_proof() -> None:
    """The table's third column is each registered rule's ``proven_by`` (a kind of
    ``delegate_lens.testing.mutants``), or says why there is none."""
    import re

    from delegate_lens.testing import BUILTIN_RULES
    from delegate_lens.testing.mutants import MUTANT_KINDS

    text = DOC.read_text(encoding="utf-8")
    for rule in BUILTIN_RULES:
        (row,) = [line for line in text.splitlines() if line.startswith(f"| `{rule.name}` |")]
        proof = row.rstrip(" |").rsplit(" | ", 1)[-1]
        if proof.startswith("none: "):  # and why
            assert rule.proven_by == (), row
            continue
        kinds = tuple(re.findall(r"`([a-z-]+)`", proof))
        assert kinds == rule.proven_by, (rule.name, kinds)
        assert set(kinds) <= set(MUTANT_KINDS)
