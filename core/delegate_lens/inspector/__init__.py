"""The Inspector: ETDump + ETRecord -> tables linking runtime events to operators.

Importing this package never imports torch. See ``docs/inspector.md``.
"""

from __future__ import annotations

from delegate_lens.inspector.api import Inspector
from delegate_lens.inspector.build import FileColumns, decoded_file_columns
from delegate_lens.inspector.linking import InspectorWarning
from delegate_lens.inspector.model import Event, EventBlock, PerfData
from delegate_lens.inspector.reference_utils import (
    compare_results,
    parse_vgf_neural_statistics_delegate_metadata,
    parse_vgf_neural_statistics_metadata,
)
from delegate_lens.inspector.rows import TableRow, table_rows
from delegate_lens.inspector.timescale import TimeScale

__all__ = [
    "Event",
    "EventBlock",
    "FileColumns",
    "Inspector",
    "InspectorWarning",
    "PerfData",
    "TableRow",
    "TimeScale",
    "compare_results",
    "decoded_file_columns",
    "parse_vgf_neural_statistics_delegate_metadata",
    "parse_vgf_neural_statistics_metadata",
    "table_rows",
]
