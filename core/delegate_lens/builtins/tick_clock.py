"""Built-in bridge: the per-tick ``dl_delegate_time_scale`` plugins, for the Inspector's
array hook ``dl_delegate_time_scale_array``.

Registered as ``tick_clock``, asked after every plugin of the array hook and before the
built-in ``time_scale_fallback`` (both ``trylast``; of two ``trylast`` implementations the
one registered first is asked first). It asks ``dl_delegate_time_scale`` for every tick
of the row, and answers only when a plugin converted every one; a row no per-tick plugin
converts (or where one failed: a :class:`~delegate_lens.errors.PluginWarning` names it)
goes on to the fallback. When no plugin implements the per-tick hook it declines at once,
without a per-tick call.

The hook of the plugin manager it is registered in is called, so the plugin is an object
made for that manager by :func:`make_plugin`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pluggy

__all__ = ["TickClock", "make_plugin"]


class TickClock:
    """Answers ``dl_delegate_time_scale_array`` with ``dl_delegate_time_scale``, per tick."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self._pm = pm

    @hookimpl(trylast=True)
    def dl_delegate_time_scale_array(
        self, backend_id: str, event_name: str, ticks: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.float64] | None:
        from delegate_lens.pluginmanager import has_implementations

        if not has_implementations("dl_delegate_time_scale", self._pm):
            return None
        import numpy as np

        from delegate_lens import hooks

        values: list[float] = []
        for tick in np.asarray(ticks).tolist():
            value = hooks.delegate_time_scale(backend_id, event_name, int(tick), pm=self._pm)
            if value is None:
                return None  # no plugin knows this clock (or one failed)
            values.append(float(value))
        return np.asarray(values, dtype=np.float64)


def make_plugin(pm: pluggy.PluginManager) -> TickClock:
    """The plugin object registered in ``pm`` (see :data:`delegate_lens.builtins.BUILTIN_PLUGINS`)."""
    return TickClock(pm)
