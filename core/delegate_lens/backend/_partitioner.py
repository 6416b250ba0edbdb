"""Partitioners choose which nodes of an edge program a backend takes (torch-free at import).

A partitioner tags nodes with ``node.meta["delegation_tag"] = tag`` and returns a
:class:`PartitionResult` telling, for every tag, which backend gets the partition
(:class:`DelegationSpec`). ``EdgeProgramManager.to_backend`` then lowers each partition.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from delegate_lens.backend._details import CompileSpec

if TYPE_CHECKING:
    from torch.export import ExportedProgram

DELEGATION_TAG = "delegation_tag"
"""The ``node.meta`` key a partitioner sets on the nodes of a partition."""


def _spec_list(value: Sequence[CompileSpec] | None) -> tuple[CompileSpec, ...]:
    specs = tuple(value or ())
    for spec in specs:
        if not isinstance(spec, CompileSpec):
            raise TypeError(f"compile_specs must hold CompileSpec values, not {spec!r}")
    return specs


@attrs.frozen
class DelegationSpec:
    """Which backend gets a partition, and with which options."""

    backend_id: str = attrs.field(validator=attrs.validators.instance_of(str))
    compile_specs: tuple[CompileSpec, ...] = attrs.field(factory=tuple, converter=_spec_list)


def _check_tags(instance: object, attribute: object, value: dict[str, DelegationSpec]) -> None:
    for tag, spec in value.items():
        if not isinstance(tag, str) or not isinstance(spec, DelegationSpec):
            raise TypeError(
                f"partition_tags must map str tags to DelegationSpec, got {tag!r}: {spec!r}"
            )


@attrs.frozen
class PartitionResult:
    """A partitioner's answer: the tagged program and ``{tag: DelegationSpec}``."""

    tagged_exported_program: Any
    partition_tags: dict[str, DelegationSpec] = attrs.field(factory=dict, validator=_check_tags)


class Partitioner(abc.ABC):
    """Subclass and implement :meth:`partition`."""

    @abc.abstractmethod
    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        """Tag the nodes to delegate (``node.meta["delegation_tag"]``) and say who gets them."""

    def ops_to_not_decompose(self, exported_program: object) -> tuple[list[Any], Any]:
        """Operators the backend wants kept whole by ``to_edge_transform_and_lower``.

        :returns: ``(list of OpOverload, optional filter(node) -> bool)``; none by default.
        """
        return [], None
