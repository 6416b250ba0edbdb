"""docs/report.md: the ```python block runs on the mlp_xnnpack vector, without torch, and
the page it writes holds the numeric-gap measure; the screenshots it shows exist."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from docblocks import DOCS, blocks, run_blocks_torch_free

DOC = DOCS / "report.md"


def test_python_example_runs(vectors_dir: Path, tmp_path: Path) -> None:
    for name in ("etdump.etdp", "etrecord.bin", "debug.bin"):
        shutil.copy(vectors_dir / "mlp_xnnpack" / name, tmp_path / name)
    assert len(blocks(DOC)) == 1
    result = run_blocks_torch_free(
        DOC, "docs_report_example", tmp_path, env={"DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )
    assert "6 ['XnnpackBackend']" in result.stdout
    assert "['p50', 'share']" in result.stdout
    assert (tmp_path / "report.html").stat().st_size > 100_000
    assert '"numeric gap":{"aten_linear_default":0.02' in (tmp_path / "report-gap.html").read_text()


def test_images_exist() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", DOC.read_text())
    assert images
    for image in images:
        assert (DOCS / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
