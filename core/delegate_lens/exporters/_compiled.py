"""The timeline writers' loops, chosen once, at import: the compiled ones
(``_trace_lines.pyx``, Cython, built at install when a C compiler is there), or their Python
twin (:mod:`delegate_lens.exporters._trace_lines_py`: the same names and parameters, the
same output) where the extension is not built or ``DELEGATE_LENS_NO_COMPILED`` is on
(:func:`delegate_lens.config.compiled_code_off`). Callers call these names and nothing
else; a None from :func:`run_lines`, :func:`block_lines` or :func:`track_order` is their
documented "not this input" (see the twin), any exception is a real error.
"""

from __future__ import annotations

from delegate_lens.config import compiled_code_off

EXTENSION = "delegate_lens.exporters._trace_lines"
TWIN = "delegate_lens.exporters._trace_lines_py"
NAMES = ("block_lines", "nest_runs", "run_lines", "track_order")
"""What the extension and its twin both define, and this module chooses."""

COMPILED: bool
"""Whether the compiled loops were chosen."""
if compiled_code_off():
    from delegate_lens.exporters._trace_lines_py import (
        block_lines,
        nest_runs,
        run_lines,
        track_order,
    )

    COMPILED = False
else:
    try:
        from delegate_lens.exporters._trace_lines import (
            block_lines,
            nest_runs,
            run_lines,
            track_order,
        )

        COMPILED = True
    except ImportError:  # not built (no C compiler at install): the Python twin
        from delegate_lens.exporters._trace_lines_py import (  # for the callers:
            block_lines,  # noqa: F401
            nest_runs,  # noqa: F401
            run_lines,  # noqa: F401
            track_order,  # noqa: F401
        )

        COMPILED = False
