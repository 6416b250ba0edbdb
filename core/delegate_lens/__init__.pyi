# The public names of delegate_lens, each declared once: type checkers read this stub, and the
# package loads each name on first use from the module it is imported from here
# (delegate_lens._lazy). The plugin markers come from hookspecs, so pluggy loads only for a
# plugin that uses them; the aot names import torch; profile runs real ExecuTorch through
# the bridge plugin (the executorch extra); BundledProgram and the rest of
# executorch.devtools' names: docs/migrating.md.
from delegate_lens._bridge import profile as profile
from delegate_lens.aot import EdgeProgramManager as EdgeProgramManager
from delegate_lens.aot import ProgramManager as ProgramManager
from delegate_lens.aot import get_delegation_info as get_delegation_info
from delegate_lens.aot import print_delegated_graph as print_delegated_graph
from delegate_lens.aot import to_edge as to_edge
from delegate_lens.aot import to_edge_transform_and_lower as to_edge_transform_and_lower
from delegate_lens.backend import BackendDetails as BackendDetails
from delegate_lens.backend import CompileSpec as CompileSpec
from delegate_lens.backend import DelegateMappingBuilder as DelegateMappingBuilder
from delegate_lens.backend import DelegationSpec as DelegationSpec
from delegate_lens.backend import Partitioner as Partitioner
from delegate_lens.backend import PartitionResult as PartitionResult
from delegate_lens.backend import PreprocessResult as PreprocessResult
from delegate_lens.bundled_program import BundledProgram as BundledProgram
from delegate_lens.errors import DelegateLensError as DelegateLensError
from delegate_lens.errors import ETDumpFormatError as ETDumpFormatError
from delegate_lens.errors import ETRecordFormatError as ETRecordFormatError
from delegate_lens.errors import MappingError as MappingError
from delegate_lens.errors import PluginError as PluginError
from delegate_lens.etrecord import ETRecord as ETRecord
from delegate_lens.etrecord import generate_etrecord as generate_etrecord
from delegate_lens.etrecord import parse_etrecord as parse_etrecord
from delegate_lens.hookspecs import hookimpl as hookimpl
from delegate_lens.hookspecs import hookspec as hookspec
from delegate_lens.inspector import EventBlock as EventBlock
from delegate_lens.inspector import Inspector as Inspector
from delegate_lens.inspector import TimeScale as TimeScale
from delegate_lens.pluginmanager import get_plugin_manager as get_plugin_manager

__version__: str
