# The names of delegate_lens.aot, each declared once: type checkers read this stub, and the
# face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy). Every one of those modules imports torch.
from delegate_lens.aot._delegation_info import DelegationBreakdown as DelegationBreakdown
from delegate_lens.aot._delegation_info import DelegationInfo as DelegationInfo
from delegate_lens.aot._delegation_info import get_delegation_info as get_delegation_info
from delegate_lens.aot._delegation_info import print_delegated_graph as print_delegated_graph
from delegate_lens.aot._delegation_info import print_delegation_info as print_delegation_info
from delegate_lens.aot._edge import EdgeProgramManager as EdgeProgramManager
from delegate_lens.aot._edge import PartitionerArg as PartitionerArg
from delegate_lens.aot._edge import to_edge as to_edge
from delegate_lens.aot._edge import to_edge_transform_and_lower as to_edge_transform_and_lower
from delegate_lens.aot._lowering import LoweredBackendModule as LoweredBackendModule
from delegate_lens.aot._program import ProgramManager as ProgramManager
