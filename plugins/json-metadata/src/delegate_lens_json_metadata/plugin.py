"""The hooks: encode metadata at runtime, parse it in the Inspector, for configured backends.

Configuration (see ``delegate_lens.config``), section ``[json_metadata]``::

    [json_metadata]
    backends = ["MyNPU", "MyDSP"]   # these backends' metadata is JSON
    format = "json"                 # default format of the listed backends

or, choosing per backend::

    [json_metadata.backends]
    MyNPU = "json"
    MyDSP = "msgpack"               # needs the 'msgpack' extra

Backends not configured are left to other plugins (the hooks return ``None``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from delegate_lens import hookimpl
from delegate_lens.config import Config, derived_per_config
from delegate_lens_json_metadata.codec import FORMATS, decode, encode, to_text

__all__ = [
    "SECTION",
    "backend_formats",
    "dl_encode_delegate_metadata",
    "dl_parse_delegate_metadata",
]

SECTION = "json_metadata"
"""This plugin's configuration section (its entry-point name)."""


@derived_per_config
def backend_formats(config: Config) -> dict[str, str]:
    """``{backend_id: format}`` for the backends configured in ``[json_metadata]``."""
    section = config.section(SECTION)
    section.check_keys({"backends", "format"})
    default = section.get_choice("format", FORMATS, "json")
    backends = section.get("backends", [])
    if isinstance(backends, Mapping):
        table = section.get_table("backends")
        return {name: table.get_choice(name, FORMATS) for name in table.values}
    return dict.fromkeys(section.get_str_list("backends", []), default)


@hookimpl
def dl_encode_delegate_metadata(backend_id: str, metadata: object) -> bytes | None:
    """Encode ``metadata`` for a configured backend (compact UTF-8 JSON or MessagePack)."""
    fmt = backend_formats().get(backend_id)
    if fmt is None:
        return None
    return encode(fmt, metadata, backend_id)


@hookimpl
def dl_parse_delegate_metadata(
    backend_id: str, metadatas: Sequence[bytes]
) -> list[str] | dict[str, object] | None:
    """Decode one row's metadata samples for a configured backend.

    When every sample that has metadata holds an object, the result is a dict of lists,
    one value per sample (``None`` where a sample lacks the key or has no metadata):
    ``[b'{"cycles": 10}', b'{"cycles": 12}']`` gives ``{"cycles": [10, 12]}``. Otherwise
    it is a list with one string per sample (strings as they are, other values as compact
    JSON, ``""`` for a sample without metadata).
    """
    fmt = backend_formats().get(backend_id)
    if fmt is None:
        return None
    values = [None if not raw else decode(fmt, raw, backend_id) for raw in metadatas]
    present = [value for value in values if value is not None]
    if present and all(isinstance(value, Mapping) for value in present):
        keys: dict[str, None] = {}
        for value in present:
            keys.update(dict.fromkeys(str(key) for key in value))
        return {
            key: [None if value is None else _lookup(value, key) for value in values]
            for key in keys
        }
    return ["" if value is None else to_text(value) for value in values]


def _lookup(value: Mapping[object, object], key: str) -> object:
    if key in value:
        return value[key]
    for candidate, item in value.items():  # msgpack maps may have non-str keys
        if str(candidate) == key:
            return item
    return None
