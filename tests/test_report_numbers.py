"""How the report page writes numbers (its ``fmt``), run with node: counts such as the
sample count ``n`` are integers (``2,000``), never ``2.000e+3``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPORT_JS = (
    Path(__file__).resolve().parent.parent
    / "core"
    / "delegate_lens"
    / "report"
    / "assets"
    / "report.js"
)


def _fmt(values: list[float]) -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    source = REPORT_JS.read_text(encoding="utf-8")
    match = re.search(r"^  function fmt\(v\) \{\n.*?^  \}\n", source, re.DOTALL | re.MULTILINE)
    assert match, "fmt not found in report.js"
    script = f"{match.group(0)}\nconsole.log(JSON.stringify({json.dumps(values)}.map(fmt)));"
    out = subprocess.run(
        [node, "-e", script], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(out.stdout))


def test_counts_are_integers_and_times_keep_their_digits() -> None:
    assert _fmt([2000, 50, 1, 0, 1234567, -3000]) == [
        "2,000",
        "50",
        "1",
        "0",
        "1,234,567",
        "-3,000",
    ]
    assert _fmt([0.0123456, 12.5, 0.0001234, 4838.25]) == [
        "0.01235",
        "12.5",
        "1.234e-4",
        "4.838e+3",
    ]
