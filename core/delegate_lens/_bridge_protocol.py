"""What the core asks of real ExecuTorch: the :class:`ExecuTorchBridge` protocol.

The core never imports ``executorch``; what runs real programs asks the
``dl_executorch_bridge`` hook for a bridge (the plugin distribution
``delegate-lens-executorch`` answers with its ``Bridge``). This is its type, named on the
face :mod:`delegate_lens.hookspecs` (``from delegate_lens.hookspecs import
ExecuTorchBridge``), where plugins take it from. Imports nothing of delegate-lens at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import os
    from pathlib import Path
    from typing import BinaryIO

    from delegate_lens.bundled_program import BundledProgram, OutputComparison
    from delegate_lens.inspector import Inspector
    from delegate_lens.testing import ConformanceReport


class ExecuTorchBridge(Protocol):
    """The bridge to real ExecuTorch, as :func:`dl_executorch_bridge` returns it: what the
    core asks of the ``executorch`` package, which it never imports itself. The plugin
    distribution ``delegate-lens-executorch`` answers with its ``Bridge``."""

    @property
    def rules(self) -> Sequence[str]:
        """The rules :meth:`check_backend` checks, by name."""
        ...

    @property
    def profile_files(self) -> Sequence[str]:
        """The names of the files :meth:`profile` may write into its ``output_dir``."""
        ...

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
        """Run ``method`` of a real ``.pte`` ``runs`` times with ETDump (``debug``: and a
        debug buffer) and return the Inspector of the run (see ``delegate_lens.profile``)."""
        ...

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
        """The conformance suite on a real partitioner (an object, a class or a
        ``"module:Name"`` spec), as :func:`delegate_lens.testing.check_backend`."""
        ...

    def verify(
        self,
        path: str | os.PathLike[str],
        *,
        bundled: BundledProgram | None = None,
        rtol: float = 1e-5,
        atol: float = 1e-8,
        etdump: str | os.PathLike[str] | None = None,
        debug_buffer: str | os.PathLike[str] | None = None,
        debug_buffer_size: int = 16 << 20,
    ) -> list[OutputComparison]:
        """Run every test case of a bundled program whose program is a real ``.pte`` on the
        real runtime: one comparison per case, in order (``etdump``: write the runs')."""
        ...

    def generate_etrecord(
        self,
        et_record: str | os.PathLike[str] | BinaryIO,
        edge_dialect_program: object,
        executorch_program: object,
        exported_program: object = None,
        *,
        representative_inputs: object = None,
    ) -> Path | None:
        """Write the ETRecord of a model lowered by real ExecuTorch (its
        ``EdgeProgramManager`` and ``ExecutorchProgramManager``) with delegate-lens's writer."""
        ...
