"""Lower and run a model traced, for authors' own tests (behind the ``dl_lower`` and
``dl_run_traced`` fixtures of the pytest plugin). Needs torch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    import torch

    from delegate_lens.aot import ProgramManager
    from delegate_lens.backend import CompileSpec
    from delegate_lens.etdump import ETDump


def lower(
    backend_id: str,
    model: torch.nn.Module,
    inputs: Sequence[object] | None = None,
    *,
    compile_specs: Sequence[CompileSpec] = (),
) -> ProgramManager:
    """Export ``model``, lower it with ``backend_id``'s partitioner (from ``dl_partitioner``)
    and return the :class:`~delegate_lens.ProgramManager` (``.buffer``, ``.delegate_map``,
    ``.get_etrecord()``). ``inputs`` default to ``model.example_inputs``."""
    import torch

    import delegate_lens as dl
    from delegate_lens import hooks

    if inputs is None:
        inputs = getattr(model, "example_inputs", None)
        if inputs is None:
            raise UsageError("lower(): give inputs (the model has no example_inputs)")
    partitioner = hooks.partitioner(backend_id, compile_specs)
    if partitioner is None:
        raise UsageError(f"no plugin gives a partitioner for backend {backend_id!r}")
    exported = torch.export.export(model, tuple(inputs))
    edge = dl.to_edge_transform_and_lower(
        exported, partitioner=[partitioner], generate_etrecord=True
    )
    return edge.to_program()


@attrs.frozen
class TracedRun:
    """Outputs of the last execution, and the ETDump of all of them."""

    outputs: list[Any]
    etdump_data: bytes
    debug_buffer: bytes

    @property
    def etdump(self) -> ETDump:
        from delegate_lens.etdump import loads

        return loads(self.etdump_data)


def run_traced(
    program: object,
    inputs: Sequence[object],
    *,
    runs: int = 1,
    method: str = "forward",
    debug_buffer_size: int = 1 << 20,
) -> TracedRun:
    """Run ``program`` (a ProgramManager or program bytes) ``runs`` times with ETDump tracing."""
    from delegate_lens.runtime import ETDumpGen, Program

    buffer = cast("bytes", getattr(program, "buffer", program))  # a manager's, or bytes
    tracer = ETDumpGen(debug_buffer_size=debug_buffer_size)
    loaded = Program.load(buffer).load_method(method, event_tracer=tracer)
    outputs: list[Any] = []
    for _ in range(runs):
        outputs = list(loaded.execute(list(inputs)))
    return TracedRun(outputs, tracer.get_etdump_data(), bytes(tracer.debug_buffer))
