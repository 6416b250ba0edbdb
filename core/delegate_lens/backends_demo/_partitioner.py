"""DemoPartitioner: which nodes the demo backend takes.

Supported (float32 only): ``convolution`` (2-D, not transposed), ``linear``, ``addmm``
(beta = alpha = 1), ``mm``, ``relu``, ``tan``, ``sin``, ``cos``, ``add``, ``mul``,
``sigmoid``; plus the transpose of a constant weight feeding a supported matmul (folded at
compile time). Everything else stays on the portable path. Connected supported nodes are
grouped into partitions with torch's ``CapabilityBasedPartitioner``, which never makes a
partition that would need a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.export.graph_signature import InputKind
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from delegate_lens import CompileSpec, DelegationSpec, Partitioner, PartitionResult
from delegate_lens.backends_demo._backend import BACKEND_ID

if TYPE_CHECKING:
    from torch.export import ExportedProgram


aten = torch.ops.aten
_SUPPORTED = {
    aten.convolution.default,
    aten.linear.default,
    aten.addmm.default,
    aten.mm.default,
    aten.relu.default,
    aten.tan.default,
    aten.sin.default,
    aten.cos.default,
    aten.add.Tensor,
    aten.add.Scalar,
    aten.mul.Tensor,
    aten.mul.Scalar,
    aten.sigmoid.default,
}
_TRANSPOSES = {aten.permute.default, aten.t.default, aten.transpose.int}


def _is_float32(value: object) -> bool:
    if isinstance(value, torch.fx.Node):
        val = value.meta.get("val")
        return isinstance(val, torch.Tensor) and val.dtype == torch.float32
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Support(OperatorSupportBase):
    def __init__(self, exported_program: ExportedProgram) -> None:
        self.constant_inputs = {
            spec.arg.name
            for spec in exported_program.graph_signature.input_specs
            if spec.kind != InputKind.USER_INPUT
        }

    def is_node_supported(self, submodules: object, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target in _TRANSPOSES:
            return self._is_weight_transpose(node)
        if node.target not in _SUPPORTED or not _is_float32(node):
            return False
        tensors = [a for a in node.args if isinstance(a, torch.fx.Node)]
        if not all(_is_float32(a) for a in tensors):
            return False
        if node.target == aten.convolution.default:
            transposed = node.args[6]
            val = node.args[0].meta.get("val")  # type: ignore[union-attr]
            return bool(not transposed and val is not None and val.dim() == 4)
        if node.target == aten.addmm.default:
            return bool(node.kwargs.get("beta", 1) == 1 and node.kwargs.get("alpha", 1) == 1)
        if node.target in (aten.add.Tensor, aten.mul.Tensor, aten.add.Scalar, aten.mul.Scalar):
            return all(_is_float32(a) for a in node.args[:2])
        return True

    def _is_weight_transpose(self, node: torch.fx.Node) -> bool:
        source = node.args[0]
        if not (
            isinstance(source, torch.fx.Node)
            and source.op == "placeholder"
            and source.name in self.constant_inputs
            and _is_float32(source)
        ):
            return False
        return bool(node.users) and all(
            u.op == "call_function" and u.target in (aten.addmm.default, aten.mm.default)
            for u in node.users
        )


class DemoPartitioner(Partitioner):
    """Tag every supported region of an edge program for the ``DemoBackend``.

    :param compile_specs: passed on to preprocess; ``CompileSpec("identifiers", b"str")``
        asks for readable string identifiers instead of generated ints.
    """

    def __init__(self, compile_specs: Sequence[CompileSpec] = ()) -> None:
        self.delegation_spec = DelegationSpec(BACKEND_ID, list(compile_specs))

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        graph_module = exported_program.graph_module
        partitioner = CapabilityBasedPartitioner(
            graph_module, _Support(exported_program), allows_single_node_partition=True
        )
        tags: dict[str, DelegationSpec] = {}
        for partition in partitioner.propose_partitions():
            nodes = [n for n in partition.nodes if n.target not in _TRANSPOSES]
            if not nodes:  # a lone weight transpose is not worth a delegate call
                continue
            tag = f"demo_{len(tags)}"
            for node in partition.nodes:
                node.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
        return PartitionResult(exported_program, tags)

    def ops_to_not_decompose(self, exported_program: object) -> tuple[list[Any], Any]:
        """Keep ``linear`` whole so it can fuse with a following ``relu``."""
        return [aten.linear.default], None
