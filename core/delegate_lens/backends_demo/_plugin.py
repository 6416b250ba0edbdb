"""Hooks of the demo backend: a built-in plugin named ``demo_backend`` (it ships in the
package, so it stays available with ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD`` set; block it
with ``-p no:demo_backend``).

One plugin module answers every hook for its backend id and returns ``None`` for any
other backend, so it coexists with other backends. Importing it is cheap: torch and numpy
code is imported inside the hooks that need it (the Inspector loads this plugin too, and
must stay torch-free).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from delegate_lens import hookimpl
from delegate_lens.backends_demo._backend import BACKEND_ID

if TYPE_CHECKING:
    import numpy.typing as npt
    from torch.export import ExportedProgram

    from delegate_lens.backend import CompileSpec, Partitioner, PreprocessResult
    from delegate_lens.hookspecs import RuntimeBackend
    from delegate_lens.testing import BackendProfile


@hookimpl
def dl_partitioner(backend_id: str, compile_specs: Sequence[CompileSpec]) -> Partitioner | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._partitioner import DemoPartitioner

    return DemoPartitioner(compile_specs)


@hookimpl
def dl_preprocess(
    backend_id: str, edge_program: ExportedProgram, compile_specs: Sequence[CompileSpec]
) -> PreprocessResult | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._preprocess import preprocess

    return preprocess(edge_program, compile_specs)


@hookimpl
def dl_runtime_backend(backend_id: str) -> RuntimeBackend | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._runtime import DemoRuntime

    return DemoRuntime()


@hookimpl
def dl_encode_delegate_metadata(backend_id: str, metadata: object) -> bytes | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._metadata import encode

    if not isinstance(metadata, Mapping):
        raise TypeError(
            f"DemoBackend metadata must be a mapping {{kernel, flops, bytes_moved}}, "
            f"not {type(metadata).__name__}"
        )
    return encode(metadata)


@hookimpl
def dl_parse_delegate_metadata(
    backend_id: str, metadatas: Sequence[bytes]
) -> dict[str, list[str | int]] | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._metadata import parse

    return parse(metadatas)


@hookimpl
def dl_intermediate_output(
    backend_id: str, identifier: int | str, value: object
) -> npt.ArrayLike | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._numerics import dequantize

    return dequantize(value)  # int8 mode logs [values, scale]; other values stay as logged


@hookimpl
def dl_testing_profile(backend_id: str) -> BackendProfile | None:
    if backend_id != BACKEND_ID:
        return None
    from delegate_lens.backends_demo._testing import profile

    return profile()
