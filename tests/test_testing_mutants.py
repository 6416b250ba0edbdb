"""The mutation score of the test kit (issue 33 item 3): every mutant kind, made from the
demo backend, is killed, each by the rules that name it as their proof; the score is printed
in CI's log (whether or not pytest captures output); ``check-backend --mutants``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import SUMMARY_LINE


@pytest.fixture(scope="module")
def demo_score() -> Any:
    from delegate_lens.pluginmanager import reset_plugin_manager
    from delegate_lens.testing.mutants import mutation_score

    reset_plugin_manager()
    return mutation_score("DemoBackend")


@pytest.mark.slow
@pytest.mark.torch
def test_every_mutant_kind_is_killed_on_the_demo(
    demo_score: Any, record_property: Callable[[str, object], None]
) -> None:
    from delegate_lens.testing import registered_rules
    from delegate_lens.testing.mutants import MUTANT_KINDS

    score = demo_score
    record_property(  # the score in the run's summary (CI's log), with or without -s
        SUMMARY_LINE,
        f"mutation score of the test kit's rules on the demo backend:\n{score.to_table()}",
    )
    assert len(MUTANT_KINDS) >= 15
    assert not score.baseline, score.to_table()
    assert [r.kind for r in score.results] == list(MUTANT_KINDS)
    assert {r.kind: r.status for r in score.results} == dict.fromkeys(MUTANT_KINDS, "killed")
    assert score.ok and score.score == 1.0
    kills = score.kills()
    for rule in registered_rules().values():  # each rule's stated proof holds
        assert set(rule.proven_by) <= set(kills[rule.name]), (rule.name, kills[rule.name])
    assert "100%" in score.to_table()


@pytest.mark.torch
def test_check_backend_mutants_prints_the_score(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command on two cheap kinds (the whole score is the test above)."""
    from delegate_lens.cli import main
    from delegate_lens.testing import mutants

    kinds = {k: mutants.MUTANT_KINDS[k] for k in ("skip-op", "metadata-truncated")}
    monkeypatch.setattr(mutants, "MUTANT_KINDS", kinds)
    assert main(["check-backend", "DemoBackend", "--mutants", "-f", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["score"] == 1.0
    assert out["mutants"]["skip-op"]["rules"] == ["every-identifier-logged"]
    assert out["rules"]["metadata-round-trip"] == ["metadata-truncated"]
    assert out["rules"]["lowers"] == []  # killed none of these
    assert main(["check-backend", "DemoBackend", "--mutants"]) == 0
    table = capsys.readouterr().out
    assert "DemoBackend: 2/2 mutants killed (100%)" in table
    assert "rules that killed no mutant: lowers" in table


def test_mutant_kinds_are_checked() -> None:
    from delegate_lens.errors import UsageError
    from delegate_lens.testing.mutants import mutation_score

    with pytest.raises(UsageError, match="unknown mutant kind"):
        mutation_score("DemoBackend", kinds=["no-such-bug"])


@pytest.mark.torch
def test_a_survivor_and_an_inapplicable_mutant_are_told_apart() -> None:
    """A score is honest: with the rule that kills it blocked, a mutant survives; a kind
    that finds nothing to change (no second op to overlap) is not applicable."""
    from delegate_lens import hookimpl
    from delegate_lens.pluginmanager import get_plugin_manager, reset_plugin_manager
    from delegate_lens.testing import BUILTIN_RULES, Rule
    from delegate_lens.testing.mutants import mutation_score
    from delegate_lens.testing.strategies import GeneratedModel

    class FewerRules:
        @hookimpl
        def dl_testing_rules(self) -> list[Rule]:
            return [r for r in BUILTIN_RULES if r.name != "every-identifier-logged"]

    reset_plugin_manager()
    pm = get_plugin_manager()
    try:
        pm.unregister(name="delegate_lens.builtins.testing_rules")
        pm.register(FewerRules(), name="fewer_rules")
        one_op = GeneratedModel([("sigmoid", (0,))]).eval()  # no two ops to swap
        score = mutation_score(
            "DemoBackend", models=[one_op], kinds=["skip-op", "swap-identifiers"]
        )
        status = {r.kind: r.status for r in score.results}
        assert status == {"skip-op": "survived", "swap-identifiers": "not applicable"}
        assert not score.ok and score.survivors == ["skip-op"]
        assert "survived (no rule found them): skip-op" in score.to_table()
    finally:
        reset_plugin_manager()
