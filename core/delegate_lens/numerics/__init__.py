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

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names

if TYPE_CHECKING:
    from delegate_lens.numerics._aot_outputs import CACHE_SUFFIX, AotOutputs
    from delegate_lens.numerics._capture import (
        aten_debug_handles,
        capture_intermediate_outputs,
        load_inputs,
    )
    from delegate_lens.numerics._comparators import (
        BUILTIN_COMPARATORS,
        Comparator,
        L1Comparator,
        MSEComparator,
        NumericalComparatorBase,
        SNRComparator,
        get_comparators,
        resolve_comparator,
    )
    from delegate_lens.numerics._gap import calculate_numeric_gap, runtime_intermediate_outputs
    from delegate_lens.numerics._table import COLUMNS, NumericGapTable, Unmatched, format_gap

# Names load their module on first use (PEP 562): a comparator does not import numpy, the
# gap table not the gap computation, and only the capture imports torch.
_HOME = {
    "CACHE_SUFFIX": "_aot_outputs",
    "AotOutputs": "_aot_outputs",
    "aten_debug_handles": "_capture",
    "capture_intermediate_outputs": "_capture",
    "load_inputs": "_capture",
    "BUILTIN_COMPARATORS": "_comparators",
    "Comparator": "_comparators",
    "L1Comparator": "_comparators",
    "MSEComparator": "_comparators",
    "NumericalComparatorBase": "_comparators",
    "SNRComparator": "_comparators",
    "get_comparators": "_comparators",
    "resolve_comparator": "_comparators",
    "calculate_numeric_gap": "_gap",
    "runtime_intermediate_outputs": "_gap",
    "COLUMNS": "_table",
    "NumericGapTable": "_table",
    "Unmatched": "_table",
    "format_gap": "_table",
}

__all__ = [
    "BUILTIN_COMPARATORS",
    "CACHE_SUFFIX",
    "COLUMNS",
    "AotOutputs",
    "Comparator",
    "L1Comparator",
    "MSEComparator",
    "NumericGapTable",
    "NumericalComparatorBase",
    "SNRComparator",
    "Unmatched",
    "aten_debug_handles",
    "calculate_numeric_gap",
    "capture_intermediate_outputs",
    "format_gap",
    "get_comparators",
    "load_inputs",
    "resolve_comparator",
    "runtime_intermediate_outputs",
]


__getattr__, __dir__ = lazy_names(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}, __all__
)
