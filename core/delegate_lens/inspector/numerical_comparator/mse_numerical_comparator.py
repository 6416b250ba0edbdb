"""The reference's module path of :class:`MSEComparator` (defined in :mod:`delegate_lens.comparators`)."""

from delegate_lens.comparators import MSEComparator

__all__ = ["MSEComparator"]
