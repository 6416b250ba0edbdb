"""What the writers take: the Inspector's rows and columns as typed values, no ``Any``.

The Inspector builds them (``delegate_lens.inspector.table_rows`` and friends); a writer
reads only these, never the Inspector, so that this package sits below it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from delegate_lens.exporters._slices import SliceSource


@attrs.frozen
class RowStats:
    """A row's statistics over its samples, in the target time scale."""

    p10: float
    p50: float
    p90: float
    avg: float
    min: float
    max: float

    def as_tuple(self) -> tuple[float, float, float, float, float, float]:
        return (self.p10, self.p50, self.p90, self.avg, self.min, self.max)


@attrs.frozen
class TableRow:
    """One row of one block.

    :param block: the block's name (the run name).
    :param block_index: the block's position among the Inspector's blocks.
    :param row: the row's position in its block.
    :param event_name: the event's name (``OPERATOR_CALL``, a kernel, a delegate's event).
    :param stats: statistics, or None for a row without timing (debug events only).
    :param instruction_id: the instruction the event belongs to (-1: none).
    :param identifier: the delegate debug identifier (int or str) of a row a delegate
        logged, else None.
    :param op_types: op types of the linked graph nodes.
    :param delegate_backend_name: the backend of a delegate call or of its events.
    :param method: the ETRecord method the row was linked to.
    :param n_samples: how many samples the row has (its block's runs; 0 without timing).
    :param bundled_input_index: the bundled test case the block's runs used (-1: none).
    :param debug_handles: the linked debug handles (one int, several, or None).
    :param module_paths: the module paths of the linked nodes.
    :param module_hierarchy: per node, the module hierarchy the ETRecord gives.
    :param stack_traces: per node, its stack trace.
    :param debug_data: the row's debug values (from the first run), as JSON values.
    :param metadata: the parsed delegate metadata, when asked for (else None).
    """

    block: str
    block_index: int
    row: int
    event_name: str
    stats: RowStats | None
    instruction_id: int
    identifier: int | str | None
    op_types: tuple[str, ...]
    delegate_backend_name: str | None
    method: str | None
    n_samples: int = 0
    bundled_input_index: int = -1
    debug_handles: int | tuple[int, ...] | None = None
    module_paths: tuple[str, ...] = ()
    module_hierarchy: Mapping[str, object] = attrs.field(factory=dict, eq=False)
    stack_traces: Mapping[str, str | None] = attrs.field(factory=dict, eq=False)
    debug_data: tuple[object, ...] = ()
    metadata: object = None

    @property
    def is_delegated_op(self) -> bool:
        """Whether a delegate logged this row (it has a delegate debug identifier)."""
        return self.identifier is not None


@attrs.frozen
class TableInput:
    """The rows of every block for the table writers.

    :param unit: the target time scale (``"ms"``), for the headers.
    :param rows: every row of every block, in block then row order.
    :param has_metadata: whether some event has delegate metadata (the command's view
        then shows it).
    :param start_times: per row (same order as ``rows``), the start time of each sample,
        when asked for (the reference's table shows them), else empty.
    """

    unit: str
    rows: Sequence[TableRow]
    has_metadata: bool = False
    start_times: Sequence[Sequence[int] | None] = ()


@attrs.frozen(eq=False)
class JsonBlock:
    """One block for the ``json`` writer: its rows and their samples.

    :param samples: ``(rows, runs)`` samples in the target unit (NaN where none).
    :param ticks: the same as integer ticks of the source clock, or None.
    :param exact: per row, whether ``ticks / 10**places`` is exactly its samples.
    :param places: ``k`` when a target unit is ``10**k`` source ticks, else None.
    """

    name: str
    bundled_input_index: int
    method: str | None
    runs: tuple[int, ...]
    rows: Sequence[TableRow]
    samples: npt.NDArray[np.float64]
    ticks: npt.NDArray[np.uint64] | None
    exact: npt.NDArray[np.bool_]
    places: int | None


@attrs.frozen
class JsonInput:
    """Everything the ``json`` writer writes."""

    source_time_scale: str
    target_time_scale: str
    blocks: Sequence[JsonBlock]


@attrs.frozen(eq=False)
class TraceBlock:
    """One block for the timeline writers: its slices and the rows they come from.

    :param rows: every row of the block (``slices.rows`` index into it), without their
        statistics (``stats`` None: a timeline shows each sample, not its spread).
    :param slices: the block's slices, made a range of its runs at a time.
    :param metadata: slice column -> (raw metadata per sample, parsed form) for the
        columns whose samples have metadata.
    """

    index: int
    method: str | None
    runs: tuple[int, ...]
    rows: Sequence[TableRow]
    slices: SliceSource
    metadata: Mapping[int, tuple[list[bytes], object]]


@attrs.frozen(eq=False)
class TraceInput:
    """Everything the ``chrome-trace`` and ``perfetto`` writers write.

    :param units_per_second: source clock ticks per second (cycles: written as if they
        were microseconds, 1,000,000).
    :param run_names: the name of each run of the ETDump (None: unnamed).
    :param memory: run -> allocator label -> bytes the run allocated.
    """

    source_time_scale: str
    target_time_scale: str
    units_per_second: int
    blocks: Sequence[TraceBlock]
    run_names: Sequence[str | None]
    memory: Mapping[int, Mapping[str, int]]
