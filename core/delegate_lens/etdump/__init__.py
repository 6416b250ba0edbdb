"""The ETDump codec: read and write ExecuTorch ETDump files (FlatBuffers, identifier ED00).

``loads``/``load`` decode a buffer in bulk with numpy into an :class:`ETDump` whose runs
hold their events as columns (:class:`EventColumns`); ``dumps``/``dump`` write the
columns back vectorized. See ``docs/etdump.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names

if TYPE_CHECKING:
    from delegate_lens.etdump.builder import EventColumnsBuilder
    from delegate_lens.etdump.columns import EventColumns, EventKind
    from delegate_lens.etdump.decoded import DecodedColumns
    from delegate_lens.etdump.jsonview import from_json, to_json, write_json
    from delegate_lens.etdump.mapped import decode_file
    from delegate_lens.etdump.model import (
        FRAMEWORK_EVENTS,
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

# Names load their module on first use (PEP 562): reading an ETDump does not import the
# writer or the JSON view, nor the object model until run objects are asked for.
_HOME = {
    "FRAMEWORK_EVENTS": "model",
    "EventColumns": "columns",
    "EventColumnsBuilder": "builder",
    "EventKind": "columns",
    "DecodedColumns": "decoded",
    "from_json": "jsonview",
    "to_json": "jsonview",
    "write_json": "jsonview",
    "AllocationEvent": "model",
    "Allocator": "model",
    "Bool": "model",
    "DebugEvent": "model",
    "Double": "model",
    "ETDump": "model",
    "Event": "model",
    "EventSequence": "model",
    "Float": "model",
    "Int": "model",
    "ProfileEvent": "model",
    "RunData": "model",
    "ScalarType": "model",
    "String": "model",
    "Tensor": "model",
    "TensorList": "model",
    "Value": "model",
    "ValueType": "model",
    "FILE_IDENTIFIER": "reader",
    "decode_columns": "reader",
    "decode_joined": "reader",
    "decode_many": "reader",
    "joined_layout": "reader",
    "load": "reader",
    "loads": "reader",
    "decode_file": "mapped",
    "DebugEntries": "values",
    "TensorColumns": "values",
    "ValueColumns": "values",
    "dump": "writer",
    "dumps": "writer",
}

__all__ = [
    "FILE_IDENTIFIER",
    "FRAMEWORK_EVENTS",
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
    "decode_file",
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


__getattr__, __dir__ = lazy_names(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}, __all__
)
