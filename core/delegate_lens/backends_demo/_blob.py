"""The demo backend's compiled blob (``processed_bytes``): a tiny, versioned format.

.. code-block:: text

    b"DLDB" | version u16 (1) | json length u32 | data length u32
    JSON   {"n_slots", "inputs", "outputs", "constants": [{"slot", "dtype", "shape",
            "offset"}], "ops": [{"kernel", "identifier", "inputs", "output", "attrs",
            "flops", "bytes_moved"}], "summary": {"identifier", "flops", "bytes_moved"}}
    data   constant arrays (C order, little endian), each at a 16-byte boundary

A *slot* is a numbered buffer of the backend's runtime: inputs, constants, op outputs.
Torch-free (numpy only).
"""

from __future__ import annotations

import json
import struct
from typing import Any

import attrs
import numpy as np

MAGIC = b"DLDB"
VERSION = 1
_HEAD = struct.Struct("<4sHII")
_ALIGN = 16


class BlobError(ValueError):
    """The blob is not a valid demo backend blob."""


@attrs.define
class DemoOp:
    """One backend operation: a kernel writing ``output`` from ``inputs`` (slots)."""

    kernel: str  # conv2d, conv2d_relu, linear, linear_relu, relu, sin, cos, div, add, mul, sigmoid
    identifier: int | str
    inputs: list[int]
    output: int
    attrs: dict[str, Any] = attrs.field(factory=dict)
    flops: int = 0
    bytes_moved: int = 0


@attrs.define
class DemoBlob:
    n_slots: int
    inputs: list[int]
    outputs: list[int]
    constants: dict[int, np.ndarray[Any, Any]]
    ops: list[DemoOp]
    summary_identifier: int | str
    summary_flops: int = 0
    summary_bytes_moved: int = 0


def to_bytes(blob: DemoBlob) -> bytes:
    data = bytearray()
    constants = []
    for slot, array in blob.constants.items():
        array = np.ascontiguousarray(array)
        data += b"\0" * (-len(data) % _ALIGN)
        constants.append(
            {
                "slot": slot,
                "dtype": array.dtype.str,
                "shape": list(array.shape),
                "offset": len(data),
            }
        )
        data += array.tobytes()
    header = {
        "n_slots": blob.n_slots,
        "inputs": blob.inputs,
        "outputs": blob.outputs,
        "constants": constants,
        "ops": [
            {
                "kernel": op.kernel,
                "identifier": op.identifier,
                "inputs": op.inputs,
                "output": op.output,
                "attrs": op.attrs,
                "flops": op.flops,
                "bytes_moved": op.bytes_moved,
            }
            for op in blob.ops
        ],
        "summary": {
            "identifier": blob.summary_identifier,
            "flops": blob.summary_flops,
            "bytes_moved": blob.summary_bytes_moved,
        },
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return _HEAD.pack(MAGIC, VERSION, len(text), len(data)) + text + bytes(data)


def from_bytes(data: bytes) -> DemoBlob:
    """Parse a blob; any problem is a :class:`BlobError` saying what."""
    if len(data) < _HEAD.size:
        raise BlobError(f"demo blob of {len(data)} bytes is truncated")
    magic, version, text_len, data_len = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise BlobError(f"not a demo blob (magic {magic!r})")
    if version != VERSION:
        raise BlobError(f"demo blob version {version} is not supported (this runtime: {VERSION})")
    start = _HEAD.size + text_len
    if start + data_len != len(data):
        raise BlobError(f"demo blob is {len(data)} bytes, its header says {start + data_len}")
    try:
        header = json.loads(data[_HEAD.size : start].decode("utf-8"))
        payload = memoryview(data)[start:]
        constants: dict[int, np.ndarray[Any, Any]] = {}
        for c in header["constants"]:
            dtype = np.dtype(c["dtype"])
            count = int(np.prod(c["shape"], dtype=np.int64))
            array = np.frombuffer(payload, dtype=dtype, count=count, offset=c["offset"])
            constants[int(c["slot"])] = array.reshape(c["shape"])
        ops = [
            DemoOp(
                o["kernel"],
                o["identifier"],
                list(o["inputs"]),
                int(o["output"]),
                dict(o["attrs"]),
                int(o["flops"]),
                int(o["bytes_moved"]),
            )
            for o in header["ops"]
        ]
        summary = header["summary"]
        return DemoBlob(
            int(header["n_slots"]),
            list(header["inputs"]),
            list(header["outputs"]),
            constants,
            ops,
            summary["identifier"],
            int(summary["flops"]),
            int(summary["bytes_moved"]),
        )
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise BlobError(f"demo blob header is malformed: {exc!r}") from None
