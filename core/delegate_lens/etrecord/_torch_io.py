"""Deserializing an ETRecord's programs into live torch objects (imports torch).

Only :meth:`ETRecord.edge_dialect_program` and :attr:`ETRecord.exported_program` come
here. Programs are read with torch.export's serializer from the four artifacts of an entry
(``<entry>``, ``<entry>_state_dict``, ``<entry>_constants``, ``<entry>_example_inputs``).

Reference ETRecords are written by ExecuTorch's copy of that serializer: an older schema
version, and edge-dialect targets (``executorch.exir.dialects.edge.ops.aten.X``). We accept
the older schema and read edge-dialect ATen operators as the ATen operators they wrap;
the operators only ExecuTorch's toolchain registers that its graphs hold (``dim_order_ops``,
``quantized_decomposed``) are registered first (:mod:`delegate_lens.etrecord._executorch_ops`).
Another operator torch cannot resolve is an ETRecordFormatError naming it.
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import ETRecordFormatError
from delegate_lens.etrecord._entries import ARTIFACT_SUFFIXES, EXPORTED_PROGRAM
from delegate_lens.etrecord._maps import load_json

if TYPE_CHECKING:
    from torch.export import ExportedProgram

    from delegate_lens.etrecord._record import ETRecord


_EDGE_PREFIX = "executorch.exir.dialects.edge.ops."


def _rewrite_edge_targets(value: object) -> int:
    """Replace edge-dialect targets by the ATen ``torch.ops`` targets they wrap, in place."""
    count = 0
    if isinstance(value, dict):
        target = value.get("target")
        if isinstance(target, str) and target.startswith(_EDGE_PREFIX):
            value["target"] = "torch.ops." + target[len(_EDGE_PREFIX) :]
            count += 1
        for item in value.values():
            if isinstance(item, (dict, list)):
                count += _rewrite_edge_targets(item)
    elif isinstance(value, list):
        for item in value:
            count += _rewrite_edge_targets(item)
    return count


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _explain(exc: BaseException) -> str:
    """One readable reason, naming an operator torch could not resolve."""
    texts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(texts) < 5:
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    text = "\n".join(texts)
    unresolved = re.search(r"resolve (\S+) to an operator", text) or re.search(
        r"Node\(target='([^']+)'", text
    )
    if unresolved and "resolve" in text:
        op = unresolved.group(1).removeprefix("torch.ops.")
        return (
            f"operator {op} is not registered in torch (a custom operator: import the "
            "module that registers it before loading this program)"
        )
    return f"{_first_line(exc):.300}"


def load_program(record: ETRecord, entry: str, method: str) -> ExportedProgram:
    """Deserialize ``entry`` (and its artifacts) of ``record`` with torch.export's serializer."""
    import torch
    from torch._export.serde.serialize import SerializedArtifact, SerializeError, deserialize

    from delegate_lens.etrecord._executorch_ops import ensure_executorch_ops, namespaces_in

    data = record._source.read_many([entry, *(entry + s for s in ARTIFACT_SUFFIXES)])
    program_json = data[entry]
    ensure_executorch_ops(namespaces_in(program_json))  # dim_order_ops, quantized_decomposed
    document = load_json(program_json, f"{record.origin}: entry {entry!r}")
    if _rewrite_edge_targets(document) and isinstance(document, dict):
        # ExecuTorch's EDGE verifier is not registered in plain torch: use torch's default.
        document["verifiers"] = []
        program_json = json.dumps(document).encode("utf-8")

    def attempt(skip_version_check: bool) -> ExportedProgram:
        artifact = SerializedArtifact(
            program_json,
            data[entry + "_state_dict"],
            data[entry + "_constants"],
            data[entry + "_example_inputs"],
        )
        return deserialize(artifact, _unsafe_skip_version_check=skip_version_check)

    try:
        try:
            program = attempt(False)
        except SerializeError as exc:
            if "schema version" not in str(exc):
                raise
            # Written by an older copy of the serializer (ExecuTorch's): read it anyway.
            program = attempt(True)
    except Exception as exc:
        raise ETRecordFormatError(
            f"{record.origin}: entry {entry!r} cannot be deserialized by torch "
            f"{torch.__version__}: {_explain(exc)}"
        ) from None
    _restore_debug_handles(record, program, entry, method)
    return program


def _restore_debug_handles(
    record: ETRecord, program: ExportedProgram, entry: str, method: str
) -> None:
    """torch's deserializer drops ``debug_handle`` metadata: put it back on each node."""
    graph = record.exported_program_graph() if entry == EXPORTED_PROGRAM else record.graph(method)
    if graph is None:
        return
    for node in program.graph_module.graph.nodes:
        info = graph.nodes_by_name.get(node.name)
        if info is not None and info.debug_handle is not None:
            node.meta["debug_handle"] = info.debug_handle


def encode_inputs(inputs: Sequence[object]) -> bytes:
    """The ``representative_inputs`` entry for ``inputs``: ``torch.save`` of the list of
    inputs (tensors, numbers), as the reference writes it."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save([to_torch(x) for x in inputs], buffer)
    return buffer.getvalue()


def to_torch(value: object) -> Any:
    """A numpy array as a torch tensor (a tensor detached, on the CPU); else as it is."""
    import numpy as np
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    return value


@contextlib.contextmanager
def quiet_torch() -> Iterator[None]:
    """Hide torch 2.13's FutureWarning about its own pytree internals (retrace, deepcopy)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*LeafSpec", category=FutureWarning)
        yield
