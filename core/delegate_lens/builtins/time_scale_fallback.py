"""Built-in fallback on ``dl_delegate_time_scale_array``: the ticks are already in the
source time scale.

Registered as ``time_scale_fallback`` and asked last (``trylast``, after the built-in
``tick_clock`` and every installed plugin): a delegate clock no plugin converts is taken
as counting in the Inspector's ``source_time_scale``, so the source/target factor alone
applies, as for the runtime's own events (the reference Inspector's default). Vectorized:
one numpy conversion per row.

Blocked (``-p no:time_scale_fallback``), a delegate row whose clock no plugin converts is
an :class:`~delegate_lens.errors.InspectorError` naming the row and its backend: a way to
make sure a clock converter is in effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["dl_delegate_time_scale_array"]


@hookimpl(trylast=True)
def dl_delegate_time_scale_array(
    ticks: npt.NDArray[np.uint64],
) -> npt.NDArray[np.float64]:
    """The ticks as float64, unchanged (the Inspector divides by the source/target factor)."""
    import numpy as np  # imported when a row is converted: building the plugins stays cheap

    return np.asarray(ticks).astype(np.float64)
