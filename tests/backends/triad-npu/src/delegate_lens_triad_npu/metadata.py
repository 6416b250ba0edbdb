"""TriadNPU's delegate metadata: ``<BBI`` = version (1), kernel code, element count."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

KERNELS = ("add", "sub", "mul", "relu", "add_relu", "exp2x", "recip", "affine", "call")
VERSION = 1
RECORD = struct.Struct("<BBI")


def encode(metadata: Mapping[str, object]) -> bytes:
    """``{"kernel": name, "elements": n}`` -> bytes."""
    return RECORD.pack(VERSION, KERNELS.index(str(metadata["kernel"])), int(metadata["elements"]))  # type: ignore[call-overload]


def parse(metadatas: Sequence[bytes]) -> dict[str, list[object]]:
    """The records of one Inspector row -> ``{"kernel": [...], "elements": [...]}``."""
    out: dict[str, list[object]] = {"kernel": [], "elements": []}
    for raw in metadatas:
        if len(raw) != RECORD.size:
            raise ValueError(f"TriadNPU metadata is {len(raw)} bytes, not {RECORD.size}")
        version, code, elements = RECORD.unpack(raw)
        if version != VERSION or code >= len(KERNELS):
            raise ValueError(f"TriadNPU metadata: version {version}, kernel code {code}")
        out["kernel"].append(KERNELS[code])
        out["elements"].append(elements)
    return out
