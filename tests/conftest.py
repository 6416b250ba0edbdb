"""Shared fixtures: where the reference vectors are; a plugin manager without installed
plugins."""

from __future__ import annotations

from collections.abc import Iterator
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


@pytest.fixture
def builtin_plugins_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Installed plugins (entry points) stay out: only delegate-lens's built-ins load.
    A module opts in with ``pytestmark = pytest.mark.usefixtures("builtin_plugins_only")``."""
    from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager

    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    reset_plugin_manager()
    yield
    reset_plugin_manager()
