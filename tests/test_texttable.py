"""Aligned text tables."""

from __future__ import annotations

from delegate_lens._texttable import align_columns


def test_columns_align_and_trailing_spaces_are_cut() -> None:
    lines = align_columns([("name", "n", "note"), ("a", "10", ""), ("longer", "2", "x")], right={1})
    assert lines == ["name     n  note", "a       10", "longer   2  x"]


def test_rule_under_the_header() -> None:
    assert align_columns([("ab", "c"), ("x", "yyy")], rule=True) == ["ab  c", "--  ---", "x   yyy"]


def test_no_rows() -> None:
    assert align_columns([]) == []
