# The names of delegate_lens.backend, each declared once: type checkers read this stub, and
# the face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy). The built-in mapping validator, which every plugin manager loads,
# needs the mapping helpers, not the backend classes.
from delegate_lens.backend._details import BackendDetails as BackendDetails
from delegate_lens.backend._details import BackendPlugin as BackendPlugin
from delegate_lens.backend._details import CompileSpec as CompileSpec
from delegate_lens.backend._details import PreprocessResult as PreprocessResult
from delegate_lens.backend._details import backend_plugin as backend_plugin
from delegate_lens.backend._mapping import INT_IDENTIFIER_MAX as INT_IDENTIFIER_MAX
from delegate_lens.backend._mapping import DelegateMap as DelegateMap
from delegate_lens.backend._mapping import DelegateMappingBuilder as DelegateMappingBuilder
from delegate_lens.backend._mapping import Identifier as Identifier
from delegate_lens.backend._mapping import as_int as as_int
from delegate_lens.backend._mapping import is_iterable as is_iterable
from delegate_lens.backend._mapping import partition_handles as partition_handles
from delegate_lens.backend._partitioner import DELEGATION_TAG as DELEGATION_TAG
from delegate_lens.backend._partitioner import DelegationSpec as DelegationSpec
from delegate_lens.backend._partitioner import Partitioner as Partitioner
from delegate_lens.backend._partitioner import PartitionResult as PartitionResult
from delegate_lens.backend._recovery import RecoveredDelegateMap as RecoveredDelegateMap
from delegate_lens.backend._recovery import RecoveredMap as RecoveredMap
