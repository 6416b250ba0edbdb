"""``delegate-lens verify`` of a bundled program whose program is a real ExecuTorch one
(made by the reference, or by delegate-lens's ``BundledProgram`` around a real ``.pte``):
every test case runs on the real runtime and is compared as for our own programs.

The runtime runs in a child process (:mod:`delegate_lens_executorch.child`): loading, each
test case and writing the ETDump; a crash is one error naming the step, and nothing is
written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from delegate_lens_executorch.child import open_runtime, running
from delegate_lens_executorch.runtime import DEBUG_BUFFER, DEFAULT_DEBUG_BUFFER_SIZE, ETDUMP

if TYPE_CHECKING:
    from delegate_lens.bundled_program import BundledProgram, OutputComparison

__all__ = ["verify_bundled"]


def verify_bundled(
    path: str | os.PathLike[str],
    *,
    bundled: BundledProgram | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    etdump: str | os.PathLike[str] | None = None,
    debug_buffer: str | os.PathLike[str] | None = None,
    debug_buffer_size: int = DEFAULT_DEBUG_BUFFER_SIZE,
) -> list[OutputComparison]:
    """Run every test case of every method test suite of the ``.bpte`` at ``path`` (or of
    ``bundled``, already loaded from it) on the real runtime; one
    :class:`delegate_lens.bundled_program.OutputComparison` per case, in order.

    ``etdump`` (and ``debug_buffer``): write the runs' ETDump (and intermediate outputs),
    each whole or not at all.
    """
    from delegate_lens.bundled_program import BundledProgram, compare_outputs
    from delegate_lens.fileio import write_bytes_atomic
    from delegate_lens_executorch.profiling import as_runtime_value

    origin = os.fspath(path)
    if bundled is None:
        bundled = BundledProgram.load(path)
    debug = debug_buffer is not None
    program = bytes(bundled.program_buffer)
    where = f"{origin}: its program"
    results = []
    files: tuple[bytes, bytes | None] | None = None
    with open_runtime(program, where, debug_buffer_size=debug_buffer_size if debug else 0) as child:
        for suite in bundled.method_test_suites:
            method = suite.method_name
            for index, case in enumerate(suite.test_cases):
                inputs = [as_runtime_value(v) for v in case.inputs]
                step = f"{running(method)} (test case {index})"
                outputs = child.execute(inputs, method=method, origin=origin, step=step)
                results.append(
                    compare_outputs(
                        outputs,
                        case.expected_outputs,
                        rtol=rtol,
                        atol=atol,
                        method_name=method,
                        test_index=index,
                    )
                )
        if etdump is not None:
            with tempfile.TemporaryDirectory(prefix="delegate-lens-verify-") as tmp:
                child.write_results(Path(tmp), debug=debug)
                written = Path(tmp) / DEBUG_BUFFER
                buffer = written.read_bytes() if debug and written.exists() else None
                files = ((Path(tmp) / ETDUMP).read_bytes(), buffer)
    if etdump is not None and files is not None:
        write_bytes_atomic(etdump, files[0])
        if debug_buffer is not None:
            write_bytes_atomic(debug_buffer, files[1] or b"")
    return results
