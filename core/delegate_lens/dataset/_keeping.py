"""Keeping ``collect``'s worker pool from one run to the next in this process.

A run takes the kept pool when it was started under the same setting (:class:`Setting`)
and all its workers still run; else the kept pool ends and the run starts its own. A run
that went to its end keeps its pool (one pool is kept; another ends); a run that failed
or was stopped ends it. A kept pool ends after ``IDLE_SECONDS`` without a run, on
:func:`shutdown`, or with this process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

import attrs

IDLE_SECONDS = 30.0
"""How long workers kept after a run wait for the next before they end."""


@attrs.frozen(eq=False)
class Setting:
    """What workers took from this process when they started, besides its imports, and
    what this process may change later: the number of workers, the environment, the
    loaded configuration, the plugin manager (the same object) and its plugins, the
    ``-p`` options. Kept workers serve a run only under the same setting."""

    workers: int
    environment: dict[str, str]
    config: object  # delegate_lens.config's cache (None: not loaded yet)
    manager: object  # the plugin manager (None: not built yet)
    options: tuple[str, ...] | None  # the -p options, when the plugins are loaded
    plugins: frozenset[str] | None  # the names registered in it

    @classmethod
    def now(cls, workers: int) -> Setting:
        config = sys.modules.get("delegate_lens.config")
        plugins = sys.modules.get("delegate_lens.pluginmanager")
        manager = options = None
        if plugins is not None and plugins._pm is not None:
            manager, options = plugins._pm, tuple(plugins._options)
        return cls(
            workers,
            dict(os.environ),
            None if config is None else config._cache,
            manager,
            options,
            None if manager is None else frozenset(n for n, _ in manager.list_name_plugin()),
        )

    def same(self, other: Setting) -> bool:
        return (
            self.workers == other.workers
            and self.config is other.config
            and self.manager is other.manager
            and self.options == other.options
            and self.plugins == other.plugins
            and self.environment == other.environment
        )


class Pool(Protocol):
    """What is kept: a pool that knows its setting, whether it can serve, how to end."""

    @property
    def setting(self) -> Setting: ...

    def usable(self) -> bool: ...

    def close(self, *, stop: bool) -> None: ...


P = TypeVar("P", bound=Pool)

_lock = threading.Lock()  # guards _kept and _idle
_kept: Pool | None = None  # the pool kept from the last run, idle
_idle: threading.Timer | None = None  # ends it after IDLE_SECONDS


def _take_kept() -> Pool | None:
    """The kept pool, no longer kept (its idle timer stopped and ended)."""
    global _kept, _idle
    with _lock:
        pool, timer, _kept, _idle = _kept, _idle, None, None
    if timer is not None:
        timer.cancel()
        timer.join()
    return pool


def take(kind: type[P], workers: int, start: Callable[[int, Setting], P]) -> P:
    """The kept pool when it is a ``kind`` that can serve a run of ``workers`` now, else
    ``start(workers, setting)`` (the kept pool, if any, ends first: then no thread of its
    runs when the new one's workers are forked)."""
    setting = Setting.now(workers)
    pool = _take_kept()
    if pool is not None:
        if isinstance(pool, kind) and pool.setting.same(setting) and pool.usable():
            return pool
        pool.close(stop=False)
    return start(workers, setting)


def keep(pool: Pool) -> None:
    """Keep ``pool`` for the next run (in place of any other kept pool, which ends)."""
    global _kept, _idle
    timer = threading.Timer(IDLE_SECONDS, _end_idle, args=(pool,))
    timer.daemon = True
    timer.name = "delegate-lens-collect-idle"
    with _lock:
        old, old_timer, _kept, _idle = _kept, _idle, pool, timer
    timer.start()
    if old_timer is not None:
        old_timer.cancel()
    if old is not None:
        old.close(stop=False)


def _end_idle(pool: Pool) -> None:
    """End ``pool`` if it is still kept (no run took it meanwhile)."""
    global _kept, _idle
    with _lock:
        if _kept is not pool:
            return
        _kept = _idle = None
    pool.close(stop=False)


def shutdown() -> None:
    """End the kept pool now, if any."""
    pool = _take_kept()
    if pool is not None:
        pool.close(stop=False)
