"""Clock rates ("800 MHz", 1.2e9) and time units."""

from __future__ import annotations

import math
import re

__all__ = ["UNITS", "parse_rate"]

UNITS: dict[str, float] = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
"""Time units the result can be given in, as units per second."""

_PREFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
_RATE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)(?:[hH][zZ])?\s*\Z")


def parse_rate(value: object) -> float:
    """A clock rate in Hz from a number (Hz) or a string such as ``"800 MHz"``.

    Unit prefixes are read case-insensitively (``"800 mhz"`` is 800 MHz: no clock runs
    at millihertz). Raises ``ValueError`` for anything else or a rate that is not > 0.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a clock rate, got {value!r}")
    if isinstance(value, (int, float)):
        rate = float(value)
    elif isinstance(value, str):
        match = _RATE.match(value)
        if match is None:
            raise ValueError(
                f"expected a clock rate such as '800 MHz' or a number of Hz, got {value!r}"
            )
        rate = float(match.group(1)) * _PREFIXES[match.group(2).lower()]
    else:
        raise ValueError(f"expected a clock rate, got {type(value).__name__} {value!r}")
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"a clock rate must be a positive number of Hz, got {value!r}")
    return rate
