"""The ETRecord's JSON maps: reading them strictly, and writing them as the reference does.

``debug_handle_map``  ``{method: {instruction_id: handle | [handles]}}``
``delegate_map``      ``{method: {instruction_id: {"name": backend_id,
                                                     "delegate_map": {identifier: [handles]}}}}``
``instruction_id_to_num_outs_map``  ``{method: {instruction_id: number_of_outputs}}``

JSON object keys are always strings: instruction ids are decimal text, and a backend's
delegate debug identifiers (int or str at preprocess time) are written as text too. The
readers below keep handles *as written* (an int stays an int, a list becomes a tuple),
because the Inspector reports them in that form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs

from delegate_lens.errors import ETRecordFormatError

Handles: TypeAlias = int | tuple[int, ...]
"""Debug handles as written: one int, or a tuple of ints (a JSON list)."""


@attrs.frozen
class DelegateEntry:
    """One delegate call instruction of the ``delegate_map``.

    ``identifiers`` maps each identifier's JSON key text to its handles as written.
    """

    name: str
    identifiers: Mapping[str, Handles]

    def handles(self, identifier: int | str) -> Handles | None:
        """Handles of a delegate debug identifier, matched on its decimal/str text."""
        return self.identifiers.get(_identifier_text(identifier))


def _identifier_text(identifier: int | str) -> str:
    if isinstance(identifier, bool) or not isinstance(identifier, (int, str)):
        raise TypeError(f"a delegate debug identifier is an int or a str, got {identifier!r}")
    return identifier if isinstance(identifier, str) else str(identifier)


def canonical_identifier(key: str) -> int | str:
    """The identifier a JSON key most likely was: canonical non-negative decimal text (as
    ``str(int)`` writes it) -> int, anything else -> str."""
    if key.isascii() and key.isdigit() and str(int(key)) == key:
        return int(key)
    return key


def normalize_handles(handles: Handles) -> tuple[int, ...]:
    """Handles as a tuple (a single int becomes a 1-tuple)."""
    return (handles,) if isinstance(handles, int) else handles


def load_json(data: bytes, where: str) -> Any:
    """Parse JSON text; any problem is an ETRecordFormatError naming ``where``."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError, ...
        raise ETRecordFormatError(f"{where}: not valid JSON: {exc}") from None


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _expect_object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ETRecordFormatError(f"{where}: expected a JSON object, got {_type_name(value)}")
    return value


def _instruction_id(key: str, where: str) -> int:
    if not (key.isascii() and key.isdigit()):
        raise ETRecordFormatError(f"{where}: instruction id {key!r} is not a non-negative integer")
    return int(key)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_handles(value: object) -> bool:
    """A debug handle (int) or a list of them."""
    return _is_int(value) or (isinstance(value, list) and all(_is_int(v) for v in value))


def _handles(value: Any, where: str) -> Handles:
    if _is_int(value):
        return int(value)
    if _is_handles(value):
        return tuple(value)
    raise ETRecordFormatError(
        f"{where}: expected a debug handle (int) or a list of them, got {value!r:.80}"
    )


def _is_legacy_debug_handle_map(top: Mapping[str, object]) -> bool:
    """Old ETRecords wrote ``{instruction_id: handles}`` without the method level."""
    return bool(top) and all(_is_handles(v) for v in top.values())


def parse_debug_handle_map(
    value: object, where: str, *, legacy_method: str = "forward"
) -> dict[str, dict[int, Handles]]:
    """``{method: {instruction_id: handles as written}}``."""
    top = _expect_object(value, where)
    if _is_legacy_debug_handle_map(top):
        top = {legacy_method: top}
    out: dict[str, dict[int, Handles]] = {}
    for method, per_method in top.items():
        here = f"{where}[{method!r}]"
        inner = _expect_object(per_method, here)
        out[method] = {
            _instruction_id(key, here): _handles(handles, f"{here}[{key!r}]")
            for key, handles in inner.items()
        }
    return out


def parse_delegate_map(value: object, where: str) -> dict[str, dict[int, DelegateEntry]]:
    """``{method: {instruction_id: DelegateEntry}}``."""
    top = _expect_object(value, where)
    out: dict[str, dict[int, DelegateEntry]] = {}
    for method, per_method in top.items():
        here = f"{where}[{method!r}]"
        entries: dict[int, DelegateEntry] = {}
        for key, raw in _expect_object(per_method, here).items():
            there = f"{here}[{key!r}]"
            instruction_id = _instruction_id(key, here)
            body = _expect_object(raw, there)
            name = body.get("name", "")
            if not isinstance(name, str):
                raise ETRecordFormatError(
                    f"{there}: 'name' (backend id) must be a string, got {_type_name(name)}"
                )
            # The reference treats a missing or null inner map as empty.
            inner = _expect_object(body.get("delegate_map") or {}, f"{there}['delegate_map']")
            identifiers = {
                ident: _handles(handles, f"{there}['delegate_map'][{ident!r}]")
                for ident, handles in inner.items()
            }
            entries[instruction_id] = DelegateEntry(name=name, identifiers=identifiers)
        out[method] = entries
    return out


def parse_num_outs_map(value: object, where: str) -> dict[str, dict[int, int]]:
    """``{method: {instruction_id: number_of_outputs}}``."""
    top = _expect_object(value, where)
    out: dict[str, dict[int, int]] = {}
    for method, per_method in top.items():
        here = f"{where}[{method!r}]"
        inner: dict[int, int] = {}
        for key, count in _expect_object(per_method, here).items():
            if not _is_int(count):
                raise ETRecordFormatError(
                    f"{here}[{key!r}]: expected a number of outputs (int), got {count!r:.80}"
                )
            inner[_instruction_id(key, here)] = int(count)
        out[method] = inner
    return out


def parse_export_graph_id(data: bytes, where: str) -> int:
    """``export_graph_id``: decimal text."""
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        text = ""
    if not (text.isdigit() or (text[:1] == "-" and text[1:].isdigit())):
        raise ETRecordFormatError(f"{where}: expected decimal text, got {data[:40]!r}")
    return int(text)


def _jsonable(value: object) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, DelegateEntry):
        return {"name": value.name, "delegate_map": _jsonable(value.identifiers)}
    return value


def dumps_json(value: object) -> bytes:
    """JSON bytes as the reference writes its maps (``json.dumps`` defaults; int keys as text,
    tuples as lists)."""
    return json.dumps(_jsonable(value)).encode("utf-8")
