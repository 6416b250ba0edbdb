"""The reference's module path of the comparator base class."""

from delegate_lens.comparators import NumericalComparatorBase
from delegate_lens.inspector.numerical_comparator import IntermediateOutputMapping

__all__ = ["IntermediateOutputMapping", "NumericalComparatorBase"]
