"""Test cases of a bundled program: :class:`MethodTestCase` and :class:`MethodTestSuite`.

A test case holds the inputs of one run of a method and, optionally, the outputs it must
produce. Values are tensors (numpy arrays, or torch tensors, which are copied into numpy
arrays so that nothing here needs torch) or the scalars ``int``, ``bool`` and ``float``.
Nested lists and tuples are flattened in order, as the program's inputs and outputs are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import BundledProgramError

if TYPE_CHECKING:
    import torch

__all__ = [
    "BundledValue",
    "ConfigValue",
    "DataContainer",
    "MethodInputType",
    "MethodOutputType",
    "MethodTestCase",
    "MethodTestSuite",
    "normalize_value",
    "value_kind",
]

BundledValue: TypeAlias = "npt.NDArray[np.generic] | bool | int | float"
"""A value of a test case: a numpy array (a tensor) or an ``int``, ``bool`` or ``float``."""

ConfigValue: TypeAlias = Any
"""The reference's name of what a test case takes: a tensor (torch or numpy), int, bool or
float."""
MethodInputType: TypeAlias = Sequence[Any]
"""The inputs of one run: a sequence of ``ConfigValue``."""
MethodOutputType: TypeAlias = Sequence[Any]
"""The expected outputs of one run: a sequence of tensors."""
DataContainer: TypeAlias = list[Any] | tuple[Any, ...] | dict[str, Any]
"""Containers the reference flattens (nested lists and tuples are flattened here too)."""


def _is_torch_tensor(value: object) -> TypeGuard[torch.Tensor]:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def normalize_value(value: object, where: str) -> BundledValue:
    """``value`` as a test case stores it: a C-contiguous numpy array or a Python scalar."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and not isinstance(value, np.ndarray):
        return float(value)
    if _is_torch_tensor(value):
        tensor = value.detach().cpu().contiguous()
        name = str(tensor.dtype).removeprefix("torch.")
        try:
            return np.ascontiguousarray(tensor.numpy())
        except (TypeError, RuntimeError):
            raise BundledProgramError(
                f"{where}: tensors of dtype {name} are not supported in bundled programs "
                "(numpy has no such dtype)"
            ) from None
    if isinstance(value, np.ndarray):
        from delegate_lens.bundled_program.schema import SCALAR_TYPES

        if value.dtype.name not in SCALAR_TYPES:
            raise BundledProgramError(
                f"{where}: arrays of dtype {value.dtype} are not supported in bundled programs "
                f"(supported: {', '.join(SCALAR_TYPES)})"
            )
        out = np.ascontiguousarray(value).copy()
        out.flags.writeable = False
        return out
    raise BundledProgramError(
        f"{where}: {type(value).__name__} is not a supported value (a tensor or numpy "
        "array, int, bool or float)"
    )


def value_kind(value: object) -> str:
    """``"tensor"``, ``"int"``, ``"bool"`` or ``"float"``."""
    if isinstance(value, np.ndarray):
        return "tensor"
    return type(value).__name__


def _flatten(values: object, out: list[object]) -> list[object]:
    if isinstance(values, list | tuple):
        for v in values:
            _flatten(v, out)
    else:
        out.append(values)
    return out


def _convert(values: object, where: str) -> tuple[BundledValue, ...]:
    if values is None:
        return ()
    flat = _flatten(values if isinstance(values, list | tuple) else [values], [])
    return tuple(normalize_value(v, f"{where}[{i}]") for i, v in enumerate(flat))


def _inputs(values: object) -> tuple[BundledValue, ...]:
    return _convert(values, "inputs")


def _expected_outputs(values: object) -> tuple[BundledValue, ...]:
    return _convert(values, "expected_outputs")


@attrs.frozen(eq=False)
class MethodTestCase:
    """One run of a method: its ``inputs`` and, optionally, its ``expected_outputs``.

    :param inputs: the method's inputs in order (tensors or scalars; nested lists and tuples
        are flattened).
    :param expected_outputs: what the method must return (a tensor, or a list/tuple of
        them, flattened); ``None`` bundles inputs only.
    """

    inputs: tuple[BundledValue, ...] = attrs.field(converter=_inputs)
    expected_outputs: tuple[BundledValue, ...] = attrs.field(
        default=None, converter=_expected_outputs
    )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MethodTestCase):
            return NotImplemented
        return _same(self.inputs, other.inputs) and _same(
            self.expected_outputs, other.expected_outputs
        )

    def __repr__(self) -> str:
        return (
            f"MethodTestCase(inputs={_describe(self.inputs)}, "
            f"expected_outputs={_describe(self.expected_outputs)})"
        )


def _same(a: Sequence[BundledValue], b: Sequence[BundledValue]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if value_kind(x) != value_kind(y):
            return False
        if isinstance(x, np.ndarray):
            if (
                not isinstance(y, np.ndarray)
                or x.dtype != y.dtype
                or x.shape != y.shape
                or x.tobytes() != y.tobytes()
            ):
                return False
        elif x != y and not (x != x and y != y):  # nan equals nan here
            return False
    return True


def _describe(values: Sequence[BundledValue]) -> str:
    parts = [f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray) else repr(v) for v in values]
    return "[" + ", ".join(parts) + "]"


def _cases(values: Iterable[object]) -> tuple[MethodTestCase, ...]:
    cases = []
    for i, case in enumerate(values):
        if not isinstance(case, MethodTestCase):
            raise BundledProgramError(
                f"test_cases[{i}] is a {type(case).__name__}, expected a MethodTestCase"
            )
        cases.append(case)
    return tuple(cases)


def _check_name(_inst: MethodTestSuite, _attr: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise BundledProgramError(f"method_name must be a non-empty str, got {value!r}")


@attrs.frozen
class MethodTestSuite:
    """The test cases of one method of the program, by the method's name."""

    method_name: str = attrs.field(validator=_check_name)
    test_cases: tuple[MethodTestCase, ...] = attrs.field(converter=_cases)
