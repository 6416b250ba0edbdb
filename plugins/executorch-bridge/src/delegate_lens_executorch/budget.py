"""How many runs fit one traced session, decided before the runs (see ``docs/trust.md``).

The runtime keeps every run's events in one ETDump it builds in memory (the pybindings'
``ETDumpGen``, growing with ``malloc``). A flatbuffer addresses its bytes with signed 32-bit
offsets: past :data:`ETDUMP_MAX_BYTES` the builder gives up and the runtime crashes
(SIGSEGV) at the next event, after hours of runs. The intermediate outputs of ``debug`` go
to a debug buffer of a size fixed at load; a full one aborts the process (SIGABRT).

It runs in the runtime's child process (:mod:`delegate_lens_executorch.child`), as every
call into the runtime does. Before many runs (``runs`` > 1), :func:`fit_runs` measures the program on the inputs: a
fresh module of the program runs once and its ETDump is read (its size, and the debug
bytes its events used). When ``runs`` times that fits, the runs go ahead. Otherwise a
second fresh module runs twice: the difference is the cost of a run, and what is left of
the first the fixed cost (the load block). Too many runs for one ETDump are refused with
the most that fit; a debug buffer too small is made larger (the runtime takes any size at
load), up to ``[executorch] max_debug_buffer_size``.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs

from delegate_lens.errors import UsageError
from delegate_lens_executorch.runtime import (
    ETDUMP,
    LoadedModule,
    execute,
    native_quiet,
    runtime_library,
    write_results,
)

__all__ = [
    "DEFAULT_MAX_DEBUG_BUFFER_SIZE",
    "ETDUMP_MAX_BYTES",
    "RunCost",
    "fit_runs",
    "max_debug_buffer_size",
]

ETDUMP_MAX_BYTES = (1 << 31) - 1
"""The most bytes one ETDump may hold (flatbuffers' signed 32-bit offsets)."""
ETDUMP_BUDGET = int(ETDUMP_MAX_BYTES * 0.99)
"""What the runs may fill of it: a run's cost is measured, not promised."""
DEBUG_SLACK = 1 << 20
"""Room left in a debug buffer beyond what the runs are measured to need (and 1% more)."""
DEFAULT_MAX_DEBUG_BUFFER_SIZE = 1 << 30
"""The largest debug buffer made for many runs by default (1 GiB: memory, and ``debug.bin``)."""


@attrs.frozen
class RunCost:
    """Bytes a traced session takes: fixed (the load block) and per run, of the ETDump and
    of the debug buffer."""

    etdump_fixed: int
    etdump_per_run: int
    debug_fixed: int = 0
    debug_per_run: int = 0

    def max_runs(self) -> int:
        """The most runs whose events fit one ETDump."""
        return max(0, (ETDUMP_BUDGET - self.etdump_fixed) // max(1, self.etdump_per_run))

    def debug_bytes(self, runs: int) -> int:
        """The debug buffer ``runs`` runs need (with :data:`DEBUG_SLACK`)."""
        return self.debug_fixed + runs * self.debug_per_run * 101 // 100 + DEBUG_SLACK

    def max_debug_runs(self, size: int) -> int:
        """The most runs whose intermediate outputs fit a debug buffer of ``size`` bytes."""
        room = size - self.debug_fixed - DEBUG_SLACK
        return max(0, room * 100 // (101 * max(1, self.debug_per_run)))


def max_debug_buffer_size() -> int:
    """``[executorch] max_debug_buffer_size`` (bytes), else
    :data:`DEFAULT_MAX_DEBUG_BUFFER_SIZE`: raised only by the configuration the user chose
    (``DELEGATE_LENS_CONFIG``, ``DELEGATE_LENS_OPTIONS``), lowered by any."""
    from delegate_lens.config import chosen_config, get_config

    key = "max_debug_buffer_size"
    chosen = chosen_config().section("executorch")
    section = chosen if key in chosen else get_config().section("executorch")
    value = section.get_number(key, DEFAULT_MAX_DEBUG_BUFFER_SIZE, positive=True)
    if not isinstance(value, int):
        raise section.error(key, f"expected a whole number of bytes, got {value!r}")
    return value if section is chosen else min(value, DEFAULT_MAX_DEBUG_BUFFER_SIZE)


def fresh_module(program: bytes, debug_buffer_size: int) -> LoadedModule:
    """Another module of a program already loaded once (so checked), with ETDump on."""
    pl = runtime_library()
    with native_quiet():
        module = pl._load_for_executorch_from_buffer(
            program, enable_etdump=True, debug_buffer_size=debug_buffer_size
        )
    return LoadedModule(module, program, debug_buffer_size)


def _debug_bytes(etdump: bytes) -> int:
    """The bytes of the debug buffer the ETDump's debug events wrote: from the start of the
    first tensor to the end of the last (where the first starts depends on where the
    buffer's memory happens to lie: the runtime aligns each tensor's address)."""
    from delegate_lens.etdump import NUMPY_SCALAR_TYPES, loads

    itemsize = {int(code): _size_of(name) for name, code in NUMPY_SCALAR_TYPES.items()}
    start, end = None, 0
    for run in loads(etdump).run_data:
        for event in run.events:
            value = event.debug_event.debug_entry if event.debug_event else None
            tensors = [value.tensor] if value and value.tensor else []
            tensors += value.tensor_list.tensors if value and value.tensor_list else []
            for t in tensors:
                size = math.prod(t.sizes) * itemsize.get(int(t.scalar_type), 8)
                start = int(t.offset) if start is None else min(start, int(t.offset))
                end = max(end, int(t.offset) + size)
    return 0 if start is None else end - start


def _size_of(dtype_name: str) -> int:
    import numpy as np

    return int(np.dtype(dtype_name).itemsize)


def _measure(
    program: bytes, inputs: Sequence[object], *, origin: str, method: str, runs: int, debug: int
) -> tuple[int, int]:
    """(ETDump bytes, debug buffer bytes used) of ``runs`` runs on a fresh module."""
    probe = fresh_module(program, debug)
    execute(probe, method, inputs, origin=origin, runs=runs)
    with tempfile.TemporaryDirectory(prefix="delegate-lens-measure-") as folder:
        write_results(probe, Path(folder), debug=False)
        etdump = (Path(folder) / ETDUMP).read_bytes()
    return len(etdump), (_debug_bytes(etdump) if debug else 0)


def _cost(
    module: LoadedModule,
    inputs: Sequence[object],
    one: tuple[int, int],
    *,
    origin: str,
    method: str,
    debug: bool,
) -> RunCost:
    size = max(module.debug_buffer_size, 2 * one[1] + DEBUG_SLACK) if debug else 0
    two = _measure(module.program, inputs, origin=origin, method=method, runs=2, debug=size)
    etdump_run = two[0] - one[0] if two[0] > one[0] else one[0]
    debug_run = two[1] - one[1] if two[1] > one[1] else one[1]
    return RunCost(
        etdump_fixed=max(0, one[0] - etdump_run),
        etdump_per_run=etdump_run,
        debug_fixed=max(0, one[1] - debug_run),
        debug_per_run=debug_run,
    )


def fit_runs(
    module: LoadedModule,
    inputs: Sequence[object],
    *,
    origin: str,
    method: str,
    runs: int,
    debug: bool,
) -> LoadedModule:
    """``module`` when ``runs`` runs fit its ETDump (and debug buffer); a module of the same
    program with a larger debug buffer when only that is too small; else a
    :class:`UsageError` naming the most runs that fit and how to go on. One run is never
    measured (it is its own measure)."""
    if runs < 2:
        return module
    size = module.debug_buffer_size if debug else 0
    one = _measure(module.program, inputs, origin=origin, method=method, runs=1, debug=size)
    bound = RunCost(etdump_fixed=0, etdump_per_run=one[0], debug_per_run=one[1])
    if runs <= bound.max_runs() and (not debug or bound.debug_bytes(runs) <= size):
        return module  # (the first run's ETDump bounds a run's: it holds the load block too)
    cost = _cost(module, inputs, one, origin=origin, method=method, debug=debug)
    where = f"{origin}: {runs:,} runs of method {method!r}"
    if runs > cost.max_runs():
        raise UsageError(
            f"{where} do not fit one ETDump: a run adds {cost.etdump_per_run:,} bytes and an "
            f"ETDump holds at most {ETDUMP_MAX_BYTES:,} (2 GiB, the flatbuffer's limit), so "
            f"at most {cost.max_runs():,} runs fit; run fewer (--runs {cost.max_runs()}), or "
            "profile in several calls"
        )
    needed = cost.debug_bytes(runs)
    if not debug or needed <= size:
        return module
    cap = max(size, max_debug_buffer_size())  # (the buffer asked for is allowed anyway)
    if needed > cap:
        raise UsageError(
            f"{where} with a debug buffer need {needed:,} bytes of it "
            f"({cost.debug_per_run:,} a run), more than the {cap:,} allowed, so at most "
            f"{cost.max_debug_runs(cap):,} runs fit; run fewer (--runs "
            f"{cost.max_debug_runs(cap)}), or raise [executorch] max_debug_buffer_size "
            "(see docs/trust.md)"
        )
    return fresh_module(module.program, needed)
