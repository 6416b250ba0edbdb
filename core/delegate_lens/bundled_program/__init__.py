"""Bundled programs: a program shipped with test inputs and expected outputs (``.bpte``).

ExecuTorch's names and file format: :class:`MethodTestCase`, :class:`MethodTestSuite`,
:class:`BundledProgram`, :func:`serialize_from_bundled_program_to_flatbuffer` and
:func:`deserialize_from_flatbuffer_to_bundled_program`. Running and checking a test case
is in the runtime: ``delegate_lens.runtime.load_bundled_input`` and
``verify_method_outputs``; ``delegate-lens verify FILE.bpte`` runs them all.

This package does not import torch (torch tensors given as values are copied to numpy).
"""

from __future__ import annotations

from delegate_lens.bundled_program._compare import OutputComparison, compare_outputs
from delegate_lens.bundled_program._flatbuffer import (
    deserialize_from_flatbuffer_to_bundled_program,
    serialize_from_bundled_program_to_flatbuffer,
)
from delegate_lens.bundled_program.config import MethodTestCase, MethodTestSuite
from delegate_lens.bundled_program.core import BundledProgram
from delegate_lens.bundled_program.schema import BUNDLED_PROGRAM_SCHEMA_VERSION, FILE_IDENTIFIER

__all__ = [
    "BUNDLED_PROGRAM_SCHEMA_VERSION",
    "FILE_IDENTIFIER",
    "BundledProgram",
    "MethodTestCase",
    "MethodTestSuite",
    "OutputComparison",
    "compare_outputs",
    "deserialize_from_flatbuffer_to_bundled_program",
    "serialize_from_bundled_program_to_flatbuffer",
]
