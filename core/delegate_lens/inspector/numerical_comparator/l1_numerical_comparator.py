"""The reference's module path of :class:`L1Comparator` (defined in :mod:`delegate_lens.numerics`)."""

from delegate_lens.numerics import L1Comparator

__all__ = ["L1Comparator"]
