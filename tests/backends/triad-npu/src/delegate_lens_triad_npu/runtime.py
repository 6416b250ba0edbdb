"""TriadNPU at run time: numpy kernels; per kernel a real-time profile event with binary
metadata and its output as an intermediate output; after the call, a post-time summary."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from delegate_lens.runtime import (
    event_tracer_end_profiling_delegate,
    event_tracer_log_output_delegate,
    event_tracer_log_profiling_delegate,
    event_tracer_start_profiling_delegate,
)

Array = Any
KERNELS: dict[str, Callable[..., Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "relu": lambda a: np.maximum(a, 0),
    "add_relu": lambda a, b: np.maximum(a + b, 0),
    "exp2x": lambda a: np.exp(2 * a),
    "recip": lambda e: 2 / (e + 1),
    "affine": lambda r: 1 - r,
}


class TriadRuntime:
    def init(self, processed_bytes: bytes, compile_specs: Sequence[Any]) -> dict[str, Any]:
        handle: dict[str, Any] = json.loads(processed_bytes)
        return handle

    def execute(self, context: Any, handle: dict[str, Any], args: Sequence[object]) -> list[Array]:
        tracer = context.event_tracer
        call_start = tracer.clock() if tracer is not None else 0
        env = {name: np.asarray(v, dtype=np.float32) for name, v in zip(handle["inputs"], args)}
        previous: Array = next(iter(env.values()), None)
        for op in handle["ops"]:
            entry = event_tracer_start_profiling_delegate(tracer, None, op["id"])
            kernel = KERNELS[op["kernel"]]
            out = np.asarray(kernel(*(env[a] for a in op["args"])), dtype=np.float32)
            env[op["out"]] = out
            self.log_kernel(tracer, op, entry, out, previous)
            previous = out
        if tracer is not None:
            event_tracer_log_profiling_delegate(
                tracer,
                None,
                handle["summary"],
                call_start,
                tracer.clock(),
                {"kernel": "call", "elements": 0},
            )
        return [env[name] for name in handle["outputs"]]

    def log_kernel(
        self, tracer: Any, op: dict[str, Any], entry: Any, out: Array, previous: Array
    ) -> None:
        """Log one kernel: its profile event (started in ``entry``) and its output."""
        metadata = {"kernel": op["kernel"], "elements": int(out.size)}
        event_tracer_end_profiling_delegate(tracer, entry, metadata)
        event_tracer_log_output_delegate(tracer, None, op["id"], out)
