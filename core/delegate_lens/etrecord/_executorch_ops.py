"""Operators only the ExecuTorch toolchain registers, made known to torch for loading graphs.

ETRecords written by ExecuTorch 1.5.1 hold operators torch alone does not resolve:

* ``dim_order_ops`` (``_to_dim_order_copy``, ``_empty_dim_order``, ``_clone_dim_order`` and
  their ``.out`` variants): 1.5.1's default export makes them. ExecuTorch defines them in
  ``executorch.exir.passes.dim_order_ops_registry``; here they are defined with the same
  schemas in a ``FRAGMENT`` library of ours, with kernels that are the copies they stand
  for (a dim order is a memory format);
* ``quantized_decomposed`` (quantize/dequantize per tensor and per channel, choose_qparams,
  ...): every PT2E-quantized model has them. Torch itself defines them, in a module that
  nothing imports until quantization runs (``torch.ao.quantization.fx._decomposed``); that
  module is imported here, so the kernels are the very ones the reference's flow runs. A
  torch without it gets our own definitions of the per-tensor and per-channel operators
  (:mod:`delegate_lens.etrecord._quant_ops`).

Registration happens when a graph is loaded (:func:`ensure_executorch_ops`), never at
import, and only for operators not registered yet: when ExecuTorch was imported first, its
definitions are used. When ExecuTorch's registry module is imported later, our
``dim_order_ops`` library is removed just before that module runs (an import hook), so its
definitions win and its import does not fail on a second definition; graphs loaded before
keep working, their operators now resolved to ExecuTorch's. Imports torch.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import torch
from torch.library import Library

DIM_ORDER = "dim_order_ops"
QUANTIZED = "quantized_decomposed"
EXECUTORCH_DIM_ORDER_MODULE = "executorch.exir.passes.dim_order_ops_registry"
TORCH_QUANTIZED_MODULE = "torch.ao.quantization.fx._decomposed"

_DIM_ORDER_SCHEMAS = {
    "_to_dim_order_copy": "_to_dim_order_copy(Tensor self, *, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
    "bool non_blocking=False, int[]? dim_order=None) -> Tensor",
    "_to_dim_order_copy.out": "_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, "
    "int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
    "_empty_dim_order": "_empty_dim_order(int[] size, *, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
    "int[]? dim_order=None) -> Tensor",
    "_empty_dim_order.out": "_empty_dim_order.out(int[] size, *, int[]? dim_order=None, "
    "Tensor(a!) out) -> Tensor(a!)",
    "_clone_dim_order": "_clone_dim_order(Tensor self, *, bool non_blocking=False, "
    "int[]? dim_order=None) -> Tensor",
    "_clone_dim_order.out": "_clone_dim_order.out(Tensor self, *, bool non_blocking=False, "
    "int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
}
"""``name[.overload]`` -> schema, as ExecuTorch 1.5.1 declares them."""

_lock = threading.Lock()
_libraries: dict[
    str, Library
] = {}  # namespace -> our library (a Library unregisters when collected)


def memory_format(dim_order: Sequence[int] | None) -> torch.memory_format:
    """The memory format a dim order stands for: none kept as it is, ``0..n-1`` contiguous,
    ``(0, 2, 3, 1)`` channels-last; another order is a ValueError naming it."""
    if dim_order is None:
        return torch.preserve_format
    order = [int(d) for d in dim_order]
    if order == list(range(len(order))):
        return torch.contiguous_format
    if order == [0, 2, 3, 1]:
        return torch.channels_last
    if order == [0, 2, 3, 4, 1]:
        return torch.channels_last_3d
    raise ValueError(f"dim order {order} has no torch memory format")


def _to_dim_order_copy(
    self: torch.Tensor,
    *,
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
    non_blocking: bool = False,
    dim_order: list[int] | None = None,
) -> torch.Tensor:
    return torch.ops.aten._to_copy.default(
        self,
        dtype=dtype,
        layout=layout,
        device=device,
        pin_memory=pin_memory,
        non_blocking=non_blocking,
        memory_format=memory_format(dim_order),
    )


def _to_dim_order_copy_out(
    self: torch.Tensor,
    *,
    non_blocking: bool = False,
    dim_order: list[int] | None = None,
    out: torch.Tensor,
) -> torch.Tensor:
    return torch.ops.aten._to_copy.out(
        self, non_blocking=non_blocking, memory_format=memory_format(dim_order), out=out
    )


def _empty_dim_order(
    size: list[int],
    *,
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
    dim_order: list[int] | None = None,
) -> torch.Tensor:
    return torch.ops.aten.empty.memory_format(
        size,
        dtype=dtype,
        layout=layout,
        device=device,
        pin_memory=pin_memory,
        memory_format=memory_format(dim_order),
    )


def _empty_dim_order_out(
    size: list[int], *, dim_order: list[int] | None = None, out: torch.Tensor
) -> torch.Tensor:
    return torch.ops.aten.empty.out(size, memory_format=memory_format(dim_order), out=out)


def _clone_dim_order(
    self: torch.Tensor, *, non_blocking: bool = False, dim_order: list[int] | None = None
) -> torch.Tensor:
    return torch.ops.aten.clone.default(self, memory_format=memory_format(dim_order))


def _clone_dim_order_out(
    self: torch.Tensor,
    *,
    non_blocking: bool = False,
    dim_order: list[int] | None = None,
    out: torch.Tensor,
) -> torch.Tensor:
    return torch.ops.aten.clone.out(self, memory_format=memory_format(dim_order), out=out)


_DIM_ORDER_KERNELS = {
    "_to_dim_order_copy": _to_dim_order_copy,
    "_to_dim_order_copy.out": _to_dim_order_copy_out,
    "_empty_dim_order": _empty_dim_order,
    "_empty_dim_order.out": _empty_dim_order_out,
    "_clone_dim_order": _clone_dim_order,
    "_clone_dim_order.out": _clone_dim_order_out,
}


def is_registered(namespace: str, qualified: str) -> bool:
    """Whether torch knows operator ``namespace::name[.overload]`` (``"default"``: none)."""
    name, _, overload = qualified.partition(".")
    schemas = torch._C._jit_get_schemas_for_operator(f"{namespace}::{name}")
    return any(s.overload_name == overload for s in schemas)


def register(namespace: str, schemas: dict[str, str], kernels: dict[str, Any]) -> list[str]:
    """Define every operator of ``schemas`` not registered yet in our ``FRAGMENT`` library
    of ``namespace`` (one per namespace), with its kernel; the names defined."""
    missing = [q for q in schemas if not is_registered(namespace, q)]
    if not missing:
        return []
    library = _libraries.get(namespace)
    if library is None:
        library = _libraries[namespace] = Library(namespace, "FRAGMENT")
    for qualified in missing:
        library.define(schemas[qualified])
        library.impl(qualified, kernels[qualified], "CompositeImplicitAutograd")
    return missing


def forget(namespace: str) -> bool:
    """Remove our library of ``namespace`` (its operators unregistered); whether there was one."""
    library = _libraries.pop(namespace, None)
    if library is None:
        return False
    library._destroy()
    return True


class _YieldToExecuTorch(importlib.abc.MetaPathFinder):
    """Before ExecuTorch's ``dim_order_ops`` registry module runs, remove our definitions
    (its ``Library(..., "DEF")`` and ``define`` calls would fail on them)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != EXECUTORCH_DIM_ORDER_MODULE or DIM_ORDER not in _libraries:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _YieldingLoader(spec.loader)
                return spec
        return None


class _YieldingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        with _lock:
            forget(DIM_ORDER)
        self._loader.exec_module(module)


_HOOK = _YieldToExecuTorch()


def _ensure_dim_order_ops() -> None:
    if EXECUTORCH_DIM_ORDER_MODULE in sys.modules:
        return  # ExecuTorch's definitions are registered: they are used
    if register(DIM_ORDER, _DIM_ORDER_SCHEMAS, _DIM_ORDER_KERNELS) and _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


def _ensure_quantized_ops() -> None:
    if is_registered(QUANTIZED, "quantize_per_tensor"):
        return
    try:
        importlib.import_module(TORCH_QUANTIZED_MODULE)  # torch's own definitions
    except ImportError:
        from delegate_lens.etrecord._quant_ops import QUANTIZED_KERNELS, QUANTIZED_SCHEMAS

        register(QUANTIZED, QUANTIZED_SCHEMAS, QUANTIZED_KERNELS)


def ensure_executorch_ops(namespaces: Sequence[str] = (DIM_ORDER, QUANTIZED)) -> None:
    """Make the operators of ``namespaces`` (``"dim_order_ops"``, ``"quantized_decomposed"``)
    known to torch, where they are not yet (see the module text)."""
    with _lock:
        if DIM_ORDER in namespaces:
            _ensure_dim_order_ops()
        if QUANTIZED in namespaces:
            _ensure_quantized_ops()


def namespaces_in(program_json: bytes) -> list[str]:
    """The namespaces of :func:`ensure_executorch_ops` that a serialized program names."""
    return [ns for ns in (DIM_ORDER, QUANTIZED) if ns.encode() in program_json]
