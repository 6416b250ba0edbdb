"""docs/migrating.md: its example runs (torch-free) and its tables name every public name
of every ``executorch.devtools`` path that delegate-lens provides (the list the name tests
check importable)."""

from __future__ import annotations

from pathlib import Path

from docblocks import DOCS, blocks, run_blocks_torch_free
from test_reference_api_names import REFERENCE_NAMES

DOC = DOCS / "migrating.md"


def test_example_runs_without_torch(tmp_path: Path) -> None:
    assert len(blocks(DOC)) == 1
    run_blocks_torch_free(DOC, "docs_migrating_example", tmp_path)


def test_every_reference_name_is_in_the_tables() -> None:
    text = DOC.read_text()
    for path, names in REFERENCE_NAMES.items():
        heading = f"`executorch.devtools{'.' + path.split('.')[0] if path else ''}`"
        assert heading in text, heading
        missing = [n for n in names if n not in text]
        assert not missing, f"{path}: {missing}"
