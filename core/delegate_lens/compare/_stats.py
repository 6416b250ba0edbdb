"""Vectorized statistics for comparing two sample matrices row by row.

Each side is a ``(rows, samples)`` matrix (one block of an Inspector table). The median of
each row gets a distribution-free ``1 - alpha`` confidence interval from order statistics:
the ranks ``[c + 1, n - c]`` of the sorted samples, ``c`` the largest count with
``P(Binomial(n, 1/2) <= c) <= alpha/2`` (with fewer than 6 samples no such ``c`` exists at
``alpha = 0.05`` and the interval is the samples' range). Its width gives a standard error
of the median, ``(x_high - x_low) / 2z``.

* The delta of the medians ``new - base`` gets ``delta ± z·√(se_base² + se_new²)``.
* The ratio ``new / base`` gets the same construction on a log scale: the log of the order
  statistics gives each median's standard error in log units, the log ratio
  ``log(new / base) ± z·√(se_base² + se_new²)`` is turned back with ``exp``, so the interval
  is always positive and the same whichever side is called base (``1/ratio`` swaps its
  ends). A side whose lower order statistic is 0 (a clock too coarse for the row) has no
  log scale: its ratio interval is NaN (unknown).
* ``test="median-ci"``: a row is significant when its ratio interval excludes 1, or, where
  the ratio interval is unknown, when the delta interval excludes 0.

Sorting is the only per-sample work: a block of 241 rows by 2,000 samples takes
milliseconds.

With ``test="mannwhitney"`` the significance comes from SciPy's Mann-Whitney U test (the
``stats`` extra), computed for every row at once along the sample axis.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import MissingExtraError

FloatArray = npt.NDArray[np.float64]
TESTS = ("median-ci", "mannwhitney")
"""Significance tests: the medians' confidence interval (numpy only) or Mann-Whitney U
(SciPy, the ``stats`` extra)."""


@attrs.frozen
class RowStats:
    """Per-row statistics of one block pair (arrays of length ``rows``)."""

    base_median: FloatArray
    new_median: FloatArray
    delta: FloatArray
    delta_low: FloatArray
    delta_high: FloatArray
    ratio: FloatArray  # new / base median (0 / 0 is 1)
    ratio_low: FloatArray  # the log-scale interval: > 0, NaN where no log scale
    ratio_high: FloatArray
    p_value: FloatArray  # NaN with the median-ci test
    significant: npt.NDArray[np.bool_]
    enough: bool  # both sides have enough samples for a verdict (see compare_samples)


def _sorted_finite(samples: FloatArray) -> tuple[FloatArray, int]:
    """Rows sorted (NaN last) and the count of samples every row has."""
    ordered = np.sort(samples, axis=1)
    n = int(np.isfinite(ordered).all(axis=0).sum()) if ordered.size else 0
    return ordered[:, :n], n


@functools.lru_cache(maxsize=64)
def median_ci_ranks(n: int, alpha: float) -> tuple[int, int]:
    """0-based ranks ``(low, high)`` of the sorted samples bounding the median's ``1 - alpha``
    interval: ``(c, n - 1 - c)`` with ``c`` the largest count such that
    ``P(Binomial(n, 1/2) <= c) <= alpha / 2`` (``(0, n - 1)`` when there is none)."""
    if n <= 0:
        raise ValueError("median_ci_ranks needs at least one sample")
    j = np.arange(n // 2 + 1, dtype=np.float64)
    # log P(B = j) from P(B = 0) = 2^-n and P(B = j+1) / P(B = j) = (n - j) / (j + 1)
    steps = np.log(n - j[:-1]) - np.log(j[:-1] + 1.0)
    log_pmf = -n * math.log(2.0) + np.concatenate(([0.0], np.cumsum(steps)))
    cdf = np.cumsum(np.exp(log_pmf))
    c = max(int(np.count_nonzero(cdf <= alpha / 2.0)) - 1, 0)
    return c, n - 1 - c


def interval_samples(alpha: float) -> int:
    """The fewest samples whose median has a ``1 - alpha`` order-statistic interval (the
    range of ``n`` samples covers the median with probability ``1 - 2^(1-n)``): 6 at
    ``alpha = 0.05``."""
    return max(math.ceil(math.log2(2.0 / alpha) - 1e-12), 1)


def _median_and_bounds(
    ordered: FloatArray, n: int, alpha: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per row: the median and the order statistics bounding its interval."""
    rows = ordered.shape[0]
    if n == 0:
        nan = np.full(rows, np.nan)
        return nan, nan, nan
    half = n // 2
    median = ordered[:, half] if n % 2 else (ordered[:, half - 1] + ordered[:, half]) / 2.0
    low, high = median_ci_ranks(n, alpha)
    return median, ordered[:, low], ordered[:, high]


def _log_se(low: FloatArray, high: FloatArray, z: float) -> FloatArray:
    """Standard error of a median in log units (NaN where the low bound is not > 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(high) - np.log(low)) / (2.0 * z)
    return np.where(low > 0, se, np.nan)


def compare_samples(
    base: FloatArray,
    new: FloatArray,
    *,
    alpha: float,
    test: str = "median-ci",
    min_samples: int = 3,
) -> RowStats:
    """Compare ``base[i]`` with ``new[i]`` for every row ``i`` (see the module docstring).

    Rows need not have the same number of samples on both sides. A row is never
    significant when either side has fewer than ``min_samples`` samples, nor, with the
    ``median-ci`` test, fewer than :func:`interval_samples` (6 at ``alpha = 0.05``); with
    fewer than that the ratio interval is NaN (it would not reach its level).
    """
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    base_sorted, n_base = _sorted_finite(np.asarray(base, dtype=np.float64))
    new_sorted, n_new = _sorted_finite(np.asarray(new, dtype=np.float64))
    base_median, base_low, base_high = _median_and_bounds(base_sorted, n_base, alpha)
    new_median, new_low, new_high = _median_and_bounds(new_sorted, n_new, alpha)
    delta = new_median - base_median
    half_width = z * np.hypot((base_high - base_low) / (2 * z), (new_high - new_low) / (2 * z))
    delta_low = delta - half_width
    delta_high = delta + half_width
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = new_median / base_median
        ratio[(new_median == 0) & (base_median == 0)] = 1.0  # 0 -> 0: unchanged
        log_ratio = np.log(new_median) - np.log(base_median)
        log_half = z * np.hypot(_log_se(base_low, base_high, z), _log_se(new_low, new_high, z))
        defined = (base_median > 0) & (new_median > 0) & np.isfinite(log_half)
        ratio_low = np.where(defined, np.exp(log_ratio - log_half), np.nan)
        ratio_high = np.where(defined, np.exp(log_ratio + log_half), np.nan)
    # the intervals stand for their level only with enough samples on both sides
    intervals = min(n_base, n_new) >= interval_samples(alpha)
    ratio_low = np.where(intervals, ratio_low, np.nan)
    ratio_high = np.where(intervals, ratio_high, np.nan)
    enough = n_base >= min_samples and n_new >= min_samples
    if test != "mannwhitney":
        enough = enough and intervals
    rows = base_median.shape[0]
    p_value = np.full(rows, np.nan)
    if not enough:
        significant = np.zeros(rows, dtype=bool)
    elif test == "mannwhitney":
        p_value = _mannwhitney(base_sorted, new_sorted)
        significant = p_value < alpha
    else:
        by_ratio = (ratio_low > 1.0) | (ratio_high < 1.0)
        by_delta = (delta_low > 0) | (delta_high < 0)
        significant = np.where(defined, by_ratio, by_delta)
    return RowStats(
        base_median,
        new_median,
        delta,
        delta_low,
        delta_high,
        ratio,
        ratio_low,
        ratio_high,
        p_value,
        significant,
        enough,
    )


def _mannwhitney(base: FloatArray, new: FloatArray) -> FloatArray:
    try:
        from scipy.stats import mannwhitneyu
    except ImportError as exc:
        raise MissingExtraError(
            "the Mann-Whitney U test needs SciPy: pip install 'delegate-lens[stats]'"
        ) from exc
    if base.shape[0] == 0:
        return np.zeros(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = mannwhitneyu(base, new, axis=1, method="asymptotic")
    p = np.asarray(result.pvalue, dtype=np.float64)
    return np.where(np.isnan(p), 1.0, p)  # all samples equal on both sides: no evidence
