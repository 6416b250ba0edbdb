"""The reference's module path of :class:`SNRComparator` (defined in :mod:`delegate_lens.numerics`)."""

from delegate_lens.numerics import SNRComparator

__all__ = ["SNRComparator"]
