"""The test kit on a backend of its own (issue 33): TriadNPU (``tests/backends/triad-npu``,
its own distribution, installed through an entry point by ``scripts/install.sh --dev``)
passes every rule, and each of the six bugs planted in variants of it
(``tests/triad_bugs.py``) is caught by the rules that name it."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterator
from typing import Any

import pytest
import triad_bugs

pytestmark = pytest.mark.torch


def _model() -> Any:
    """mul -> sub -> tanh (three kernels) -> add + relu (fused): every shape of the backend."""
    from delegate_lens.testing.strategies import GeneratedModel

    ops = [("mul", (0, 0)), ("sub", (1, 0)), ("tanh", (2,)), ("add", (3, 1)), ("relu", (4,))]
    return GeneratedModel(ops).eval()


@pytest.fixture
def bugs() -> Iterator[Any]:
    from delegate_lens.pluginmanager import get_plugin_manager, reset_plugin_manager

    reset_plugin_manager()
    get_plugin_manager().register(triad_bugs)
    yield
    reset_plugin_manager()


def test_triad_is_installed_through_its_entry_point() -> None:
    from delegate_lens.pluginmanager import describe_plugin, get_plugin_manager

    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group="delegate_lens")}
    assert "triad_npu" in eps, "tests/backends/triad-npu is not installed (install.sh --dev)"
    assert eps["triad_npu"].dist is not None
    assert eps["triad_npu"].dist.metadata["Name"] == "delegate-lens-triad-npu"
    assert "delegate-lens-triad-npu" in describe_plugin("triad_npu", get_plugin_manager())


@pytest.mark.slow
def test_triad_passes_every_rule(bugs: Any) -> None:
    from delegate_lens.testing import check_backend

    report = check_backend("TriadNPU", models=[_model()], max_examples=2)
    assert report.ok, report.to_table()
    assert report.models_checked == 3


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(triad_bugs.BUGS))
def test_each_planted_bug_is_caught(bugs: Any, bug: str) -> None:
    from delegate_lens.testing import check_backend

    report = check_backend(f"TriadBug/{bug}", models=[_model()], max_examples=0)
    assert set(triad_bugs.BUGS[bug]) <= set(report.failed_rules), report.to_table()
    if bug == "wrong-handle":  # the finding says where, in one sentence
        messages = [f.message for f in report.findings_for("numeric-gaps")]
        sentence = (
            r"identifier \d+ maps to \(\d+,\) \[sub\], but its output matches \(\d+,\) \[tanh\]"
        )
        assert any(re.fullmatch(sentence, m) for m in messages), messages
    if bug == "logs-previous-output":
        messages = [f.message for f in report.findings_for("outputs-belong-to-ops")]
        assert any(m.endswith("but its output matches (2,) [sub]") for m in messages), messages


@pytest.mark.slow
def test_mutants_of_triad_are_killed(bugs: Any) -> None:
    """Mutants made from a backend the kit is given, not only the demo (the runtime's
    kinds, which share one lowering, and the planted wrong handle's generic twin)."""
    from delegate_lens.testing.mutants import MAP_KINDS, MUTANT_KINDS, mutation_score

    kinds = [k for k in MUTANT_KINDS if k not in MAP_KINDS or k == "shift-handle"]
    score = mutation_score("TriadNPU", models=[_model()], kinds=kinds)
    assert score.ok, score.to_table()
    assert [r.kind for r in score.killed] == kinds
