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
from delegate_lens.inspector._tensors import as_tensors

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
    unit = f" ({inspector.target_time_scale.value})" if include_units else ""
    names = dataframe_columns(unit, False)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    stats: list[list[Any]] = [[] for _ in _STATS]
    metadata: list[Any] = []
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
            columns["op_types"].append(op_types_cell(link.op_types))
            columns["delegate_debug_identifier"].append(key.identifier)
            columns["stack_traces"].append(dict(link.stack_traces))
            columns["module_hierarchy"].append(dict(link.module_hierarchy))
            columns["is_delegated_op"].append(key.identifier is not None)
            columns["delegate_backend_name"].append(link.delegate_backend_name)
            columns["debug_data"].append(as_tensors(list(table.reference_debug_data(j))))
            columns["start_time"].append(starts[j] if has else None)
            if include_delegate_debug_data:
                metadata.append(inspector.row_metadata(table, j)[1])
    for s, stat in enumerate(_STATS):
        columns[stat + unit] = stats[s]
    return make_frame(columns, metadata if include_delegate_debug_data else None)


def op_types_cell(op_types: Sequence[str]) -> Any:
    """The ``op_types`` cell as the reference's: the list up to 4 operators, from 5 on the
    string ``"['first', 'second' ... 'last'] (N total)"``."""
    if len(op_types) < 5:
        return list(op_types)
    return f"['{op_types[0]}', '{op_types[1]}' ... '{op_types[-1]}'] ({len(op_types)} total)"


# Columns whose cells the reference's one-row frames hold as scalars: their dtype is what
# concatenating those frames gives (None rows make them object columns, None kept).
_SCALAR_COLUMNS = ("event_block_name", "event_name", "delegate_debug_identifier",
                   "is_delegated_op", "delegate_backend_name", "op_types")  # fmt: skip


def _concat_dtype(pd: Any, values: list[Any]) -> Any:
    """The dtype pandas gives a column concatenated from one-row frames of ``values``
    (one probe frame per kind of value, so it costs no more than a few tiny frames)."""
    probes: dict[type, Any] = {}
    for value in values:
        probes.setdefault(type(value), value)
    if not probes:
        return object
    frames = [pd.DataFrame({"c": [v]}) for v in probes.values()]
    return frames[0]["c"].dtype if len(frames) == 1 else pd.concat(frames)["c"].dtype


def make_frame(columns: dict[str, list[Any]], metadata: list[Any] | None) -> Any:
    """The DataFrame of ``columns`` with the dtypes the reference's frame has (it concatenates
    one frame per event); ``metadata``: each row's delegate debug metadata, added as the
    reference adds it (a column per key of parsed dicts, ``delegate_debug_metadata`` for
    raw lists; nothing when no row has any)."""
    pd = require_pandas()
    data: dict[str, Any] = {}
    for name, values in columns.items():
        if name in _SCALAR_COLUMNS or name.split(" ")[0] in _STATS:
            data[name] = pd.Series(values, dtype=_concat_dtype(pd, values))
        else:
            data[name] = pd.Series(values, dtype=object)
    frame = pd.DataFrame(data)
    if not metadata:
        return frame
    rows = []
    for value in metadata:
        if isinstance(value, list) and value:
            rows.append(pd.Series([value], index=["delegate_debug_metadata"]))
        elif isinstance(value, dict) and value:
            rows.append(pd.Series(value))
        else:
            rows.append(pd.Series())
    if all(row.empty for row in rows):
        return frame
    return pd.concat([frame, pd.DataFrame(rows)], axis=1)


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
    """One DataFrame row per event of ``blocks`` (needs pandas), as the reference's."""
    scale = blocks[0].target_time_scale.value if blocks else "ms"
    unit = f" ({scale})" if include_units else ""
    columns: dict[str, list[Any]] = {name: [] for name in dataframe_columns(unit, False)}
    metadata: list[Any] = []
    for block in blocks:
        for event in block.events:
            perf = event.perf_data
            columns["event_block_name"].append(block.name)
            columns["event_name"].append(event.name)
            columns["raw"].append(perf.raw if perf else None)
            for s in _STATS:
                columns[s + unit].append(getattr(perf, s) if perf else None)
            columns["op_types"].append(op_types_cell(event.op_types))
            columns["delegate_debug_identifier"].append(event.delegate_debug_identifier)
            columns["stack_traces"].append(event.stack_traces)
            columns["module_hierarchy"].append(event.module_hierarchy)
            columns["is_delegated_op"].append(event.is_delegated_op)
            columns["delegate_backend_name"].append(event.delegate_backend_name)
            columns["debug_data"].append(event.debug_data)
            columns["start_time"].append(event.start_time)
            metadata.append(event.delegate_debug_metadatas)
    return make_frame(columns, metadata if include_delegate_debug_data else None)
