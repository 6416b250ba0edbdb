"""The demo backend's numerics: a precision mode and which outputs it logs.

Two compile specs, read when a blob is loaded (``DemoRuntime.init``) and checked at
preprocess time:

* ``CompileSpec("precision", b"exact" | b"fp16" | b"int8")`` — ``exact`` (default)
  computes in float64 and stores float32, as before; ``fp16`` rounds the constants and
  every op's output to float16 (and logs float16 tensors); ``int8`` quantizes the float
  constants per tensor (symmetric, 127 levels) and every op's output per tensor, passing
  the dequantized values on, and logs each output as a tensor list ``[int8 values,
  float32 scale]`` — raw, as an integer accelerator would;
* ``CompileSpec("precision_kernels", b"sin,cos,div")`` — with a precision mode, only the
  outputs of these kernels lose precision (constants stay exact): a gap that appears in
  the middle of a delegate, for trying the debugging loop;
* ``CompileSpec("debug_outputs", b"ops" | b"none")`` — ``ops`` (default) logs the output
  of every backend op (one per identifier: a fused ``conv2d_relu`` is one op and one
  output) through ``event_tracer_log_output_delegate`` whenever the tracer stores
  intermediate outputs (an ``ETDumpGen`` with a debug buffer); ``none`` logs none.

:func:`dequantize` is what the plugin's ``dl_intermediate_output`` hook returns for an
``int8`` value, so ``Inspector.calculate_numeric_gap`` compares real numbers. numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from delegate_lens.backend import CompileSpec


PRECISION_SPEC = "precision"
PRECISION_KERNELS_SPEC = "precision_kernels"
DEBUG_OUTPUTS_SPEC = "debug_outputs"
PRECISIONS = ("exact", "fp16", "int8")
_LEVELS = 127.0

Array = np.ndarray[Any, Any]


def _spec(
    compile_specs: Sequence[CompileSpec], key: str, allowed: Sequence[str], default: str
) -> str:
    for spec in compile_specs:
        if spec.key == key:
            value = bytes(spec.value).decode("utf-8", "replace")
            if value not in allowed:
                choices = " | ".join(f"b{v!r}" for v in allowed)
                raise ValueError(
                    f"demo backend: compile spec {key!r} must be {choices}, not {spec.value!r}"
                )
            return value
    return default


def precision(compile_specs: Sequence[CompileSpec]) -> str:
    """The ``precision`` compile spec (``"exact"`` when absent); ValueError if unknown."""
    return _spec(compile_specs, PRECISION_SPEC, PRECISIONS, "exact")


def precision_kernels(compile_specs: Sequence[CompileSpec]) -> frozenset[str] | None:
    """The kernels named by ``precision_kernels`` (None: every kernel)."""
    for spec in compile_specs:
        if spec.key == PRECISION_KERNELS_SPEC:
            text = bytes(spec.value).decode("utf-8", "replace")
            return frozenset(k.strip() for k in text.split(",") if k.strip())
    return None


def debug_outputs(compile_specs: Sequence[CompileSpec]) -> bool:
    """Whether the ``debug_outputs`` compile spec asks for every op's output (default)."""
    return _spec(compile_specs, DEBUG_OUTPUTS_SPEC, ("ops", "none"), "ops") == "ops"


def _quantize(array: Array) -> tuple[Array, np.float32]:
    peak = float(np.max(np.abs(array))) if array.size else 0.0
    scale = np.float32(peak / _LEVELS if peak > 0 and np.isfinite(peak) else 1.0)
    q = np.clip(np.rint(array / scale), -_LEVELS, _LEVELS).astype(np.int8)
    return q, scale


class Numerics:
    """How one loaded blob computes: constants once, then every op's output."""

    def __init__(self, mode: str = "exact", kernels: frozenset[str] | None = None) -> None:
        if mode not in PRECISIONS:
            raise ValueError(f"demo backend: unknown precision {mode!r}")
        self.mode = mode
        self.kernels = kernels
        """Kernels whose outputs lose precision (None: all, constants too)."""

    def applies_to(self, kernel: str) -> bool:
        return self.mode != "exact" and (self.kernels is None or kernel in self.kernels)

    def constant(self, array: Array) -> Array:
        """A float constant as the mode holds it (float64 for the kernels)."""
        if self.kernels is not None:
            return array.astype(np.float64)
        if self.mode == "fp16":
            return array.astype(np.float16).astype(np.float64)
        if self.mode == "int8" and array.size > 1:  # weights and biases; scalars stay exact
            q, scale = _quantize(array.astype(np.float64))
            return q.astype(np.float64) * float(scale)
        return array.astype(np.float64)

    def output(self, out: Array, kernel: str = "") -> tuple[Array, Any]:
        """``(value passed to the next ops, value logged)`` for an op's float32 output."""
        if not self.applies_to(kernel):
            return out, out
        if self.mode == "fp16":
            half = out.astype(np.float16)
            return half, half
        q, scale = _quantize(out)
        return q.astype(np.float32) * scale, [q, np.asarray(scale, dtype=np.float32)]


def dequantize(value: object) -> Array | None:
    """``[int8 values, scale]`` (an ``int8``-mode output) -> float32 values; else None."""
    if (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], np.ndarray)
        and value[0].dtype == np.int8
        and np.size(value[1]) == 1
    ):
        scale = np.float32(np.asarray(value[1]).reshape(()))
        return value[0].astype(np.float32) * scale
    return None
