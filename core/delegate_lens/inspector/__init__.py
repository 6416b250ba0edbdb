"""The Inspector: ETDump + ETRecord -> tables linking runtime events to operators.

Importing this package never imports torch. See ``docs/inspector.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names

if TYPE_CHECKING:
    from delegate_lens.inspector._api import Inspector
    from delegate_lens.inspector._build import FileColumns, decoded_file_columns
    from delegate_lens.inspector._events import Event, EventBlock, PerfData
    from delegate_lens.inspector._linking import InspectorWarning
    from delegate_lens.inspector._reference_utils import (
        compare_results,
        parse_vgf_neural_statistics_delegate_metadata,
        parse_vgf_neural_statistics_metadata,
    )
    from delegate_lens.inspector._timescale import TimeScale
    from delegate_lens.inspector._writer_input import (
        TableRow,
        block_slices,
        json_input,
        table_input,
        table_rows,
        trace_input,
    )

# Names load their module on first use (PEP 562): a module of the package (the CLI's
# ``inspector.timescale``, say) is imported without the Inspector and numpy, and the
# Inspector without the reference's helpers or the table rows.
_HOME = {
    "Event": "_events",
    "EventBlock": "_events",
    "FileColumns": "_build",
    "Inspector": "_api",
    "InspectorWarning": "_linking",
    "PerfData": "_events",
    "TableRow": "_writer_input",
    "TimeScale": "_timescale",
    "compare_results": "_reference_utils",
    "decoded_file_columns": "_build",
    "parse_vgf_neural_statistics_delegate_metadata": "_reference_utils",
    "parse_vgf_neural_statistics_metadata": "_reference_utils",
    "table_rows": "_writer_input",
    "table_input": "_writer_input",
    "json_input": "_writer_input",
    "trace_input": "_writer_input",
    "block_slices": "_writer_input",
}

__all__ = [
    "Event",
    "EventBlock",
    "FileColumns",
    "Inspector",
    "InspectorWarning",
    "PerfData",
    "TableRow",
    "TimeScale",
    "block_slices",
    "compare_results",
    "decoded_file_columns",
    "json_input",
    "parse_vgf_neural_statistics_delegate_metadata",
    "parse_vgf_neural_statistics_metadata",
    "table_input",
    "table_rows",
    "trace_input",
]

__getattr__, __dir__ = lazy_names(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}, __all__
)
