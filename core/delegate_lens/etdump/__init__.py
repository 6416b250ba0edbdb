"""The ETDump codec: read and write ExecuTorch ETDump files (FlatBuffers, identifier ED00).

``loads``/``load`` decode a buffer in bulk with numpy into an :class:`ETDump` whose runs
hold their events as columns (:class:`EventColumns`); ``dumps``/``dump`` write the
columns back vectorized. See ``docs/etdump.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names

if TYPE_CHECKING:
    from delegate_lens.etdump._builder import EventColumnsBuilder
    from delegate_lens.etdump._columns import EventColumns, EventKind
    from delegate_lens.etdump._decoded import DecodedColumns
    from delegate_lens.etdump._jsonview import from_json, to_json, write_json
    from delegate_lens.etdump._mapped import decode_file
    from delegate_lens.etdump._objects import (
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
    from delegate_lens.etdump._reader import (
        FILE_IDENTIFIER,
        decode_columns,
        decode_joined,
        decode_many,
        joined_layout,
        load,
        loads,
    )
    from delegate_lens.etdump._values import DebugEntries, TensorColumns, ValueColumns
    from delegate_lens.etdump._writer import dump, dumps

# Names load their module on first use (PEP 562): reading an ETDump does not import the
# writer or the JSON view, nor the object model until run objects are asked for.
_HOME = {
    "FRAMEWORK_EVENTS": "_objects",
    "EventColumns": "_columns",
    "EventColumnsBuilder": "_builder",
    "EventKind": "_columns",
    "DecodedColumns": "_decoded",
    "from_json": "_jsonview",
    "to_json": "_jsonview",
    "write_json": "_jsonview",
    "AllocationEvent": "_objects",
    "Allocator": "_objects",
    "Bool": "_objects",
    "DebugEvent": "_objects",
    "Double": "_objects",
    "ETDump": "_objects",
    "Event": "_objects",
    "EventSequence": "_objects",
    "Float": "_objects",
    "Int": "_objects",
    "ProfileEvent": "_objects",
    "RunData": "_objects",
    "ScalarType": "_objects",
    "String": "_objects",
    "Tensor": "_objects",
    "TensorList": "_objects",
    "Value": "_objects",
    "ValueType": "_objects",
    "FILE_IDENTIFIER": "_reader",
    "decode_columns": "_reader",
    "decode_joined": "_reader",
    "decode_many": "_reader",
    "joined_layout": "_reader",
    "load": "_reader",
    "loads": "_reader",
    "decode_file": "_mapped",
    "DebugEntries": "_values",
    "TensorColumns": "_values",
    "ValueColumns": "_values",
    "dump": "_writer",
    "dumps": "_writer",
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
    "compiled_walk_available",
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


def compiled_walk_available() -> bool:
    """Whether decoding takes the compiled walk: built, and not switched off by
    ``DELEGATE_LENS_NO_COMPILED`` (docs/etdump.md, "The compiled walk")."""
    from delegate_lens.etdump._fastwalk import available

    return available()


__getattr__, __dir__ = lazy_names(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}, __all__
)
