"""``delegate-lens verify`` of a bundled program whose program is a real ExecuTorch one
(made by the reference, or by delegate-lens's ``BundledProgram`` around a real ``.pte``):
every test case runs on the real runtime and is compared as for our own programs."""

from __future__ import annotations

import os
from typing import Any

from delegate_lens_executorch.runtime import (
    DEFAULT_DEBUG_BUFFER_SIZE,
    execute,
    load_module,
    write_results,
)

__all__ = ["verify_bundled"]


def verify_bundled(
    path: str | os.PathLike[str],
    *,
    bundled: Any = None,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    etdump: str | os.PathLike[str] | None = None,
    debug_buffer: str | os.PathLike[str] | None = None,
    debug_buffer_size: int = DEFAULT_DEBUG_BUFFER_SIZE,
) -> list[Any]:
    """Run every test case of every method test suite of the ``.bpte`` at ``path`` (or of
    ``bundled``, already loaded from it) on the real runtime; one
    :class:`delegate_lens.bundled_program.OutputComparison` per case, in order.

    ``etdump`` (and ``debug_buffer``): write the runs' ETDump (and intermediate outputs).
    """
    from delegate_lens.bundled_program import BundledProgram, compare_outputs
    from delegate_lens.fileio import write_bytes_atomic
    from delegate_lens_executorch.profiling import as_runtime_value

    origin = os.fspath(path)
    if bundled is None:
        bundled = BundledProgram.load(path)
    size = debug_buffer_size if debug_buffer is not None else 0
    module = load_module(
        bytes(bundled.program_buffer), f"{origin}: its program", debug_buffer_size=size
    )
    results = []
    for suite in bundled.method_test_suites:
        for index, case in enumerate(suite.test_cases):
            inputs = [as_runtime_value(v) for v in case.inputs]
            outputs = execute(module, suite.method_name, inputs, origin=origin, runs=1)
            results.append(
                compare_outputs(
                    outputs,
                    case.expected_outputs,
                    rtol=rtol,
                    atol=atol,
                    method_name=suite.method_name,
                    test_index=index,
                )
            )
    if etdump is not None:
        data, buffer = write_results(module, debug=debug_buffer is not None)
        write_bytes_atomic(etdump, data)
        if debug_buffer is not None:
            write_bytes_atomic(debug_buffer, buffer or b"")
    return results
