"""Deliberately broken backends for the conformance suite's tests (a delegate-lens plugin
module: register it with ``pm.register(broken_backends)`` or ``-p broken_backends``).

Each backend ``Broken/<flaw>`` is the demo backend with one flaw, meant to break exactly
the rule :data:`FLAWS` names, or to leave the suite nothing to check (:data:`VACUOUS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from delegate_lens import hookimpl

FLAWS = {
    "handle-outside": "handles-in-partition",  # a map entry names a handle of no partition node
    "orphan-identifier": "no-orphan-events",  # the runtime logs an identifier not in the map
    "unreadable-metadata": "metadata-round-trip",  # metadata its own parser rejects
    "unparsed-metadata": "metadata-round-trip",  # no parser (only the built-in fallback)
    "end-before-start": "delegate-event-times",  # an event ending before it starts
    "wrong-output": "outputs-match-eager",  # outputs off by one
    "missing-fused-node": "delegated-nodes-covered",  # the fused relu is in no entry
    # the fused linear_relu maps only the linear; the relu is in the per-call summary only
    "summary-hides-fused-node": "delegated-nodes-covered",
}
VACUOUS = {
    "no-ops": "declares no ops",  # its profile: no model can be generated
}
"""Backends the suite cannot check at all: ``check_backend`` must raise, not pass (as must
``max_examples=0`` with no models, on any backend)."""
PREFIX = "Broken/"


def _flaw(backend_id: str) -> str | None:
    name = backend_id[len(PREFIX) :]
    if backend_id.startswith(PREFIX) and (name in FLAWS or name in VACUOUS):
        return name
    return None


@hookimpl
def dl_partitioner(backend_id: str, compile_specs: Sequence[Any]) -> Any | None:
    if _flaw(backend_id) is None:
        return None
    from delegate_lens import DelegationSpec
    from delegate_lens.backends_demo._partitioner import DemoPartitioner

    partitioner = DemoPartitioner(compile_specs)
    partitioner.delegation_spec = DelegationSpec(backend_id, list(compile_specs))
    return partitioner


@hookimpl
def dl_preprocess(backend_id: str, edge_program: Any, compile_specs: Sequence[Any]) -> Any | None:
    flaw = _flaw(backend_id)
    if flaw is None:
        return None
    import torch

    from delegate_lens import PreprocessResult
    from delegate_lens.backends_demo._preprocess import preprocess

    result = preprocess(edge_program, compile_specs)
    mapping = dict(result.debug_handle_map or {})
    nodes = [n for n in edge_program.graph.nodes if n.op == "call_function"]
    if flaw == "handle-outside":
        handles = [n.meta["debug_handle"] for n in nodes if "debug_handle" in n.meta]
        first = next(iter(mapping))
        mapping[first] = (*mapping[first], max(handles) + 1000)
    elif flaw == "missing-fused-node":
        fused = {
            n.meta["debug_handle"]
            for n in nodes
            if n.target == torch.ops.aten.relu.default
            and n.args[0].target == torch.ops.aten.linear.default
        }
        mapping = {
            ident: tuple(h for h in hs if h not in fused) if len(hs) > 1 else hs
            for ident, hs in mapping.items()
        }
    elif flaw == "summary-hides-fused-node":
        from delegate_lens.backends_demo._blob import from_bytes

        fused = {
            n.meta["debug_handle"]
            for n in nodes
            if n.target == torch.ops.aten.relu.default
            and n.args[0].target == torch.ops.aten.linear.default
        }
        summary = from_bytes(result.processed_bytes).summary_identifier
        mapping = {
            ident: hs if ident == summary else tuple(h for h in hs if h not in fused) or hs
            for ident, hs in mapping.items()
        }
    return PreprocessResult(result.processed_bytes, mapping)


@hookimpl
def dl_runtime_backend(backend_id: str) -> Any | None:
    flaw = _flaw(backend_id)
    if flaw is None:
        return None
    from delegate_lens.backends_demo._runtime import DemoRuntime
    from delegate_lens.runtime import event_tracer_log_profiling_delegate

    class BrokenRuntime(DemoRuntime):
        def execute(self, context: Any, handle: Any, args: Sequence[Any]) -> list[Any]:
            outputs = super().execute(context, handle, args)
            tracer = context.event_tracer
            if tracer is not None and flaw in ("orphan-identifier", "end-before-start"):
                t = tracer.clock()
                name, ddi = (
                    ("ghost_kernel", None) if flaw == "orphan-identifier" else (handle.summary_ids)
                )
                end = t if flaw == "orphan-identifier" else t - 1000
                event_tracer_log_profiling_delegate(
                    tracer, name, ddi, t, end, handle.summary_metadata
                )
            if flaw == "wrong-output":
                outputs = [o + 1 for o in outputs]
            return outputs

    return BrokenRuntime()


@hookimpl
def dl_encode_delegate_metadata(backend_id: str, metadata: Any) -> bytes | None:
    flaw = _flaw(backend_id)
    if flaw is None:
        return None
    from delegate_lens.backends_demo._metadata import encode

    data = encode(metadata)
    return b"\x09" + data[1:] if flaw == "unreadable-metadata" else data  # version 9


@hookimpl
def dl_parse_delegate_metadata(backend_id: str, metadatas: Sequence[bytes]) -> Any | None:
    if _flaw(backend_id) in (None, "unparsed-metadata"):
        return None
    from delegate_lens.backends_demo._metadata import parse

    return parse(metadatas)


@hookimpl
def dl_testing_profile(backend_id: str) -> Any | None:
    flaw = _flaw(backend_id)
    if flaw is None:
        return None
    from delegate_lens.backends_demo._testing import profile

    if flaw == "no-ops":
        from delegate_lens.testing import BackendProfile

        return BackendProfile(ops=())
    return profile()
