"""Planted bugs in the TriadNPU test backend (``tests/backends/triad-npu``), the six of
issue 33, each a variant of it under its own backend id ``TriadBug/<bug>`` (a delegate-lens
plugin module: register it with ``pm.register(triad_bugs)``).

:data:`BUGS` names each bug and the rules of the test kit that must catch it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from delegate_lens import hookimpl

BUGS: dict[str, tuple[str, ...]] = {
    # the element count packed big-endian, parsed little-endian
    "metadata-byte-order": ("metadata-round-trip",),
    # tanh's last kernel (affine) mapped to the sub feeding tanh
    "wrong-handle": ("numeric-gaps",),
    # the sub kernel logs under the mul kernel's identifier: two rows of one, none of the other
    "logged-under-other-id": ("every-identifier-logged", "no-identifier-twice"),
    # tanh's recip kernel is never logged
    "kernel-never-logged": ("every-identifier-logged",),
    # tanh's exp2x kernel is logged twice per call
    "kernel-logged-twice": ("no-identifier-twice",),
    # each kernel logs the output of the one before it (the first: the call's input)
    "logs-previous-output": ("outputs-belong-to-ops", "numeric-gaps"),
}
PREFIX = "TriadBug/"


def _bug(backend_id: str) -> str | None:
    name = backend_id[len(PREFIX) :]
    return name if backend_id.startswith(PREFIX) and name in BUGS else None


@hookimpl
def dl_partitioner(backend_id: str, compile_specs: Sequence[Any]) -> Any | None:
    if _bug(backend_id) is None:
        return None
    from delegate_lens_triad_npu.backend import TriadPartitioner

    return TriadPartitioner(backend_id, compile_specs)


@hookimpl
def dl_preprocess(backend_id: str, edge_program: Any) -> Any | None:
    bug = _bug(backend_id)
    if bug is None:
        return None
    import json

    import torch
    from delegate_lens_triad_npu.backend import preprocess

    from delegate_lens import PreprocessResult

    result = preprocess(edge_program)
    if bug != "wrong-handle":
        return result
    nodes = {n.name: n for n in edge_program.graph.nodes}
    mapping = dict(result.debug_handle_map)
    for op in json.loads(result.processed_bytes)["ops"]:
        tanh = nodes[op["node"]]
        feeding = tanh.args[0] if tanh.args else None
        if (
            op["kernel"] == "affine"
            and isinstance(feeding, torch.fx.Node)
            and feeding.target == torch.ops.aten.sub.Tensor
        ):
            mapping[op["id"]] = (feeding.meta["debug_handle"],)
    return PreprocessResult(result.processed_bytes, mapping)


@hookimpl
def dl_runtime_backend(backend_id: str) -> Any | None:
    bug = _bug(backend_id)
    if bug is None:
        return None
    from delegate_lens_triad_npu.runtime import TriadRuntime

    from delegate_lens.runtime import (
        event_tracer_end_profiling_delegate,
        event_tracer_log_output_delegate,
        event_tracer_start_profiling_delegate,
    )

    class BuggyRuntime(TriadRuntime):
        def init(self, processed_bytes: bytes, compile_specs: Sequence[Any]) -> dict[str, Any]:
            handle = super().init(processed_bytes, compile_specs)
            self.mul_id = next((o["id"] for o in handle["ops"] if o["kernel"] == "mul"), None)
            return handle

        def log_kernel(
            self, tracer: Any, op: dict[str, Any], entry: Any, out: Any, previous: Any
        ) -> None:
            kernel, ident = op["kernel"], op["id"]
            metadata = {"kernel": kernel, "elements": int(out.size)}
            if bug == "kernel-never-logged" and kernel == "recip":
                return
            if bug == "logged-under-other-id" and kernel == "sub" and self.mul_id is not None:
                ident = self.mul_id
                entry = event_tracer_start_profiling_delegate(tracer, None, ident)
            event_tracer_end_profiling_delegate(tracer, entry, metadata)
            if bug == "kernel-logged-twice" and kernel == "exp2x":
                again = event_tracer_start_profiling_delegate(tracer, None, ident)
                event_tracer_end_profiling_delegate(tracer, again, metadata)
            logged = previous if bug == "logs-previous-output" else out
            event_tracer_log_output_delegate(tracer, None, ident, logged)

    return BuggyRuntime()


@hookimpl
def dl_encode_delegate_metadata(backend_id: str, metadata: Any) -> bytes | None:
    bug = _bug(backend_id)
    if bug is None:
        return None
    from delegate_lens_triad_npu.metadata import KERNELS, VERSION, encode

    if bug == "metadata-byte-order":
        code = KERNELS.index(str(metadata["kernel"]))
        return struct.pack("<BB", VERSION, code) + struct.pack(">I", int(metadata["elements"]))
    return encode(metadata)


@hookimpl
def dl_parse_delegate_metadata(backend_id: str, metadatas: Sequence[bytes]) -> Any | None:
    if _bug(backend_id) is None:
        return None
    from delegate_lens_triad_npu.metadata import parse

    return parse(metadatas)


@hookimpl
def dl_testing_profile(backend_id: str) -> Any | None:
    if _bug(backend_id) is None:
        return None
    from delegate_lens.testing import BackendProfile

    return BackendProfile(ops=("add", "sub", "mul", "relu", "tanh"))
