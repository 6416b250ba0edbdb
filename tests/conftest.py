"""Shared fixtures: where the reference vectors are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO.parent / "shared" / "vectors"
VECTOR_NAMES = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable")
"""Vectors that have an ``etdump.json`` (the big one has only ``expected.json``)."""


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    if not VECTORS.is_dir():
        pytest.fail(f"the shared vectors are missing: {VECTORS}")
    return VECTORS
