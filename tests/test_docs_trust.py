"""docs/trust.md: its examples run (without torch) on the mlp_xnnpack vector; the limits
it states are the code's; README links it."""

from __future__ import annotations

import shutil
from pathlib import Path

from docblocks import DOCS, blocks, run_blocks_torch_free

from delegate_lens.etrecord._entries import (
    DEFAULT_MAX_COMPRESSION_RATIO,
    DEFAULT_MAX_ENTRY_SIZE,
    DEFAULT_MAX_INFLATED_TOTAL,
)

DOC = DOCS / "trust.md"


def test_examples_run(vectors_dir: Path, tmp_path: Path) -> None:
    shutil.copy(vectors_dir / "mlp_xnnpack" / "etrecord.bin", tmp_path / "etrecord.bin")
    assert len(blocks(DOC)) == 3
    run_blocks_torch_free(
        DOC, "docs_trust_example", tmp_path, env={"DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )


def test_table_states_the_defaults() -> None:
    text = DOC.read_text()
    assert DEFAULT_MAX_ENTRY_SIZE == 1 << 30 and "| `max_entry_size` | 1 GiB |" in text
    ratio = f"| `max_compression_ratio` | {DEFAULT_MAX_COMPRESSION_RATIO} |"
    assert ratio in text
    assert DEFAULT_MAX_INFLATED_TOTAL == 16 << 20 and "| `max_inflated_total` | 16 MiB |" in text


def test_readme_links_it() -> None:
    assert "(docs/trust.md)" in (DOCS.parent / "README.md").read_text()
