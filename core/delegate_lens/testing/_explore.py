"""What every conformance run shares: the findings it keeps, and the generated models it
explores (the built-in suite's :func:`~delegate_lens.testing.check_backend` and a harness of
your own, such as the ExecuTorch bridge's run on a real partitioner).

* :class:`FindingLog` — the models checked and, per rule, the first findings (the count is
  what matters; a rule that fails on every model would otherwise fill the report);
* :func:`explore_models` — ``max_examples`` models drawn from a hypothesis strategy, each
  with one of ``choices`` (e.g. a profile's compile specs), reproducible from ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs

if TYPE_CHECKING:
    import torch
    from hypothesis.strategies import SearchStrategy

    from delegate_lens.testing._report import Finding


MAX_FINDINGS_PER_RULE = 3
"""Findings a :class:`FindingLog` keeps per rule by default (the first ones)."""

Choice = TypeVar("Choice")


@attrs.define
class FindingLog:
    """The findings of a conformance run: :meth:`keep` each model's; :attr:`checked` counts
    the models, :attr:`findings` holds the first :attr:`per_rule` findings of each rule."""

    per_rule: int = attrs.field(default=MAX_FINDINGS_PER_RULE, validator=attrs.validators.ge(1))
    findings: list[Finding] = attrs.Factory(list)
    checked: int = 0
    counted: dict[str, int] = attrs.Factory(dict)
    """Findings seen per rule, kept or not."""

    def keep(self, new: Iterable[Finding]) -> None:
        """One model checked, with its findings."""
        self.checked += 1
        for finding in new:
            seen = self.counted.get(finding.rule, 0) + 1
            self.counted[finding.rule] = seen
            if seen <= self.per_rule:
                self.findings.append(finding)


def explore_models(
    strategy: SearchStrategy[torch.nn.Module],
    check: Callable[[torch.nn.Module, Choice | None, int], None],
    *,
    max_examples: int,
    seed: int,
    choices: Sequence[Choice] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Call ``check(model, choice, example)`` on ``max_examples`` models drawn from
    ``strategy`` (``example`` counts from 1), each with one of ``choices`` (``None`` when
    none are given), the same models for the same ``seed``. Once ``stop()`` is true, the
    remaining examples are not checked (hypothesis runs out cheaply: raising would make it
    replay the example)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    if max_examples <= 0 or stop():
        return
    example = 0
    options = st.just(None) if choices is None else st.sampled_from(choices)

    @hypothesis_seed(seed)
    @settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy, options)
    def explore(model: torch.nn.Module, choice: Choice | None) -> None:
        nonlocal example
        if stop():
            return
        example += 1
        check(model, choice, example)

    explore()
