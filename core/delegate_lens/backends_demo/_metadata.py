"""The demo backend's delegate metadata: a compact binary record per event.

Layout (little endian): ``version u8 (1) | flops u64 | bytes_moved u64 | kernel length u16 |
kernel name (UTF-8)``. :func:`encode` is what ``dl_encode_delegate_metadata`` returns for
the structured value the runtime logs (a mapping with ``kernel``, ``flops`` and
``bytes_moved``); :func:`parse` is what ``dl_parse_delegate_metadata`` shows in the
Inspector. Torch-free.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

METADATA_VERSION = 1
_HEAD = struct.Struct("<BQQH")


def encode(metadata: Mapping[str, str | int]) -> bytes:
    """``{"kernel": str, "flops": int, "bytes_moved": int}`` -> bytes."""
    name = str(metadata["kernel"]).encode("utf-8")
    return (
        _HEAD.pack(
            METADATA_VERSION,
            int(metadata.get("flops", 0)),
            int(metadata.get("bytes_moved", 0)),
            len(name),
        )
        + name
    )


def decode(data: bytes) -> dict[str, str | int]:
    """One record -> ``{"kernel", "flops", "bytes_moved"}``; ``ValueError`` on bad bytes."""
    if len(data) < _HEAD.size:
        raise ValueError(f"demo metadata record of {len(data)} bytes is truncated (< {_HEAD.size})")
    version, flops, moved, length = _HEAD.unpack_from(data)
    if version != METADATA_VERSION:
        raise ValueError(f"demo metadata version {version} is not {METADATA_VERSION}")
    if len(data) != _HEAD.size + length:
        raise ValueError(
            f"demo metadata record has {len(data)} bytes, its header says {_HEAD.size + length}"
        )
    kernel = bytes(data[_HEAD.size :]).decode("utf-8")
    return {"kernel": kernel, "flops": flops, "bytes_moved": moved}


def parse(metadatas: Sequence[bytes]) -> dict[str, list[str | int]]:
    """The samples of one Inspector row -> ``{"kernel": [...], "flops": [...], "bytes_moved": [...]}``."""
    out: dict[str, list[str | int]] = {"kernel": [], "flops": [], "bytes_moved": []}
    for data in metadatas:
        record = decode(data)
        for key, values in out.items():
            values.append(record[key])
    return out
