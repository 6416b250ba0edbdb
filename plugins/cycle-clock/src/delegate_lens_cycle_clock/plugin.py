"""The hook: ``dl_delegate_time_scale`` for backends whose clock rate is configured.

Configuration (see ``delegate_lens.config``), section ``[cycle_clock]``::

    [cycle_clock]
    unit = "ns"            # the Inspector's source time scale: s, ms, us or ns (default ns)

    [cycle_clock.backends]
    MyNPU = "800 MHz"      # a rate with a unit (Hz, kHz, MHz, GHz) ...
    MyDSP = 1.2e9          # ... or a number of Hz

A value logged by ``MyNPU`` as ``1600`` (cycles) then reads as ``2000.0`` ns. Backends
not configured are left to other plugins (the hook returns ``None``).
"""

from __future__ import annotations

from delegate_lens import hookimpl
from delegate_lens.config import Config, derived_per_config
from delegate_lens_cycle_clock.clock import UNITS, parse_rate

__all__ = ["SECTION", "dl_delegate_time_scale", "time_factors"]

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
