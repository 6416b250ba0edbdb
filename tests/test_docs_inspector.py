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
    assert "['block', 'event_block_name', 'event_name']\nTrue\n" in out  # typed rows -> CSV
    assert (tmp_path / "mlp.tsv").is_file() and (tmp_path / "mlp.trace.json").is_file()


def test_the_torch_examples_give_what_they_say(vectors_dir: Path) -> None:
    """The ```pycon lines (they import torch, so the torch-free run leaves them out)."""
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("pandas")
    from delegate_lens import Inspector

    v = vectors_dir / "mlp_xnnpack"
    inspector = Inspector(
        etdump_path=v / "etdump.etdp",
        etrecord=v / "etrecord.bin",
        debug_buffer_path=v / "debug.bin",
    )
    call = next(e for e in inspector.event_blocks[1].events if e.name == "DELEGATE_CALL")
    assert [tuple(value.shape) for value in call.debug_data] == [(2, 16), (), (2, 8)]
    text = DOC.read_text()
    assert ">>> [tuple(value.shape) for value in call.debug_data]\n[(2, 16), (), (2, 8)]" in text
    df = inspector.to_dataframe()
    assert len(df[["event_name", "avg (ms)"]].head()) == 5
