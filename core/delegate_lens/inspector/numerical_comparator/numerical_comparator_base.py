"""The reference's module path of the comparator base class."""

from delegate_lens.inspector.numerical_comparator import IntermediateOutputMapping
from delegate_lens.numerics import NumericalComparatorBase

__all__ = ["IntermediateOutputMapping", "NumericalComparatorBase"]
