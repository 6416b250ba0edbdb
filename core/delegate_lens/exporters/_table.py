"""The Inspector's tables as text: the printed table, TSV and CSV.

The printed table and TSV have the reference's columns (``OPERATOR_CALL`` rows left out):
block name, event name, p10/p50/p90/avg/min/max in the target unit, op types, whether the
row is a delegated op and the backend name. CSV holds every row with more columns (ids,
handles, module path, sample count) for spreadsheets and scripts.
"""

from __future__ import annotations

import csv
import math
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

import attrs

from delegate_lens._texttable import align_columns

if TYPE_CHECKING:
    from delegate_lens.exporters._rows import TableInput, TableRow

_STATS = ("p10", "p50", "p90", "avg", "min", "max")
_HIDDEN_IN_TABLE = "OPERATOR_CALL"


def _op_types_text(op_types: list[str]) -> str:
    """The reference's rendering: the list, shortened from 5 op types on."""
    if len(op_types) < 5:
        return str(op_types)
    return f"['{op_types[0]}', '{op_types[1]}' ... '{op_types[-1]}'] ({len(op_types)} total)"


def _headers(table: TableInput, include_units: bool, metadata: bool) -> list[str]:
    unit = f" ({table.unit})" if include_units else ""
    cols = ["event_block_name", "event_name", *(s + unit for s in _STATS)]
    cols += ["op_types", "is_delegated_op", "delegate_backend_name"]
    if metadata:
        cols.append("delegate_debug_metadata")
    return cols


@attrs.frozen
class _DelegateName:
    """A delegate-logged row's name in two parts: ``head`` (its backend, and its event name
    when that is not the identifier) and ``tail``, the identifier that tells the rows of a
    call apart (``#3``, ``Add (ND) #1``). Printed whole; cut by :meth:`cut`."""

    head: str
    tail: str

    def __str__(self) -> str:
        return self.head + self.tail

    def cut(self, width: int) -> str:
        """The name in at most ``width`` characters, never losing the end of the
        identifier: the backend prefix is cut first (``DemoBa... #3``), then dropped, then
        the middle of the identifier (``Convolut...IGEMM #1``)."""
        text = self.head + self.tail
        if len(text) <= width:
            return text
        room = width - len(_CUT) - len(self.tail)
        if room >= _KEPT_HEAD:
            return self.head[:room] + _CUT + self.tail
        identifier = self.tail.strip()
        if len(identifier) <= width:
            return identifier
        return _cut_middle(identifier, width)


_CUT = "..."
_KEPT_HEAD = 4  # fewer characters of a backend prefix say nothing: it is dropped instead
_NUMBER_AT_END = re.compile(r"#\w+\]?$")


def _cut_middle(text: str, width: int) -> str:
    """``text`` in ``width`` characters, its middle replaced by ``...``: at least half of
    what is kept is its end, and always a ``#N`` it ends with."""
    room = max(width - len(_CUT), 1)
    mark = _NUMBER_AT_END.search(text)
    end = min(max(len(mark.group()) if mark else 0, (room + 1) // 2), room)
    return text[: room - end] + _CUT + text[len(text) - end :]


def _delegate_row_name(name: str, backend: str | None, identifier: int | str) -> _DelegateName:
    """A delegate-logged row named with its backend and identifier: ``NPU #3`` for an int
    identifier, ``NPU: conv1`` for a str one (its name), ``Add [NPU #3]`` otherwise."""
    owner = backend or "delegate"
    if isinstance(identifier, str):
        if name == identifier:
            return _DelegateName(f"{owner}: ", name)
        return _DelegateName(f"{name} [{owner}: ", f"{identifier}]")
    if name == str(identifier):
        return _DelegateName(owner, f" #{identifier}")
    return _DelegateName(f"{name} [{owner}", f" #{identifier}]")


def _has_bundled(rows: Sequence[TableRow]) -> bool:
    """Whether a run used a bundled program's inputs (the table then shows which)."""
    return any(r.bundled_input_index >= 0 for r in rows)


def _rows(
    table: TableInput, metadata: bool, named: bool = False, bundled: bool = False
) -> Iterator[list[Any]]:
    """The table's rows; with ``bundled`` each ends with its block's bundled input index."""
    for r in table.rows:
        if _HIDDEN_IN_TABLE in r.event_name:
            continue
        stats: list[Any] = list(r.stats.as_tuple()) if r.stats is not None else [None] * 6
        name: str | _DelegateName = r.event_name
        if named and r.identifier is not None:
            name = _delegate_row_name(r.event_name, r.delegate_backend_name, r.identifier)
        row = [r.block, name, *stats]
        row += [list(r.op_types), r.is_delegated_op, r.delegate_backend_name]
        if metadata:
            row.append(r.metadata)
        if bundled:
            row.append(r.bundled_input_index)
        yield row


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _op_types_text(value)
    return str(value)


def terminal_width(stream: IO[str]) -> int | None:
    """Columns to fit when ``stream`` is a terminal or ``COLUMNS`` is set, else None."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("COLUMNS", "").strip().isdigit() or (isatty is not None and isatty()):
        return shutil.get_terminal_size().columns
    return None


_MIN_CELL = 12
_SHORT_HEADERS = {
    "event_block_name": "block",
    "is_delegated_op": "delegated",
    "delegate_backend_name": "backend",
    "delegate_debug_metadata": "metadata",
}


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def _fit(
    rows: list[list[str]],
    width: int,
    squeezable: Sequence[int],
    names: Sequence[_DelegateName | None] = (),
) -> list[list[str]]:
    """Cut the cells of the ``squeezable`` columns to one common cap, the largest that lets
    lines fit ``width`` (never below ``_MIN_CELL``): wide columns give up the most, and no
    column is cut to the minimum while another keeps more than it needs. The event names
    of delegate-logged rows (``names``, one per body row, None for the others) keep their
    identifier (:meth:`_DelegateName.cut`); other cells lose their end."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    room = (
        width - 2 * (len(widths) - 1) - sum(w for i, w in enumerate(widths) if i not in squeezable)
    )
    cap = max((w for i, w in enumerate(widths) if i in squeezable), default=0)
    while cap > _MIN_CELL and sum(min(widths[c], cap) for c in squeezable) > room:
        cap -= 1
    for col in squeezable:
        if widths[col] > cap:
            for i, row in enumerate(rows[1:]):
                name = names[i] if col == 1 and i < len(names) else None
                row[col] = _shorten(row[col], cap) if name is None else name.cut(cap)
    return rows


TABLE_RIGHT = range(2, 8)
"""Columns of the printed table that are right-aligned (the statistics), when no run used
bundled inputs; :func:`stat_columns` gives them for any header."""


def _first_sample(value: object) -> Any:
    """A row's parsed metadata as one value: the first sample's when it is per sample."""
    if isinstance(value, (list, tuple)) and not isinstance(value, (bytes, str)):
        return value[0] if value else None
    return value


def _metadata_cells(
    values: Sequence[object], taken: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    """The metadata as columns: one per key when the (first sample's) values are dicts,
    else one ``metadata`` column; a key that is already a header is ``metadata.KEY``."""
    firsts = [_first_sample(v) for v in values]
    keys: dict[str, None] = {}
    for value in firsts:
        if isinstance(value, dict):
            keys.update(dict.fromkeys(str(k) for k in value))
    if not keys or not all(v is None or isinstance(v, dict) for v in firsts):
        return ["metadata"], [[_metadata_text(v)] for v in firsts]
    headers = [f"metadata.{k}" if k in taken else k for k in keys]
    # a parser may give each key one value per sample: its first sample's, as the row's
    cells = [
        [_metadata_text(_first_sample(v.get(k))) if isinstance(v, dict) else "" for k in keys]
        for v in firsts
    ]
    return headers, cells


def _metadata_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):  # text when it is printable text, else the bytes' repr
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return repr(value)
        return text if text.isprintable() else repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return _fmt(value)


def table_cells(
    table: TableInput,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
    *,
    width: int | None = None,
    view: bool | None = None,
) -> tuple[list[str], list[list[str]]]:
    """The printed table's header and rows as text cells (what :func:`write_table` aligns).

    The command's view (``view``; by default when ``width`` is given) names the rows a
    delegate logged with their backend and identifier (``XnnpackBackend #3``) and shows
    the parsed delegate metadata when the file has any, one column per key (the first
    sample's values) — on a terminal and in a pipe alike. With ``width`` (a terminal) the
    headers are short, ``False``/``[]`` are left blank, and the event names, op types and
    metadata are shortened (``...``) so that lines fit that many columns (a delegate row's
    name keeps its identifier, ``DemoBa... #3``: its backend prefix is cut instead). The rows
    of ``table`` hold their metadata when it is shown.
    """
    view = width is not None if view is None else view
    metadata = include_delegate_debug_data
    if view and not metadata:
        metadata = table.has_metadata
    headers = _headers(table, include_units, metadata and not view)
    bundled = _has_bundled(table.rows)
    raw_rows = list(_rows(table, metadata, named=view, bundled=bundled))
    # an addition: which bundled test case each block's runs used, placed after the block
    # once the other columns are fitted (their positions are fixed above)
    bundled_cells = [_fmt(row.pop()) for row in raw_rows] if bundled else []
    meta_values = [row.pop() for row in raw_rows] if metadata and view else []
    names = [row[1] if isinstance(row[1], _DelegateName) else None for row in raw_rows]
    body = [[_fmt(v) for v in row] for row in raw_rows]
    if meta_values:
        meta_headers, meta_cells = _metadata_cells(meta_values, headers)
        headers = [*headers, *meta_headers]
        for row, cells in zip(body, meta_cells):
            row.extend(cells)
    rows = [headers, *body]
    if width is not None:  # the terminal: short headers, no "False" and "[]" noise
        rows[0] = [_SHORT_HEADERS.get(h, h) for h in headers]
        for row in body:
            for col in range(8, len(row)):
                if row[col] in ("False", "[]", "{}"):
                    row[col] = ""
            row[9] = "yes" if row[9] == "True" else row[9]
    if width is not None and body:
        squeezable = [1, 8, *range(11, len(headers))]
        rows = _fit(rows, width, squeezable, names)
    if bundled:
        rows[0].insert(1, "bundled_input_index")
        for row, cell in zip(rows[1:], bundled_cells):
            row.insert(1, cell)
    return rows[0], rows[1:]


def stat_columns(headers: Sequence[str]) -> range:
    """Positions of the statistics columns (right-aligned) in a table's ``headers``."""
    first = 3 if len(headers) > 1 and headers[1] == "bundled_input_index" else 2
    return range(first, first + 6)


def write_table(
    table: TableInput,
    file: IO[str],
    *,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
    width: int | None = None,
    view: bool | None = None,
) -> None:
    """A human-readable table, columns aligned (see :func:`table_cells` for ``width`` and
    ``view``)."""
    headers, body = table_cells(
        table, include_units, include_delegate_debug_data, width=width, view=view
    )
    for text in align_columns([headers, *body], right=stat_columns(headers), rule=True):
        file.write(text + "\n")


def _tsv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _op_types_text(value)
    return str(value).replace("\t", " ").replace("\n", " ")


def write_tsv(
    table: TableInput,
    file: IO[str],
    *,
    include_units: bool = True,
    include_delegate_debug_data: bool = False,
) -> None:
    """The printed table as TSV, with a leading index column (as pandas writes it)."""
    headers = _headers(table, include_units, include_delegate_debug_data)
    file.write("\t" + "\t".join(headers) + "\n")
    for i, row in enumerate(_rows(table, include_delegate_debug_data)):
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


def write_csv(table: TableInput, file: IO[str]) -> None:
    """Every row (``OPERATOR_CALL`` included) with ids, handles and module paths."""
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow([c if c not in _STATS else f"{c} ({table.unit})" for c in CSV_COLUMNS])
    for r in table.rows:
        handles = r.debug_handles
        if isinstance(handles, int):
            handles = (handles,)
        writer.writerow(
            [
                r.block_index,
                r.block,
                r.event_name,
                "" if r.instruction_id < 0 else r.instruction_id,
                "" if r.identifier is None else r.identifier,
                r.identifier is not None,
                r.delegate_backend_name or "",
                r.n_samples,
                *([repr(v) for v in r.stats.as_tuple()] if r.stats else [""] * 6),
                ";".join(r.op_types),
                ";".join(str(h) for h in handles or ()),
                ";".join(r.module_paths),
            ]
        )
