# The names of delegate_lens.inspector, each declared once: type checkers read this stub,
# and the face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy). A module of the package (the CLI's time scale, say) is imported
# without the Inspector and numpy, and the Inspector without the reference's helpers or the
# table rows.
from delegate_lens.inspector._api import Inspector as Inspector
from delegate_lens.inspector._attribution import BlockAttribution as BlockAttribution
from delegate_lens.inspector._attribution import RowRole as RowRole
from delegate_lens.inspector._attribution import node_samples as node_samples
from delegate_lens.inspector._build import FileColumns as FileColumns
from delegate_lens.inspector._build import decoded_file_columns as decoded_file_columns
from delegate_lens.inspector._events import Event as Event
from delegate_lens.inspector._events import EventBlock as EventBlock
from delegate_lens.inspector._events import PerfData as PerfData
from delegate_lens.inspector._graph_view import DelegateCallView as DelegateCallView
from delegate_lens.inspector._graph_view import GraphView as GraphView
from delegate_lens.inspector._graph_view import MethodGraph as MethodGraph
from delegate_lens.inspector._graph_view import NodeView as NodeView
from delegate_lens.inspector._linking import InspectorWarning as InspectorWarning
from delegate_lens.inspector._linking import RowLink as RowLink
from delegate_lens.inspector._reference_utils import compare_results as compare_results
from delegate_lens.inspector._reference_utils import (
    parse_vgf_neural_statistics_delegate_metadata as parse_vgf_neural_statistics_delegate_metadata,
)
from delegate_lens.inspector._reference_utils import (
    parse_vgf_neural_statistics_metadata as parse_vgf_neural_statistics_metadata,
)
from delegate_lens.inspector._tables import BlockTable as BlockTable
from delegate_lens.inspector._timescale import TimeScale as TimeScale
from delegate_lens.inspector._writer_input import TableRow as TableRow
from delegate_lens.inspector._writer_input import block_slices as block_slices
from delegate_lens.inspector._writer_input import json_input as json_input
from delegate_lens.inspector._writer_input import table_input as table_input
from delegate_lens.inspector._writer_input import table_rows as table_rows
from delegate_lens.inspector._writer_input import trace_input as trace_input
