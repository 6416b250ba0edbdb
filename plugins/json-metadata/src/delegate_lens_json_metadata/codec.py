"""Encode structured metadata to bytes and back, as JSON or MessagePack."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from delegate_lens.errors import MissingExtraError

__all__ = ["FORMATS", "decode", "encode", "to_text"]

FORMATS = ("json", "msgpack")
"""The formats a backend's metadata can be configured to use."""


def _jsonable(value: object) -> object:
    """``json.dumps``'s fallback: numpy values and arrays, bytes, sets."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _msgpack(backend_id: str) -> ModuleType:
    try:
        import msgpack
    except ImportError as exc:
        raise MissingExtraError(
            f"backend {backend_id!r} is configured for MessagePack metadata, which needs the "
            "msgpack package: pip install 'delegate-lens-json-metadata[msgpack]'"
        ) from exc
    return msgpack


def encode(fmt: str, value: object, backend_id: str = "?") -> bytes:
    """``value`` as bytes in format ``fmt`` (``"json"``: compact UTF-8 JSON)."""
    if fmt == "json":
        try:
            text = json.dumps(
                value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_jsonable
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata of backend {backend_id!r} is not JSON: {exc}") from exc
        return text.encode("utf-8")
    if fmt == "msgpack":
        packed: bytes = _msgpack(backend_id).packb(value, use_bin_type=True, default=_jsonable)
        return packed
    raise ValueError(f"unknown metadata format {fmt!r} (known: {', '.join(FORMATS)})")


def decode(fmt: str, data: bytes | bytearray | memoryview | str, backend_id: str = "?") -> Any:
    """The value ``data`` holds in format ``fmt``."""
    if fmt == "json":
        try:
            return json.loads(data if isinstance(data, str) else bytes(data))
        except ValueError as exc:
            raise ValueError(
                f"metadata of backend {backend_id!r} is not valid JSON: {exc}"
            ) from exc
    if fmt == "msgpack":
        msgpack = _msgpack(backend_id)
        if isinstance(data, str):
            raise ValueError(f"MessagePack metadata of backend {backend_id!r} must be bytes")
        try:
            return msgpack.unpackb(bytes(data), raw=False, strict_map_key=False)
        except (ValueError, msgpack.UnpackException) as exc:
            raise ValueError(
                f"metadata of backend {backend_id!r} is not valid MessagePack: {exc}"
            ) from exc
    raise ValueError(f"unknown metadata format {fmt!r} (known: {', '.join(FORMATS)})")


def to_text(value: object) -> str:
    """A decoded value as one string: itself when a string, else compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
