"""The TriadNPU plugin (entry point ``triad_npu``): every hook answers for ``TriadNPU`` only.

Cheap to import: the backend's modules (torch, numpy) load inside the hooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from delegate_lens import hookimpl
from delegate_lens_triad_npu import BACKEND


@hookimpl
def dl_partitioner(backend_id: str, compile_specs: Sequence[Any]) -> Any | None:
    if backend_id != BACKEND:
        return None
    from delegate_lens_triad_npu.backend import TriadPartitioner

    return TriadPartitioner(backend_id, compile_specs)


@hookimpl
def dl_preprocess(backend_id: str, edge_program: Any, compile_specs: Sequence[Any]) -> Any | None:
    if backend_id != BACKEND:
        return None
    from delegate_lens_triad_npu.backend import preprocess

    return preprocess(edge_program)


@hookimpl
def dl_runtime_backend(backend_id: str) -> Any | None:
    if backend_id != BACKEND:
        return None
    from delegate_lens_triad_npu.runtime import TriadRuntime

    return TriadRuntime()


@hookimpl
def dl_encode_delegate_metadata(backend_id: str, metadata: Any) -> bytes | None:
    if backend_id != BACKEND:
        return None
    from delegate_lens_triad_npu.metadata import encode

    return encode(metadata)


@hookimpl
def dl_parse_delegate_metadata(backend_id: str, metadatas: Sequence[bytes]) -> Any | None:
    if backend_id != BACKEND:
        return None
    from delegate_lens_triad_npu.metadata import parse

    return parse(metadatas)


@hookimpl
def dl_testing_profile(backend_id: str) -> Any | None:
    if backend_id != BACKEND:
        return None
    from delegate_lens.testing import BackendProfile

    return BackendProfile(ops=("add", "sub", "mul", "relu", "tanh"))
