"""Numeric debugging: where does the runtime's output leave the reference's?

One home for what compares runtime values with ahead-of-time ones:

* the gap computation, :func:`calculate_numeric_gap` (``Inspector.calculate_numeric_gap``
  is a thin delegate), and the runtime side of it, :func:`runtime_intermediate_outputs`;
* its result, :class:`NumericGapTable` (rows, ``first_divergence``, :class:`Unmatched`);
* the reference side: :func:`capture_intermediate_outputs` runs the ETRecord's graph with
  torch (the only part that imports it, on first use), :class:`AotOutputs` caches its
  outputs beside the ETRecord (``CACHE_SUFFIX``), :func:`load_inputs` reads inputs files;
* the comparators: :class:`Comparator` and :func:`get_comparators` (the
  ``dl_numerical_comparators`` hook; the built-in plugin offers :data:`BUILTIN_COMPARATORS`)
  and the reference's classes :class:`NumericalComparatorBase`, :class:`MSEComparator`,
  :class:`L1Comparator`, :class:`SNRComparator`.

Imports: errors, config, fileio, the plugin host, the ETDump codec and the ETRecord reader;
never the Inspector (it is given one), never torch at import. See ``docs/numerics.md``.
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)
