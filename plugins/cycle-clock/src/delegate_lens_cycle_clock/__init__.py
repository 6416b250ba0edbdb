"""delegate-lens plugin: delegate clock ticks (e.g. cycle counts) to time.

Found by delegate-lens through its entry point ``cycle_clock`` (group ``delegate_lens``);
the hook lives in :mod:`delegate_lens_cycle_clock.plugin`, the rate parsing in
:mod:`delegate_lens_cycle_clock.clock`.
"""

from __future__ import annotations

from delegate_lens_cycle_clock.clock import UNITS, parse_rate

__all__ = ["UNITS", "parse_rate"]
__version__ = "0.1.0"
