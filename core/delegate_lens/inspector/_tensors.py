"""Debug values as the reference gives them: numpy arrays made torch tensors, on demand."""

from __future__ import annotations

from typing import Any

import numpy as np

DebugValue = Any


def as_tensors(values: list[DebugValue]) -> list[DebugValue]:
    """``values`` with each array (and each array of a list) a torch tensor, as the
    reference gives debug values and run outputs; imports torch, here only. Without torch,
    the arrays are kept."""
    if not any(isinstance(v, (np.ndarray, list)) for v in values):
        return values
    try:
        import torch
    except ImportError:
        return values

    def one(value: DebugValue) -> DebugValue:
        if isinstance(value, np.ndarray):
            if value.ndim and not value.flags.writeable and not any(value.strides):
                # zeros too large to allocate (_debugdata.ZEROS_BUDGET): one zero, expanded
                return torch.from_numpy(np.zeros((), value.dtype)).expand(value.shape)
            fine = value.flags.writeable and value.flags.c_contiguous
            return torch.from_numpy(value if fine else value.copy())  # 0-d stays 0-d
        if isinstance(value, list):
            return [one(v) for v in value]
        return value

    return [one(v) for v in values]
