"""Time scales and the conversion of raw event ticks into samples.

Samples are ``end - start`` in source ticks divided by the factor between the source and
the target scale (ns -> ms: 1e6). ``end < start`` is a 32-bit clock wrap: the elapsed time
is ``(2**32 - 1 - start) + end``; a wrap where either value exceeds ``2**32 - 1`` cannot be
a 32-bit wrap and is an :class:`~delegate_lens.errors.InspectorError`.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from delegate_lens.errors import ConflictingArgumentsError, InspectorError, UnknownNameError

if TYPE_CHECKING:  # numpy is imported by the conversions, not by the time scales
    import numpy as np
    import numpy.typing as npt

MAX_UINT32 = 2**32 - 1


class TimeScale(enum.Enum):
    """Units of event times (same names and values as the reference devtools)."""

    NS = "ns"
    US = "us"
    MS = "ms"
    S = "s"
    CYCLES = "cycles"

    @classmethod
    def coerce(cls, value: TimeScale | str) -> TimeScale:
        """Accept a :class:`TimeScale` or its text (``"ns"``, ``"MS"``, ...); anything else is
        an :class:`~delegate_lens.errors.UnknownNameError` (a ``KeyError`` too, as the
        reference fails looking it up)."""
        if isinstance(value, TimeScale):
            return value
        if isinstance(value, str):
            text = value.strip().lower()
            for member in cls:
                if member.value == text:
                    return member
        names = ", ".join(m.value for m in cls)
        raise UnknownNameError(f"unknown time scale {value!r} (expected one of: {names})")


_UNITS_PER_SECOND = {
    TimeScale.NS: 1_000_000_000,
    TimeScale.US: 1_000_000,
    TimeScale.MS: 1_000,
    TimeScale.S: 1,
    TimeScale.CYCLES: 1,
}


def units_per_second(scale: TimeScale) -> int:
    """How many ``scale`` units make one second (cycles: 1, they have no fixed rate)."""
    return _UNITS_PER_SECOND[scale]


def scale_factor(source: TimeScale, target: TimeScale) -> float:
    """The divisor turning source ticks into target units (ns -> ms: ``1e6``).

    Cycles only convert to cycles (:class:`ConflictingArgumentsError` otherwise, a
    ``UsageError`` and a ``RuntimeError`` as the reference raises).
    """
    if (source is TimeScale.CYCLES) != (target is TimeScale.CYCLES):
        raise ConflictingArgumentsError(
            f"cannot convert between {source.value} and {target.value}: "
            "cycles only convert to cycles"
        )
    return _UNITS_PER_SECOND[source] / _UNITS_PER_SECOND[target]


def decimal_places(factor: float) -> int | None:
    """``k`` when ``factor == 10**k`` (k >= 0), else ``None``: samples are then exact decimals."""
    for k in range(19):
        if factor == 10.0**k:
            return k
    return None


def _wrap_error(start: object, end: object, where: str) -> InspectorError:
    return InspectorError(
        f"{where}: end_time {end} < start_time {start} but a 32-bit clock wrap-around "
        f"needs both to be at most {MAX_UINT32}"
    )


def elapsed_ticks(
    start: npt.NDArray[np.uint64], end: npt.NDArray[np.uint64], where: str = "event"
) -> npt.NDArray[np.uint64]:
    """Elapsed integer ticks, element-wise, with the 32-bit wrap-around rule."""
    import numpy as np

    start = np.asarray(start, dtype=np.uint64)
    end = np.asarray(end, dtype=np.uint64)
    wrapped = end < start
    if not wrapped.any():
        return end - start
    bad = wrapped & ((start > MAX_UINT32) | (end > MAX_UINT32))
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        raise _wrap_error(int(start.ravel()[i]), int(end.ravel()[i]), where)
    out = end - start  # wraps modulo 2**64 where end < start; fixed below
    fixed = (np.uint64(MAX_UINT32) - start[wrapped]) + end[wrapped]
    out[wrapped] = fixed
    return out


def elapsed_float(
    start: npt.NDArray[np.float64], end: npt.NDArray[np.float64], where: str = "event"
) -> npt.NDArray[np.float64]:
    """Elapsed time of already converted (float) start/end values, with the wrap rule."""
    import numpy as np

    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    out = end - start
    wrapped = end < start
    if wrapped.any():
        bad = wrapped & ((start > MAX_UINT32) | (end > MAX_UINT32))
        if bad.any():
            i = np.flatnonzero(bad.ravel())[0]
            raise _wrap_error(start.ravel()[i], end.ravel()[i], where)
        out[wrapped] = (MAX_UINT32 - start[wrapped]) + end[wrapped]
    return out
