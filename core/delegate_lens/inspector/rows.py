"""A typed view of the Inspector's rows for exporters: no ``Any``, no numpy internals.

Exporters (built-in or a plugin's, on ``dl_exporters``) read :func:`table_rows`: one
:class:`TableRow` per row of every block, in block then row order, with plain Python
values. The numpy tables behind them (:class:`~delegate_lens.inspector.tables.BlockTable`)
stay an implementation detail.

>>> from delegate_lens.inspector.rows import table_rows
>>> for row in table_rows(inspector):                     # doctest: +SKIP
...     print(row.block, row.event_name, row.stats.p50 if row.stats else None)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from delegate_lens.inspector.api import Inspector

__all__ = ["RowStats", "TableRow", "table_rows"]


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
    :param instruction_id: the instruction the event belongs to.
    :param identifier: the delegate debug identifier (int or str) of a row a delegate
        logged, else None.
    :param op_types: op types of the linked graph nodes.
    :param delegate_backend_name: the backend of a delegate call or of its events.
    :param method: the ETRecord method the row was linked to.
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

    @property
    def is_delegated_op(self) -> bool:
        """Whether a delegate logged this row (it has a delegate debug identifier)."""
        return self.identifier is not None


def table_rows(inspector: Inspector) -> Iterator[TableRow]:
    """Every row of every block, typed (``OPERATOR_CALL`` rows included)."""
    for table in inspector.tables:
        stats = table.stats
        for j, key in enumerate(table.keys):
            link = table.links[j]
            row_stats = None
            if table.block.has_perf[j]:
                row_stats = RowStats(*(float(v) for v in stats[:, j].tolist()))
            yield TableRow(
                block=table.name,
                block_index=table.index,
                row=j,
                event_name=key.name,
                stats=row_stats,
                instruction_id=int(key.instruction_id),
                identifier=key.identifier,
                op_types=tuple(link.op_types),
                delegate_backend_name=link.delegate_backend_name,
                method=link.method,
            )
