# The names of delegate_lens.etdump, each declared once: type checkers read this stub, and
# the face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy). Reading an ETDump does not import the writer or the JSON view, nor
# the object model until run objects are asked for.
from delegate_lens.etdump._builder import EventColumnsBuilder as EventColumnsBuilder
from delegate_lens.etdump._columns import EventColumns as EventColumns
from delegate_lens.etdump._columns import EventKind as EventKind
from delegate_lens.etdump._decoded import DecodedColumns as DecodedColumns
from delegate_lens.etdump._decoded import RunColumns as RunColumns
from delegate_lens.etdump._jsonview import from_json as from_json
from delegate_lens.etdump._jsonview import to_json as to_json
from delegate_lens.etdump._jsonview import write_json as write_json
from delegate_lens.etdump._mapped import decode_file as decode_file
from delegate_lens.etdump._objects import FRAMEWORK_EVENTS as FRAMEWORK_EVENTS
from delegate_lens.etdump._objects import NUMPY_SCALAR_TYPES as NUMPY_SCALAR_TYPES
from delegate_lens.etdump._objects import AllocationEvent as AllocationEvent
from delegate_lens.etdump._objects import Allocator as Allocator
from delegate_lens.etdump._objects import Bool as Bool
from delegate_lens.etdump._objects import DebugEvent as DebugEvent
from delegate_lens.etdump._objects import Double as Double
from delegate_lens.etdump._objects import ETDump as ETDump
from delegate_lens.etdump._objects import Event as Event
from delegate_lens.etdump._objects import EventSequence as EventSequence
from delegate_lens.etdump._objects import Float as Float
from delegate_lens.etdump._objects import Int as Int
from delegate_lens.etdump._objects import ProfileEvent as ProfileEvent
from delegate_lens.etdump._objects import RunData as RunData
from delegate_lens.etdump._objects import ScalarType as ScalarType
from delegate_lens.etdump._objects import String as String
from delegate_lens.etdump._objects import Tensor as Tensor
from delegate_lens.etdump._objects import TensorList as TensorList
from delegate_lens.etdump._objects import Value as Value
from delegate_lens.etdump._objects import ValueType as ValueType
from delegate_lens.etdump._reader import FILE_IDENTIFIER as FILE_IDENTIFIER
from delegate_lens.etdump._reader import decode_columns as decode_columns
from delegate_lens.etdump._reader import decode_joined as decode_joined
from delegate_lens.etdump._reader import decode_many as decode_many
from delegate_lens.etdump._reader import joined_layout as joined_layout
from delegate_lens.etdump._reader import load as load
from delegate_lens.etdump._reader import loads as loads
from delegate_lens.etdump._summary import format_summary as format_summary
from delegate_lens.etdump._summary import summarize as summarize
from delegate_lens.etdump._values import DebugEntries as DebugEntries
from delegate_lens.etdump._values import TensorColumns as TensorColumns
from delegate_lens.etdump._values import ValueColumns as ValueColumns
from delegate_lens.etdump._writer import dump as dump
from delegate_lens.etdump._writer import dumps as dumps

def compiled_walk_available() -> bool: ...
