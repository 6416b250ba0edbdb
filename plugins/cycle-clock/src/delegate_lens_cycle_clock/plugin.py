"""The hooks: ``dl_delegate_time_scale_array`` (what the Inspector calls, once per row,
vectorized) and ``dl_delegate_time_scale`` (one tick, for hosts that call it directly),
for backends whose clock rate is configured.

Configuration (see ``delegate_lens.config``), section ``[cycle_clock]``::

    [cycle_clock]
    unit = "ns"            # the Inspector's source time scale: s, ms, us or ns (default ns)

    [cycle_clock.backends]
    MyNPU = "800 MHz"      # a rate with a unit (Hz, kHz, MHz, GHz) ...
    MyDSP = 1.2e9          # ... or a number of Hz

A value logged by ``MyNPU`` as ``1600`` (cycles) then reads as ``2000.0`` ns. Backends
not configured are left to other plugins (the hooks return ``None``). Both hooks give
bit-identical values: ``float(ticks) * factor`` per tick, the same float64 cast and
product element-wise for an array.

As a plugin of the array hook, this one is asked before the built-in ``tick_clock``
(``trylast``): a row it converts never reaches the per-tick hook, and it converts
its backends ahead of any per-tick plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens import hookimpl
from delegate_lens.config import Config, derived_per_config
from delegate_lens_cycle_clock.clock import UNITS, parse_rate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["SECTION", "dl_delegate_time_scale", "dl_delegate_time_scale_array", "time_factors"]

SECTION = "cycle_clock"
"""This plugin's configuration section (its entry-point name)."""


@derived_per_config
def time_factors(config: Config) -> dict[str, float]:
    """``{backend_id: time units per tick}`` from the ``[cycle_clock]`` section."""
    section = config.section(SECTION)
    section.check_keys({"unit", "backends"})
    per_second = UNITS[section.get_choice("unit", UNITS, "ns")]
    backends = section.get_table("backends")
    factors: dict[str, float] = {}
    for backend_id, value in backends.values.items():
        try:
            factors[backend_id] = per_second / parse_rate(value)
        except ValueError as exc:
            raise backends.error(backend_id, str(exc)) from None
    return factors


@hookimpl
def dl_delegate_time_scale(backend_id: str, ticks: int) -> float | None:
    """``ticks`` clock cycles of ``backend_id`` as time in the configured unit."""
    factor = time_factors().get(backend_id)
    if factor is None:
        return None
    return float(ticks) * factor


@hookimpl
def dl_delegate_time_scale_array(
    backend_id: str, ticks: npt.NDArray[np.uint64]
) -> npt.NDArray[np.float64] | None:
    """All the ``ticks`` of one row of ``backend_id`` as time in the configured unit.

    Element for element the value of :func:`dl_delegate_time_scale`: each tick cast to
    float64 (correctly rounded, as ``float(int)``), then multiplied by the same factor;
    an overflow gives ``inf`` (``nan`` for ``0 * inf``) silently, as Python floats do.
    ``ticks`` is not modified.
    """
    factor = time_factors().get(backend_id)
    if factor is None:
        return None
    import numpy as np  # imported when a row is converted: loading the plugin stays cheap

    values = np.asarray(ticks).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        values *= factor
    return values
