"""``Inspector.to_dataframe``: the reference's DataFrame built from the tables' columns.

The same frame as :func:`blocks_to_dataframe` over the
Inspector's event blocks, without making an :class:`~delegate_lens.inspector._events.Event`
per row: samples and start times come out of the ``(rows, runs)`` matrices with one
``tolist`` per block, statistics are the tables' own arrays. pandas is imported here, when a
DataFrame is asked for, not before.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.errors import MissingExtraError

if TYPE_CHECKING:
    from delegate_lens.inspector._api import Inspector
    from delegate_lens.inspector._events import EventBlock


_STATS = ("p10", "p50", "p90", "avg", "min", "max")


def inspector_dataframe(
    inspector: Inspector, *, include_units: bool = True, include_delegate_debug_data: bool = False
) -> Any:
    """One row per event row of every block, with the reference's columns (needs pandas).

    The cycle collector is paused meanwhile: the samples and start times are a list per
    row of one item per run, and every pass over young objects would walk all of them
    (three passes, about 7 ms on gpt_portable_big); they are collected as usual after."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _inspector_dataframe(inspector, include_units, include_delegate_debug_data)
    finally:
        if collecting:
            gc.enable()


def _inspector_dataframe(
    inspector: Inspector, include_units: bool, include_delegate_debug_data: bool
) -> Any:
    pd = require_pandas()
    unit = f" ({inspector.target_time_scale.value})" if include_units else ""
    names = dataframe_columns(unit, include_delegate_debug_data)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    stats: list[list[Any]] = [[] for _ in _STATS]
    fc = inspector.file_columns
    if any(table.debug_data for table in inspector.tables):
        inspector.say_debug_problems()
    for table in inspector.tables:
        perf = np.asarray(table.block.has_perf, dtype=bool)
        raw = table.samples.tolist()
        starts = fc.start_time[table.block.events.T].tolist()  # (rows, runs)
        block_stats = table.stats.tolist()
        for j, (key, link) in enumerate(zip(table.keys, table.links, strict=True)):
            has = bool(perf[j])
            columns["event_block_name"].append(table.name)
            columns["event_name"].append(key.name)
            columns["raw"].append(raw[j] if has else None)
            for s in range(len(_STATS)):
                stats[s].append(block_stats[s][j] if has else None)
            columns["op_types"].append(list(link.op_types))
            columns["delegate_debug_identifier"].append(key.identifier)
            columns["stack_traces"].append(dict(link.stack_traces))
            columns["module_hierarchy"].append(dict(link.module_hierarchy))
            columns["is_delegated_op"].append(key.identifier is not None)
            columns["delegate_backend_name"].append(link.delegate_backend_name)
            columns["debug_data"].append(list(table.debug_data.get(j, [])))
            columns["start_time"].append(starts[j] if has else None)
            if include_delegate_debug_data:
                columns["delegate_debug_metadata"].append(inspector.row_metadata(table, j)[1])
    for s, stat in enumerate(_STATS):
        columns[stat + unit] = stats[s]
    return pd.DataFrame(columns)


def require_pandas() -> Any:
    """The pandas module, or MissingExtraError naming the extra."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError(
            "DataFrames need pandas: install the 'pandas' extra (pip install 'delegate-lens[pandas]')"
        ) from exc
    return pd


def dataframe_columns(unit: str, include_delegate_debug_data: bool) -> list[str]:
    """The reference's DataFrame columns, in its order (``unit`` e.g. ``" (ms)"`` or ``""``)."""
    names = [
        "event_block_name",
        "event_name",
        "raw",
        *(s + unit for s in _STATS),
        "op_types",
        "delegate_debug_identifier",
        "stack_traces",
        "module_hierarchy",
        "is_delegated_op",
        "delegate_backend_name",
        "debug_data",
        "start_time",
    ]
    if include_delegate_debug_data:
        names.append("delegate_debug_metadata")
    return names


def blocks_to_dataframe(
    blocks: Sequence[EventBlock],
    *,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
) -> Any:
    """One DataFrame row per event of ``blocks`` (needs pandas)."""
    pd = require_pandas()
    scale = blocks[0].target_time_scale.value if blocks else "ms"
    unit = f" ({scale})" if include_units else ""
    columns: dict[str, list[Any]] = {
        name: [] for name in dataframe_columns(unit, include_delegate_debug_data)
    }
    for block in blocks:
        for event in block.events:
            perf = event.perf_data
            columns["event_block_name"].append(block.name)
            columns["event_name"].append(event.name)
            columns["raw"].append(perf.raw if perf else None)
            for s in _STATS:
                columns[s + unit].append(getattr(perf, s) if perf else None)
            columns["op_types"].append(event.op_types)
            columns["delegate_debug_identifier"].append(event.delegate_debug_identifier)
            columns["stack_traces"].append(event.stack_traces)
            columns["module_hierarchy"].append(event.module_hierarchy)
            columns["is_delegated_op"].append(event.is_delegated_op)
            columns["delegate_backend_name"].append(event.delegate_backend_name)
            columns["debug_data"].append(event.debug_data)
            columns["start_time"].append(event.start_time)
            if include_delegate_debug_data:
                columns["delegate_debug_metadata"].append(event.delegate_debug_metadatas)
    return pd.DataFrame(columns)
