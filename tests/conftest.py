"""Shared fixtures: where the reference vectors are (unpacked at start); a fresh plugin manager, with or
without the installed plugins."""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"


VECTORS: Path = runpy.run_path(str(DATA / "vectors" / "unpack.py"))["unpack"]()
"""The reference-made vectors, in the repository (see ``tests/data/vectors/README.md``)."""


def _reference_python() -> str | None:
    """A Python with the reference ExecuTorch importable, for the tests that compare with it
    (run in a subprocess, so it never enters the test process): ``DELEGATE_LENS_REFERENCE_PYTHON``
    when set, else this Python when ``executorch`` is installed in it (``install.sh --dev``
    installs it), else None."""
    named = os.environ.get("DELEGATE_LENS_REFERENCE_PYTHON")
    if named:
        return named
    return sys.executable if importlib.util.find_spec("executorch") is not None else None


REFERENCE_PYTHON = _reference_python()
NO_REFERENCE = "the reference executorch is not installed (scripts/install.sh --dev installs it)"
"""The one-line reason a comparison with the reference skips."""
_IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}
needs_reference = pytest.mark.skipif(REFERENCE_PYTHON is None and not _IN_CI, reason=NO_REFERENCE)
"""Marks a test that runs the reference in a subprocess through ``REFERENCE_PYTHON``; it
skips where the reference is missing, except in CI (``CI`` set), where it then fails."""


def compiled_extension(name: str) -> ModuleType:
    """The compiled extension ``name`` (``delegate_lens.etdump._walk``...), imported whatever
    ``DELEGATE_LENS_NO_COMPILED`` chose. A test that needs it skips where it is not built (no
    C compiler or Cython at install), except in CI (``CI`` set), where it then fails."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = f"{name} is not built (no C compiler or Cython at install?): {exc}"
        if _IN_CI:
            pytest.fail(f"{missing}; CI builds every extension", pytrace=False)
        pytest.skip(missing)


def choose(selection: ModuleType, chosen: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a selection module (``etdump._fastwalk``, ``exporters._compiled``) hand out the
    functions of ``chosen``, its extension or its Python twin, until ``monkeypatch`` undoes it
    (what it chose at import depends on the build and ``DELEGATE_LENS_NO_COMPILED``)."""
    for name in selection.NAMES:
        monkeypatch.setattr(selection, name, getattr(chosen, name))


VECTOR_NAMES = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable")
"""Vectors that have an ``etdump.json`` (the big one has only ``expected.json``)."""


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    if not VECTORS.is_dir():
        pytest.fail(f"the reference vectors are missing: {VECTORS}")
    return VECTORS


SUMMARY_LINE = "summary_line"
"""A test that records ``record_property(SUMMARY_LINE, text)`` has ``text`` printed in the
run's summary (the differential suite's score, the test kit's mutation score): the property
travels with the test's report, so it reaches the summary from pytest-xdist's workers too."""

_SUMMARY: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _SUMMARY.extend(str(v) for k, v in report.user_properties if k == SUMMARY_LINE)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _SUMMARY:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def zoo() -> dict[str, object]:
    """The zoo of reference-made models (``tests/zoo/README.md``), built once per run into a
    cache folder; its top manifest. Tests take folders with ``zoo.zoo_model(name, backend)``."""
    from zoo import build_zoo

    return build_zoo()


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
def no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``COLUMNS``/``LINES`` from outside: pytest-xdist's workers set ``COLUMNS=80``, which
    makes the CLI fit its tables to a terminal. A test of fitting sets them itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


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
