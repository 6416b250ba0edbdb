"""How much of a lowered graph went to delegates: counts, a per-operator table, a tree view.

``get_delegation_info(graph_module)`` takes a lowered graph module (or an
``ExportedProgram`` / ``EdgeProgramManager``, whose ``forward`` is used) and counts the
``call_function`` nodes inside delegates (in their partitions' graphs) and outside them, as
the reference counts them (``getitem`` nodes too; not the delegate calls). Op types are the
reference's: node names without their number (``aten_mul_tensor`` on an edge graph,
``conv2d`` on an exported one).
``print_delegation_info`` prints the summary and the per-operator table in the reference's
grid.
"""

from __future__ import annotations

import operator
import re
from typing import Any, TextIO

import attrs
import torch

from delegate_lens._texttable import align_columns
from delegate_lens.aot._lowering import LoweredBackendModule, is_delegate_call, lowered_module_of
from delegate_lens.aot._program import op_name
from delegate_lens.errors import MissingExtraError, UsageError

COLUMNS = ("op_type", "occurrences_in_delegated_graphs", "occurrences_in_non_delegated_graphs")


@attrs.frozen
class DelegationBreakdown:
    """One operator type: how often it runs inside and outside delegates."""

    op_type: str
    delegated: int = 0
    non_delegated: int = 0


@attrs.frozen
class DelegationInfo:
    """What :func:`get_delegation_info` found."""

    num_delegated_subgraphs: int
    num_delegated_nodes: int
    num_non_delegated_nodes: int
    delegation_by_operator: dict[str, DelegationBreakdown]
    backends: dict[str, int] = attrs.field(factory=dict)
    """Delegated subgraphs per backend id."""

    def rows(self) -> list[tuple[str, int, int]]:
        """``(op_type, delegated, non_delegated)`` sorted by op type, then a ``Total`` row."""
        out = [
            (b.op_type, b.delegated, b.non_delegated)
            for _, b in sorted(self.delegation_by_operator.items())
        ]
        out.append(("Total", self.num_delegated_nodes, self.num_non_delegated_nodes))
        return out

    def get_summary(self) -> str:
        lines = [
            f"Total delegated subgraphs: {self.num_delegated_subgraphs}",
            f"Number of delegated nodes: {self.num_delegated_nodes}",
            f"Number of non-delegated nodes: {self.num_non_delegated_nodes}",
        ]
        return "\n".join(lines) + "\n"

    def get_backend_summary(self) -> str:
        """Delegated subgraphs per backend id, one line each (an addition)."""
        return "".join(f"{b}: {n} subgraph(s)\n" for b, n in sorted(self.backends.items()))

    def get_operator_delegation_dataframe(self) -> Any:
        """The per-operator table as a pandas DataFrame (needs the ``pandas`` extra)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingExtraError(
                "get_operator_delegation_dataframe needs pandas: "
                "pip install 'delegate-lens[pandas]'"
            ) from None
        return pd.DataFrame(self.rows(), columns=list(COLUMNS))

    def format_table(self) -> str:
        """The per-operator table as aligned text."""
        rows = [COLUMNS, *((a, str(b), str(c)) for a, b, c in self.rows())]
        return "\n".join(align_columns(rows, right={1, 2}))


def _graph_module(obj: object) -> torch.fx.GraphModule:
    if isinstance(obj, torch.fx.GraphModule):
        return obj
    if hasattr(obj, "exported_program") and callable(obj.exported_program):
        obj = obj.exported_program()  # an EdgeProgramManager: its forward method
    module = getattr(obj, "graph_module", None)
    if isinstance(module, torch.fx.GraphModule):
        return module
    raise UsageError(
        f"expected a lowered graph module, an ExportedProgram or an EdgeProgramManager, "
        f"got {type(obj).__name__}"
    )


def _op_type(node: torch.fx.Node) -> str:
    """The node's name without its numeric suffix (``aten_mul_tensor_2`` -> ``aten_mul_tensor``):
    the reference's op type, whatever the graph's dialect (``conv2d`` on an exported graph)."""
    return re.sub(r"_\d+$", "", node.name)


def _target_type(node: torch.fx.Node) -> str:
    """The op type ExecuTorch's edge graph names the node by (``aten_convolution_default``)."""
    if getattr(node.target, "__name__", "") == "getitem":
        return "getitem"
    return reference_op_type(node.target)


def _lowered(gm: torch.fx.GraphModule, node: torch.fx.Node) -> Any:
    """The lowered module a ``get_attr`` node fetches, or None (duck-typed: ours or
    ExecuTorch's ``LoweredBackendModule``)."""
    if node.op != "get_attr":
        return None
    module = getattr(gm, str(node.target), None)
    if hasattr(module, "original_module") and hasattr(module, "backend_id"):
        return module
    return None


def get_delegation_info(graph_module: object) -> DelegationInfo:
    """Count delegated and non-delegated nodes of a lowered graph, as the reference counts:
    every ``call_function`` node outside delegate calls (``getitem`` ones too) is a
    non-delegated node; each lowered module the graph fetches is a delegated subgraph, and
    every ``call_function`` node of its original graph a delegated node. Op types are node
    names without their number, in the order first met."""
    gm = _graph_module(graph_module)
    by_op: dict[str, list[int]] = {}
    delegated = non_delegated = subgraphs = 0
    backends: dict[str, int] = {}
    # delegate-lens's own lowering keeps torch.export's node names (``convolution``): its
    # graphs are spelled as ExecuTorch names the same nodes (``aten_convolution_default``)
    ours = any(isinstance(_lowered(gm, node), LoweredBackendModule) for node in gm.graph.nodes)
    spell = _target_type if ours else _op_type

    def count(node: torch.fx.Node, inside: bool) -> None:
        counts = by_op.setdefault(spell(node), [0, 0])
        counts[0 if inside else 1] += 1

    for node in gm.graph.nodes:
        if node.op == "call_function":
            if _op_type(node) == "executorch_call_delegate" or is_delegate_call(node):
                continue
            non_delegated += 1
            count(node, False)
            continue
        module = _lowered(gm, node)
        if module is None:
            continue
        subgraphs += 1
        backends[module.backend_id] = backends.get(module.backend_id, 0) + 1
        for inner in module.original_module.graph.nodes:
            if inner.op == "call_function":
                delegated += 1
                count(inner, True)
    return DelegationInfo(
        subgraphs,
        delegated,
        non_delegated,
        {op: DelegationBreakdown(op, d, n) for op, (d, n) in by_op.items()},
        backends,
    )


def reference_op_type(target: object) -> str:
    """The op type as the reference's delegation info writes it (its edge node names without
    their number): ``aten.convolution.default`` -> ``aten_convolution_default``."""
    return op_name(target).replace(".", "_")


def print_delegation_info(graph_module: torch.fx.GraphModule, file: TextIO | None = None) -> None:
    """Print the summary and the per-operator table (with a ``Total`` row) in the
    reference's grid (``tabulate``'s ``fancy_grid`` of its DataFrame)."""
    from delegate_lens._texttable import format_fancy_grid

    info = get_delegation_info(graph_module)
    print(info.get_summary(), file=file)
    print(format_fancy_grid(list(COLUMNS), [list(row) for row in info.rows()]), file=file)


def format_delegated_graph(graph_module: object) -> str:
    """The graph as text, each delegate call followed by the operators it runs."""
    gm = _graph_module(graph_module)
    lines: list[str] = []

    def emit(graph: torch.fx.Graph, indent: str) -> None:
        for node in graph.nodes:
            if node.op in ("placeholder", "output", "get_attr") or node.target is operator.getitem:
                continue
            if is_delegate_call(node):
                module = lowered_module_of(node)
                lines.append(
                    f"{indent}{node.name}: delegate {module.backend_id!r} "
                    f"(tag {module.tag!r}, handles {list(module.debug_handles)})"
                )
                emit(module.original_module.graph, indent + "    ")
                continue
            handle = node.meta.get("debug_handle")
            suffix = f"  [handle {handle}]" if handle is not None else ""
            lines.append(f"{indent}{node.name}: {op_name(node.target)}{suffix}")

    emit(gm.graph, "")
    return "\n".join(lines)


def print_delegated_graph(graph_module: object) -> None:
    """Print :func:`format_delegated_graph`."""
    print(format_delegated_graph(graph_module))
