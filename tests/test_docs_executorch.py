"""docs/executorch.md: every ```python block runs, in order, in one namespace, printing
what the ```text block after it shows; then its ``delegate-lens`` command lines run.

Skips (with the reason) only where executorch is not installed.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import subprocess
import warnings
from pathlib import Path

import pytest
from docblocks import DOCS, blocks, exec_blocks, same_output

DOC = DOCS / "executorch.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)

pytestmark = [
    pytest.mark.usefixtures("fresh_plugin_manager"),
    pytest.mark.skipif(
        importlib.util.find_spec("executorch") is None,
        reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
    ),
]


def _shown_outputs() -> str:
    """The ```text blocks that directly follow a ```python block, joined."""
    fenced = [(m.group(1), m.group(2)) for m in _FENCE.finditer(DOC.read_text("utf-8"))]
    return "".join(
        text
        for (lang, _), (kind, text) in itertools.pairwise(fenced)
        if lang == "python" and kind == "text"
    )


def _commands() -> list[str]:
    """The ``delegate-lens`` commands of the ```sh blocks (continuation lines joined)."""
    commands = []
    for _line, source in blocks(DOC, "sh"):
        for command in source.replace("\\\n", " ").splitlines():
            if command.startswith("delegate-lens "):
                commands.append(command)
    return commands


@pytest.mark.slow
def test_examples_run_and_print_what_they_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # executorch's own deprecation chatter
        exec_blocks(DOC, "docs_executorch_example")
    out = capsys.readouterr().out
    assert same_output(out, _shown_outputs()), out
    commands = _commands()
    assert len(commands) == 3
    for command in commands:
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (command, done.stderr)
        assert done.stderr == "", (command, done.stderr)
        if command.startswith("delegate-lens verify"):
            # the errors' last digits depend on the CPU's XNNPACK kernels: the verdicts do not
            lines = done.stdout.splitlines()
            assert lines[0].startswith("forward[0]  max abs error") and lines[0].endswith("PASS")
            assert lines[1] == "1 of 1 test case(s) passed"
        if command.startswith("delegate-lens check-backend"):
            assert "findings: exit 1" in done.stdout
    assert sorted(p.name for p in (tmp_path / "profile").iterdir()) == [
        "debug.bin",
        "etdump.etdp",
        "inspector.txt",
        "numeric_gaps.txt",
        "report.html",
    ]


def test_every_bridge_rule_and_xnnpack_finding_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "| `numeric-gaps` |" in text
    for rule in ("no-orphan-events", "delegated-nodes-covered"):
        assert f"| `{rule}` |" in text
    assert "--executorch-partitioner" in text and "--delegate-lens-executorch-partitioner" in text
