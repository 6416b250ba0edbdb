"""Comparing a method's outputs with a test case's expected outputs (torch-free).

Element-wise as ``numpy.isclose``: ``|actual - expected| <= atol + rtol * |expected|``,
NaN equal to NaN (as the reference runtime's tensor comparison). Dtypes and shapes must
match exactly. The result carries the largest absolute and relative errors over every
output (relative error: ``|actual - expected| / |expected|``; ``inf`` where expected is 0
and actual is not).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.bundled_program.config import value_kind


@attrs.frozen
class OutputComparison:
    """How one run's outputs compare with a test case's expected outputs.

    ``bool(result)`` is :attr:`passed`. With no expected outputs bundled, the run passes and
    the errors are NaN. ``message`` says what failed first (empty when passed).
    """

    method_name: str
    test_index: int
    passed: bool
    max_abs_error: float
    max_rel_error: float
    compared: int
    message: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def line(self) -> str:
        """One line for a report: method, index, errors, PASS/FAIL (and why)."""
        status = "PASS" if self.passed else "FAIL"
        if self.compared == 0:
            errors = "no expected outputs bundled"
        else:
            errors = (
                f"max abs error {self.max_abs_error:.3e}  max rel error {self.max_rel_error:.3e}"
            )
        tail = f"  ({self.message})" if self.message else ""
        return f"{self.method_name}[{self.test_index}]  {errors}  {status}{tail}"


def _as_array(value: object) -> npt.NDArray[np.generic]:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().contiguous().numpy()
    return np.asarray(value)


def _errors(
    actual: npt.NDArray[np.generic], expected: npt.NDArray[np.generic], rtol: float, atol: float
) -> tuple[float, float, bool]:
    if expected.size == 0:
        return 0.0, 0.0, True
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    equal = (a == e) | (np.isnan(a) & np.isnan(e))  # inf == inf, NaN == NaN
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(equal, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)
        ok = bool(np.all(equal | ((diff <= atol + rtol * np.abs(e)) & np.isfinite(diff))))
        scale = np.abs(e)
        usable = (scale > 0) & np.isfinite(scale) & np.isfinite(diff)
        rel = np.divide(diff, scale, out=np.full_like(diff, np.inf), where=usable)
        rel = np.where(diff == 0, 0.0, rel)
    return float(diff.max()), float(rel.max()), ok


def compare_outputs(
    actual: Sequence[object],
    expected: Sequence[object],
    *,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    method_name: str = "forward",
    test_index: int = 0,
) -> OutputComparison:
    """Compare ``actual`` outputs (tensors, arrays, scalars) with ``expected`` ones."""
    if not expected:
        return OutputComparison(method_name, test_index, True, math.nan, math.nan, 0)
    max_abs = max_rel = 0.0
    message = ""
    if len(actual) != len(expected):
        message = f"{len(actual)} outputs, {len(expected)} expected"
    for i, (got, want) in enumerate(zip(actual, expected)):
        a = _as_array(got)
        e = _as_array(want)
        if value_kind(want) == "tensor" and (a.dtype != e.dtype or a.shape != e.shape):
            message = message or (
                f"output {i}: {a.dtype}{list(a.shape)}, expected {e.dtype}{list(e.shape)}"
            )
            max_abs = max_rel = math.inf
            continue
        abs_err, rel_err, ok = _errors(a, e, rtol, atol)
        max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
        if not ok and not message:
            message = f"output {i} differs beyond rtol={rtol:g}, atol={atol:g}"
    return OutputComparison(
        method_name, test_index, not message, max_abs, max_rel, len(expected), message
    )
