"""A delegate-lens backend inside real ExecuTorch, ahead of time (issue 23, item 4).

:func:`real_partitioner` offers a backend written with delegate-lens's hooks
(``dl_partitioner`` and ``dl_preprocess``; the demo backend is the example) to the real
lowering flow: a real ``Partitioner`` that tags what the backend's own partitioner takes,
and a real ``BackendDetails`` subclass named after the backend (how ExecuTorch finds a
backend by id) whose ``preprocess`` calls the backend's ``dl_preprocess``. Under
``to_edge_transform_and_lower`` the blob and the Debug Handle Map land in the real lowered
module, the real program and the real ETRecord.

What cannot work: the real runtime has no C++ side for such a backend, so the ``.pte``
cannot run there (loading it fails, naming the backend).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from delegate_lens.errors import PluginError, UsageError
from delegate_lens_executorch.etrecord import aten_targets
from delegate_lens_executorch.runtime import import_executorch

if TYPE_CHECKING:
    from torch.export import ExportedProgram

    from delegate_lens.backend import CompileSpec

__all__ = ["SpecLike", "real_backend_details", "real_partitioner"]

_DETAILS: dict[str, type] = {}


class SpecLike(Protocol):
    """A compile spec, delegate-lens's or ExecuTorch's: a ``key`` and a ``value``."""

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> bytes: ...


def _our_specs(specs: Sequence[SpecLike]) -> list[CompileSpec]:
    from delegate_lens.backend import CompileSpec

    return [CompileSpec(s.key, bytes(s.value)) for s in specs]


def real_backend_details(backend_id: str) -> type:
    """The real ``BackendDetails`` subclass for ``backend_id`` (made once per process).

    ExecuTorch looks a backend up by its class name among ``BackendDetails`` subclasses,
    so the class is named ``backend_id``; its ``preprocess`` asks ``dl_preprocess``."""
    if backend_id in _DETAILS:
        return _DETAILS[backend_id]
    if not backend_id.isidentifier():
        raise UsageError(f"backend id {backend_id!r} is not a Python identifier")
    details = import_executorch("executorch.exir.backend.backend_details")
    base = details.BackendDetails
    taken = [c for c in base.__subclasses__() if c.__name__ == backend_id]
    if taken:
        raise UsageError(
            f"ExecuTorch already has a backend named {backend_id!r} ({taken[0].__module__})"
        )

    def preprocess(edge_program: ExportedProgram, compile_specs: list[SpecLike]) -> object:
        from delegate_lens import hooks

        with aten_targets(edge_program) as program:
            result = hooks.preprocess(backend_id, program, _our_specs(compile_specs))
        if result is None:
            raise PluginError(f"no plugin preprocesses backend {backend_id!r}")
        return details.PreprocessResult(
            processed_bytes=bytes(result.processed_bytes),
            debug_handle_map=dict(result.debug_handle_map or {}),
        )

    cls = type(
        backend_id,
        (base,),
        {
            "preprocess": staticmethod(preprocess),
            "__module__": __name__,
            "__doc__": f"delegate-lens backend {backend_id!r} offered to ExecuTorch.",
        },
    )
    _DETAILS[backend_id] = cls
    return cls


def real_partitioner(backend_id: str, compile_specs: Sequence[SpecLike] = ()) -> object:
    """A real ExecuTorch ``Partitioner`` for the delegate-lens backend ``backend_id``:
    give it to ``executorch.exir.to_edge_transform_and_lower(..., partitioner=[...])``.

    :param compile_specs: delegate-lens ``CompileSpec`` s (or anything with ``key`` and
        ``value``), passed to the backend's partitioner and preprocess.
    """
    from delegate_lens import hooks

    ours_specs = _our_specs(compile_specs)
    found = hooks.partitioner(backend_id, ours_specs)
    if found is None:
        raise UsageError(f"no plugin gives a partitioner for backend {backend_id!r}")
    ours = found  # (not None, in the methods below too)
    real_backend_details(backend_id)
    partitioner = import_executorch("executorch.exir.backend.partitioner")
    compile_spec = import_executorch("executorch.exir.backend.compile_spec_schema")
    utils = import_executorch("executorch.exir.backend.utils")
    spec = partitioner.DelegationSpec(
        backend_id, [compile_spec.CompileSpec(s.key, s.value) for s in ours_specs]
    )

    class Bridged(partitioner.Partitioner):  # type: ignore[name-defined]
        """The backend's own partitioner, run with the edge program's ATen targets."""

        def __init__(self) -> None:
            super().__init__()
            self.delegation_spec = spec

        def partition(self, exported_program: ExportedProgram) -> object:
            with aten_targets(exported_program) as program:
                ours.partition(program)
            tags = {
                n.meta["delegation_tag"]
                for n in exported_program.graph.nodes
                if n.op == "call_function" and "delegation_tag" in n.meta
            }
            utils.tag_constant_data(exported_program)
            return partitioner.PartitionResult(
                tagged_exported_program=exported_program,
                partition_tags=dict.fromkeys(tags, spec),
            )

        def ops_to_not_decompose(
            self, ep: ExportedProgram
        ) -> tuple[list[object], Callable[[object], bool] | None]:
            ops, keep = ours.ops_to_not_decompose(ep)
            return list(ops), keep

    Bridged.__name__ = Bridged.__qualname__ = f"{backend_id}RealPartitioner"
    return Bridged()
