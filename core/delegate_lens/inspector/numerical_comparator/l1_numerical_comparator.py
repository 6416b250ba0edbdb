"""The reference's module path of :class:`L1Comparator` (defined in :mod:`delegate_lens.comparators`)."""

from delegate_lens.comparators import L1Comparator

__all__ = ["L1Comparator"]
