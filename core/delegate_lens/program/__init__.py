"""The serialized program: what the ahead-of-time stage hands to the simulated runtime.

A torch-free data model (attrs value classes: values, instructions, methods,
:class:`ProgramData`) and a compact, versioned container (``.dlp``) written by
:func:`serialize` and checked byte by byte by :func:`deserialize`, which raises
:class:`~delegate_lens.errors.ProgramFormatError` naming the offset or JSON path of what is
wrong. The container's layout is described in :mod:`delegate_lens.program._format`.

:func:`read_delegates` reads the delegate calls of a program file, an ExecuTorch ``.pte``
(torch- and executorch-free) or a ``.dlp``: each one's method, instruction id, backend id,
compile specs and processed bytes. :class:`FlatBuffer` is the checked FlatBuffer reader it
uses, for plugins that read their own delegate blobs.

Imports: :mod:`delegate_lens.errors` and :mod:`delegate_lens.fileio` only.
"""

from __future__ import annotations

from delegate_lens.program._flatbuffer import FlatBuffer, FlatTable
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
from delegate_lens.program._pte import (
    PTE_IDENTIFIER,
    ProgramDelegate,
    ProgramDelegates,
    read_delegates,
)

__all__ = [
    "DTYPE_ITEMSIZE",
    "FORMAT_VERSION",
    "MAGIC",
    "PTE_IDENTIFIER",
    "BoolValue",
    "CompileSpecData",
    "DTypeValue",
    "DelegateCallInstruction",
    "DelegateData",
    "DeviceValue",
    "FlatBuffer",
    "FlatTable",
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
    "ProgramDelegate",
    "ProgramDelegates",
    "StringValue",
    "TensorValue",
    "Value",
    "deserialize",
    "read_delegates",
    "serialize",
]
