"""The strict JSON view of an ETDump, in the shape of the reference's ``etdump.json``.

Field names are the format's, enums are written by name (unknown values as ints), uint64
values are exact ints, fields equal to their default are omitted; absent strings, vectors
and tables are omitted while present empty vectors are written as ``[]``. Floats that JSON
cannot hold are written as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (and read back).

:func:`from_json` is strict: missing required fields (``run_data``, each run's ``events``),
unknown fields, wrong types and out-of-range values raise :class:`ETDumpFormatError` naming
the JSON path of the offending field.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

import numpy as np

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump._builder import EventColumnsBuilder
from delegate_lens.etdump._columns import EventColumns, EventKind
from delegate_lens.etdump._objects import (
    Allocator,
    Bool,
    Double,
    ETDump,
    Float,
    Int,
    RunData,
    ScalarType,
    Tensor,
    TensorList,
    Value,
    ValueType,
    fits_float32,
)

_U64 = (1 << 64) - 1


def _enum_out(value: int) -> str | int:
    return value.name if isinstance(value, (ValueType, ScalarType)) else int(value)


def _float_out(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


# --- to JSON -------------------------------------------------------------------------------------


def to_json(etdump: ETDump) -> dict[str, Any]:
    """The JSON-ready view of ``etdump`` (dicts, lists, str, int, float, bool)."""
    out: dict[str, Any] = {}
    if etdump.version != 0:
        out["version"] = etdump.version
    out["run_data"] = [_run_json(run) for run in etdump.run_data]
    return out


def write_json(etdump: ETDump, stream: TextIO, *, compact: bool = False) -> None:
    """Write the JSON view to ``stream`` run by run (memory stays bounded on big files).

    Runs and their fields are indented; each event is one compact line (``compact``: the
    whole document on one line).
    """
    # ASCII-only output (non-ASCII as \u escapes): safe whatever the stream's encoding
    dumps = functools.partial(json.dumps, separators=(",", ":") if compact else None)
    nl, ind = ("", "") if compact else ("\n", "  ")
    head = {"version": etdump.version} if etdump.version != 0 else {}
    stream.write("{" + nl)
    for key, value in head.items():
        stream.write(f"{ind}{dumps(key)}: {dumps(value)},{nl}")
    stream.write(f'{ind}"run_data": [')
    for r, run in enumerate(etdump.run_data):
        fields = _run_json(run, events=False)
        stream.write(("," if r else "") + nl + ind * 2 + "{" + nl)
        for key, value in fields.items():
            stream.write(f"{ind * 3}{dumps(key)}: {dumps(value)},{nl}")
        stream.write(f'{ind * 3}"events": [')
        for e, event in enumerate(iter_event_json(run.columns)):
            stream.write(("," if e else "") + nl + ind * 4 + dumps(event))
        stream.write(nl + ind * 3 + "]" + nl + ind * 2 + "}")
    stream.write(nl + ind + "]" + nl + "}" + nl)


def _run_json(run: RunData, events: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if run.name is not None:
        out["name"] = run.name
    if run.bundled_input_index != -1:
        out["bundled_input_index"] = run.bundled_input_index
    if run.allocators:
        out["allocators"] = [{} if a.name is None else {"name": a.name} for a in run.allocators]
    if events:
        out["events"] = list(iter_event_json(run.columns))
    return out


def iter_event_json(cols: EventColumns) -> Iterator[dict[str, Any]]:
    """Each event of ``cols`` as its JSON dict, straight from the columns."""
    strings = cols.strings
    kind = cols.kind.tolist()
    name = cols.name.tolist()
    chain = cols.chain_index.tolist()
    instr = cols.instruction_id.tolist()
    dd_int = cols.delegate_debug_id_int.tolist()
    dd_str = cols.delegate_debug_id_str.tolist()
    start = cols.start_time.tolist()
    end = cols.end_time.tolist()
    m_len = cols.metadata_length.tolist()
    m_off = cols.metadata_offset.tolist()
    a_id = cols.allocator_id.tolist()
    a_size = cols.allocation_size.tolist()
    blob = cols.blob
    for i, k in enumerate(kind):
        ev: dict[str, Any] = {}
        if k == EventKind.PROFILE:
            if name[i] >= 0:
                ev["name"] = strings[name[i]]
            if chain[i] != 0:
                ev["chain_index"] = chain[i]
            if instr[i] != -1:
                ev["instruction_id"] = instr[i]
            if dd_int[i] != -1:
                ev["delegate_debug_id_int"] = dd_int[i]
            if dd_str[i] >= 0:
                ev["delegate_debug_id_str"] = strings[dd_str[i]]
            if m_len[i] >= 0:
                ev["delegate_debug_metadata"] = list(bytes(blob[m_off[i] : m_off[i] + m_len[i]]))
            if start[i] != 0:
                ev["start_time"] = start[i]
            if end[i] != 0:
                ev["end_time"] = end[i]
            yield {"profile_event": ev}
        elif k == EventKind.DEBUG:
            if chain[i] != 0:
                ev["chain_index"] = chain[i] & _U64
            if instr[i] != -1:
                ev["instruction_id"] = instr[i]
            entry = cols.debug_entries.get(i)
            if entry is not None:
                ev["debug_entry"] = _value_json(entry)
            if dd_int[i] != -1:
                ev["delegate_debug_id_int"] = dd_int[i]
            if dd_str[i] >= 0:
                ev["delegate_debug_id_str"] = strings[dd_str[i]]
            if name[i] >= 0:
                ev["name"] = strings[name[i]]
            yield {"debug_event": ev}
        elif k == EventKind.ALLOCATION:
            if a_id[i] != 0:
                ev["allocator_id"] = a_id[i]
            if a_size[i] != 0:
                ev["allocation_size"] = a_size[i]
            yield {"allocation_event": ev}
        else:
            yield {}


def _tensor_json(t: Tensor) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if int(t.scalar_type) != 0:
        out["scalar_type"] = _enum_out(t.scalar_type)
    out["sizes"] = list(t.sizes)
    out["strides"] = list(t.strides)
    if t.offset != 0:
        out["offset"] = t.offset
    return out


def _value_json(v: Value) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if int(v.val) != 0:
        out["val"] = _enum_out(v.val)
    if v.tensor is not None:
        out["tensor"] = _tensor_json(v.tensor)
    if v.tensor_list is not None:
        out["tensor_list"] = {"tensors": [_tensor_json(t) for t in v.tensor_list.tensors]}
    if v.int_value is not None:
        out["int_value"] = {"int_val": v.int_value.int_val} if v.int_value.int_val else {}
    if v.float_value is not None:
        f = v.float_value.float_val
        out["float_value"] = {"float_val": _float_out(f)} if f != 0 or math.isnan(f) else {}
    if v.double_value is not None:
        f = v.double_value.double_val
        out["double_value"] = {"double_val": _float_out(f)} if f != 0 or math.isnan(f) else {}
    for key in ("bool_value", "output"):
        b = getattr(v, key)
        if b is not None:
            out[key] = {"bool_val": True} if b.bool_val else {}
    return out


# --- from JSON ------------------------------------------------------------------------------------


class _Path:
    """Checked access to one JSON object, errors naming its path."""

    def __init__(self, obj: object, path: str, fields: tuple[str, ...]) -> None:
        if not isinstance(obj, Mapping):
            raise ETDumpFormatError(f"{path or 'top level'}: expected an object, got {_kind(obj)}")
        unknown = [k for k in obj if k not in fields]
        if unknown:
            raise ETDumpFormatError(f"{path or 'top level'}: unknown field {unknown[0]!r}")
        self.obj = obj
        self.path = path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def require(self, key: str) -> None:
        """The format's required shape: ``key`` must be present (to_json always writes it)."""
        if key not in self.obj:
            raise ETDumpFormatError(
                f"{self.path or 'top level'}: missing field {key!r} (not an ETDump JSON view)"
            )

    def get_int(self, key: str, default: int, lo: int, hi: int) -> int:
        value = self.obj.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ETDumpFormatError(f"{self.at(key)}: expected an integer, got {_kind(value)}")
        if not lo <= value <= hi:
            raise ETDumpFormatError(f"{self.at(key)}: {value} is out of range ({lo}..{hi})")
        return value

    def get_str(self, key: str) -> str | None:
        value = self.obj.get(key)
        if value is not None and not isinstance(value, str):
            raise ETDumpFormatError(f"{self.at(key)}: expected a string, got {_kind(value)}")
        if value is not None and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:  # a lone surrogate, e.g. "\ud800" in the JSON
                raise ETDumpFormatError(
                    f"{self.at(key)}: not valid Unicode text ({exc.reason} at index {exc.start})"
                ) from None
        return value

    def get_list(self, key: str) -> list[Any]:
        value = self.obj.get(key, [])
        if not isinstance(value, list):
            raise ETDumpFormatError(f"{self.at(key)}: expected an array, got {_kind(value)}")
        return value

    def get_float(self, key: str, single: bool) -> float:
        value = self.obj.get(key, 0.0)
        if isinstance(value, str) and value in ("nan", "inf", "-inf"):
            return float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ETDumpFormatError(f"{self.at(key)}: expected a number, got {_kind(value)}")
        result = float(value)
        if single and not fits_float32(result):
            raise ETDumpFormatError(f"{self.at(key)}: {value} does not fit a float32")
        return result

    def get_bool(self, key: str) -> bool:
        value = self.obj.get(key, False)
        if not isinstance(value, bool):
            raise ETDumpFormatError(f"{self.at(key)}: expected true or false, got {_kind(value)}")
        return value

    def get_enum(self, key: str, enum: type[ValueType] | type[ScalarType]) -> int:
        value = self.obj.get(key, 0)
        if isinstance(value, str):
            try:
                return int(enum[value])
            except KeyError:
                raise ETDumpFormatError(
                    f"{self.at(key)}: unknown {enum.__name__} {value!r}"
                ) from None
        return self.get_int(key, 0, -128, 127)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)


def from_json(obj: object) -> ETDump:
    """Build an :class:`ETDump` from its JSON view (strict; errors name the JSON path)."""
    top = _Path(obj, "", ("version", "run_data"))
    top.require("run_data")
    version = top.get_int("version", 0, 0, (1 << 32) - 1)
    runs = []
    for r, run_obj in enumerate(top.get_list("run_data")):
        run = _Path(
            run_obj, f"run_data[{r}]", ("name", "bundled_input_index", "allocators", "events")
        )
        run.require("events")
        allocators = []
        for k, alloc_obj in enumerate(run.get_list("allocators")):
            alloc = _Path(alloc_obj, f"{run.path}.allocators[{k}]", ("name",))
            allocators.append(Allocator(alloc.get_str("name")))
        builder = EventColumnsBuilder()
        for e, ev_obj in enumerate(run.get_list("events")):
            _add_event(builder, ev_obj, f"{run.path}.events[{e}]")
        runs.append(
            RunData.from_columns(
                run.get_str("name"),
                run.get_int("bundled_input_index", -1, *_I32),
                allocators,
                builder.build(),
            )
        )
    return ETDump(version=version, run_data=runs)


def _add_event(builder: EventColumnsBuilder, obj: object, path: str) -> None:
    ev = _Path(obj, path, ("profile_event", "allocation_event", "debug_event"))
    present = [k for k in ev.obj if ev.obj[k] is not None]
    if len(present) > 1:
        raise ETDumpFormatError(f"{path}: an event sets only one of {', '.join(present)}")
    if "profile_event" in present:
        p = _Path(
            ev.obj["profile_event"],
            ev.at("profile_event"),
            (
                "name",
                "chain_index",
                "instruction_id",
                "delegate_debug_id_int",
                "delegate_debug_id_str",
                "delegate_debug_metadata",
                "start_time",
                "end_time",
            ),
        )
        meta = p.obj.get("delegate_debug_metadata")
        metadata = None if meta is None else _bytes(meta, p.at("delegate_debug_metadata"))
        builder.add_profile_event(
            p.get_str("name"),
            p.get_int("chain_index", 0, *_I32),
            p.get_int("instruction_id", -1, *_I32),
            p.get_int("delegate_debug_id_int", -1, *_I32),
            p.get_str("delegate_debug_id_str"),
            metadata,
            p.get_int("start_time", 0, 0, _U64),
            p.get_int("end_time", 0, 0, _U64),
        )
    elif "allocation_event" in present:
        a = _Path(
            ev.obj["allocation_event"],
            ev.at("allocation_event"),
            ("allocator_id", "allocation_size"),
        )
        builder.add_allocation_event(
            a.get_int("allocator_id", 0, *_I32), a.get_int("allocation_size", 0, 0, _U64)
        )
    elif "debug_event" in present:
        d = _Path(
            ev.obj["debug_event"],
            ev.at("debug_event"),
            (
                "chain_index",
                "instruction_id",
                "debug_entry",
                "delegate_debug_id_int",
                "delegate_debug_id_str",
                "name",
            ),
        )
        entry = d.obj.get("debug_entry")
        builder.add_debug_event(
            d.get_int("chain_index", 0, 0, _U64),
            d.get_int("instruction_id", -1, *_I32),
            None if entry is None else _value(entry, d.at("debug_entry")),
            d.get_int("delegate_debug_id_int", -1, *_I32),
            d.get_str("delegate_debug_id_str"),
            d.get_str("name"),
        )
    else:
        builder.add_event_none()


def _bytes(value: object, path: str) -> bytes:
    if not isinstance(value, list):
        raise ETDumpFormatError(f"{path}: expected an array of bytes, got {_kind(value)}")
    try:
        arr = np.array(value)
    except (ValueError, TypeError):
        arr = np.array([], dtype=object)
    if len(value) and (arr.dtype.kind not in "iu" or int(arr.min()) < 0 or int(arr.max()) > 255):
        raise ETDumpFormatError(f"{path}: expected integers 0..255")
    return arr.astype(np.uint8).tobytes()


def _tensor(obj: object, path: str) -> Tensor:
    t = _Path(obj, path, ("scalar_type", "sizes", "strides", "offset"))
    dims = {}
    for key in ("sizes", "strides"):
        items = t.get_list(key)
        for j, item in enumerate(items):
            if (
                isinstance(item, bool)
                or not isinstance(item, int)
                or not _I64[0] <= item <= _I64[1]
            ):
                raise ETDumpFormatError(f"{t.at(key)}[{j}]: expected an int64, got {item!r}")
        dims[key] = items
    return Tensor(
        scalar_type=t.get_enum("scalar_type", ScalarType),
        sizes=dims["sizes"],
        strides=dims["strides"],
        offset=t.get_int("offset", 0, *_I64),
    )


def _value(obj: object, path: str) -> Value:
    v = _Path(
        obj,
        path,
        (
            "val",
            "tensor",
            "tensor_list",
            "int_value",
            "float_value",
            "double_value",
            "bool_value",
            "output",
        ),
    )
    subs: dict[str, Any] = {}
    if v.obj.get("tensor") is not None:
        subs["tensor"] = _tensor(v.obj["tensor"], v.at("tensor"))
    if v.obj.get("tensor_list") is not None:
        tl = _Path(v.obj["tensor_list"], v.at("tensor_list"), ("tensors",))
        subs["tensor_list"] = TensorList(
            [_tensor(t, f"{tl.at('tensors')}[{j}]") for j, t in enumerate(tl.get_list("tensors"))]
        )
    if v.obj.get("int_value") is not None:
        subs["int_value"] = Int(
            _Path(v.obj["int_value"], v.at("int_value"), ("int_val",)).get_int("int_val", 0, *_I64)
        )
    if v.obj.get("float_value") is not None:
        f = _Path(v.obj["float_value"], v.at("float_value"), ("float_val",))
        subs["float_value"] = Float(f.get_float("float_val", single=True))
    if v.obj.get("double_value") is not None:
        f = _Path(v.obj["double_value"], v.at("double_value"), ("double_val",))
        subs["double_value"] = Double(f.get_float("double_val", single=False))
    for key in ("bool_value", "output"):
        if v.obj.get(key) is not None:
            subs[key] = Bool(_Path(v.obj[key], v.at(key), ("bool_val",)).get_bool("bool_val"))
    return Value(val=v.get_enum("val", ValueType), **subs)
