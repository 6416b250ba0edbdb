"""What a backend declares about itself to the conformance suite (hook ``dl_testing_profile``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from attrs.validators import deep_iterable, instance_of, is_callable, optional

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pluggy


SummaryRule = Callable[[int | str, tuple[int, ...], frozenset[int]], bool]
"""``is_summary(identifier, handles, partition_handles) -> bool``."""

DEFAULT_OPS: tuple[str, ...] = ("linear", "linear_relu", "relu", "sigmoid", "add", "mul")
"""Ops generated for a backend that declares none."""


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _spec_sets(value: Iterable[Iterable[object]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(specs) for specs in value) or ((),)


@attrs.frozen
class BackendProfile:
    """A backend's answer to ``dl_testing_profile``.

    :ivar ops: the ops of :data:`delegate_lens.testing.strategies.OPS` it supports; generated
        models are built from them.
    :ivar compile_specs: the compile-spec sets to test it with (each example uses one).
    :ivar opaque: its delegate calls log no per-operator identifiers (the rule
        ``delegated-nodes-covered`` is then skipped).
    :ivar metadata: a callable returning a hypothesis strategy of the structured metadata
        values it logs, or ``None``.
    :ivar is_summary: ``is_summary(identifier, handles, partition_handles) -> bool`` names the
        per-call *summary* identifiers of a map (they take no part in
        ``delegated-nodes-covered``), or ``None`` for the default rule,
        :func:`default_is_summary`.
    :ivar unlogged: ``unlogged(identifier, handles, partition_handles) -> bool`` names the
        identifiers of a map the runtime never logs (a backend logging only its per-call
        summary, say); ``every-identifier-logged`` then does not ask for them. ``None``: an
        opaque backend logs only its summaries, any other every identifier.
    :ivar sequential: its per-operator events of one call run one after another (the rule
        ``sequential-events`` checks they do not overlap); ``False`` for a backend running
        ops concurrently.
    """

    ops: tuple[str, ...] = attrs.field(
        default=DEFAULT_OPS, converter=_names, validator=deep_iterable(instance_of(str))
    )
    compile_specs: tuple[tuple[Any, ...], ...] = attrs.field(default=((),), converter=_spec_sets)
    opaque: bool = attrs.field(default=False, validator=instance_of(bool))
    metadata: Callable[[], Any] | None = attrs.field(
        default=None, validator=optional(is_callable())
    )
    is_summary: SummaryRule | None = attrs.field(default=None, validator=optional(is_callable()))
    unlogged: SummaryRule | None = attrs.field(default=None, validator=optional(is_callable()))
    sequential: bool = attrs.field(default=True, validator=instance_of(bool))

    def summary_identifiers(
        self, mapping: Mapping[int | str, Sequence[int]], partition: Iterable[int]
    ) -> set[int | str]:
        """The identifiers of ``mapping`` (one partition's Debug Handle Map) that are
        per-call summaries, by :attr:`is_summary` or else :func:`default_is_summary`."""
        part = frozenset(partition)
        entries = {
            i: tuple(hs) if isinstance(hs, list | tuple) else (hs,) for i, hs in mapping.items()
        }
        if self.is_summary is None:
            return {i for i, hs in entries.items() if default_is_summary(i, hs, part, entries)}
        rule = self.is_summary
        return {i for i, hs in entries.items() if rule(i, hs, part)}

    def logged_identifiers(
        self, mapping: Mapping[int | str, Sequence[int]], partition: Iterable[int]
    ) -> set[int | str]:
        """The identifiers of ``mapping`` the runtime logs in every call: all of them but
        those :attr:`unlogged` names (for an opaque backend by default: its summaries)."""
        part = frozenset(partition)
        if self.unlogged is None:
            if self.opaque:
                return self.summary_identifiers(mapping, part)
            return set(mapping)
        rule = self.unlogged
        return {i for i, hs in mapping.items() if not rule(i, _handles(hs), part)}


def _handles(value: object) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (value,)  # type: ignore[return-value]


def default_is_summary(
    identifier: int | str,
    handles: Sequence[int],
    partition: frozenset[int],
    mapping: Mapping[int | str, Sequence[int]],
) -> bool:
    """The default rule: an identifier is a per-call summary when its handles include every
    handle of the partition while another identifier of the map covers fewer of them.

    A map whose every identifier covers the whole partition (one fused op for the whole
    partition, with or without a summary) has no summary: each of them covers every node.
    """
    own = set(handles)
    if not partition <= own:
        return False
    return any(not partition <= set(hs) for other, hs in mapping.items() if other != identifier)


def backend_profile(backend_id: str, pm: pluggy.PluginManager | None = None) -> BackendProfile:
    """The profile ``backend_id`` declares, or the defaults when no plugin answers."""
    from delegate_lens import hooks
    from delegate_lens.errors import PluginError

    result = hooks.testing_profile(backend_id, pm=pm)
    if result is None:
        return BackendProfile()
    if not isinstance(result, BackendProfile):
        raise PluginError(
            f"dl_testing_profile({backend_id!r}) returned {type(result).__name__}, "
            "not a delegate_lens.testing.BackendProfile"
        )
    return result
