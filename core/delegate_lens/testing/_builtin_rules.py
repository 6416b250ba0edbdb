"""The built-in rules of the test kit, as :class:`~delegate_lens.testing.Rule` objects (the
built-in plugin ``delegate_lens.builtins.testing_rules`` registers them on
``dl_testing_rules``), and :data:`RULES`, their names and what each catches.

Each names the mutant kinds of :mod:`delegate_lens.testing.mutants` that prove it on the
demo backend (``tests/test_testing_mutants.py`` checks every one kills them).
"""

from __future__ import annotations

from collections.abc import Callable

from delegate_lens.testing._calls import DelegateCall, delegate_calls
from delegate_lens.testing._checks import (
    check_etrecord,
    check_links,
    check_metadata,
    check_orphans,
    check_outputs,
    check_times,
    orphan_events,
)
from delegate_lens.testing._coverage import check_coverage, check_handles_in_partition
from delegate_lens.testing._logging import (
    check_every_identifier_logged,
    check_no_identifier_twice,
    check_sequential,
)
from delegate_lens.testing._profile import BackendProfile
from delegate_lens.testing._rules import FindingSink, Rule, RuleInput


class _Collect:
    def __init__(self) -> None:
        self.found: list[tuple[str, str, object]] = []

    def add(self, rule: str, message: str, subject: object = "") -> None:
        self.found.append((rule, message, subject))


def _calls(subject: RuleInput) -> list[DelegateCall]:
    if "calls" not in subject.memo:
        traced = subject.run()
        subject.memo["calls"] = list(delegate_calls(traced.etdump, traced.delegate_map))
    calls: list[DelegateCall] = subject.memo["calls"]
    return calls


def _numeric(rule: str) -> Callable[[FindingSink, RuleInput], None]:
    def check(case: FindingSink, subject: RuleInput) -> None:
        if "numerics" not in subject.memo:  # one graph run for both numeric rules
            from delegate_lens.testing._numeric import check_numerics

            collected = _Collect()
            check_numerics(collected, subject)
            subject.memo["numerics"] = collected.found
        for name, message, where in subject.memo["numerics"]:
            if name == rule:
                case.add(name, message, where)

    return check


def _handles(case: FindingSink, s: RuleInput) -> None:
    check_handles_in_partition(case, s.partitions)


def _coverage(case: FindingSink, s: RuleInput) -> None:
    check_coverage(case, s.partitions, s.profile)


def _outputs(case: FindingSink, s: RuleInput) -> None:
    t = s.run()
    check_outputs(case, t.outputs, t.expected, t.rtol, t.atol)


def _orphans(case: FindingSink, s: RuleInput) -> None:
    t = s.run()
    check_orphans(case, t.etdump, t.delegate_map)


def _times(case: FindingSink, s: RuleInput) -> None:
    check_times(case, s.run().etdump)


class _Encoded:
    def __init__(self, encoded: tuple[tuple[object, bytes], ...]) -> None:
        self.encoded = list(encoded)


def _metadata(case: FindingSink, s: RuleInput) -> None:
    check_metadata(case, _Encoded(s.encoded), s.run().etdump, s.backend_id)


def _etrecord(case: FindingSink, s: RuleInput) -> None:
    t = s.run()
    check_etrecord(case, t.etrecord_path, t.manager)


def _links(case: FindingSink, s: RuleInput) -> None:
    t = s.run()
    check_links(case, t.etdump_bytes, t.etrecord_path, orphan_events(t.etdump, t.delegate_map))


def _logged(case: FindingSink, s: RuleInput) -> None:
    check_every_identifier_logged(case, _calls(s), s.profile)


def _twice(case: FindingSink, s: RuleInput) -> None:
    check_no_identifier_twice(case, _calls(s), s.profile)


def _sequential(case: FindingSink, s: RuleInput) -> None:
    check_sequential(case, _calls(s), s.profile)


def _not_opaque(profile: BackendProfile) -> bool:
    return not profile.opaque


def _is_sequential(profile: BackendProfile) -> bool:
    return profile.sequential


BUILTIN_RULES: tuple[Rule, ...] = (
    Rule(
        "lowers",
        "a model that does not export, lower or run through the backend",
        ("preprocess-fails",),
    ),
    Rule(
        "handles-in-partition",
        "a Debug Handle Map naming a handle outside its partition",
        ("add-outside-handle",),
        _handles,
        "maps",
    ),
    Rule(
        "no-orphan-events",
        "an identifier logged at runtime that is not in its delegate call's map",
        ("orphan-identifier",),
        _orphans,
    ),
    Rule(
        "delegated-nodes-covered",
        "a delegated node no per-op identifier covers (a per-call summary covers none by "
        "itself); skipped for opaque backends",
        ("drop-handle", "shift-handle"),
        _coverage,
        "maps",
        _not_opaque,
    ),
    Rule(
        "outputs-match-eager",
        "outputs of the lowered program that differ from eager torch beyond rtol/atol",
        ("wrong-final-output",),
        _outputs,
    ),
    Rule(
        "metadata-round-trip",
        "metadata that does not survive dl_encode_delegate_metadata -> dl_parse_delegate_metadata",
        ("metadata-byte-order", "metadata-truncated"),
        _metadata,
    ),
    Rule(
        "delegate-event-times",
        "a delegate event outside its DELEGATE_CALL, or ending before it starts (a 32- or "
        "64-bit counter wrapping is understood)",
        ("events-outside-call", "wrong-time-scale", "reversed-times"),
        _times,
    ),
    Rule(
        "etrecord-round-trip",
        "an ETRecord whose maps do not read back equal to the program's",
        (),
        _etrecord,
    ),
    Rule(
        "events-link-to-operators",
        "a runtime event the Inspector links to no operator",
        (),
        _links,
    ),
    Rule(
        "every-identifier-logged",
        "an identifier of a delegate's map not logged in a call (unless the profile declares "
        "it unlogged, as an opaque backend's per-op identifiers)",
        ("skip-op", "log-under-neighbour"),
        _logged,
    ),
    Rule(
        "no-identifier-twice",
        "a per-op identifier with two profile events, or two outputs, in one call",
        ("log-twice", "log-under-neighbour"),
        _twice,
    ),
    Rule(
        "sequential-events",
        "per-op events of one call that overlap in time (for a sequential backend)",
        ("events-overlap",),
        _sequential,
        "run",
        _is_sequential,
    ),
    Rule(
        "outputs-belong-to-ops",
        "a logged output that is the output of an op before the one its identifier names "
        "(a kernel logging its input, or the tensor of the op before it)",
        ("log-previous-output", "wrong-output-tensor"),
        _numeric("outputs-belong-to-ops"),
    ),
    Rule(
        "numeric-gaps",
        "an op's last logged output that differs from the graph run on the same inputs at "
        "its mapped handles (a map naming the wrong handles shows here)",
        ("swap-identifiers", "shift-handle", "wrong-output-tensor", "log-previous-output"),
        _numeric("numeric-gaps"),
    ),
)
"""The test kit's own rules, in report order."""

RULES: dict[str, str] = {rule.name: rule.catches for rule in BUILTIN_RULES}
"""The built-in rules by name, with what each catches (all registered rules, plugins'
too: :func:`~delegate_lens.testing.registered_rules`)."""
