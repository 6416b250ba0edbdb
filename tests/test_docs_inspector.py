"""docs/inspector.md: every ```python block runs (in order, one namespace) on the
mlp_xnnpack vector, without torch."""

from __future__ import annotations

import shutil
from pathlib import Path

from docblocks import DOCS, blocks, run_blocks_torch_free

DOC = DOCS / "inspector.md"


def test_python_examples_run(vectors_dir: Path, tmp_path: Path) -> None:
    for name in ("etdump.etdp", "etrecord.bin", "debug.bin"):
        shutil.copy(vectors_dir / "mlp_xnnpack" / name, tmp_path / name)
    assert len(blocks(DOC)) >= 8
    result = run_blocks_torch_free(
        DOC,
        "docs_inspector_example",
        tmp_path,
        env={"DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    out = result.stdout
    assert "[('Default', 2, [0]), ('Execute', 7, [1, 2, 3, 4, 5])]" in out
    assert "['native_call__to_dim_order_copy.out', 'DELEGATE_CALL']" in out
    assert "[(2, 16), (), (2, 8)]" in out
    assert "['block', 'event_block_name', 'event_name']\nTrue\n" in out  # typed rows -> CSV
    assert (tmp_path / "mlp.tsv").is_file() and (tmp_path / "mlp.trace.json").is_file()
