"""The serialized program: what the ahead-of-time stage hands to the simulated runtime.

A torch-free data model (attrs value classes: values, instructions, methods,
:class:`ProgramData`) and a compact, versioned container (``.dlp``) written by
:func:`serialize` and checked byte by byte by :func:`deserialize`, which raises
:class:`~delegate_lens.errors.ProgramFormatError` naming the offset or JSON path of what is
wrong. The container's layout is described in :mod:`delegate_lens.program._format`.

Imports: :mod:`delegate_lens.errors` only.
"""

from __future__ import annotations

from delegate_lens.program._format import FORMAT_VERSION, MAGIC, deserialize, serialize
from delegate_lens.program._model import (
    DTYPE_ITEMSIZE,
    BoolValue,
    CompileSpecData,
    DelegateCallInstruction,
    DelegateData,
    DeviceValue,
    DTypeValue,
    FloatValue,
    Instruction,
    IntValue,
    LayoutValue,
    ListValue,
    MemoryFormatValue,
    MethodData,
    NoneValue,
    OperatorInstruction,
    ProgramData,
    StringValue,
    TensorValue,
    Value,
)

__all__ = [
    "DTYPE_ITEMSIZE",
    "FORMAT_VERSION",
    "MAGIC",
    "BoolValue",
    "CompileSpecData",
    "DTypeValue",
    "DelegateCallInstruction",
    "DelegateData",
    "DeviceValue",
    "FloatValue",
    "Instruction",
    "IntValue",
    "LayoutValue",
    "ListValue",
    "MemoryFormatValue",
    "MethodData",
    "NoneValue",
    "OperatorInstruction",
    "ProgramData",
    "StringValue",
    "TensorValue",
    "Value",
    "deserialize",
    "serialize",
]
