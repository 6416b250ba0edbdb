"""What every conformance run shares (delegate_lens.testing: FindingLog, explore_models): the
first findings of each rule kept, every model counted; generated models reproducible from a
seed, numbered from 1, with one of the given choices, and no more checked once stopped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from delegate_lens.testing import MAX_FINDINGS_PER_RULE, Finding, FindingLog, explore_models

pytest.importorskip("torch")


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=30), st.integers(1, 5))
def test_the_first_findings_of_each_rule_are_kept(rules: list[str], per_rule: int) -> None:
    log = FindingLog(per_rule=per_rule)
    findings = [Finding(rule, f"#{i}", "model") for i, rule in enumerate(rules)]
    for finding in findings:
        log.keep([finding])
    log.keep([])  # a model without findings counts too
    assert log.checked == len(rules) + 1
    assert log.counted == {rule: rules.count(rule) for rule in set(rules)}
    expected = [f for f in findings if rules[: int(f.message[1:]) + 1].count(f.rule) <= per_rule]
    assert log.findings == expected


def test_a_log_keeps_at_least_one_finding_per_rule() -> None:
    assert FindingLog().per_rule == MAX_FINDINGS_PER_RULE
    with pytest.raises(ValueError, match="per_rule"):
        FindingLog(per_rule=0)


def _drawn(seed: int, choices: tuple[str, ...] | None, stop_after: int | None = None) -> list:
    from delegate_lens.testing import strategies

    seen: list[tuple[str, object, int]] = []
    explore_models(
        strategies.models(("add", "relu")),
        lambda model, choice, example: seen.append((repr(model), choice, example)),
        max_examples=6,
        seed=seed,
        choices=choices,
        stop=lambda: stop_after is not None and len(seen) >= stop_after,
    )
    return seen


def test_models_are_numbered_reproducible_and_stop() -> None:
    first = _drawn(3, ("x", "y"))
    assert [example for _, _, example in first] == list(range(1, len(first) + 1))
    assert 0 < len(first) <= 6 and {choice for _, choice, _ in first} <= {"x", "y"}
    assert _drawn(3, ("x", "y")) == first  # the same seed: the same models and choices
    assert {choice for _, choice, _ in _drawn(0, None)} == {None}
    assert len(_drawn(3, ("x", "y"), stop_after=2)) == 2
    assert _drawn(3, ("x",), stop_after=0) == []  # stopped before the first
