"""The demo backend's runtime: runs a blob with numpy and logs what it does.

For every backend op it logs a real-time profile event (start/end around the kernel) and
its output as an intermediate output; after the call, one post-time summary event with the
timestamps it kept itself. Every event carries the op's identifier from the Debug Handle
Map built at preprocess time and a structured metadata value (kernel name, flops, bytes
moved) that the plugin's ``dl_encode_delegate_metadata`` turns into bytes.

Uses only public API: the ``event_tracer_*`` functions of :mod:`delegate_lens.runtime`.
Torch-free (inputs are converted with ``numpy.asarray``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from delegate_lens.runtime import (
    event_tracer_end_profiling_delegate,
    event_tracer_log_output_delegate,
    event_tracer_log_profiling_delegate,
    event_tracer_start_profiling_delegate,
)

from ._blob import DemoBlob, DemoOp, from_bytes
from ._numerics import Numerics, debug_outputs, precision, precision_kernels

if TYPE_CHECKING:
    from collections.abc import Sequence

    from delegate_lens.backend import CompileSpec
    from delegate_lens.runtime import BackendExecutionContext


Array = np.ndarray[Any, Any]


def _conv2d(x: Array, w: Array, bias: Array | None, attrs: dict[str, Any]) -> Array:
    sh, sw = attrs["stride"]
    ph, pw = attrs["padding"]
    dh, dw = attrs["dilation"]
    groups = attrs["groups"]
    out_channels, cin_g, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # N, C, Hout, Wout, kh, kw
    og = out_channels // groups
    parts = [
        np.einsum(
            "nchwij,ocij->nohw",
            win[:, g * cin_g : (g + 1) * cin_g],
            w[g * og : (g + 1) * og],
            optimize=True,
        )
        for g in range(groups)
    ]
    out = parts[0] if groups == 1 else np.concatenate(parts, axis=1)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def _run(op: DemoOp, slots: Sequence[object]) -> Array:
    kernel = op.kernel
    ins: list[Any] = [slots[i] if i >= 0 else None for i in op.inputs]
    if kernel in ("linear", "linear_relu"):
        x, w, b = ins
        if op.attrs.get("transpose_w"):  # aten.linear: weight is [out, in]
            w = w.T
        out = np.matmul(x.astype(np.float64), w)
        if b is not None:
            out = out + b
        if kernel == "linear_relu":
            out = np.maximum(out, 0.0)
        return out.astype(np.float32)
    if kernel in ("conv2d", "conv2d_relu"):
        x, w, b = ins
        out = _conv2d(x.astype(np.float64), w, b, op.attrs)
        if kernel == "conv2d_relu":
            out = np.maximum(out, 0.0)
        return out.astype(np.float32)
    if kernel in _UNARY:
        return _UNARY[kernel](ins[0].astype(np.float64)).astype(np.float32)
    if kernel in _BINARY:
        a, b = (np.asarray(v, dtype=np.float64) for v in ins)
        if kernel == "add" and op.attrs.get("alpha", 1) != 1:
            b = b * op.attrs["alpha"]
        return np.asarray(_BINARY[kernel](a, b), dtype=np.float32)
    raise ValueError(f"demo blob has an unknown kernel {kernel!r}")


_UNARY: dict[str, Callable[[Array], Array]] = {
    "relu": lambda a: np.maximum(a, 0.0),
    "sin": np.sin,
    "cos": np.cos,
    "sigmoid": lambda a: 1.0 / (1.0 + np.exp(-a)),
}
_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "mul": np.multiply,
    "div": np.divide,
}


def _ids(identifier: int | str) -> tuple[str | None, int | None]:
    """``(name, delegate_debug_id)`` for the event tracer functions."""
    return (identifier, None) if isinstance(identifier, str) else (None, identifier)


SLOWDOWN_SPEC = "slowdown"
"""Compile spec key ``b"<op>:<factor>"`` (e.g. ``b"sigmoid:50"``, ``b"tan:20"``): the
runtime runs the matching backend ops ``factor`` times per call, a known regression for
testing ``delegate-lens compare``. ``<op>`` is a name the tables show — an operator
(``tan`` or ``aten.tan.default``: every backend op of it), a kernel (``sin``) or a
delegate identifier (``tan/sin#2``, ``3``)."""


def parse_slowdown_value(text: str) -> tuple[str, int]:
    """``"tan:20"`` -> ``("tan", 20)``; a ``ValueError`` saying the form otherwise."""
    target, _, factor = text.rpartition(":")
    if not target or not factor.isdigit() or int(factor) < 1:
        raise ValueError(
            f"slowdown must be '<op>:<factor>' with a whole factor >= 1 (e.g. tan:20), not {text!r}"
        )
    return target, int(factor)


def parse_slowdown(compile_specs: Sequence[CompileSpec]) -> tuple[str, int] | None:
    """The ``slowdown`` compile spec as ``(op, factor)``, or None."""
    for spec in compile_specs:
        if spec.key == SLOWDOWN_SPEC:
            try:
                return parse_slowdown_value(bytes(spec.value).decode("utf-8", "replace"))
            except ValueError as exc:
                raise ValueError(f"compile spec {SLOWDOWN_SPEC!r}: {exc}") from None
    return None


def op_names(op: DemoOp) -> set[str]:
    """The names ``slowdown`` matches for a backend op: its kernel, its identifier and the
    operators it runs (``attrs["aot_ops"]``, as the preprocess records them)."""
    return {op.kernel, str(op.identifier), *op.attrs.get("aot_ops", ())}


class DemoExecutable:
    """An initialized blob: constants decoded once, per-op identifiers and metadata ready."""

    def __init__(
        self,
        blob: DemoBlob,
        numerics: Numerics | None = None,
        log_outputs: bool = True,
        slowdown: tuple[str, int] | None = None,
    ) -> None:
        self.blob = blob
        self.numerics = numerics or Numerics()
        self.log_outputs = log_outputs
        """Whether every op's output is logged (compile spec ``debug_outputs``)."""
        self.repeats = {  # op index -> times its kernel runs (the slowdown spec)
            i: slowdown[1]
            for i, op in enumerate(blob.ops)
            if slowdown is not None and slowdown[0] in op_names(op)
        }
        template: list[Any] = [None] * blob.n_slots
        for slot, array in blob.constants.items():
            template[slot] = self.numerics.constant(array) if array.dtype.kind == "f" else array
        self.template = template
        self.steps = [
            (
                op,
                *_ids(op.identifier),
                {"kernel": _kernel_name(op), "flops": op.flops, "bytes_moved": op.bytes_moved},
            )
            for op in blob.ops
        ]
        self.summary_ids = _ids(blob.summary_identifier)
        self.summary_metadata = {
            "kernel": "demo_partition",
            "flops": blob.summary_flops,
            "bytes_moved": blob.summary_bytes_moved,
        }


def _kernel_name(op: DemoOp) -> str:
    return f"demo_{op.kernel}_f32"


def _as_array(value: object) -> Array:
    if hasattr(value, "detach"):  # a torch tensor, converted without importing torch
        value = value.detach()
    return np.asarray(value)


class DemoRuntime:
    """The object ``dl_runtime_backend("DemoBackend")`` returns."""

    def init(self, processed_bytes: bytes, compile_specs: Sequence[CompileSpec]) -> DemoExecutable:
        return DemoExecutable(
            from_bytes(processed_bytes),
            Numerics(precision(compile_specs), precision_kernels(compile_specs)),
            debug_outputs(compile_specs),
            parse_slowdown(compile_specs),
        )

    def execute(
        self, context: BackendExecutionContext, handle: DemoExecutable, args: Sequence[object]
    ) -> list[Array]:
        tracer = context.event_tracer
        clock: Callable[[], int] = tracer.clock if tracer is not None else time.monotonic_ns
        call_start = clock()  # kept by the backend, logged after the fact
        blob = handle.blob
        if len(args) != len(blob.inputs):
            raise ValueError(f"demo delegate takes {len(blob.inputs)} inputs, got {len(args)}")
        slots = handle.template.copy()
        for slot, value in zip(blob.inputs, args):
            slots[slot] = _as_array(value)
        for index, (op, name, ddi, metadata) in enumerate(handle.steps):
            entry = event_tracer_start_profiling_delegate(tracer, name, ddi)
            out = _run(op, slots)
            for _ in range(handle.repeats.get(index, 1) - 1):
                out = _run(op, slots)
            out, logged = handle.numerics.output(out, op.kernel)
            slots[op.output] = out
            event_tracer_end_profiling_delegate(tracer, entry, metadata)
            if tracer is not None and handle.log_outputs:
                event_tracer_log_output_delegate(tracer, name, ddi, logged)
        call_end = clock()
        name, ddi = handle.summary_ids
        event_tracer_log_profiling_delegate(
            tracer, name, ddi, call_start, call_end, handle.summary_metadata
        )
        return [np.asarray(slots[i], dtype=np.float32) for i in blob.outputs]
