"""The simulated runtime: programs, methods, EventTracer and ETDumpGen.

``Program`` / ``Method`` run operators with torch kernels (importing them imports torch);
the event tracer API and :class:`ETDumpGen` do not import torch. Names are resolved on
first use, so ``from delegate_lens.runtime import ETDumpGen`` stays light.
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)
