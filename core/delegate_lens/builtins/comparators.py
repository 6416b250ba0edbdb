"""Built-in plugin: the comparators ``MSE``, ``L1``, ``SNR`` and ``cosine`` on
``dl_numerical_comparators`` (defined in :mod:`delegate_lens.numerics`; same formulas as the
reference Inspector's, in float64 with numpy; reduced with torch, as the reference's, for the
reference's frame):

* ``MSE`` — mean of squared differences; diverged above 1e-10;
* ``L1`` — sum of absolute differences; diverged above 1e-3;
* ``SNR`` — ``10 * log10(mean(aot**2) / mean((aot - runtime)**2))`` in dB (``inf`` when
  the outputs are equal); higher is better, diverged below 100 dB;
* ``cosine`` — cosine similarity; higher is better, diverged below 1 - 1e-9.
"""

from __future__ import annotations

from collections.abc import Sequence

from delegate_lens.hookspecs import hookimpl
from delegate_lens.numerics import BUILTIN_COMPARATORS, Comparator

__all__ = ["dl_numerical_comparators"]


@hookimpl
def dl_numerical_comparators() -> Sequence[Comparator]:
    return BUILTIN_COMPARATORS
