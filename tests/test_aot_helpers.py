"""Shared pieces of the AOT tests (no tests here): small models, partitioners and test backend plugins."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from delegate_lens import (
    DelegateMappingBuilder,
    DelegationSpec,
    Partitioner,
    PartitionResult,
    PreprocessResult,
    hookimpl,
)
from delegate_lens.pluginmanager import get_plugin_manager, reset_plugin_manager

AUTOLOAD_ENV = "DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD"


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(4, 8)
        self.ln = torch.nn.LayerNorm(8)
        self.l2 = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.l1(x))
        return self.l2(self.ln(y)).softmax(-1), y + 1


def export_mlp() -> torch.export.ExportedProgram:
    torch.manual_seed(0)
    return torch.export.export(MLP().eval(), (torch.randn(2, 4),))


def op_nodes(program: Any) -> list[torch.fx.Node]:
    return [n for n in program.graph.nodes if n.op == "call_function"]


class TagPartitioner(Partitioner):
    """Tags call_function nodes by a rule: ``choose(node) -> tag or None``."""

    def __init__(
        self,
        choose: Callable[[torch.fx.Node], str | None],
        backends: dict[str, str] | str,
    ) -> None:
        self.choose = choose
        self.backends = backends  # tag -> backend id, or one backend id for every tag

    def partition(self, exported_program: Any) -> PartitionResult:
        used = set()
        for node in exported_program.graph.nodes:
            if node.op != "call_function":
                continue
            tag = self.choose(node)
            if tag is not None:
                node.meta["delegation_tag"] = tag
                used.add(tag)
        return PartitionResult(
            exported_program, {t: DelegationSpec(self.backend_of(t), []) for t in sorted(used)}
        )

    def backend_of(self, tag: str) -> str:
        return self.backends if isinstance(self.backends, str) else self.backends[tag]


def handles_partitioner(groups: dict[str, Sequence[int]], backend: str) -> TagPartitioner:
    """Tag nodes whose handle is in ``groups[tag]``."""
    owner = {h: tag for tag, hs in groups.items() for h in hs}
    return TagPartitioner(
        lambda n: owner.get(n.meta.get("debug_handle")), {t: backend for t in groups}
    )


class RecordingBackend:
    """A test ``dl_preprocess`` plugin: one entry per operator node, and a record of calls.

    ``mode``: "generated" (ids 0, 1, ...), "int" (manual ints), "str" (manual strings),
    "fuse" (random groups of nodes fused under one id, with upserts), "bad" (names a
    handle outside the partition), "none" (no map).
    """

    def __init__(self, backend_id: str, mode: str = "generated", seed: int = 0) -> None:
        self.backend_id = backend_id
        self.mode = mode
        self.rng = random.Random(seed)
        self.calls: list[dict[str, Any]] = []

    @hookimpl
    def dl_preprocess(
        self, backend_id: str, edge_program: Any, compile_specs: Sequence[Any]
    ) -> PreprocessResult | None:
        if backend_id != self.backend_id:
            return None
        nodes = [n for n in edge_program.graph.nodes if n.op == "call_function"]
        handles = {n.meta.get("debug_handle") for n in nodes}
        self.calls.append({"handles": handles, "program": edge_program})
        if self.mode == "none":
            return PreprocessResult(b"blob")
        if self.mode == "generated":
            b = DelegateMappingBuilder(generated_identifiers=True)
            for node in nodes:
                b.insert_delegate_mapping_entry(nodes=node)
        elif self.mode in ("int", "str"):
            b = DelegateMappingBuilder()
            for i, node in enumerate(nodes):
                ident: int | str = i * 3 if self.mode == "int" else f"{node.name}#{i}"
                b.insert_delegate_mapping_entry(nodes=[node], identifier=ident)
        elif self.mode == "fuse":
            b = DelegateMappingBuilder()
            for node in nodes:
                ident = self.rng.choice(["fused_a", "fused_b", 7, 11])
                b.upsert_delegate_mapping_entry([node], identifier=ident)
        elif self.mode == "bad":
            b = DelegateMappingBuilder()
            b.insert_delegate_mapping_entry(handles=[max(handles) + 1000], identifier="bogus")
        else:
            raise AssertionError(self.mode)
        return PreprocessResult(
            f"{self.backend_id}:{len(nodes)}".encode(), b.get_delegate_mapping()
        )


@contextmanager
def registered(*plugins: Any) -> Iterator[Any]:
    """A fresh plugin manager (built-ins only) with ``plugins`` registered."""
    old = os.environ.get(AUTOLOAD_ENV)
    os.environ[AUTOLOAD_ENV] = "1"
    reset_plugin_manager()
    try:
        pm = get_plugin_manager()
        for plugin in plugins:
            pm.register(plugin)
        yield pm
    finally:
        if old is None:
            os.environ.pop(AUTOLOAD_ENV, None)
        else:
            os.environ[AUTOLOAD_ENV] = old
        reset_plugin_manager()
