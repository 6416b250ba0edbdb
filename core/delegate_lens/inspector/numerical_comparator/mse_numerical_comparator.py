"""The reference's module path of :class:`MSEComparator` (defined in :mod:`delegate_lens.numerics`)."""

from delegate_lens.numerics import MSEComparator

__all__ = ["MSEComparator"]
