"""``executorch.devtools.etdump.schema_flatcc`` under delegate-lens: the ETDump schema's
value classes (defined in :mod:`delegate_lens.etdump`), under the reference's names."""

from __future__ import annotations

import enum

from delegate_lens.etdump import (
    AllocationEvent,
    Allocator,
    Bool,
    DebugEvent,
    Double,
    ETDump,
    Event,
    Float,
    Int,
    ProfileEvent,
    RunData,
    ScalarType,
    String,
    Tensor,
    TensorList,
    Value,
    ValueType,
)

__all__ = [
    "PROFILE_EVENT_ENUM",
    "AllocationEvent",
    "Allocator",
    "Bool",
    "DebugEvent",
    "Double",
    "ETDumpFlatCC",
    "Event",
    "Float",
    "Int",
    "ProfileEvent",
    "RunData",
    "ScalarType",
    "String",
    "Tensor",
    "TensorList",
    "Value",
    "ValueType",
]

ETDumpFlatCC = ETDump


class PROFILE_EVENT_ENUM(enum.Enum):  # the reference's name
    """Names of the runtime's own profile events."""

    RUN_MODEL = "Method::execute"
    OPERATOR_CALL = "OPERATOR_CALL"
    DELEGATE_CALL = "DELEGATE_CALL"
    LOAD_MODEL = "Program::load_method"
