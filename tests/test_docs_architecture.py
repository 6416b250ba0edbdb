"""docs/architecture.md's "where to add" table names files and hooks that exist."""

from __future__ import annotations

import re

from docblocks import DOCS

from delegate_lens import hookspecs

REPO = DOCS.parent
DOC = DOCS / "architecture.md"


def _where_to_add() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Where to add", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return rows[1:]  # the header row is not a place


def test_the_table_has_a_row_per_kind_of_addition() -> None:
    rows = " ".join(_where_to_add())
    for kind in ("metadata parser", "output format", "CLI command", "test-kit rule"):
        assert kind in rows, kind


def test_every_named_file_exists() -> None:
    named = [
        path for row in _where_to_add() for path in re.findall(r"`((?:core|plugins)/[^`<>]+)`", row)
    ]
    assert len(named) >= 8
    missing = [path for path in named if not (REPO / path.rstrip("/")).exists()]
    assert missing == []


def test_every_named_hook_is_declared() -> None:
    hooks = {name for row in _where_to_add() for name in re.findall(r"`(dl_\w+)`", row)}
    assert len(hooks) >= 8
    assert sorted(h for h in hooks if not callable(getattr(hookspecs, h, None))) == []


def test_named_registries_exist() -> None:
    from delegate_lens.cli import _COMMAND_MODULES
    from delegate_lens.testing import RULES, registered_rules

    assert "etdump" in _COMMAND_MODULES
    assert RULES and set(RULES) <= set(registered_rules())
