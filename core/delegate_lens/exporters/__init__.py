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

Names load on first use: :class:`Exporter` and :func:`get_exporters` without numpy, the
writers with it (and the perfetto protos). No torch.
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)
