"""The reference's ``print_data_tabular`` and ``save_data_to_tsv``, cell for cell.

The reference builds a pandas DataFrame of every event (``Event.asdict``), drops the
columns ``raw``, ``delegate_debug_identifier``, ``stack_traces``, ``module_hierarchy`` and
``debug_data`` and the ``OPERATOR_CALL`` rows, then prints it with ``tabulate``'s
``fancy_grid`` format (index column first) or writes it with ``DataFrame.to_csv(sep="\\t")``.
This module makes the same text without pandas or tabulate: the same columns (``start_time``
included), headers, number formatting (``format(x, "g")`` in the grid, ``repr`` in the TSV,
numbers aligned on their decimal point) and quoting. Checked against files the reference
printed for the reference vectors (``tests/data/reference_api/``).
"""

from __future__ import annotations

import csv
import math
from typing import IO, TYPE_CHECKING, Any

from delegate_lens.exporters._table import _STATS, _op_types_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from delegate_lens.exporters._rows import TableInput

_HIDDEN = "OPERATOR_CALL"


def reference_rows(
    table: TableInput, include_units: bool = True, include_delegate_debug_data: bool = False
) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows (Python values) of the reference's printed table; ``table`` has
    start times (and the rows their metadata with ``include_delegate_debug_data``)."""
    unit = f" ({table.unit})" if include_units else ""
    headers = ["event_block_name", "event_name", *(s + unit for s in _STATS)]
    headers += ["op_types", "is_delegated_op", "delegate_backend_name", "start_time"]
    rows: list[list[Any]] = []
    extra: list[dict[str, Any]] = []  # every row's metadata, the hidden rows' too
    shown: list[bool] = []
    for r, starts in zip(table.rows, table.start_times, strict=True):
        if include_delegate_debug_data:
            extra.append(_metadata_cells(r.metadata))
        shown.append(_HIDDEN not in r.event_name)
        if not shown[-1]:
            continue
        stats: list[Any] = list(r.stats.as_tuple()) if r.stats else [None] * 6
        start = list(starts) if r.stats and starts is not None else None
        row = [r.block, r.event_name, *stats, _op_types_text(list(r.op_types))]
        row += [r.is_delegated_op, r.delegate_backend_name, start]
        rows.append(row)
    if include_delegate_debug_data and any(extra):
        keys: list[str] = []
        for cells in extra:
            keys += [k for k in cells if k not in keys]
        headers += keys
        columns = [_frame_column([cells.get(k, _MISSING) for cells in extra]) for k in keys]
        kept = [i for i, visible in enumerate(shown) if visible]
        for row, i in zip(rows, kept, strict=True):
            row += [column[i] for column in columns]
    return headers, rows


_MISSING = object()


def _frame_column(values: list[Any]) -> list[Any]:
    """A metadata column as the reference's DataFrame holds it (it is built over every
    row, hidden ones too, before the ``OPERATOR_CALL`` rows are dropped): a missing cell,
    or a None, is NaN, and a column of numbers with a NaN (or a float) is of floats."""
    present = [v for v in values if v is not _MISSING and v is not None]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
    floats = numbers and (len(present) < len(values) or any(isinstance(v, float) for v in present))
    return [math.nan if v is _MISSING or v is None else float(v) if floats else v for v in values]


def _metadata_cells(metadata: object) -> dict[str, Any]:
    if not metadata:
        return {}
    if isinstance(metadata, dict):
        return {str(k): v for k, v in metadata.items()}
    return {"delegate_debug_metadata": metadata}


# --------------------------------------------------------------------------- TSV


def _tsv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def write_reference_tsv(
    headers: list[str], rows: Sequence[Sequence[object]], file: IO[str]
) -> None:
    """``DataFrame.to_csv(file, sep="\\t")`` of the table: an index column, floats as
    ``repr``, missing values empty, cells quoted as the csv module quotes them."""
    writer = csv.writer(file, delimiter="\t", lineterminator="\n")
    writer.writerow(["", *headers])
    for i, row in enumerate(rows):
        writer.writerow([str(i), *(_tsv_cell(v) for v in row)])
