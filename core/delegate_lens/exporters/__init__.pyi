# The names of delegate_lens.exporters, each declared once: type checkers read this stub,
# and the face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy): Exporter and get_exporters without numpy, the writers with it
# (and the perfetto protos).
from delegate_lens.exporters._chrome_trace import json_value as json_value
from delegate_lens.exporters._chrome_trace import write_chrome_trace as write_chrome_trace
from delegate_lens.exporters._exporter import Exporter as Exporter
from delegate_lens.exporters._exporter import get_exporters as get_exporters
from delegate_lens.exporters._json import format_decimals as format_decimals
from delegate_lens.exporters._json import value_to_json as value_to_json
from delegate_lens.exporters._json import write_json as write_json
from delegate_lens.exporters._perfetto import load_protos as load_protos
from delegate_lens.exporters._perfetto import write_perfetto as write_perfetto
from delegate_lens.exporters._reference import reference_rows as reference_rows
from delegate_lens.exporters._reference import write_reference_tsv as write_reference_tsv
from delegate_lens.exporters._rows import JsonBlock as JsonBlock
from delegate_lens.exporters._rows import JsonInput as JsonInput
from delegate_lens.exporters._rows import RowStats as RowStats
from delegate_lens.exporters._rows import TableInput as TableInput
from delegate_lens.exporters._rows import TableRow as TableRow
from delegate_lens.exporters._rows import TraceBlock as TraceBlock
from delegate_lens.exporters._rows import TraceInput as TraceInput
from delegate_lens.exporters._slices import Nested as Nested
from delegate_lens.exporters._slices import Slices as Slices
from delegate_lens.exporters._slices import SliceSource as SliceSource
from delegate_lens.exporters._slices import nest as nest
from delegate_lens.exporters._slices import track_order as track_order
from delegate_lens.exporters._table import stat_columns as stat_columns
from delegate_lens.exporters._table import table_cells as table_cells
from delegate_lens.exporters._table import terminal_width as terminal_width
from delegate_lens.exporters._table import write_csv as write_csv
from delegate_lens.exporters._table import write_table as write_table
from delegate_lens.exporters._table import write_tsv as write_tsv
