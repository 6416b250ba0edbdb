"""The reference's module path of :class:`SNRComparator` (defined in :mod:`delegate_lens.comparators`)."""

from delegate_lens.comparators import SNRComparator

__all__ = ["SNRComparator"]
