"""The logging rules: what a backend logs in each delegate call.

* ``every-identifier-logged`` — every identifier of the call's map is logged (a profile
  event) in the call, unless the backend's profile declares it not logged
  (:attr:`~delegate_lens.testing.BackendProfile.unlogged`; an opaque backend logs only its
  summaries);
* ``no-identifier-twice`` — no per-operator identifier has two profile events, or two
  intermediate outputs, in one call;
* ``sequential-events`` — the per-operator profile events of one call do not overlap in
  time (for a backend whose profile says it is ``sequential``, the default).

Per-operator means: not a per-call summary
(:meth:`~delegate_lens.testing.BackendProfile.summary_identifiers`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

from delegate_lens.testing._calls import DelegateCall, Logged
from delegate_lens.testing._profile import BackendProfile
from delegate_lens.testing._rules import FindingSink


def check_every_identifier_logged(
    case: FindingSink, calls: Iterable[DelegateCall], profile: BackendProfile
) -> None:
    """Rule ``every-identifier-logged``."""
    for call in calls:
        expected = profile.logged_identifiers(call.mapping, call.partition)
        logged = {e.identifier for e in call.events if e.kind == "profile"}
        for ident in sorted(expected - logged, key=str):
            case.add(
                "every-identifier-logged",
                f"{call.describe(ident)} of the map is not logged in the delegate call of "
                f"instruction {call.instruction} (run {call.run})",
                f"{call.where()}, identifier {ident!r}",
            )


def _summaries(call: DelegateCall, profile: BackendProfile) -> set[int | str]:
    """The call's summaries; where the default rule cannot tell (several identifiers each
    cover the whole partition: a fused op and the summary), all of those."""
    found = profile.summary_identifiers(call.mapping, call.partition)
    if profile.is_summary is None:
        whole = [i for i, hs in call.mapping.items() if set(hs) == call.partition]
        if len(whole) > 1:
            found.update(whole)
    return found


def check_no_identifier_twice(
    case: FindingSink, calls: Iterable[DelegateCall], profile: BackendProfile
) -> None:
    """Rule ``no-identifier-twice`` (an identifier that may be the summary is not asked)."""
    for call in calls:
        summaries = _summaries(call, profile)
        for kind, what in (("profile", "profile events"), ("output", "intermediate outputs")):
            counts = Counter(e.identifier for e in call.events if e.kind == kind)
            for ident, count in counts.items():
                if count > 1 and ident not in summaries:
                    case.add(
                        "no-identifier-twice",
                        f"per-op {call.describe(ident)} has {count} {what} in one delegate "
                        f"call of instruction {call.instruction} (run {call.run})",
                        f"{call.where()}, identifier {ident!r}",
                    )


def _wraps(event: Logged, events: Sequence[Logged], call: DelegateCall) -> bool:
    if set(call.mapping.get(event.identifier, ())) != call.partition:
        return False
    return all(event.start <= e.start and e.end <= event.end for e in events if e is not event)


def check_sequential(
    case: FindingSink, calls: Iterable[DelegateCall], profile: BackendProfile
) -> None:
    """Rule ``sequential-events``: per-op profile events of a call follow one another (an
    event of an identifier covering the whole partition that contains every other event
    in time wraps them: a summary the default rule cannot tell from a fused op); nothing
    for a backend whose profile says it is not sequential."""
    if not profile.sequential:
        return
    for call in calls:
        summaries = _summaries(call, profile)
        events = [
            e
            for e in call.events
            if e.kind == "profile"
            and e.identifier in call.mapping  # an orphan is no-orphan-events'
            and e.identifier not in summaries
            and e.end >= e.start  # an event ending before it starts is delegate-event-times'
        ]
        events = [e for e in events if not _wraps(e, events, call)]
        events.sort(key=lambda e: (e.start, e.end))
        for before, after in itertools.pairwise(events):
            if after.start < before.end:
                case.add(
                    "sequential-events",
                    f"per-op events of {call.describe(before.identifier)} "
                    f"[{before.start}, {before.end}] and {call.describe(after.identifier)} "
                    f"[{after.start}, {after.end}] overlap in one call of a sequential backend",
                    f"{call.where()}, identifiers {before.identifier!r}, {after.identifier!r}",
                )
