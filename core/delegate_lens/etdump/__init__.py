"""The ETDump codec: read and write ExecuTorch ETDump files (FlatBuffers, identifier ED00).

``loads``/``load`` decode a buffer in bulk with numpy into an :class:`ETDump` whose runs
hold their events as columns (:class:`EventColumns`); ``dumps``/``dump`` write the
columns back vectorized. See ``docs/etdump.md``.
"""

from __future__ import annotations

from delegate_lens.etdump.columns import EventColumns, EventColumnsBuilder, EventKind
from delegate_lens.etdump.decoded import DecodedColumns
from delegate_lens.etdump.jsonview import from_json, to_json, write_json
from delegate_lens.etdump.model import (
    AllocationEvent,
    Allocator,
    Bool,
    DebugEvent,
    Double,
    ETDump,
    Event,
    EventSequence,
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
from delegate_lens.etdump.reader import (
    FILE_IDENTIFIER,
    decode_columns,
    decode_joined,
    decode_many,
    joined_layout,
    load,
    loads,
)
from delegate_lens.etdump.values import DebugEntries, TensorColumns, ValueColumns
from delegate_lens.etdump.writer import dump, dumps

__all__ = [
    "FILE_IDENTIFIER",
    "AllocationEvent",
    "Allocator",
    "Bool",
    "DebugEntries",
    "DebugEvent",
    "DecodedColumns",
    "Double",
    "ETDump",
    "Event",
    "EventColumns",
    "EventColumnsBuilder",
    "EventKind",
    "EventSequence",
    "Float",
    "Int",
    "ProfileEvent",
    "RunData",
    "ScalarType",
    "String",
    "Tensor",
    "TensorColumns",
    "TensorList",
    "Value",
    "ValueColumns",
    "ValueType",
    "decode_columns",
    "decode_joined",
    "decode_many",
    "dump",
    "dumps",
    "from_json",
    "joined_layout",
    "load",
    "loads",
    "to_json",
    "write_json",
]
