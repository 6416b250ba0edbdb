"""Test-kit rules as registered objects (issue 31 item 7a, issue 33 item 4) and the logging
rules on hand-made ETDumps: a plugin adds a rule through ``dl_testing_rules``; the built-in
ones come through the same hook; each logging rule finds what it names and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from delegate_lens import hookimpl
from delegate_lens.errors import PluginError


@pytest.fixture
def pm() -> Iterator[Any]:
    from delegate_lens.pluginmanager import get_plugin_manager, reset_plugin_manager

    reset_plugin_manager()
    yield get_plugin_manager()
    reset_plugin_manager()


def test_the_built_in_rules_come_through_the_hook(pm: Any) -> None:
    from delegate_lens.testing import BUILTIN_RULES, RULES, Rule, registered_rules
    from delegate_lens.testing.mutants import MUTANT_KINDS

    rules = registered_rules()
    assert list(rules) == list(RULES) == [r.name for r in BUILTIN_RULES]
    assert all(isinstance(rule, Rule) and rule.catches for rule in rules.values())
    for name in ("every-identifier-logged", "no-identifier-twice", "sequential-events"):
        assert name in rules
    assert {"numeric-gaps", "outputs-belong-to-ops"} <= set(rules)
    # each rule's proof names real mutant kinds; every kind proves some rule
    proofs = {kind for rule in rules.values() for kind in rule.proven_by}
    assert proofs <= set(MUTANT_KINDS)
    assert proofs == set(MUTANT_KINDS)
    # blocking the built-in plugin leaves the kit with no rules
    pm.set_blocked("delegate_lens.builtins.testing_rules")
    pm.unregister(name="delegate_lens.builtins.testing_rules")
    assert registered_rules(pm) == {}


def test_a_rule_is_a_validated_value() -> None:
    from delegate_lens.testing import Rule

    rule = Rule("my-rule", "what it catches", ["skip-op"])
    assert rule.proven_by == ("skip-op",) and rule.stage == "run" and rule.check is None
    with pytest.raises(ValueError, match="lower-case words"):
        Rule("My Rule", "x")
    with pytest.raises(ValueError):
        Rule("my-rule", "x", stage="later")  # type: ignore[arg-type]


class _NoSigmoid:
    """A backend author's rule: no delegated sigmoid (a made-up policy)."""

    @hookimpl
    def dl_testing_rules(self) -> list[Any]:
        from delegate_lens.testing import Rule

        def check(case: Any, subject: Any) -> None:
            for program, _mapping in subject.partitions:
                for node in program.graph.nodes:
                    if "sigmoid" in str(node.target):
                        case.add("no-delegated-sigmoid", "sigmoid is delegated", node.name)

        return [Rule("no-delegated-sigmoid", "a delegated sigmoid", (), check, "maps")]


@pytest.mark.torch
def test_a_plugin_adds_a_rule_checked_everywhere(pm: Any) -> None:
    from delegate_lens.testing import check_backend, registered_rules
    from delegate_lens.testing.strategies import GeneratedModel

    pm.register(_NoSigmoid(), name="no_sigmoid")
    assert list(registered_rules())[-1] == "no-delegated-sigmoid"
    model = GeneratedModel([("sigmoid", (0,))]).eval()
    report = check_backend("DemoBackend", models=[model], max_examples=0)
    assert report.rules[-1] == "no-delegated-sigmoid"
    assert report.failed_rules == ["no-delegated-sigmoid"], report.to_table()
    assert report.to_dict()["rules"]["numeric-gaps"] == "passed"  # type: ignore[index]


def test_two_rules_of_one_name_name_both_plugins(pm: Any) -> None:
    from delegate_lens.testing import registered_rules

    class Twin:
        @hookimpl
        def dl_testing_rules(self) -> list[Any]:
            from delegate_lens.testing import Rule

            return [Rule("lowers", "again")]

    class Wrong:
        @hookimpl
        def dl_testing_rules(self) -> object:
            return "lowers"

    pm.register(Twin(), name="twin")
    with pytest.raises(PluginError, match=r"'lowers' is given by two plugins.*twin"):
        registered_rules()
    pm.unregister(name="twin")
    pm.register(Wrong(), name="wrong")
    with pytest.raises(PluginError, match=r"plugin 'wrong'.*returned str"):
        registered_rules()


# ------------------------------------------------------------------ logging rules, by hand


def _etdump(events: list[tuple[str, int | str, int, int]], mapping: dict[Any, Any]) -> Any:
    """One Execute run of one delegate call (instruction 0): ``(kind, identifier, start,
    end)`` events, then its DELEGATE_CALL spanning 0..1000."""
    from delegate_lens.etdump import DebugEvent, ETDump, Event, ProfileEvent, RunData

    def ids(ident: int | str) -> dict[str, Any]:
        if isinstance(ident, str):
            return {"delegate_debug_id_str": ident}
        return {"delegate_debug_id_int": ident}

    run = []
    for kind, ident, start, end in events:
        if kind == "profile":
            pe = ProfileEvent(instruction_id=0, start_time=start, end_time=end, **ids(ident))
            run.append(Event(profile_event=pe))
        else:
            run.append(Event(debug_event=DebugEvent(instruction_id=0, **ids(ident))))
    call = ProfileEvent(name="DELEGATE_CALL", instruction_id=0, start_time=0, end_time=1000)
    run.append(Event(profile_event=call))
    return ETDump(version=0, run_data=[RunData(name="Execute", events=run)])


def _found(events: list[tuple[str, int | str, int, int]], **profile: Any) -> list[str]:
    from delegate_lens.testing import BackendProfile, ModelCheck
    from delegate_lens.testing._calls import delegate_calls
    from delegate_lens.testing._logging import (
        check_every_identifier_logged,
        check_no_identifier_twice,
        check_sequential,
    )

    mapping = {0: (1,), 1: (2, 3), 2: (4,), 3: (4,), 9: (1, 2, 3, 4)}  # 9: the summary
    dmap = {0: {"name": "X", "delegate_map": mapping}}
    calls = list(delegate_calls(_etdump(events, mapping), dmap))
    case = ModelCheck("model", None, None)
    chosen = BackendProfile(**profile)
    for check in (check_every_identifier_logged, check_no_identifier_twice, check_sequential):
        check(case, calls, chosen)
    return sorted({f"{f.rule}: {f.subject.split('identifier')[-1].strip()}" for f in case.findings})


CLEAN = [("profile", 0, 10, 20), ("output", 0, 0, 0), ("profile", 1, 20, 30)]
CLEAN += [("profile", 2, 30, 40), ("profile", 3, 40, 50), ("profile", 9, 5, 60)]


def test_a_clean_call_passes_the_logging_rules() -> None:
    assert _found(CLEAN) == []


def test_each_logging_rule_finds_its_break() -> None:
    skipped = [e for e in CLEAN if e[1] != 3]
    assert _found(skipped) == ["every-identifier-logged: 3"]
    twice = [*CLEAN, ("profile", 0, 50, 55)]
    assert _found(twice) == ["no-identifier-twice: 0"]
    two_outputs = [*CLEAN, ("output", 0, 0, 0)]
    assert _found(two_outputs) == ["no-identifier-twice: 0"]
    overlap = [(k, i, 15 if i == 1 else s, e) for k, i, s, e in CLEAN]
    assert _found(overlap) == ["sequential-events: s 0, 1"]
    # the summary logged twice, or wrapping the others: not per-op, not a break
    assert _found([*CLEAN, ("profile", 9, 5, 61)]) == []


def test_the_profile_says_what_is_not_logged_or_sequential() -> None:
    only_summary = [("profile", 9, 5, 60)]
    assert _found(only_summary, opaque=True) == []
    assert "every-identifier-logged: 0" in _found(only_summary)
    unlogged = [e for e in CLEAN if e[1] != 2]
    assert _found(unlogged, unlogged=lambda ident, handles, part: ident == 2) == []
    overlap = [(k, i, 15 if i == 1 else s, e) for k, i, s, e in CLEAN]
    assert _found(overlap, sequential=False) == []
