"""Exporters and writers: the :class:`Exporter` type plugins return on ``dl_exporters``, and
the writers of the built-in formats.

A writer takes typed rows and columns (:class:`TableInput`, :class:`JsonInput`,
:class:`TraceInput`), never the Inspector: the Inspector builds them
(``delegate_lens.inspector``: ``table_input`` and friends) and its own methods
(``print_data_tabular``, ``save_data_to_tsv``) hand them to these writers. The built-in
``dl_exporters`` plugin (``delegate_lens.builtins.exporters``) joins the two.

- the table: :func:`write_table`, :func:`table_cells`, :func:`stat_columns`,
  :func:`terminal_width`; TSV and CSV: :func:`write_tsv`, :func:`write_csv`;
- the reference's table and TSV: :func:`reference_rows`, :func:`write_reference_tsv`;
- the ``json`` contract: :func:`write_json` (:func:`format_decimals`, :func:`value_to_json`);
- timelines: :func:`write_chrome_trace`, :func:`write_perfetto` (:func:`load_protos`),
  over :class:`Slices` (made a range of runs at a time by a :class:`SliceSource`),
  ordered by :func:`track_order` and nested by :func:`nest`.

Only :class:`Exporter` and :func:`get_exporters` load with the package; the writers
(numpy, the perfetto protos) load on first use. No torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names
from delegate_lens.exporters._exporter import Exporter, get_exporters

if TYPE_CHECKING:
    from delegate_lens.exporters._chrome_trace import json_value, write_chrome_trace
    from delegate_lens.exporters._json import format_decimals, value_to_json, write_json
    from delegate_lens.exporters._perfetto import load_protos, write_perfetto
    from delegate_lens.exporters._reference import reference_rows, write_reference_tsv
    from delegate_lens.exporters._rows import (
        JsonBlock,
        JsonInput,
        RowStats,
        TableInput,
        TableRow,
        TraceBlock,
        TraceInput,
    )
    from delegate_lens.exporters._slices import Nested, Slices, SliceSource, nest, track_order
    from delegate_lens.exporters._table import (
        stat_columns,
        table_cells,
        terminal_width,
        write_csv,
        write_table,
        write_tsv,
    )

_HOME = {
    "JsonBlock": "_rows",
    "JsonInput": "_rows",
    "Nested": "_slices",
    "RowStats": "_rows",
    "Slices": "_slices",
    "SliceSource": "_slices",
    "TableInput": "_rows",
    "TableRow": "_rows",
    "TraceBlock": "_rows",
    "TraceInput": "_rows",
    "format_decimals": "_json",
    "json_value": "_chrome_trace",
    "load_protos": "_perfetto",
    "nest": "_slices",
    "reference_rows": "_reference",
    "stat_columns": "_table",
    "table_cells": "_table",
    "terminal_width": "_table",
    "track_order": "_slices",
    "value_to_json": "_json",
    "write_chrome_trace": "_chrome_trace",
    "write_csv": "_table",
    "write_json": "_json",
    "write_perfetto": "_perfetto",
    "write_reference_tsv": "_reference",
    "write_table": "_table",
    "write_tsv": "_table",
}

__all__ = [
    "Exporter",
    "JsonBlock",
    "JsonInput",
    "Nested",
    "RowStats",
    "SliceSource",
    "Slices",
    "TableInput",
    "TableRow",
    "TraceBlock",
    "TraceInput",
    "format_decimals",
    "get_exporters",
    "json_value",
    "load_protos",
    "nest",
    "reference_rows",
    "stat_columns",
    "table_cells",
    "terminal_width",
    "track_order",
    "value_to_json",
    "write_chrome_trace",
    "write_csv",
    "write_json",
    "write_perfetto",
    "write_reference_tsv",
    "write_table",
    "write_tsv",
]

__getattr__, __dir__ = lazy_names(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}, __all__
)
