"""The map rules of the conformance suite: ``handles-in-partition`` and
``delegated-nodes-covered`` (coverage by per-op identifiers; summaries do not count, see
:meth:`~delegate_lens.testing.BackendProfile.summary_identifiers`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from delegate_lens.testing._profile import BackendProfile

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram


class _Adds(Protocol):
    def add(self, rule: str, message: str, subject: object = "") -> None: ...


class _Preprocessed(Protocol):
    preprocessed: list[tuple[ExportedProgram, object]]


def _op_nodes(program: ExportedProgram) -> list[torch.fx.Node]:
    return [
        n
        for n in program.graph.nodes
        if n.op == "call_function" and getattr(n.target, "__name__", "") != "getitem"
    ]


def _as_tuple(value: object) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def check_maps(case: _Adds, recorder: _Preprocessed, profile: BackendProfile) -> None:
    """Rules ``handles-in-partition`` and ``delegated-nodes-covered`` on every partition the
    backend preprocessed (a per-call summary covers no node by itself)."""
    partitions = [
        (program, getattr(result, "debug_handle_map", None) or {})
        for program, result in recorder.preprocessed
    ]
    check_handles_in_partition(case, partitions)
    check_coverage(case, partitions, profile)


def partition_handles(program: ExportedProgram) -> set[int]:
    """The debug handles of a partition's operator nodes."""
    return {
        n.meta["debug_handle"] for n in _op_nodes(program) if n.meta.get("debug_handle") is not None
    }


def check_handles_in_partition(
    case: _Adds, partitions: Sequence[tuple[ExportedProgram, Mapping[Any, Any]]]
) -> None:
    """Rule ``handles-in-partition``: every handle of a map is a node of its partition."""
    for program, mapping in partitions:
        partition = partition_handles(program)
        for ident, handles in mapping.items():
            for h in _as_tuple(handles):
                if h not in partition:
                    case.add(
                        "handles-in-partition",
                        f"identifier {ident!r} names handle {h}, not in its partition "
                        f"{sorted(partition)}",
                        f"identifier {ident!r}, handle {h}",
                    )


def check_coverage(
    case: _Adds,
    partitions: Sequence[tuple[ExportedProgram, Mapping[Any, Any]]],
    profile: BackendProfile,
) -> None:
    """Rule ``delegated-nodes-covered``: every delegated node is covered by a per-op
    identifier (a per-call summary covers none by itself); nothing for an opaque backend."""
    if profile.opaque:
        return
    for program, mapping in partitions:
        nodes = _op_nodes(program)
        partition = partition_handles(program)
        covered = {h for hs in mapping.values() for h in _as_tuple(hs)}
        # a per-call summary covers every handle and says nothing of any op: coverage is
        # over the other (per-op) identifiers
        summaries = profile.summary_identifiers(mapping, partition)
        per_op = {
            h for ident, hs in mapping.items() if ident not in summaries for h in _as_tuple(hs)
        }
        for node in nodes:
            h = node.meta.get("debug_handle")
            if h is None or h in per_op:
                continue
            if h in covered:
                names = ", ".join(repr(i) for i in sorted(summaries, key=str))
                message = (
                    f"delegated node {node.name} (handle {h}) is covered only by summary "
                    f"identifier(s) {names}, by no per-op identifier"
                )
            else:
                message = f"delegated node {node.name} (handle {h}) is in no identifier's handles"
            case.add("delegated-nodes-covered", message, f"node {node.name}, handle {h}")
