"""``to_edge`` and the :class:`EdgeProgramManager`: edge programs with debug handles.

``to_edge`` decomposes each method's ``ExportedProgram`` to core ATen and gives every
``call_function`` node a debug handle (see :mod:`delegate_lens.aot._handles`);
:meth:`EdgeProgramManager.to_backend` lowers partitions through backend plugins;
:meth:`EdgeProgramManager.to_program` makes the program the runtime loads.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torch.export import ExportedProgram

from delegate_lens.aot._handles import decompose_with_handles, quiet_torch
from delegate_lens.aot._lowering import LoweredBackendModule, lower_partitions
from delegate_lens.backend import Partitioner, PartitionResult
from delegate_lens.errors import PluginError, UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from delegate_lens.aot._program import ProgramManager


PartitionerArg = Partitioner | str | Sequence[Partitioner | str] | Mapping[str, Any]


def _programs(programs: object) -> dict[str, ExportedProgram]:
    if isinstance(programs, ExportedProgram):
        return {"forward": programs}
    if isinstance(programs, Mapping):
        out: dict[str, ExportedProgram] = {}
        for name, program in programs.items():
            if not isinstance(name, str) or not name:
                raise UsageError(f"method names must be non-empty strings, got {name!r}")
            if not isinstance(program, ExportedProgram):
                raise UsageError(
                    f"method {name!r}: expected a torch.export.ExportedProgram, "
                    f"got {type(program).__name__}"
                )
            out[name] = program
        if not out:
            raise UsageError("no methods given (an empty dict)")
        return out
    raise UsageError(
        "expected a torch.export.ExportedProgram or a dict {method name: ExportedProgram}, "
        f"got {type(programs).__name__}"
    )


def _resolve_partitioner(item: Partitioner | str) -> Partitioner:
    if isinstance(item, Partitioner):
        return item
    if isinstance(item, str):
        from delegate_lens import hooks

        # a plugin raising in dl_partitioner is named in the PluginError
        found = hooks.partitioner(item, [])
        if found is None:
            raise PluginError(f"no plugin provides a partitioner for backend {item!r}")
        if not isinstance(found, Partitioner):
            raise PluginError(
                f"backend {item!r}: dl_partitioner returned {type(found).__name__}, "
                "expected a delegate_lens.Partitioner"
            )
        return found
    if hasattr(item, "partition"):  # duck-typed partitioners are fine too
        return item
    raise UsageError(f"expected a Partitioner or a backend id, got {type(item).__name__}")


def _resolve_all(
    partitioners: Partitioner | str | Sequence[Partitioner | str],
) -> list[Partitioner]:
    """One partitioner or backend id, or a list / tuple of them, resolved in order."""
    if isinstance(partitioners, str) or not isinstance(partitioners, Sequence):
        return [_resolve_partitioner(partitioners)]
    return [_resolve_partitioner(p) for p in partitioners]


def _partitioners_by_method(
    partitioner: PartitionerArg | None, methods: Iterable[str]
) -> dict[str, list[Partitioner]]:
    names = list(methods)
    if partitioner is None:
        return {name: [] for name in names}
    if isinstance(partitioner, Mapping):
        unknown = sorted(set(partitioner) - set(names))
        if unknown:
            raise UsageError(f"partitioners given for unknown methods {unknown} (methods: {names})")
        return {name: _resolve_all(partitioner.get(name, [])) for name in names}
    resolved = _resolve_all(partitioner)
    return {name: list(resolved) for name in names}


def _copy_program(program: ExportedProgram) -> ExportedProgram:
    """A deep copy for a partitioner to tag, sharing (not copying) weights and constants."""
    memo: dict[int, Any] = {}
    for value in (*program.state_dict.values(), *program.constants.values()):
        memo[id(value)] = value
    return copy.deepcopy(program, memo)


class EdgeProgramManager:
    """Edge programs (one per method) with debug handles, possibly lowered.

    Made by :func:`to_edge`; :meth:`to_backend` returns a new manager.
    """

    def __init__(
        self,
        edge_programs: Mapping[str, ExportedProgram],
        *,
        source_programs: Mapping[str, ExportedProgram] | None = None,
        unlowered_programs: Mapping[str, ExportedProgram] | None = None,
        generate_etrecord: bool = False,
    ) -> None:
        self._edge_programs = dict(edge_programs)
        self._source_programs = dict(source_programs or {})
        # the edge programs before any lowering, with every handle: what ETRecord stores
        self._unlowered = dict(unlowered_programs or edge_programs)
        self._generate_etrecord = generate_etrecord

    @property
    def methods(self) -> list[str]:
        """Method names, in the order given."""
        return list(self._edge_programs)

    def exported_program(
        self, method: str = "forward", *, method_name: str | None = None
    ) -> ExportedProgram:
        """The (possibly lowered) edge program of ``method`` (``method_name=`` is
        ExecuTorch's spelling of the same argument)."""
        if method_name is not None:
            if method not in ("forward", method_name):
                raise UsageError(
                    f"give method or method_name, not both ({method!r}, {method_name!r})"
                )
            method = method_name
        try:
            return self._edge_programs[method]
        except KeyError:
            raise UsageError(
                f"no method {method!r} (methods: {', '.join(self._edge_programs)})"
            ) from None

    def unlowered_program(self, method: str = "forward") -> ExportedProgram:
        """The edge program of ``method`` before lowering (every node, every handle)."""
        try:
            return self._unlowered[method]
        except KeyError:
            raise UsageError(
                f"no method {method!r} (methods: {', '.join(self._unlowered)})"
            ) from None

    @property
    def source_programs(self) -> dict[str, ExportedProgram]:
        """The exported programs ``to_edge`` was given."""
        return dict(self._source_programs)

    @property
    def generate_etrecord(self) -> bool:
        return self._generate_etrecord

    def lowered_modules(self, method: str = "forward") -> list[LoweredBackendModule]:
        """The lowered partitions of ``method``, in graph order."""
        from delegate_lens.aot._lowering import lowered_modules

        return lowered_modules(self.exported_program(method).graph_module)

    def to_backend(self, partitioner: PartitionerArg) -> EdgeProgramManager:
        """Lower the partitions the partitioner(s) tag, through ``dl_preprocess``.

        :param partitioner: a :class:`delegate_lens.Partitioner`, a backend id (resolved
            through ``dl_partitioner``), a list of them (applied in turn) or a dict
            ``{method: partitioner(s)}``.
        :raises PluginError: no plugin preprocesses a tagged backend.
        :raises MappingError: a Debug Handle Map names handles outside its partition.
        """
        from delegate_lens.pluginmanager import get_plugin_manager

        pm = get_plugin_manager()
        per_method = _partitioners_by_method(partitioner, self.methods)
        new_programs: dict[str, ExportedProgram] = {}
        for name, program in self._edge_programs.items():
            current = program
            for part in per_method[name]:
                with quiet_torch():
                    tagged_input = _copy_program(current)
                result = part.partition(tagged_input)
                if not isinstance(result, PartitionResult):
                    raise PluginError(
                        f"partitioner {type(part).__name__}.partition returned "
                        f"{type(result).__name__}, expected a PartitionResult"
                    )
                tagged = result.tagged_exported_program
                if not isinstance(tagged, ExportedProgram):
                    raise PluginError(
                        f"partitioner {type(part).__name__}: tagged_exported_program is "
                        f"{type(tagged).__name__}, expected an ExportedProgram"
                    )
                with quiet_torch():
                    current, _ = lower_partitions(tagged, result.partition_tags, pm)
            new_programs[name] = current
        return EdgeProgramManager(
            new_programs,
            source_programs=self._source_programs,
            unlowered_programs=self._unlowered,
            generate_etrecord=self._generate_etrecord,
        )

    def to_program(self) -> ProgramManager:
        """The program the runtime loads, with the debug maps (see :class:`ProgramManager`)."""
        from delegate_lens.aot._program import build_program_manager

        return build_program_manager(self)

    def to_executorch(self, config: object = None) -> ProgramManager:
        """Alias of :meth:`to_program`, under the reference's name (its snippets run as they
        are). ``config`` (the reference's ``ExecutorchBackendConfig``) must be None: the
        reference's memory-planning and emitter options are not modelled here."""
        if config is not None:
            raise UsageError(
                "to_executorch(config=...): backend configs are not supported; "
                "call to_executorch() or to_program() without one"
            )
        return self.to_program()

    def __repr__(self) -> str:
        return f"EdgeProgramManager(methods={self.methods})"


def _preserved_ops(partitioners: Iterable[object], program: ExportedProgram) -> list[object]:
    ops: list[object] = []
    for part in partitioners:
        hook = getattr(part, "ops_to_not_decompose", None)
        if hook is None:
            continue
        result = hook(program)
        found = result[0] if isinstance(result, tuple) else result
        ops.extend(found or ())
    return ops


def _to_edge(
    programs: object,
    generate_etrecord: bool,
    preserve: Mapping[str, Sequence[object]] | None = None,
) -> EdgeProgramManager:
    sources = _programs(programs)
    edge: dict[str, ExportedProgram] = {}
    for name, program in sources.items():
        keep = (preserve or {}).get(name, [])
        edge[name] = decompose_with_handles(program, keep)
    return EdgeProgramManager(
        edge, source_programs=sources, generate_etrecord=bool(generate_etrecord)
    )


def _reference_options(
    compile_config: object, constant_methods: object, transform_passes: object = None
) -> None:
    """The reference's options: an ``EdgeCompileConfig`` is accepted (its IR checks are the
    reference's own), constant methods and transform passes are not modelled."""
    del compile_config
    if constant_methods:
        raise UsageError("constant_methods are not supported (the program has no constants table)")
    if transform_passes:
        raise UsageError("transform_passes are not supported; transform the exported program first")


def to_edge(
    programs: object,
    *,
    generate_etrecord: bool = False,
    compile_config: object = None,
    constant_methods: object = None,
) -> EdgeProgramManager:
    """Decompose to core ATen and give every operator node a debug handle.

    :param programs: a ``torch.export.ExportedProgram`` (method ``"forward"``) or a dict
        ``{method name: ExportedProgram}``.
    :param generate_etrecord: keep what :meth:`ProgramManager.get_etrecord` needs.
    :param compile_config: the reference's ``EdgeCompileConfig``, accepted and not used.
    :param constant_methods: the reference's; only None / empty is supported.
    """
    _reference_options(compile_config, constant_methods)
    return _to_edge(programs, generate_etrecord)


def to_edge_transform_and_lower(
    programs: object,
    partitioner: PartitionerArg | None = None,
    generate_etrecord: bool = False,
    *,
    compile_config: object = None,
    constant_methods: object = None,
    transform_passes: object = None,
) -> EdgeProgramManager:
    """:func:`to_edge` then :meth:`EdgeProgramManager.to_backend`, as in ExecuTorch.

    Operators a partitioner lists in ``ops_to_not_decompose`` are kept whole. The
    reference's ``compile_config`` is accepted and not used; ``constant_methods`` and
    ``transform_passes`` are not supported (only None / empty).
    """
    _reference_options(compile_config, constant_methods, transform_passes)
    sources = _programs(programs)
    per_method = _partitioners_by_method(partitioner, sources)
    preserve = {name: _preserved_ops(per_method[name], sources[name]) for name in sources}
    manager = _to_edge(sources, generate_etrecord, preserve)
    if not any(per_method.values()):
        return manager
    return manager.to_backend({name: parts for name, parts in per_method.items()})
