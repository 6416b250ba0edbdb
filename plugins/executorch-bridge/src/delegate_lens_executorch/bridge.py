"""The object the core gets from ``dl_executorch_bridge``: one method per use.

Each method imports what it needs when called (loading the plugin imports nothing heavy).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Bridge"]


class Bridge:
    """Real ExecuTorch for the core: conformance, profiling, bundled programs."""

    name = "executorch"

    def check_backend(self, partitioner: Any, **kwargs: Any) -> Any:
        """See :func:`delegate_lens_executorch.conformance.check_partitioner`."""
        from delegate_lens_executorch.conformance import check_partitioner

        return check_partitioner(partitioner, **kwargs)

    def profile(self, program: Any, **kwargs: Any) -> Any:
        """See :func:`delegate_lens_executorch.profiling.profile`."""
        from delegate_lens_executorch.profiling import profile

        return profile(program, **kwargs)

    def verify(self, path: Any, **kwargs: Any) -> Any:
        """See :func:`delegate_lens_executorch.verify.verify_bundled`."""
        from delegate_lens_executorch.verify import verify_bundled

        return verify_bundled(path, **kwargs)

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules :meth:`check_backend` checks (the test kit's and ``numeric-gaps``)."""
        from delegate_lens_executorch.conformance import BRIDGE_RULES

        return tuple(BRIDGE_RULES)

    @property
    def profile_files(self) -> tuple[str, ...]:
        """The names of the files :meth:`profile` may write to its output folder."""
        from delegate_lens_executorch.profiling import PROFILE_FILES

        return PROFILE_FILES

    def generate_etrecord(
        self, et_record: Any, edge: Any, program: Any, *args: Any, **kw: Any
    ) -> Any:
        """See :func:`delegate_lens_executorch.etrecord.generate_etrecord`."""
        from delegate_lens_executorch.etrecord import generate_etrecord

        return generate_etrecord(et_record, edge, program, *args, **kw)
