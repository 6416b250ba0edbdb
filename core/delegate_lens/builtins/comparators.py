"""Built-in comparators on ``dl_numerical_comparators``: ``MSE``, ``L1``, ``SNR``, ``cosine``.

Same formulas as the reference Inspector's (computed in float64 with numpy, imported when
a comparison runs; no torch):

* ``MSE`` — mean of squared differences; diverged above 1e-10;
* ``L1`` — sum of absolute differences; diverged above 1e-3;
* ``SNR`` — ``10 * log10(mean(aot**2) / mean((aot - runtime)**2))`` in dB (``inf`` when
  the outputs are equal); higher is better, diverged below 100 dB;
* ``cosine`` — cosine similarity; higher is better, diverged below 1 - 1e-9.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from delegate_lens.comparators import Comparator
from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    from delegate_lens.comparators import FloatArray

__all__ = ["BUILTIN_COMPARATORS", "dl_numerical_comparators"]


def mse(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    return float(np.mean(np.square(a - b))) if a.size else 0.0


def l1(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    return float(np.abs(a - b).sum())


def snr(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    signal = float(np.mean(np.square(a))) if a.size else 0.0
    noise = float(np.mean(np.square(a - b))) if a.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(10.0 * np.log10(np.float64(signal) / np.float64(noise)))


def cosine(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    norm = float(np.sqrt(np.sum(np.square(a))) * np.sqrt(np.sum(np.square(b))))
    if norm == 0.0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(np.sum(a * b) / norm)


BUILTIN_COMPARATORS: tuple[Comparator, ...] = (
    Comparator("MSE", "mean squared error", mse, default_threshold=1e-10),
    Comparator("L1", "sum of absolute differences", l1, default_threshold=1e-3),
    Comparator(
        "SNR", "signal-to-noise ratio in dB", snr, higher_is_better=True, default_threshold=100.0
    ),
    Comparator(
        "cosine",
        "cosine similarity",
        cosine,
        higher_is_better=True,
        default_threshold=1.0 - 1e-9,
    ),
)


@hookimpl
def dl_numerical_comparators() -> Sequence[Comparator]:
    return BUILTIN_COMPARATORS
