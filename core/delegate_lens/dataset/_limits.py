"""What one ``query`` may cost: wall time and memory (see ``docs/trust.md``).

- ``timeout`` (seconds, default :data:`DEFAULT_TIMEOUT`): a watch thread calls DuckDB's
  ``connection.interrupt()`` when the query (running, or handing over its result) passes it.
- ``memory_limit`` (bytes, default a quarter of the machine's memory: :func:`default_memory_limit`):
  DuckDB's own ``memory_limit`` setting bounds its working memory; the result is read
  batch by batch and may not pass it either; and the watch thread stops a query whose
  process grows by more than twice the limit (plus :data:`GROWTH_SLACK`) while it runs:
  memory DuckDB does not count, e.g. one huge value.

Past either, the query stops with a :class:`QueryLimitError` naming the limit and how to
raise it. The defaults come from the ``[query]`` table of the configuration (``timeout``,
``memory_limit``); as for every safety limit, a file that merely lies in the current folder
may lower them, only the configuration the user chose (``DELEGATE_LENS_CONFIG``,
``DELEGATE_LENS_OPTIONS``) may raise them. ``--timeout`` / ``--memory-limit`` (and
``query(timeout=..., memory_limit=...)``) set them for one query.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

import attrs

from delegate_lens.errors import QueryLimitError, UsageError

if TYPE_CHECKING:
    import duckdb

DEFAULT_TIMEOUT = 300.0
"""Seconds a query may run by default."""
MEMORY_SHARE = 4
"""The default memory limit is the machine's memory (or its cgroup's) divided by this."""
MIN_MEMORY_LIMIT = 1_000_000
"""The least ``memory_limit`` accepted (1MB): below it no query runs."""
FALLBACK_MEMORY = 2_000_000_000
"""The default memory limit where the machine's memory cannot be told (2GB)."""
GROWTH_SLACK = 512 << 20
"""The process may grow by twice the memory limit plus this while a query runs."""
POLL_SECONDS = 0.05
"""How often the watch thread looks at the clock and the process's memory."""

HOW_TO_RAISE = "(--timeout, query(timeout=...) or [query] timeout; see docs/trust.md)"
HOW_TO_RAISE_MEMORY = (
    "(--memory-limit, query(memory_limit=...) or [query] memory_limit; see docs/trust.md)"
)

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)
SIZE_HELP = "a size such as 2GB, 500MB or 1GiB (KB, MB, GB, TB: powers of 1000; KiB... of 1024)"


def parse_size(text: str | int, what: str = "memory limit") -> int:
    """Bytes of a size such as ``2GB``, ``500MB``, ``1.5GiB`` or ``1000000`` (bytes); a
    :class:`UsageError` naming ``what`` for anything else, or below :data:`MIN_MEMORY_LIMIT`."""
    if isinstance(text, bool):
        raise UsageError(f"{what}: expected {SIZE_HELP}, got {text!r}")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.fullmatch(str(text))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise UsageError(f"{what}: expected {SIZE_HELP}, got {text!r}")
        value = math.floor(float(match.group(1)) * _UNITS[unit])
    if value < MIN_MEMORY_LIMIT:
        raise UsageError(
            f"{what}: {text!r} is below {format_size(MIN_MEMORY_LIMIT)}, too little for any query"
        )
    return value


def format_size(size: int) -> str:
    """``100MB``, ``6.03GB``: a size as the messages show it (powers of 1000)."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= scale:
            return f"{size / scale:.3g}{unit}"
    return f"{size}B"


def check_timeout(value: object, what: str = "timeout") -> float:
    """``value`` as seconds > 0 (a number or its text); else a :class:`UsageError`."""
    try:
        seconds = float(value) if isinstance(value, (int, float, str)) else math.nan
    except ValueError:
        seconds = math.nan
    if isinstance(value, bool) or not (0 < seconds < math.inf):
        raise UsageError(f"{what}: expected a number of seconds > 0, got {value!r}")
    return seconds


def _cgroup_memory() -> int | None:
    """The memory limit of this process's cgroup (v2 or v1), if it has one."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as stream:
                text = stream.read().strip()
        except (OSError, ValueError):
            continue
        if text.isdigit() and int(text) < 1 << 60:  # v1 says "no limit" with a huge number
            return int(text)
    return None


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, or its cgroup's if smaller."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 0
    found = [size for size in (physical, _cgroup_memory()) if size and size > 0]
    return min(found) if found else None


def default_memory_limit() -> int:
    """A quarter of :func:`machine_memory` (at least 256MB), or 2GB where it is unknown."""
    memory = machine_memory()
    if memory is None:
        return FALLBACK_MEMORY
    return max(256 * 10**6, memory // MEMORY_SHARE)


@attrs.frozen
class QueryLimits:
    """What one query may cost.

    :param timeout: seconds it may run (result included).
    :param memory_limit: bytes of DuckDB working memory, and of its result.
    """

    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int = attrs.field(factory=default_memory_limit)


def _configured(key: str, default: float, parse: Callable[[object], float]) -> float:
    """``[query] key`` of the configuration: lowered by any file, raised only by a chosen one."""
    from delegate_lens.config import chosen_config, get_config

    found = get_config().section("query")
    found.check_keys({"timeout", "memory_limit"})
    chosen = chosen_config().section("query")
    section = chosen if key in chosen else found
    if key not in section:
        return default
    try:
        value = parse(section.get(key))
    except UsageError as exc:
        raise section.error(key, str(exc).split(": ", 1)[-1]) from None
    return value if section is chosen else min(value, default)


def _config_size(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise UsageError(f"size: expected {SIZE_HELP}, got {raw!r}")
    return parse_size(raw, "size")


def resolve_timeout(timeout: float | str | None = None) -> float:
    """``timeout`` as seconds (a :class:`UsageError` when it is not > 0), else the
    configuration's ``[query] timeout``, else :data:`DEFAULT_TIMEOUT`."""
    if timeout is None:
        return _configured("timeout", DEFAULT_TIMEOUT, check_timeout)
    return check_timeout(timeout)


def resolve_memory_limit(memory_limit: int | str | None = None) -> int:
    """``memory_limit`` as bytes (:func:`parse_size`), else the configuration's
    ``[query] memory_limit``, else :func:`default_memory_limit`."""
    if memory_limit is None:
        return int(_configured("memory_limit", default_memory_limit(), _config_size))
    return parse_size(memory_limit)


def query_limits(
    timeout: float | str | None = None, memory_limit: int | str | None = None
) -> QueryLimits:
    """The limits of one query: those given, else the configuration's, else the defaults.
    A bad value is a :class:`UsageError` naming it."""
    return QueryLimits(resolve_timeout(timeout), resolve_memory_limit(memory_limit))


def _resident_bytes() -> int | None:
    """This process's resident memory (Linux: ``/proc/self/statm``; None elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as stream:
            return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class QueryWatch:
    """Within ``with``: a thread that interrupts the connection's query past the timeout,
    or when the process grows past twice the memory limit (plus :data:`GROWTH_SLACK`).
    :attr:`stopped` is then the :class:`QueryLimitError` to raise (None: not stopped)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, limits: QueryLimits) -> None:
        self._con = con
        self.limits = limits
        self.stopped: QueryLimitError | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="query-watch", daemon=True)

    def __enter__(self) -> QueryWatch:
        self._start = time.monotonic()
        self._base = _resident_bytes()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        deadline = self._start + self.limits.timeout
        ceiling = 2 * self.limits.memory_limit + GROWTH_SLACK
        while not self._done.wait(max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                self._stop(self.timed_out())
                return
            now = _resident_bytes()
            if now is not None and self._base is not None and now - self._base > ceiling:
                self._stop(
                    QueryLimitError(
                        f"query stopped: the process grew by more than "
                        f"{format_size(ceiling)} while it ran (twice the memory limit of "
                        f"{format_size(self.limits.memory_limit)}, plus memory DuckDB does "
                        f"not count, e.g. one huge value); raise the limit {HOW_TO_RAISE_MEMORY}"
                    )
                )
                return

    def _stop(self, error: QueryLimitError) -> None:
        self.stopped = error
        self._con.interrupt()

    def timed_out(self) -> QueryLimitError:
        return QueryLimitError(
            f"query stopped: it ran past the timeout of {self.limits.timeout:g} s; "
            f"raise it {HOW_TO_RAISE}"
        )

    def past_deadline(self) -> bool:
        """Whether the timeout has passed (checked between result batches too)."""
        return time.monotonic() - self._start >= self.limits.timeout
