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


def test_query_and_profile_limits_are_the_code_s() -> None:
    from delegate_lens.dataset._limits import (
        DEFAULT_TIMEOUT,
        GROWTH_SLACK,
        MEMORY_SHARE,
        MIN_MEMORY_LIMIT,
        parse_size,
    )

    text = " ".join(DOC.read_text().split())
    assert DEFAULT_TIMEOUT == 300 and "| `--timeout SECONDS` (`timeout`) | 300 |" in text
    assert MEMORY_SHARE == 4 and "| a quarter of the machine's memory" in text
    assert GROWTH_SLACK == 512 << 20 and "twice the limit plus 512 MiB" in text
    assert parse_size("1MB") == MIN_MEMORY_LIMIT and "at least 1MB" in text
    assert parse_size("1.5GiB") == 3 << 29 and "`1.5GiB`" in text
    try:
        from delegate_lens_executorch import budget
    except ImportError:  # (the bridge is a plugin of its own)
        return
    assert budget.ETDUMP_MAX_BYTES == 2_147_483_647 and "2,147,483,647 bytes" in text
    assert budget.DEFAULT_MAX_DEBUG_BUFFER_SIZE == 1 << 30
    assert "`[executorch] max_debug_buffer_size` (default 1 GiB" in text
