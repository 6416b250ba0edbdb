"""What the demo backend declares to the conformance suite (``dl_testing_profile``)."""

from __future__ import annotations

from typing import Any

from delegate_lens.backend import CompileSpec
from delegate_lens.testing import BackendProfile


def _metadata() -> Any:
    from hypothesis import strategies as st

    return st.fixed_dictionaries(
        {
            "kernel": st.text(max_size=24),
            "flops": st.integers(0, 2**64 - 1),
            "bytes_moved": st.integers(0, 2**64 - 1),
        }
    )


def profile() -> BackendProfile:
    """Ops the demo compiles, both identifier modes, its metadata records."""
    return BackendProfile(
        ops=("linear", "linear_relu", "relu", "sigmoid", "sin", "cos", "tan", "add", "mul"),
        compile_specs=(
            (CompileSpec("identifiers", b"int"),),
            (CompileSpec("identifiers", b"str"),),
        ),
        metadata=_metadata,
    )
