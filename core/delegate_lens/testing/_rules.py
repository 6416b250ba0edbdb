"""Test-kit rules as registered objects: :class:`Rule`, what a rule's check is given
(:class:`RuleInput`, :class:`Traced`), and the registry (:func:`registered_rules`), built
from the ``dl_testing_rules`` hook: the built-in rules come from the built-in plugin
``delegate_lens.builtins.testing_rules``, a backend author's plugin adds its own the same way.

Torch-free at import (a rule's check imports what it needs when it runs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs
from attrs.validators import deep_iterable, in_, instance_of, is_callable, optional

from delegate_lens.errors import PluginError
from delegate_lens.testing._profile import BackendProfile

if TYPE_CHECKING:
    import pluggy
    from torch.export import ExportedProgram

    from delegate_lens.etdump import ETDump


class FindingSink(Protocol):
    """What a rule's check reports to (:class:`~delegate_lens.testing.ModelCheck`)."""

    def add(self, rule: str, message: str, subject: object = "") -> None: ...


Stage = Literal["maps", "run"]
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def _check_name(instance: object, attribute: object, value: str) -> None:
    if not _NAME.match(value):
        raise ValueError(f"rule name {value!r}: use lower-case words joined by '-'")


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _objects(value: Iterable[object]) -> tuple[object, ...]:
    return tuple(value)


def _partitions(
    value: Iterable[tuple[ExportedProgram, Mapping[int | str, Any]]],
) -> tuple[tuple[ExportedProgram, Mapping[int | str, Any]], ...]:
    return tuple(value)


def _encoded(value: Iterable[tuple[object, bytes]]) -> tuple[tuple[object, bytes], ...]:
    return tuple(value)


@attrs.frozen
class Traced:
    """What one traced run of a lowered model left: outputs, ETDump, debug buffer, ETRecord.

    :ivar delegate_map: the method's delegate map, by instruction
        (``{instruction: {"name": backend, "delegate_map": {identifier: handles}}}``).
    """

    manager: Any  # the ProgramManager (.buffer, .delegate_map, .debug_handle_map)
    outputs: tuple[object, ...] = attrs.field(converter=_objects)
    expected: tuple[object, ...] = attrs.field(converter=_objects)
    etdump: ETDump
    etdump_bytes: bytes
    debug_buffer: bytes
    etrecord_path: Path
    delegate_map: Mapping[int, Mapping[str, Any]]
    rtol: float = 1e-5
    atol: float = 1e-5


@attrs.frozen
class RuleInput:
    """What a rule's check sees of one model.

    :ivar partitions: ``(partition program, Debug Handle Map)`` of every partition the
        backend preprocessed (also when lowering then failed).
    :ivar encoded: ``(structured metadata, its bytes)`` the backend's encoder returned.
    :ivar traced: the traced run; ``None`` for rules of stage ``"maps"`` (checked right
        after lowering, whether or not it succeeded).
    """

    backend_id: str
    model: object
    inputs: tuple[object, ...] = attrs.field(converter=_objects)
    profile: BackendProfile
    partitions: tuple[tuple[ExportedProgram, Mapping[int | str, Any]], ...] = attrs.field(
        converter=_partitions
    )
    encoded: tuple[tuple[object, bytes], ...] = attrs.field(converter=_encoded, default=())
    traced: Traced | None = None
    memo: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    """Work several rules share on this model (the graph run, the calls), by name."""

    def run(self) -> Traced:
        """The traced run (a rule of stage ``"run"`` always has one)."""
        if self.traced is None:
            raise PluginError("a rule of stage 'maps' asked for the traced run")
        return self.traced


RuleCheck = Callable[[FindingSink, RuleInput], None]
"""``check(case, subject)``: add a finding to ``case`` for each break of the rule."""


@attrs.frozen
class Rule:
    """One rule of the test kit: its name, what it catches, the mutant kinds that prove it
    (:mod:`delegate_lens.testing.mutants`) and its check.

    :ivar name: the rule's name in reports (lower-case words joined by ``-``).
    :ivar catches: what a break of the rule means, in one sentence.
    :ivar proven_by: the mutant kinds this rule kills on the demo backend (the proof that
        it can fail); empty for a rule no backend mutant reaches.
    :ivar check: ``check(case, subject)``, adding findings named ``name`` to ``case``;
        ``None`` for a rule the harness reports itself (``lowers``).
    :ivar stage: ``"maps"`` (after lowering, on the Debug Handle Maps) or ``"run"`` (after
        a traced run: outputs, ETDump, debug buffer, ETRecord).
    :ivar applies: ``applies(profile) -> bool``: whether the rule applies to a backend
        (``None``: always); a rule that does not is reported as skipped.
    """

    name: str = attrs.field(validator=[instance_of(str), _check_name])
    catches: str = attrs.field(validator=instance_of(str))
    proven_by: tuple[str, ...] = attrs.field(
        default=(), converter=_strings, validator=deep_iterable(instance_of(str))
    )
    check: RuleCheck | None = attrs.field(default=None, validator=optional(is_callable()))
    stage: Stage = attrs.field(default="run", validator=in_(("maps", "run")))
    applies: Callable[[BackendProfile], bool] | None = attrs.field(
        default=None, validator=optional(is_callable())
    )

    def applies_to(self, profile: BackendProfile) -> bool:
        return self.applies is None or bool(self.applies(profile))


def registered_rules(pm: pluggy.PluginManager | None = None) -> dict[str, Rule]:
    """Every rule the plugins of ``pm`` (default: the process's) register on
    ``dl_testing_rules``, by name: the built-in ones first, then the plugins' in the order
    pluggy calls them. Two rules of one name are a :class:`~delegate_lens.PluginError`
    naming both plugins."""
    from delegate_lens import hooks
    from delegate_lens.pluginmanager import describe_plugin

    found: dict[str, Rule] = {}
    owner: dict[str, str] = {}
    answers = hooks.testing_rules(pm)
    builtin = "delegate_lens.builtins.testing_rules"
    answers.sort(key=lambda answer: answer[0] != builtin)  # stable: the rest keep their order
    for plugin_name, result in answers:
        items = [result] if isinstance(result, Rule) else result
        if not isinstance(items, Iterable) or isinstance(items, str | bytes):
            raise PluginError(
                f"plugin {describe_plugin(plugin_name, pm)} returned {type(result).__name__} "
                "from dl_testing_rules; expected a sequence of delegate_lens.testing.Rule"
            )
        for rule in items:
            if not isinstance(rule, Rule):
                raise PluginError(
                    f"plugin {describe_plugin(plugin_name, pm)} returned "
                    f"{type(rule).__name__} from dl_testing_rules; expected "
                    "delegate_lens.testing.Rule values"
                )
            if rule.name in found:
                raise PluginError(
                    f"test-kit rule {rule.name!r} is given by two plugins: "
                    f"{describe_plugin(owner[rule.name], pm)} and "
                    f"{describe_plugin(plugin_name, pm)}"
                )
            found[rule.name] = rule
            owner[rule.name] = plugin_name
    return found


def rules_of_stage(rules: Mapping[str, Rule], stage: Stage) -> Sequence[Rule]:
    return [rule for rule in rules.values() if rule.stage == stage and rule.check is not None]
