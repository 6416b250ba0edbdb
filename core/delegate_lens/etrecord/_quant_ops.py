"""Our own ``quantized_decomposed`` quantize/dequantize operators, for a torch that no longer
defines them (torch 2.4 to 2.13 do, in ``torch.ao.quantization.fx._decomposed``, which
:mod:`delegate_lens.etrecord._executorch_ops` imports first).

The schemas are those of PT2E graphs; the arithmetic is affine quantization as the
reference toolchain runs it: ``q = clamp(round(x * (1 / scale)) + zero_point, qmin, qmax)``
with round-half-to-even and the reciprocal of the scale taken first, then cast to the
integer type; ``x = (q - zero_point) * scale`` in the output type (float32 by default).
Per channel, ``scale`` and ``zero_point`` are 1-D and broadcast along ``axis``.
``tests/test_etrecord_executorch_ops.py`` holds the two equal to torch's kernels, bit for
bit. Imports torch.
"""

from __future__ import annotations

import torch

_BOUNDS = {
    dtype: (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
    for dtype in (torch.uint8, torch.int8, torch.uint16, torch.int16, torch.int32)
}

QUANTIZED_SCHEMAS = {
    "quantize_per_tensor": "quantize_per_tensor(Tensor input, float scale, int zero_point, "
    "int quant_min, int quant_max, ScalarType dtype) -> Tensor",
    "quantize_per_tensor.tensor": "quantize_per_tensor.tensor(Tensor input, Tensor scale, "
    "Tensor zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor",
    "dequantize_per_tensor": "dequantize_per_tensor(Tensor input, float scale, int zero_point, "
    "int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor",
    "dequantize_per_tensor.tensor": "dequantize_per_tensor.tensor(Tensor input, Tensor scale, "
    "Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, "
    "ScalarType? out_dtype=None) -> Tensor",
    "quantize_per_channel": "quantize_per_channel(Tensor input, Tensor scales, "
    "Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype) -> Tensor",
    "dequantize_per_channel": "dequantize_per_channel(Tensor input, Tensor scales, "
    "Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, "
    "ScalarType? out_dtype=None) -> Tensor",
}
"""``name[.overload]`` -> schema."""


def _check(quant_min: int, quant_max: int, dtype: torch.dtype) -> None:
    if dtype not in _BOUNDS:
        raise ValueError(f"quantized_decomposed: unsupported quantized dtype {dtype}")
    low, high = _BOUNDS[dtype]
    if quant_min < low or quant_max > high:
        raise ValueError(
            f"quantized_decomposed: [{quant_min}, {quant_max}] is outside {dtype}'s [{low}, {high}]"
        )


def _float_input(x: torch.Tensor) -> torch.Tensor:
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    if x.dtype != torch.float32:
        raise ValueError(f"quantized_decomposed: quantizing takes float32, got {x.dtype}")
    return x


def _along(values: torch.Tensor, axis: int, ndim: int) -> torch.Tensor:
    """A 1-D per-channel tensor shaped to broadcast along ``axis`` of an ``ndim`` tensor."""
    shape = [1] * ndim
    shape[axis] = values.shape[0]
    return values.reshape(shape)


def _quantize(
    x: torch.Tensor,
    scale: object,
    zero_point: object,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    x = _float_input(x)
    _check(quant_min, quant_max, dtype)
    codes = torch.round(x * (1.0 / scale)) + zero_point  # type: ignore[operator]
    return codes.clamp(quant_min, quant_max).to(dtype)


def quantize_per_tensor(
    input: torch.Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    return _quantize(input, scale, zero_point, quant_min, quant_max, dtype)


def quantize_per_tensor_tensor(
    input: torch.Tensor,
    scale: torch.Tensor,
    zero_point: torch.Tensor,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    return _quantize(input, scale.item(), zero_point.item(), quant_min, quant_max, dtype)


def _dequantize(
    q: torch.Tensor, scale: object, zero_point: object, dtype: torch.dtype, out: torch.dtype | None
) -> torch.Tensor:
    if q.dtype != dtype:
        raise ValueError(f"quantized_decomposed: expected a {dtype} input, got {q.dtype}")
    return (q.to(out or torch.float32) - zero_point) * scale  # type: ignore[operator]


def dequantize_per_tensor(
    input: torch.Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    *,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    _check(quant_min, quant_max, dtype)
    return _dequantize(input, scale, zero_point, dtype, out_dtype)


def dequantize_per_tensor_tensor(
    input: torch.Tensor,
    scale: torch.Tensor,
    zero_point: torch.Tensor,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    *,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    _check(quant_min, quant_max, dtype)
    return _dequantize(input, scale.item(), zero_point.item(), dtype, out_dtype)


def quantize_per_channel(
    input: torch.Tensor,
    scales: torch.Tensor,
    zero_points: torch.Tensor,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    ndim = input.dim()
    return _quantize(
        input,
        _along(scales, axis, ndim),
        _along(zero_points, axis, ndim),
        quant_min,
        quant_max,
        dtype,
    )


def dequantize_per_channel(
    input: torch.Tensor,
    scales: torch.Tensor,
    zero_points: torch.Tensor | None,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    *,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    _check(quant_min, quant_max, dtype)
    if input.dtype != dtype:
        raise ValueError(f"quantized_decomposed: expected a {dtype} input, got {input.dtype}")
    ndim = input.dim()
    # in the scales' type first (as the reference: int codes minus int zero points, times
    # float32 scales), then the output type
    shifted = input if zero_points is None else input - _along(zero_points, axis, ndim)
    return (shifted * _along(scales, axis, ndim)).to(out_dtype or torch.float32)


QUANTIZED_KERNELS = {
    "quantize_per_tensor": quantize_per_tensor,
    "quantize_per_tensor.tensor": quantize_per_tensor_tensor,
    "dequantize_per_tensor": dequantize_per_tensor,
    "dequantize_per_tensor.tensor": dequantize_per_tensor_tensor,
    "quantize_per_channel": quantize_per_channel,
    "dequantize_per_channel": dequantize_per_channel,
}
