"""docs/inspector.md: every ```python block runs (in order, one namespace) on the
mlp_xnnpack vector, without torch."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "inspector.md"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def _python_blocks() -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match.group(2))
        for match in _FENCE.finditer(text)
        if match.group(1) == "python"
    ]


def test_python_examples_run(vectors_dir: Path, tmp_path: Path) -> None:
    for name in ("etdump.etdp", "etrecord.bin", "debug.bin"):
        shutil.copy(vectors_dir / "mlp_xnnpack" / name, tmp_path / name)
    blocks = _python_blocks()
    assert len(blocks) >= 8
    script = "\n".join(
        f"exec(compile({source!r}, {f'{DOC}:{line}'!r}, 'exec'), ns)" for line, source in blocks
    )
    code = (
        "import sys\n"
        "ns = {'__name__': 'docs_inspector_example'}\n"
        f"{script}\n"
        "assert 'torch' not in sys.modules, 'the examples imported torch'\n"
    )
    env_code = "import os; os.environ['DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD'] = '1'\n" + code
    result = subprocess.run(
        [sys.executable, "-c", env_code],
        cwd=tmp_path,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    out = result.stdout
    assert "[('Default', 2, [0]), ('Execute', 7, [1, 2, 3, 4, 5])]" in out
    assert "['native_call__to_dim_order_copy.out', 'DELEGATE_CALL']" in out
    assert "[(2, 16), (), (2, 8)]" in out
    assert (tmp_path / "mlp.tsv").is_file() and (tmp_path / "mlp.trace.json").is_file()
