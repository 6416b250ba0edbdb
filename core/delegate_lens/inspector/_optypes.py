"""Per-op-type summary of an Inspector's blocks: count, time per run, total, share, p50.

As TFLite's benchmark summary "by node type" and PyTorch's ``key_averages`` give it, from
the one attribution of time (:mod:`delegate_lens.inspector._attribution`): a kernel is
charged to the op it ran, wrappers (``OPERATOR_CALL``, ``DELEGATE_CALL``,
``Method::execute``) are never added to what they contain, the events a delegate logged
are charged to their op types (a fused event to its group as a whole) and the time no
event explains is shown as ``... (unattributed)``. The shares of a block sum to at most 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import IO, TYPE_CHECKING

import attrs

from delegate_lens.inspector._attribution import (
    BlockAttribution,
    attribute,
    write_summary_table,
)

if TYPE_CHECKING:
    from delegate_lens.inspector._tables import BlockTable


@attrs.frozen
class OpTypeSummary:
    """One op type (or group, event, unattributed part) of one event block; times in the
    Inspector's target time scale.

    :param block: the event block's name.
    :param op_type: what the time is charged to (see
        :class:`~delegate_lens.inspector._attribution.Charge`'s ``key``).
    :param kind: ``op``, ``group`` (a fused event: several op types measured together),
        ``event`` (not linked to the graph) or ``unattributed``.
    :param count: events charged to it per run.
    :param time_per_run: its time per run (the mean over the block's runs).
    :param total_time: its time summed over the block's runs.
    :param share: ``total_time`` over the denominator's, between 0 and 1.
    :param p50: the median over runs of its time per run.
    :param runs: the block's runs.
    :param denominator: what ``share`` divides by: ``Method::execute`` or ``attributed time``.
    :param block_index: the event block's position among the Inspector's blocks (two
        blocks may share a name: two methods' ``Execute``).
    """

    block: str
    op_type: str
    kind: str
    count: int
    time_per_run: float
    total_time: float
    share: float
    p50: float
    runs: int
    denominator: str
    block_index: int


OP_TYPE_COLUMNS = tuple(f.name for f in attrs.fields(OpTypeSummary))


def op_type_rows(attribution: BlockAttribution) -> list[OpTypeSummary]:
    """The summary rows of one block's attribution, by decreasing total time."""
    return [
        OpTypeSummary(
            block=attribution.block,
            op_type=charge.key,
            kind=charge.kind,
            count=charge.count,
            time_per_run=charge.time_per_run,
            total_time=charge.total_time,
            share=charge.share,
            p50=charge.p50,
            runs=attribution.n_runs,
            denominator=attribution.denominator,
            block_index=attribution.index,
        )
        for charge in attribution.charges
    ]


def op_type_summary(tables: Sequence[BlockTable]) -> list[OpTypeSummary]:
    """The summary of every block (blocks where nothing is charged give no rows)."""
    out: list[OpTypeSummary] = []
    for attribution in attribute(tables):
        out.extend(op_type_rows(attribution))
    return out


def write_op_type_table(rows: Sequence[OpTypeSummary], unit: str, file: IO[str]) -> None:
    """The summary as an aligned text table; a line per block names its runs and what the
    shares divide by (blocks of one name told apart by their index, ``1: Execute``)."""
    lead = [("op_type", attrgetter("op_type"), False), ("kind", attrgetter("kind"), False)]
    write_summary_table(rows, lead, unit, file)
