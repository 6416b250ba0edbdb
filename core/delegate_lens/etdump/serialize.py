"""``executorch.devtools.etdump.serialize`` under delegate-lens: the reference's names of
the ETDump codec (:func:`delegate_lens.etdump.dumps` / :func:`~delegate_lens.etdump.loads`;
no flatc, no torch). ``ETDumpFlatCC`` is our :class:`~delegate_lens.etdump.ETDump`."""

from __future__ import annotations

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import ETDump, dumps, loads

__all__ = [
    "ETDUMP_FLATCC_SCHEMA_NAME",
    "SCALAR_TYPE_SCHEMA_NAME",
    "ETDumpFlatCC",
    "deserialize_from_etdump_flatcc",
    "serialize_to_etdump_flatcc",
]

ETDUMP_FLATCC_SCHEMA_NAME = "etdump_schema_flatcc"
SCALAR_TYPE_SCHEMA_NAME = "scalar_type"
ETDumpFlatCC = ETDump


def serialize_to_etdump_flatcc(etdump: ETDump) -> bytes:
    """The ETDump's bytes (size-prefixed, identifier ``ED00``, as the runtime writes it)."""
    return dumps(etdump)


def deserialize_from_etdump_flatcc(data: bytes, size_prefixed: bool = True) -> ETDump:
    """An ETDump from its bytes. ``size_prefixed`` is checked against the buffer (we read
    either layout; a mismatch is an ETDumpFormatError saying which it is)."""
    etdump = loads(data)
    prefixed = len(data) >= 8 and bytes(data[8:12]) == b"ED00"
    if prefixed != bool(size_prefixed):
        raise ETDumpFormatError(
            f"size_prefixed={size_prefixed} but the buffer is "
            f"{'' if prefixed else 'not '}size-prefixed"
        )
    return etdump
