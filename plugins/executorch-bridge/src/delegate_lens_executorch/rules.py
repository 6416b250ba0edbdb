"""The rules as the bridge runs them on real ExecuTorch's artefacts (split from
:mod:`delegate_lens_executorch.conformance`): :class:`RuleRuns`, every registered rule of
the test kit with the bridge's own checks of ``events-link-to-operators`` (through the
program, when the maps were recovered from it) and ``numeric-gaps`` (also at the delegate's
boundary), each rule's reason when it had nothing to check.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import attrs

from delegate_lens.errors import DelegateLensError
from delegate_lens.testing import RULES, Rule, RuleInput

if TYPE_CHECKING:
    from delegate_lens.etdump import ETDump
    from delegate_lens.testing import BackendProfile

__all__ = ["BRIDGE_RULES", "RuleRuns"]

BRIDGE_RULES: dict[str, str] = {
    **RULES,
    "numeric-gaps": f"{RULES['numeric-gaps']}; on real ExecuTorch also an output the runtime "
    "logs itself (a delegate call's outputs) that differs from the ETRecord's graph run on "
    "the same inputs (MSE beyond the comparator's threshold)",
}
"""The test kit's built-in rules as the bridge checks them (with ``numeric-gaps`` at the
delegate's boundary too); a plugin's rules (``dl_testing_rules``) are checked as well."""

_NEEDS_MAP = frozenset({"handles-in-partition", "every-identifier-logged", "sequential-events"})
"""Rules with nothing to check in a delegate call without a Debug Handle Map."""
_NEEDS_OP_OUTPUTS = frozenset({"outputs-belong-to-ops"})
"""Rules with nothing to check when the runtime logs no per-op intermediate output."""
_NO_MAP = (
    "no delegate call had a Debug Handle Map (its preprocess gave none, no "
    "dl_recover_delegate_map plugin recovered one): no identifier to check"
)
_NO_OP_OUTPUT = (
    "the runtime logged no intermediate output under a delegate debug identifier: no "
    "per-op output to compare"
)


class _Sink(Protocol):
    """What a rule's check adds its findings to (a ``ModelCheck``)."""

    def add(self, rule: str, message: str, subject: object = "") -> None: ...


Check = Callable[[_Sink, RuleInput], None]
"""A rule's check: ``check(case, subject)``."""


class _Discard:
    """A sink keeping nothing (the orphans are wanted, not their findings again)."""

    def add(self, rule: str, message: str, subject: object = "") -> None:
        return None


class RuleRuns:
    """The registered rules as the bridge checks them on each model, and which of them had
    something to check over every model: one that never did is reported skipped, with why
    (:meth:`skipped`), never passed."""

    def __init__(self, rules: Mapping[str, Rule], profile: BackendProfile) -> None:
        self.rules = dict(rules)
        self.ran: set[str] = set()
        self.why: dict[str, str] = {}
        for name, rule in self.rules.items():
            if name == "lowers":
                self.ran.add(name)  # check_real_model reports it itself
            elif rule.check is None:
                self.why[name] = "reported by the test kit's own harness, not on real ExecuTorch"
            elif not rule.applies_to(profile):
                self.why[name] = "not applicable to the backend's testing profile"
            elif rule.stage == "maps":
                self.why[name] = "no model lowered on real ExecuTorch"
            else:
                self.why[name] = "no model lowered and ran on real ExecuTorch"

    def for_model(self, program: bytes | None) -> dict[str, Rule]:
        """The rules for one model; ``program``: given when its maps were recovered from it
        (the Inspector then links events through them)."""
        checked: dict[str, Rule] = {}
        for name, rule in self.rules.items():
            check: Check | None = rule.check
            if check is None:
                checked[name] = rule
                continue
            if name == "events-link-to-operators" and program is not None:
                check = _links_through(program)
            elif name == "numeric-gaps":
                check = _with_boundary_gaps(check)
            checked[name] = attrs.evolve(rule, check=self._counted(name, check))
        return checked

    def _counted(self, name: str, check: Check) -> Check:
        def counted(case: _Sink, subject: RuleInput) -> None:
            check(case, subject)
            missing = _missing(name, subject)
            if missing is None:
                self.ran.add(name)
                self.why.pop(name, None)
            elif name not in self.ran:
                self.why[name] = missing

        return counted

    def skipped(self) -> dict[str, str]:
        """The rules that never had anything to check, with why."""
        return {name: self.why.get(name, "") for name in self.rules if name not in self.ran}


def _missing(name: str, subject: RuleInput) -> str | None:
    """Why rule ``name`` had nothing to check on ``subject``, or ``None`` when it had."""
    if name in _NEEDS_MAP:
        if subject.traced is None:
            maps = [bool(mapping) for _program, mapping in subject.partitions]
        else:
            maps = [bool(e.get("delegate_map")) for e in subject.traced.delegate_map.values()]
        return None if any(maps) else _NO_MAP
    if name in _NEEDS_OP_OUTPUTS:
        return None if _logs_op_outputs(subject.run().etdump) else _NO_OP_OUTPUT
    return None


def _logs_op_outputs(etdump: ETDump) -> bool:
    """Whether a backend logged an intermediate output under a delegate identifier."""
    for run in etdump.run_data:
        if run.name != "Execute":
            continue
        for event in run.events or ():
            de = event.debug_event
            if de is not None and (de.delegate_debug_id_int != -1 or de.delegate_debug_id_str):
                return True
    return False


def _links_through(program: bytes) -> Check:
    """``events-link-to-operators`` given the ``program``: the Inspector links the events
    of a call through the map a ``dl_recover_delegate_map`` plugin recovers from it."""
    from delegate_lens.testing import check_events, check_links

    def check(case: _Sink, subject: RuleInput) -> None:
        traced = subject.run()
        orphans = check_events(_Discard(), traced.etdump, traced.delegate_map, subject.backend_id)
        check_links(case, traced.etdump_bytes, traced.etrecord_path, orphans, program)

    return check


def _with_boundary_gaps(registered: Check) -> Check:
    """``numeric-gaps``: the registered check (the outputs a backend logs per op), then the
    outputs the runtime logs itself (:func:`_check_boundary_gaps`)."""

    def check(case: _Sink, subject: RuleInput) -> None:
        registered(case, subject)
        _check_boundary_gaps(case, subject)

    return check


def _check_boundary_gaps(case: _Sink, subject: RuleInput) -> None:
    """``numeric-gaps`` at the delegate's boundary: every output the runtime logged itself
    (a delegate call's outputs, a portable operator's) against the ETRecord's graph run on
    the same inputs, by the Inspector's numeric gap. The outputs a backend logged under a
    delegate identifier are left to the registered check (no finding twice)."""
    from delegate_lens.inspector import Inspector

    traced = subject.run()
    debug_buffer = traced.etrecord_path.with_name("debug.bin")
    debug_buffer.write_bytes(traced.debug_buffer)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inspector = Inspector(
                etdump_data=traced.etdump_bytes,
                etrecord=str(traced.etrecord_path),
                debug_buffer_path=str(debug_buffer),
            )
            table = inspector.calculate_numeric_gap(inputs=list(subject.inputs), as_dataframe=False)
    except DelegateLensError as exc:
        case.add("numeric-gaps", f"cannot be computed: {exc}".splitlines()[0], "Inspector")
        return
    if not table.rows:
        case.add("numeric-gaps", "no intermediate output matched the graph", "debug buffer")
    for row in table.rows:
        if row["diverged"] and not row["delegate_identifiers"]:
            case.add(
                "numeric-gaps",
                f"{table.distance} {row['gap']} beyond {table.threshold} at "
                f"{', '.join(map(str, row['aot_ops']))}",
                f"handles {row['aot_debug_handle']}",
            )
