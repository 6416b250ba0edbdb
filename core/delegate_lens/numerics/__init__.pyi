# The names of delegate_lens.numerics, each declared once: type checkers read this stub, and
# the face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy). A comparator does not import numpy, the gap table not the gap
# computation, and only the capture imports torch.
from delegate_lens.numerics._aot_outputs import CACHE_SUFFIX as CACHE_SUFFIX
from delegate_lens.numerics._aot_outputs import AotOutputs as AotOutputs
from delegate_lens.numerics._capture import aten_debug_handles as aten_debug_handles
from delegate_lens.numerics._capture import (
    capture_intermediate_outputs as capture_intermediate_outputs,
)
from delegate_lens.numerics._capture import load_inputs as load_inputs
from delegate_lens.numerics._comparators import BUILTIN_COMPARATORS as BUILTIN_COMPARATORS
from delegate_lens.numerics._comparators import Comparator as Comparator
from delegate_lens.numerics._comparators import L1Comparator as L1Comparator
from delegate_lens.numerics._comparators import MSEComparator as MSEComparator
from delegate_lens.numerics._comparators import NumericalComparatorBase as NumericalComparatorBase
from delegate_lens.numerics._comparators import SNRComparator as SNRComparator
from delegate_lens.numerics._comparators import get_comparators as get_comparators
from delegate_lens.numerics._comparators import resolve_comparator as resolve_comparator
from delegate_lens.numerics._gap import calculate_numeric_gap as calculate_numeric_gap
from delegate_lens.numerics._runtime_entries import (
    runtime_intermediate_outputs as runtime_intermediate_outputs,
)
from delegate_lens.numerics._table import COLUMNS as COLUMNS
from delegate_lens.numerics._table import NumericGapTable as NumericGapTable
from delegate_lens.numerics._table import Unmatched as Unmatched
from delegate_lens.numerics._table import format_gap as format_gap
