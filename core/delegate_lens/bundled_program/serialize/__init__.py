"""``executorch.devtools.bundled_program.serialize`` under delegate-lens.

As in the reference, :func:`deserialize_from_flatbuffer_to_bundled_program` gives the
schema objects (``.method_test_suites[i].test_cases[j].inputs[k].val``, ``.program`` as
bytes; see :mod:`delegate_lens.bundled_program.schema`), while
:func:`serialize_from_bundled_program_to_flatbuffer` takes a
:class:`~delegate_lens.bundled_program.BundledProgram` (or schema objects). The
package-level ``delegate_lens.bundled_program.deserialize_from_flatbuffer_to_bundled_program``
returns our ``BundledProgram`` (values as numpy arrays, runnable in our runtime).

``convert_to_flatbuffer`` / ``convert_from_flatbuffer`` go between the buffer and the JSON
of :func:`serialize_from_bundled_program_to_json` (the reference runs ``flatc`` and uses
flatc's JSON dialect there; ours needs no compiler).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens.bundled_program import _flatbuffer as _fb
from delegate_lens.bundled_program._schema_io import from_json, from_schema, read_schema, to_json
from delegate_lens.bundled_program.schema import bundled_program_schema as _bp

if TYPE_CHECKING:
    from delegate_lens.bundled_program.core import BundledProgram

__all__ = [
    "BUNDLED_PROGRAM_SCHEMA_NAME",
    "SCALAR_TYPE_SCHEMA_NAME",
    "convert_from_flatbuffer",
    "convert_to_flatbuffer",
    "deserialize_from_flatbuffer_to_bundled_program",
    "deserialize_from_json_to_bundled_program",
    "serialize_from_bundled_program_to_flatbuffer",
    "serialize_from_bundled_program_to_json",
]

BUNDLED_PROGRAM_SCHEMA_NAME = "bundled_program_schema"
SCALAR_TYPE_SCHEMA_NAME = "scalar_type"


def serialize_from_bundled_program_to_flatbuffer(
    bundled_program: BundledProgram | _bp.BundledProgram,
) -> bytes:
    """The ``.bpte`` bytes of a BundledProgram (ours) or of schema objects."""
    if isinstance(bundled_program, _bp.BundledProgram):
        bundled_program = from_schema(bundled_program)
    return _fb.serialize_from_bundled_program_to_flatbuffer(bundled_program)


def deserialize_from_flatbuffer_to_bundled_program(flatbuffer: bytes) -> _bp.BundledProgram:
    """The schema objects of a ``.bpte`` buffer, as the reference returns them."""
    return read_schema(flatbuffer)


def serialize_from_bundled_program_to_json(
    bundled_program: BundledProgram | _bp.BundledProgram,
) -> str:
    """The reference's JSON of schema objects (or of our BundledProgram)."""
    if not isinstance(bundled_program, _bp.BundledProgram):
        bundled_program = bundled_program.serialize_to_schema()
    return to_json(bundled_program)


def deserialize_from_json_to_bundled_program(program_json: str | bytes) -> _bp.BundledProgram:
    """Schema objects from that JSON."""
    return from_json(program_json)


def convert_to_flatbuffer(program_json: str) -> bytes:
    """The ``.bpte`` bytes of a bundled program's JSON."""
    return serialize_from_bundled_program_to_flatbuffer(from_json(program_json))


def convert_from_flatbuffer(program_flatbuffer: bytes) -> bytes:
    """The JSON (bytes) of a ``.bpte`` buffer."""
    return to_json(read_schema(program_flatbuffer)).encode("utf-8")
