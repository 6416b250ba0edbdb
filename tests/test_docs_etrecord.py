"""docs/etrecord.md: every ```python block runs (in order, one namespace), torch-free;
the CLI sample matches what the command prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from docblocks import DOCS, blocks, run_blocks_torch_free

DOC = DOCS / "etrecord.md"


def _run_examples(workdir: Path) -> None:
    assert len(blocks(DOC)) >= 6
    run_blocks_torch_free(DOC, "docs_etrecord_example", workdir)


def test_python_examples_run_without_torch(tmp_path: Path) -> None:
    _run_examples(tmp_path)
    assert (tmp_path / "model.etrecord").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.etrecord"]


def test_cli_sample_matches_the_command(tmp_path: Path) -> None:
    _run_examples(tmp_path)
    ((_, sample),) = blocks(DOC, "text")
    lines = sample.splitlines()
    assert lines[0] == "$ delegate-lens etrecord show model.etrecord --nodes"
    result = subprocess.run(
        [sys.executable, "-m", "delegate_lens", "etrecord", "show", "model.etrecord", "--nodes"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    shown = [line for line in lines[1:] if line.strip() != "..."]
    actual = result.stdout.splitlines()
    assert actual[: len(shown)] == shown
