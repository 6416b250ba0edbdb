"""Per-op-type summary of an Inspector's rows: count, total time, share of the run, p50.

As TFLite's benchmark summary "by node type" and PyTorch's ``key_averages`` give it. Rows
counted are the operators' own rows: ``OPERATOR_CALL`` (a repeat of its kernel's row),
framework events (``Method::execute``, ...) and the events a delegate logged inside its
``DELEGATE_CALL`` (already in that call's time) are left out. A row running several op
types (a fused delegate call) has its time split evenly across them, so the shares of a
block add up to at most 100%.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import attrs
import numpy as np

from delegate_lens.inspector.linking import FRAMEWORK_EVENTS

if TYPE_CHECKING:
    from delegate_lens.inspector.model import EventBlock

__all__ = ["OpTypeSummary", "op_type_summary", "write_op_type_table"]

_RUN_EVENT = "Method::execute"


@attrs.frozen
class OpTypeSummary:
    """One op type of one event block; times in the Inspector's target time scale.

    :param block: the event block's name.
    :param op_type: the op type (e.g. ``aten.linear.default``).
    :param count: rows running it, per run.
    :param total: its time per run (the mean over the block's runs).
    :param share: ``total`` over the run's time (``Method::execute`` when logged, else the
        sum of the counted rows), between 0 and 1.
    :param p50: the median over runs of its time per run.
    """

    block: str
    op_type: str
    count: int
    total: float
    share: float
    p50: float


def op_type_summary(blocks: Sequence[EventBlock]) -> list[OpTypeSummary]:
    """The summary of every block, op types by decreasing total time (then by name)."""
    out: list[OpTypeSummary] = []
    for block in blocks:
        out.extend(_block_summary(block))
    return out


def _block_summary(block: EventBlock) -> list[OpTypeSummary]:
    per_run: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    run_time: np.ndarray | None = None
    counted = None
    for event in block.events:
        perf = event.perf_data
        if event.name == _RUN_EVENT and perf is not None:
            run_time = np.asarray(perf.raw, dtype=np.float64)
        if (
            event.name == "OPERATOR_CALL"
            or event.name in FRAMEWORK_EVENTS
            or event.is_delegated_op
            or perf is None
        ):
            continue
        op_types = list(dict.fromkeys(event.op_types))
        if not op_types:
            continue
        samples = np.asarray(perf.raw, dtype=np.float64) / len(op_types)
        counted = samples * len(op_types) if counted is None else counted + samples * len(op_types)
        for op_type in op_types:
            previous = per_run.get(op_type)
            per_run[op_type] = samples if previous is None else previous + samples
            counts[op_type] = counts.get(op_type, 0) + 1
    if not per_run:
        return []
    whole = run_time if run_time is not None else counted
    whole_mean = float(np.mean(whole)) if whole is not None and len(whole) else 0.0
    rows = [
        OpTypeSummary(
            block=block.name,
            op_type=op_type,
            count=counts[op_type],
            total=float(np.mean(times)),
            share=float(np.mean(times)) / whole_mean if whole_mean > 0 else 0.0,
            p50=float(np.median(times)),
        )
        for op_type, times in per_run.items()
    ]
    rows.sort(key=lambda r: (-r.total, r.op_type))
    return rows


def write_op_type_table(rows: Sequence[OpTypeSummary], unit: str, file: IO[str]) -> None:
    """The summary as an aligned text table."""
    from delegate_lens.texttable import align_columns

    header = ["event_block_name", "op_type", "count", f"total ({unit})", "share", f"p50 ({unit})"]
    body = [
        [r.block, r.op_type, str(r.count), f"{r.total:.6g}", f"{r.share:.1%}", f"{r.p50:.6g}"]
        for r in rows
    ]
    for text in align_columns([header, *body], right=range(2, 6), rule=True):
        file.write(text + "\n")
