"""The operators only ExecuTorch's toolchain registers (``dim_order_ops``,
``quantized_decomposed``), made known to torch by delegate-lens when a graph is loaded
(issue 32, item 1): the same schemas as the reference's, kernels that compute what the
reference's compute (bit for bit against torch's and ExecuTorch's own quantize kernels),
registered only when a graph needs them and never over a registration already there."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REFERENCE_PYTHON, needs_reference

pytestmark = pytest.mark.torch

torch = pytest.importorskip("torch")

from delegate_lens.etrecord import _executorch_ops as ops  # noqa: E402
from delegate_lens.etrecord import _quant_ops as quant  # noqa: E402


def _python(code: str, executable: str = sys.executable) -> list[str]:
    done = subprocess.run(
        [executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()


def test_dim_orders_are_memory_formats() -> None:
    assert ops.memory_format(None) == torch.preserve_format
    assert ops.memory_format([0, 1, 2]) == torch.contiguous_format
    assert ops.memory_format((0, 2, 3, 1)) == torch.channels_last
    assert ops.memory_format([0, 2, 3, 4, 1]) == torch.channels_last_3d
    with pytest.raises(ValueError, match=r"dim order \[1, 0\] has no torch memory format"):
        ops.memory_format([1, 0])


def test_dim_order_kernels_copy_into_the_layout() -> None:
    x = torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4)
    cl = ops._clone_dim_order(x, dim_order=[0, 2, 3, 1])
    assert torch.equal(cl, x) and cl.is_contiguous(memory_format=torch.channels_last)
    assert cl.data_ptr() != x.data_ptr()
    back = ops._to_dim_order_copy(cl, dtype=torch.float64, dim_order=[0, 1, 2, 3])
    assert back.dtype == torch.float64 and back.is_contiguous() and torch.equal(back, x.double())
    empty = ops._empty_dim_order([1, 2, 3, 4], dtype=torch.int8, dim_order=[0, 2, 3, 1])
    assert empty.shape == (1, 2, 3, 4) and empty.dtype == torch.int8
    assert empty.is_contiguous(memory_format=torch.channels_last)
    out = torch.empty(0)
    assert ops._clone_dim_order_out(x, dim_order=[0, 1, 2, 3], out=out) is out
    assert torch.equal(out, x)


def test_registered_on_demand_only_and_never_twice() -> None:
    lines = _python(
        """
import torch
import delegate_lens
from delegate_lens import parse_etrecord  # reading metadata registers nothing either
print(hasattr(torch.ops.dim_order_ops, "_clone_dim_order"))
from delegate_lens.etrecord._executorch_ops import ensure_executorch_ops, _libraries
ensure_executorch_ops(["dim_order_ops"])
ensure_executorch_ops(["dim_order_ops"])
x = torch.randn(1, 2, 3, 4)
y = torch.ops.dim_order_ops._clone_dim_order.default(x, dim_order=[0, 2, 3, 1])
print(y.is_contiguous(memory_format=torch.channels_last), torch.equal(x, y), sorted(_libraries))
"""
    )
    assert lines == ["False", "True True ['dim_order_ops']"]


def _schemas(namespace: str, setup: str, executable: str = sys.executable) -> set[str]:
    code = f"""
import torch
{setup}
for s in torch._C._jit_get_all_schemas():
    if s.name.startswith("{namespace}::"):
        print(s)
"""
    return set(_python(code, executable))


@needs_reference
def test_dim_order_schemas_are_the_references() -> None:
    assert REFERENCE_PYTHON is not None
    ours = _schemas(
        "dim_order_ops",
        "from delegate_lens.etrecord._executorch_ops import ensure_executorch_ops\n"
        "ensure_executorch_ops(['dim_order_ops'])",
    )
    theirs = _schemas(
        "dim_order_ops",
        "import executorch.exir.passes.dim_order_ops_registry",
        REFERENCE_PYTHON,
    )
    assert len(ours) == 6 and ours == theirs


def test_our_quantized_schemas_are_torchs() -> None:
    ours = _schemas(
        "quantized_decomposed",
        "import sys\nsys.modules['torch.ao.quantization.fx._decomposed'] = None  # a torch without it\n"
        "from delegate_lens.etrecord._executorch_ops import ensure_executorch_ops\n"
        "ensure_executorch_ops(['quantized_decomposed'])",
    )
    torchs = _schemas("quantized_decomposed", "import torch.ao.quantization.fx._decomposed")
    assert len(ours) == len(quant.QUANTIZED_SCHEMAS) == 6 and ours <= torchs


def test_torchs_own_quantized_operators_are_used_when_present() -> None:
    lines = _python(
        """
import sys
import torch
from delegate_lens.etrecord._executorch_ops import ensure_executorch_ops, _libraries
ensure_executorch_ops(["quantized_decomposed"])
print("torch.ao.quantization.fx._decomposed" in sys.modules, sorted(_libraries))
"""
    )
    assert lines == ["True []"]


def _grid() -> torch.Tensor:
    # ties at .5 (round half to even), values past both ends of the range, zeros
    ties = torch.arange(-300, 301, dtype=torch.float32) * 0.05
    far = torch.tensor([-1e4, -30.0, 0.0, 30.0, 1e4])
    return torch.cat([ties, far, torch.randn(600, generator=torch.Generator().manual_seed(0)) * 4])


@pytest.mark.parametrize(
    ("scale", "zero_point", "qmin", "qmax", "dtype"),
    [
        (0.1, 0, -128, 127, torch.int8),
        (0.0371, 3, -127, 127, torch.int8),
        (0.2, 128, 0, 255, torch.uint8),
    ],
)
def test_per_tensor_kernels_equal_torchs_bit_for_bit(
    scale: float, zero_point: int, qmin: int, qmax: int, dtype: torch.dtype
) -> None:
    import torch.ao.quantization.fx._decomposed  # torch's definitions

    ref = torch.ops.quantized_decomposed
    x = _grid()
    q = quant.quantize_per_tensor(x, scale, zero_point, qmin, qmax, dtype)
    assert torch.equal(q, ref.quantize_per_tensor.default(x, scale, zero_point, qmin, qmax, dtype))
    assert int(q.min()) == qmin and int(q.max()) == qmax  # clamped at both ends
    s, z = torch.tensor(scale), torch.tensor(zero_point)
    assert torch.equal(quant.quantize_per_tensor_tensor(x, s, z, qmin, qmax, dtype), q)
    d = quant.dequantize_per_tensor(q, scale, zero_point, qmin, qmax, dtype)
    assert torch.equal(
        d, ref.dequantize_per_tensor.default(q, scale, zero_point, qmin, qmax, dtype)
    )
    assert torch.equal(quant.dequantize_per_tensor_tensor(q, s, z, qmin, qmax, dtype), d)


@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel_kernels_equal_torchs_bit_for_bit(axis: int) -> None:
    import torch.ao.quantization.fx._decomposed

    ref = torch.ops.quantized_decomposed
    x = _grid()[:1200].reshape(24, 50) if axis == 0 else _grid()[:1200].reshape(50, 24)
    scales = torch.linspace(0.01, 0.2, 24)
    zps = torch.arange(24, dtype=torch.int64) % 5 - 2
    q = quant.quantize_per_channel(x, scales, zps, axis, -128, 127, torch.int8)
    assert torch.equal(
        q, ref.quantize_per_channel.default(x, scales, zps, axis, -128, 127, torch.int8)
    )
    for zp in (zps, None):
        d = quant.dequantize_per_channel(q, scales, zp, axis, -128, 127, torch.int8)
        want = ref.dequantize_per_channel.default(q, scales, zp, axis, -128, 127, torch.int8)
        assert d.dtype == torch.float32 and torch.equal(d, want)


def test_quantized_kernels_refuse_what_the_reference_refuses() -> None:
    with pytest.raises(ValueError, match=r"outside torch\.int8's"):
        quant.quantize_per_tensor(torch.zeros(2), 0.1, 0, -129, 127, torch.int8)
    with pytest.raises(ValueError, match="quantizing takes float32"):
        quant.quantize_per_tensor(torch.zeros(2, dtype=torch.int32), 0.1, 0, -128, 127, torch.int8)
    with pytest.raises(ValueError, match=r"expected a torch\.int8 input"):
        quant.dequantize_per_tensor(
            torch.zeros(2, dtype=torch.uint8), 0.1, 0, -128, 127, torch.int8
        )


@needs_reference
def test_quantize_kernels_equal_executorchs_runtime_kernels() -> None:
    """ExecuTorch's own C++ kernels (the ``.out`` variants its runtime runs)."""
    assert REFERENCE_PYTHON is not None
    lines = _python(
        """
import torch
import executorch.kernels.quantized  # ExecuTorch's kernels, as torch operators
from delegate_lens.etrecord import _quant_ops as quant
et = torch.ops.quantized_decomposed
ties = torch.arange(-300, 301, dtype=torch.float32) * 0.05
far = torch.tensor([-1e4, -30.0, 0.0, 30.0, 1e4])
x = torch.cat([ties, far, torch.randn(600, generator=torch.Generator().manual_seed(0)) * 4])
same = []
for scale, zp, lo, hi, dtype in [(0.1, 0, -128, 127, torch.int8), (0.2, 128, 0, 255, torch.uint8)]:
    q = quant.quantize_per_tensor(x, scale, zp, lo, hi, dtype)
    out = torch.empty(x.shape, dtype=dtype)
    same.append(torch.equal(et.quantize_per_tensor.out(x, scale, zp, lo, hi, dtype, out=out), q))
    d = quant.dequantize_per_tensor(q, scale, zp, lo, hi, dtype)
    out = torch.empty(x.shape)
    same.append(torch.equal(et.dequantize_per_tensor.out(q, scale, zp, lo, hi, dtype, out=out), d))
w = x[:1200].reshape(24, 50)
scales, zps = torch.linspace(0.01, 0.2, 24, dtype=torch.float64), torch.zeros(24, dtype=torch.int64)
q = quant.quantize_per_channel(w, scales.float(), zps, 0, -128, 127, torch.int8)
out = torch.empty(w.shape, dtype=torch.int8)
same.append(torch.equal(et.quantize_per_channel.out(w, scales, zps, 0, -128, 127, torch.int8, out=out), q))
print(same)
""",
        REFERENCE_PYTHON,
    )
    assert lines[-1] == "[True, True, True, True, True]"
