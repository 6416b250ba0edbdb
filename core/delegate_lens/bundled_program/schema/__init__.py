"""The bundled-program FlatBuffer schema, as ExecuTorch defines it (namespace
``bundled_program_flatbuffer``, file identifier ``BP08``, extension ``bpte``).

Tables and their field slots (slot ``k`` sits at vtable offset ``4 + 2 * k``):

.. code-block:: text

    BundledProgram          0 version: uint32   1 method_test_suites: [BundledMethodTestSuite]
                            2 program: [ubyte], 32-byte aligned (the program's own bytes)
    BundledMethodTestSuite  0 method_name: string   1 test_cases: [BundledMethodTestCase]
    BundledMethodTestCase   0 inputs: [Value]       1 expected_outputs: [Value]
    Value                   0 val_type: ubyte (union tag)   1 val: offset to the member
                            tags: 1 Tensor, 2 Int, 3 Bool, 4 Double
    Tensor                  0 scalar_type: int8 (ExecuTorch ScalarType)   1 sizes: [int32]
                            2 data: [ubyte], 16-byte aligned   3 dim_order: [ubyte]
    Int 0 int_val: int64    Bool 0 bool_val: bool    Double 0 double_val: float64

The buffer is not size prefixed; bytes 4..8 hold the file identifier.
"""

from __future__ import annotations

from delegate_lens.etdump import NUMPY_SCALAR_TYPES, ScalarType

__all__ = [
    "BUNDLED_PROGRAM_SCHEMA_VERSION",
    "FILE_IDENTIFIER",
    "SCALAR_TYPES",
    "SCALAR_TYPE_NAMES",
    "TAG_BOOL",
    "TAG_DOUBLE",
    "TAG_INT",
    "TAG_TENSOR",
]

FILE_IDENTIFIER = b"BP08"
BUNDLED_PROGRAM_SCHEMA_VERSION = 2
"""The ``version`` the reference writes (and so do we)."""

TAG_TENSOR, TAG_INT, TAG_BOOL, TAG_DOUBLE = 1, 2, 3, 4

SCALAR_TYPES: dict[str, int] = {name: int(code) for name, code in NUMPY_SCALAR_TYPES.items()}
"""numpy dtype name -> ExecuTorch ``ScalarType`` code, for the dtypes numpy can hold."""

SCALAR_TYPE_NAMES: dict[int, str] = {
    int(code): code.name for code in ScalarType if code not in NUMPY_SCALAR_TYPES.values()
}
"""ScalarType codes numpy cannot hold, named for error messages."""

# The reference's schema objects (``executorch.devtools.bundled_program.schema``), at the end
# so that the constants above are defined when the submodule imports this package.
from delegate_lens.bundled_program.schema.bundled_program_schema import (  # noqa: E402
    Bool,
    BundledMethodTestCase,
    BundledMethodTestSuite,
    BundledProgram,
    Double,
    Int,
    Tensor,
    Value,
    ValueUnion,
)

__all__ += [
    "Bool",
    "BundledMethodTestCase",
    "BundledMethodTestSuite",
    "BundledProgram",
    "Double",
    "Int",
    "ScalarType",
    "Tensor",
    "Value",
    "ValueUnion",
]
