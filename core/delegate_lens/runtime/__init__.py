"""The simulated runtime: programs, methods, EventTracer and ETDumpGen.

``Program`` / ``Method`` run operators with torch kernels (importing them imports torch);
the event tracer API and :class:`ETDumpGen` do not import torch. Names are resolved on
first use, so ``from delegate_lens.runtime import ETDumpGen`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "Program": "delegate_lens.runtime._program",
    "Method": "delegate_lens.runtime._program",
    "BackendExecutionContext": "delegate_lens.runtime._program",
    "ETDumpGen": "delegate_lens.runtime._etdump_gen",
    "DebugBufferFullWarning": "delegate_lens.runtime._etdump_gen",
    "EventTracer": "delegate_lens.runtime._event_tracer",
    "EventTracerEntry": "delegate_lens.runtime._event_tracer",
    "UNSET_DELEGATE_DEBUG_ID": "delegate_lens.runtime._event_tracer",
    "event_tracer_start_profiling_delegate": "delegate_lens.runtime._event_tracer",
    "event_tracer_end_profiling_delegate": "delegate_lens.runtime._event_tracer",
    "event_tracer_log_profiling_delegate": "delegate_lens.runtime._event_tracer",
    "event_tracer_log_output_delegate": "delegate_lens.runtime._event_tracer",
    "load_bundled_input": "delegate_lens.runtime._bundled",
    "verify_method_outputs": "delegate_lens.runtime._bundled",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'delegate_lens.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
