"""docs/etrecord.md: every ```python block runs (in order, one namespace), torch-free;
the CLI sample matches what the command prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "etrecord.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def _blocks(language: str) -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match.group(2))
        for match in _FENCE.finditer(text)
        if match.group(1) == language
    ]


def _run_examples(workdir: Path) -> None:
    blocks = _blocks("python")
    assert len(blocks) >= 6
    script = "\n".join(
        f"exec(compile({source!r}, {f'{DOC}:{line}'!r}, 'exec'), ns)" for line, source in blocks
    )
    code = (
        "import sys\n"
        "ns = {'__name__': 'docs_etrecord_example'}\n"
        f"{script}\n"
        "assert 'torch' not in sys.modules, 'the examples imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=workdir, check=True, timeout=120)


def test_python_examples_run_without_torch(tmp_path: Path) -> None:
    _run_examples(tmp_path)
    assert (tmp_path / "model.etrecord").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.etrecord"]


def test_cli_sample_matches_the_command(tmp_path: Path) -> None:
    _run_examples(tmp_path)
    ((_, sample),) = _blocks("text")
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
