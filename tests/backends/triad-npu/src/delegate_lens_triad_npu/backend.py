"""TriadNPU ahead of time: the partitioner and preprocess (its blob and Debug Handle Map).

Preprocess compiles a partition into a JSON blob of kernels and records each with a
generated identifier: ``add`` + ``relu`` fuse into ``add_relu`` (one identifier, two
handles); ``tanh`` decomposes into ``exp2x``, ``recip`` and ``affine`` (three identifiers,
one handle); one more identifier, the per-call summary, covers the whole partition.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import torch
from torch.export.graph_signature import InputKind
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from delegate_lens import (
    DelegateMappingBuilder,
    DelegationSpec,
    Partitioner,
    PartitionResult,
    PreprocessResult,
)

aten = torch.ops.aten
KERNEL_OF = {
    aten.add.Tensor: "add",
    aten.sub.Tensor: "sub",
    aten.mul.Tensor: "mul",
    aten.relu.default: "relu",
    aten.tanh.default: "tanh",
}


class TriadSupport(OperatorSupportBase):
    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        if node.op != "call_function" or node.target not in KERNEL_OF or node.kwargs:
            return False
        if not all(isinstance(arg, torch.fx.Node) for arg in node.args):
            return False  # tensor operands only
        val = node.meta.get("val")
        return isinstance(val, torch.Tensor) and val.dtype == torch.float32


class TriadPartitioner(Partitioner):
    def __init__(self, backend_id: str, compile_specs: Sequence[Any] = ()) -> None:
        self.spec = DelegationSpec(backend_id, list(compile_specs))

    def partition(self, exported_program: Any) -> PartitionResult:
        gm = exported_program.graph_module
        tags = {}
        proposed = CapabilityBasedPartitioner(gm, TriadSupport()).propose_partitions()
        for i, part in enumerate(proposed):
            for node in part.nodes:
                node.meta["delegation_tag"] = f"triad_{i}"
            tags[f"triad_{i}"] = self.spec
        return PartitionResult(exported_program, tags)


def preprocess(edge_program: Any) -> PreprocessResult:
    builder = DelegateMappingBuilder(generated_identifiers=True)
    graph = edge_program.graph_module.graph
    user_inputs = {
        s.arg.name
        for s in edge_program.graph_signature.input_specs
        if s.kind == InputKind.USER_INPUT
    }
    inputs = [n.name for n in graph.nodes if n.op == "placeholder" and n.name in user_inputs]
    slot: dict[torch.fx.Node, str] = {n: n.name for n in graph.nodes if n.name in inputs}
    ops: list[dict[str, Any]] = []
    fused: set[torch.fx.Node] = set()

    def emit(kernel: str, nodes: list[torch.fx.Node], args: list[str], out: str) -> None:
        ident = builder.insert_delegate_mapping_entry(nodes=nodes)
        ops.append(
            {"id": ident, "kernel": kernel, "args": args, "out": out, "node": nodes[-1].name}
        )

    for node in graph.nodes:
        if node.op != "call_function" or node in fused:
            continue
        args = [slot[a] for a in node.args]
        kernel = KERNEL_OF[node.target]
        users = list(node.users)
        if kernel == "add" and len(users) == 1 and users[0].target == aten.relu.default:
            emit("add_relu", [node, users[0]], args, users[0].name)  # fusion
            slot[node] = slot[users[0]] = users[0].name
            fused.add(users[0])
            continue
        if kernel == "tanh":  # decomposition: 1 - 2 / (exp(2x) + 1)
            emit("exp2x", [node], args, node.name + ".e")
            emit("recip", [node], [node.name + ".e"], node.name + ".r")
            emit("affine", [node], [node.name + ".r"], node.name)
        else:
            emit(kernel, [node], args, node.name)
        slot[node] = node.name
    every_handle = [n.meta["debug_handle"] for n in graph.nodes if "debug_handle" in n.meta]
    summary = builder.insert_delegate_mapping_entry(handles=every_handle)
    output = next(n for n in graph.nodes if n.op == "output")
    blob = {
        "inputs": inputs,
        "ops": ops,
        "outputs": [slot[n] for n in output.args[0]],
        "summary": summary,
    }
    return PreprocessResult(json.dumps(blob).encode(), builder.get_delegate_mapping())
