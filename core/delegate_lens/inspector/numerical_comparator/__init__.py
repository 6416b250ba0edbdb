"""``executorch.devtools.inspector.numerical_comparator`` under delegate-lens: the
reference's comparator classes (defined in :mod:`delegate_lens.numerics`).

Subclass :class:`NumericalComparatorBase` (``element_compare``, optionally
``preprocessing``) and pass an instance to ``Inspector.calculate_numeric_gap``; the
built-ins are :class:`MSEComparator`, :class:`L1Comparator` and :class:`SNRComparator`.
No torch at import.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from delegate_lens.numerics import (
    L1Comparator,
    MSEComparator,
    NumericalComparatorBase,
    SNRComparator,
)

DebugHandle: TypeAlias = tuple[int, ...]
"""Debug handles of one output (sorted), as the reference keys them."""
IntermediateOutputMapping: TypeAlias = dict[tuple[DebugHandle, Any], tuple[DebugHandle, Any]]
"""``{(aot handles, aot value): (runtime handles, runtime value)}``: what ``preprocessing``
takes and returns."""

__all__ = [
    "DebugHandle",
    "IntermediateOutputMapping",
    "L1Comparator",
    "MSEComparator",
    "NumericalComparatorBase",
    "SNRComparator",
]
