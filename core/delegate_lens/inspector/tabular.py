"""The Inspector's tables as text: the printed table, TSV, CSV and a pandas DataFrame.

The printed table and TSV have the reference's columns (``OPERATOR_CALL`` rows left out):
block name, event name, p10/p50/p90/avg/min/max in the target unit, op types, whether the
row is a delegated op and the backend name. CSV holds every row with more columns (ids,
handles, module path, sample count) for spreadsheets and scripts.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from delegate_lens.errors import MissingExtraError
from delegate_lens.texttable import align_columns

if TYPE_CHECKING:
    from delegate_lens.inspector.api import Inspector
    from delegate_lens.inspector.model import EventBlock

__all__ = ["to_dataframe", "write_csv", "write_table", "write_tsv"]

_STATS = ("p10", "p50", "p90", "avg", "min", "max")
_HIDDEN_IN_TABLE = "OPERATOR_CALL"


def _op_types_text(op_types: list[str]) -> str:
    """The reference's rendering: the list, shortened from 5 op types on."""
    if len(op_types) < 5:
        return str(op_types)
    return f"['{op_types[0]}', '{op_types[1]}' ... '{op_types[-1]}'] ({len(op_types)} total)"


def _headers(inspector: Inspector, include_units: bool, metadata: bool) -> list[str]:
    unit = f" ({inspector.target_time_scale.value})" if include_units else ""
    cols = ["event_block_name", "event_name", *(s + unit for s in _STATS)]
    cols += ["op_types", "is_delegated_op", "delegate_backend_name"]
    if metadata:
        cols.append("delegate_debug_metadata")
    return cols


def _has_bundled(inspector: Inspector) -> bool:
    """Whether a run used a bundled program's inputs (the table then shows which)."""
    return any(t.block.bundled_input_index >= 0 for t in inspector.tables)


def _rows(inspector: Inspector, metadata: bool, bundled: bool = False) -> Iterator[list[Any]]:
    for table in inspector.tables:
        for j, key in enumerate(table.keys):
            if _HIDDEN_IN_TABLE in key.name:
                continue
            link = table.links[j]
            if table.block.has_perf[j]:
                stats: list[Any] = [float(v) for v in table.stats[:, j]]
            else:
                stats = [None] * 6
            row = [table.name, key.name, *stats]
            if bundled:
                row.insert(1, table.block.bundled_input_index)
            row += [link.op_types, key.identifier is not None, link.delegate_backend_name]
            if metadata:
                row.append(inspector.row_metadata(table, j)[1])
            yield row


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _op_types_text(value)
    return str(value)


def write_table(
    inspector: Inspector,
    file: IO[str],
    *,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
) -> None:
    """A human-readable table, columns aligned."""
    headers = _headers(inspector, include_units, include_delegate_debug_data)
    bundled = _has_bundled(inspector)
    if bundled:  # an addition: which bundled test case each block's runs used
        headers.insert(1, "bundled_input_index")
    rows = _rows(inspector, include_delegate_debug_data, bundled)
    body = [[_fmt(v) for v in row] for row in rows]
    first = 3 if bundled else 2
    for text in align_columns([headers, *body], right=range(first, first + 6), rule=True):
        file.write(text + "\n")


def _tsv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _op_types_text(value)
    return str(value).replace("\t", " ").replace("\n", " ")


def write_tsv(
    inspector: Inspector,
    file: IO[str],
    *,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
) -> None:
    """The printed table as TSV, with a leading index column (as pandas writes it)."""
    headers = _headers(inspector, include_units, include_delegate_debug_data)
    file.write("\t" + "\t".join(headers) + "\n")
    for i, row in enumerate(_rows(inspector, include_delegate_debug_data)):
        file.write(f"{i}\t" + "\t".join(_tsv_cell(v) for v in row) + "\n")


CSV_COLUMNS = (
    "block",
    "event_block_name",
    "event_name",
    "instruction_id",
    "delegate_debug_identifier",
    "is_delegated_op",
    "delegate_backend_name",
    "n",
    *_STATS,
    "op_types",
    "debug_handles",
    "module_path",
)


def write_csv(inspector: Inspector, file: IO[str]) -> None:
    """Every row (``OPERATOR_CALL`` included) with ids, handles and module paths."""
    writer = csv.writer(file, lineterminator="\n")
    unit = inspector.target_time_scale.value
    writer.writerow([c if c not in _STATS else f"{c} ({unit})" for c in CSV_COLUMNS])
    for table in inspector.tables:
        for j, key in enumerate(table.keys):
            link = table.links[j]
            perf = bool(table.block.has_perf[j])
            handles = link.debug_handles
            if isinstance(handles, int):
                handles = [handles]
            writer.writerow(
                [
                    table.index,
                    table.name,
                    key.name,
                    "" if key.instruction_id < 0 else key.instruction_id,
                    "" if key.identifier is None else key.identifier,
                    key.identifier is not None,
                    link.delegate_backend_name or "",
                    table.n_runs if perf else 0,
                    *(repr(float(v)) if perf else "" for v in table.stats[:, j]),
                    ";".join(link.op_types),
                    ";".join(str(h) for h in handles or []),
                    ";".join(link.module_paths),
                ]
            )


def to_dataframe(
    inspector: Inspector, *, include_units: bool = True, include_delegate_debug_data: bool = False
) -> Any:
    """One DataFrame row per event with the reference's columns (needs pandas)."""
    return blocks_to_dataframe(
        inspector.event_blocks,
        include_units=include_units,
        include_delegate_debug_data=include_delegate_debug_data,
    )


def blocks_to_dataframe(
    blocks: Sequence[EventBlock],
    *,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
) -> Any:
    """One DataFrame row per event of ``blocks`` (needs pandas)."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError(
            "to_dataframe needs pandas: install the 'pandas' extra "
            "(pip install 'delegate-lens[pandas]')"
        ) from exc
    scale = blocks[0].target_time_scale.value if blocks else "ms"
    unit = f" ({scale})" if include_units else ""
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
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
        )
    }
    if include_delegate_debug_data:
        columns["delegate_debug_metadata"] = []
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
