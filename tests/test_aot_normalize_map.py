"""Lowering's normalization of a backend's Debug Handle Map (before the validator sees it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from delegate_lens import PreprocessResult
from delegate_lens.errors import MappingError

pytestmark = pytest.mark.torch


def _normalize(mapping: Any) -> Any:
    from delegate_lens.aot._lowering import _normalize_map

    return _normalize_map("B", PreprocessResult(b"", mapping))


def test_normalize_map_plain_ints_sorted_without_duplicates() -> None:
    assert _normalize(None) is None
    got = _normalize(
        {
            np.int32(4): [3, 1, 3],
            "s": np.int64(7),
            "r": range(3, 0, -1),
            "g": (h for h in (5, np.int16(2))),
            "set": {9, 8},
            "arr": np.array([6, 6, 2]),
        }
    )
    assert got == {4: (1, 3), "s": (7,), "r": (1, 2, 3), "g": (2, 5), "set": (8, 9), "arr": (2, 6)}
    assert all(type(h) is int for hs in got.values() for h in hs)
    assert type(next(iter(got))) is int


@pytest.mark.parametrize(
    ("handles", "needle"),
    [
        ("12", r"'x' maps to '12', expected debug handles"),
        (b"\x01", r"'x' maps to b'\\x01', expected debug handles"),
        ({1: 2}, r"'x' maps to \{1: 2\}, expected debug handles"),
        (1.5, r"'x' maps to 1.5, expected debug handles"),
        ([1, 1.5], r"'x': debug handle 1.5 is not an int"),
        ([True], r"'x': debug handle True is not an int"),
    ],
)
def test_normalize_map_rejects(handles: Any, needle: str) -> None:
    with pytest.raises(MappingError, match=r"backend 'B': delegate debug identifier " + needle):
        _normalize({"x": handles})
