"""Shared fixtures: where the reference vectors are; a fresh plugin manager, with or
without the installed plugins."""

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
def builtin_plugins_only(monkeypatch: pytest.MonkeyPatch, fresh_plugin_manager: None) -> None:
    """Installed plugins (entry points) stay out: only delegate-lens's built-ins load (the
    fresh manager is made on first use, after this). A module opts in with
    ``pytestmark = pytest.mark.usefixtures("builtin_plugins_only")``."""
    from delegate_lens.pluginmanager import AUTOLOAD_ENV

    monkeypatch.setenv(AUTOLOAD_ENV, "1")


@pytest.fixture
def fresh_plugin_manager() -> Iterator[None]:
    """A new plugin manager before and after the test; every installed plugin takes part,
    as for a user. A module opts in with
    ``pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")``."""
    from delegate_lens.pluginmanager import reset_plugin_manager

    reset_plugin_manager()
    yield
    reset_plugin_manager()


@pytest.fixture(autouse=True)
def no_kept_workers() -> Iterator[None]:
    """Each test starts without collect's worker processes kept from another (a test that
    patches what a worker runs needs its own); tests of keeping them keep them within."""
    yield
    import sys

    workers = sys.modules.get("delegate_lens.dataset._workers")
    if workers is not None:
        workers.shutdown_workers()
        import multiprocessing

        for process in multiprocessing.active_children():  # ending ones (not waited for)
            if process.name.startswith("delegate-lens-collect"):
                process.join(30)
