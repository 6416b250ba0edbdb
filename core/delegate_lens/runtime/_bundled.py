"""Running a bundled program's test cases: ``load_bundled_input`` and ``verify_method_outputs``.

As ExecuTorch's runtime does: load the inputs of test case ``test_index`` into a method
(the event tracer then records ``bundled_input_index`` in the block of each run that uses
them), execute, then compare the outputs with the test case's expected outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from delegate_lens.bundled_program import BundledProgram, OutputComparison, compare_outputs
from delegate_lens.errors import BundledProgramError

if TYPE_CHECKING:
    from delegate_lens.runtime._program import Method


def _check(bundled_program: object) -> BundledProgram:
    if not isinstance(bundled_program, BundledProgram):
        raise BundledProgramError(
            f"bundled_program must be a BundledProgram, not {type(bundled_program).__name__}"
        )
    return bundled_program


def load_bundled_input(method: Method, bundled_program: BundledProgram, test_index: int) -> None:
    """Set the inputs of ``method`` to those of test case ``test_index`` of its suite.

    The next ``method.execute()`` (called without inputs) runs on them, and its ETDump
    block records ``bundled_input_index = test_index``.

    :raises BundledProgramError: no suite for the method, or no such test case.
    """
    case = _check(bundled_program).test_case(method.name, test_index)
    inputs = [np.array(v) if isinstance(v, np.ndarray) else v for v in case.inputs]
    method.set_inputs(inputs, bundled_input_index=int(test_index))


def verify_method_outputs(
    method: Method,
    bundled_program: BundledProgram,
    test_index: int,
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> OutputComparison:
    """Compare the outputs of the last ``method.execute()`` with test case ``test_index``.

    Returns an :class:`~delegate_lens.bundled_program.OutputComparison` (truthy when every
    output is close: ``|actual - expected| <= atol + rtol * |expected|``, dtypes and
    shapes equal) with the largest absolute and relative errors.

    :raises BundledProgramError: no suite for the method, or no such test case.
    """
    case = _check(bundled_program).test_case(method.name, test_index)
    return compare_outputs(
        method.outputs,
        case.expected_outputs,
        rtol=rtol,
        atol=atol,
        method_name=method.name,
        test_index=int(test_index),
    )
