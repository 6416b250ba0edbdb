"""Keeping ``collect``'s worker pool from one run to the next in this process.

A run takes the kept pool when it was started under the same settings
(:class:`WorkerSettings`) and all its workers still run; else the kept pool ends and the
run starts its own. A run that went to its end keeps its pool (one pool is kept; another
ends); a run that failed or was stopped ends it. A kept pool ends after ``IDLE_SECONDS``
without a run, on :func:`shutdown`, or with this process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import attrs

if TYPE_CHECKING:
    from delegate_lens.config import Config

IDLE_SECONDS = 30.0
"""How long workers kept after a run wait for the next before they end."""


@attrs.frozen(eq=False)
class WorkerSettings:
    """What workers take from this process when they start, besides its imports, and what
    this process may change later: the number of workers, the environment, the
    configuration read, the plugin manager and its plugins, the ``-p`` options. Built
    here (:meth:`now`, from :mod:`~delegate_lens.config`'s and
    :mod:`~delegate_lens.pluginmanager`'s public functions), handed to each worker as it
    starts (:meth:`apply` there: a plain value, pickled for a worker that is not forked);
    kept workers serve a run only under the same settings (:meth:`same`)."""

    workers: int
    environment: dict[str, str]
    config: Config | None  # the configuration read here (None: none yet); forked: theirs
    manager: int | None  # the plugin manager's serial (None: not built yet)
    options: tuple[str, ...] | None  # the -p options, when the plugins are loaded
    plugins: frozenset[str] | None  # the names registered in the manager

    @classmethod
    def now(cls, workers: int) -> WorkerSettings:
        """This process's settings now, for ``workers`` workers (what it never loaded:
        none, and not loaded here for nothing: a collect loads no plugin host)."""
        config = manager = options = plugins = None
        if "delegate_lens.config" in sys.modules:
            from delegate_lens.config import cached_config

            config = cached_config()
        if "delegate_lens.pluginmanager" in sys.modules:
            from delegate_lens.pluginmanager import (
                built_plugin_manager,
                plugin_names,
                plugin_options,
            )

            pm = built_plugin_manager()
            if pm is not None:
                manager, options = pm.serial, plugin_options()
                plugins = plugin_names(pm)
        return cls(workers, dict(os.environ), config, manager, options, plugins)

    def same(self, other: WorkerSettings) -> bool:
        """Whether workers started under ``other`` serve as well under these (the
        configuration by identity: read again, it is another object)."""
        return (
            self.workers == other.workers
            and self.config is other.config
            and self.manager == other.manager
            and self.options == other.options
            and self.plugins == other.plugins
            and self.environment == other.environment
        )

    def apply(self) -> None:
        """In a worker: load the plugins this process had loaded (with its ``-p``
        options) where the worker did not inherit them (from a fork server, spawned)."""
        if self.options is None:  # (not loaded here: nor there, until asked for)
            return
        from delegate_lens import pluginmanager

        if pluginmanager.built_plugin_manager() is None:
            pluginmanager.apply_plugin_options(self.options)


class Pool(Protocol):
    """What is kept: a pool that knows its settings, whether it can serve, how to end."""

    @property
    def settings(self) -> WorkerSettings: ...

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


def take(kind: type[P], workers: int, start: Callable[[int, WorkerSettings], P]) -> P:
    """The kept pool when it is a ``kind`` that can serve a run of ``workers`` now, else
    ``start(workers, settings)`` (the kept pool, if any, ends first: then no thread of its
    runs when the new one's workers are forked)."""
    settings = WorkerSettings.now(workers)
    pool = _take_kept()
    if pool is not None:
        if isinstance(pool, kind) and pool.settings.same(settings) and pool.usable():
            return pool
        pool.close(stop=False)
    return start(workers, settings)


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
