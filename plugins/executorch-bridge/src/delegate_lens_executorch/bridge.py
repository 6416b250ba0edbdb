"""The object the core gets from ``dl_executorch_bridge``: one method per use.

:class:`Bridge` has exactly the members of the core's protocol
:class:`delegate_lens.hookspecs.ExecuTorchBridge` (``profile``, ``check_backend``,
``verify``, ``generate_etrecord``, ``rules``, ``profile_files``); the hook's annotation
makes the type checker hold it to that protocol. Each method imports what it needs when
called (loading the plugin imports nothing heavy).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from delegate_lens.bundled_program import BundledProgram, OutputComparison
    from delegate_lens.inspector import Inspector
    from delegate_lens.testing import ConformanceReport

__all__ = ["Bridge"]

_DEBUG_BUFFER_SIZE = 16 << 20
"""``verify``'s default debug buffer size (as ``runtime.DEFAULT_DEBUG_BUFFER_SIZE``)."""


class Bridge:
    """Real ExecuTorch for the core: conformance, profiling, bundled programs, ETRecords."""

    name = "executorch"

    def check_backend(
        self,
        partitioner: object,
        *,
        models: Iterable[object] | None = None,
        max_examples: int = 20,
        runs: int = 2,
        rtol: float = 1e-5,
        atol: float = 1e-5,
        seed: int = 0,
        ops: Sequence[str] | None = None,
        fail_fast: bool = False,
    ) -> ConformanceReport:
        """See :func:`delegate_lens_executorch.conformance.check_partitioner`."""
        from delegate_lens_executorch.conformance import check_partitioner

        return check_partitioner(
            partitioner,
            models=models,
            max_examples=max_examples,
            runs=runs,
            rtol=rtol,
            atol=atol,
            seed=seed,
            ops=ops,
            fail_fast=fail_fast,
        )

    def profile(
        self,
        program: str | os.PathLike[str],
        *,
        etrecord: str | os.PathLike[str] | None = None,
        inputs: Sequence[object] | str | os.PathLike[str] | None = None,
        bundled: str | os.PathLike[str] | None = None,
        runs: int = 1,
        debug: bool = False,
        output_dir: str | os.PathLike[str] | None = None,
        method: str = "forward",
    ) -> Inspector:
        """See :func:`delegate_lens_executorch.profiling.profile`."""
        from delegate_lens_executorch.profiling import profile

        inspector: Inspector = profile(
            program,
            etrecord=etrecord,
            inputs=inputs,
            bundled=bundled,
            runs=runs,
            debug=debug,
            output_dir=output_dir,
            method=method,
        )
        return inspector

    def verify(
        self,
        path: str | os.PathLike[str],
        *,
        bundled: BundledProgram | None = None,
        rtol: float = 1e-5,
        atol: float = 1e-8,
        etdump: str | os.PathLike[str] | None = None,
        debug_buffer: str | os.PathLike[str] | None = None,
        debug_buffer_size: int = _DEBUG_BUFFER_SIZE,
    ) -> list[OutputComparison]:
        """See :func:`delegate_lens_executorch.verify.verify_bundled`."""
        from delegate_lens_executorch.verify import verify_bundled

        results: list[OutputComparison] = verify_bundled(
            path,
            bundled=bundled,
            rtol=rtol,
            atol=atol,
            etdump=etdump,
            debug_buffer=debug_buffer,
            debug_buffer_size=debug_buffer_size,
        )
        return results

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules :meth:`check_backend` checks: every registered one of the test kit
        (:func:`delegate_lens.testing.registered_rules`, plugins' too), in report order."""
        from delegate_lens.testing import registered_rules

        return tuple(registered_rules())

    @property
    def profile_files(self) -> tuple[str, ...]:
        """The names of the files :meth:`profile` may write to its output folder."""
        from delegate_lens_executorch.profiling import PROFILE_FILES

        return tuple(PROFILE_FILES)

    def generate_etrecord(
        self,
        et_record: str | os.PathLike[str] | BinaryIO,
        edge_dialect_program: object,
        executorch_program: object,
        exported_program: object = None,
        *,
        representative_inputs: object = None,
    ) -> Path | None:
        """See :func:`delegate_lens_executorch.etrecord.generate_etrecord`."""
        from delegate_lens_executorch.etrecord import generate_etrecord

        return generate_etrecord(
            et_record,
            edge_dialect_program,
            executorch_program,
            exported_program,
            representative_inputs=representative_inputs,
        )
