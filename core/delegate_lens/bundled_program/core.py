""":class:`BundledProgram`: a program together with test cases for its methods.

Made from a program (a ``ProgramManager`` from ``to_program()``, a
:class:`~delegate_lens.program.ProgramData` or a program's bytes) and
:class:`~delegate_lens.bundled_program.config.MethodTestSuite` s; checked against what the
program knows (method names, input and output counts, dtypes and shapes) when the program
is one of ours. Saved as ``.bpte`` in ExecuTorch's bundled-program schema.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.bundled_program.config import MethodTestCase, MethodTestSuite, value_kind
from delegate_lens.bundled_program.schema import BUNDLED_PROGRAM_SCHEMA_VERSION
from delegate_lens.errors import BundledProgramError, ProgramFormatError
from delegate_lens.program import (
    MAGIC,
    BoolValue,
    FloatValue,
    IntValue,
    MethodData,
    ProgramData,
    TensorValue,
    deserialize,
)

if TYPE_CHECKING:
    from delegate_lens.bundled_program.config import BundledValue
    from delegate_lens.bundled_program.schema import bundled_program_schema as bp
    from delegate_lens.program import Value

__all__ = ["BundledProgram"]


def _program_parts(program_manager: object) -> tuple[bytes, ProgramData | None]:
    if isinstance(program_manager, bytes | bytearray | memoryview):
        return bytes(program_manager), None
    if isinstance(program_manager, ProgramData):
        from delegate_lens.program import serialize

        return serialize(program_manager), program_manager
    program = getattr(program_manager, "program", None)
    buffer = getattr(program_manager, "buffer", None)
    if isinstance(program, ProgramData) and isinstance(buffer, bytes):
        return buffer, program
    raise BundledProgramError(
        f"program_manager must be a ProgramManager (from to_program()), a ProgramData or "
        f"a program's bytes, not {type(program_manager).__name__}"
    )


class BundledProgram:
    """A program and the test cases of its methods (ExecuTorch's ``BundledProgram``).

    :param executorch_program: what ``to_program()`` / ``to_executorch()`` returned (kept
        as :attr:`executorch_program`, as the reference keeps it), a ``ProgramData``, or a
        serialized program (bytes; only delegate-lens programs are checked and can be
        run).
    :param method_test_suites: one suite per method; kept sorted by method name.
    :param pte_file_path: instead of ``executorch_program``, the path of a program file
        (as the reference's argument: one of the two must be given).
    :raises BundledProgramError: a suite names a method the program lacks, two suites name
        the same method, or a test case does not fit its method (count, dtype, shape).
    """

    def __init__(
        self,
        executorch_program: object,
        method_test_suites: Iterable[MethodTestSuite],
        pte_file_path: str | os.PathLike[str] | None = None,
        *,
        version: int = BUNDLED_PROGRAM_SCHEMA_VERSION,
    ) -> None:
        given = executorch_program is not None and not (
            isinstance(executorch_program, bytes | bytearray) and not executorch_program
        )
        if given == (pte_file_path is not None):
            raise BundledProgramError(
                "give exactly one of executorch_program and pte_file_path"
                + (" (both were given)" if given else " (neither was given)")
            )
        if pte_file_path is not None:
            from delegate_lens.fileio import read_input

            executorch_program = read_input(pte_file_path, "program")
        self.executorch_program: Any = executorch_program
        """The program as given (the manager from ``to_program()``, when that was given)."""
        self._schema: bp.BundledProgram | None = None
        self.program_buffer, data = _program_parts(executorch_program)
        suites = list(method_test_suites)
        for i, suite in enumerate(suites):
            if not isinstance(suite, MethodTestSuite):
                raise BundledProgramError(
                    f"method_test_suites[{i}] is a {type(suite).__name__}, expected a "
                    "MethodTestSuite"
                )
        self.method_test_suites: list[MethodTestSuite] = sorted(suites, key=lambda s: s.method_name)
        self.version = int(version)
        if not 0 <= self.version < 2**32:
            raise BundledProgramError(f"version {version} does not fit a uint32")
        if data is None and self.is_delegate_lens_program:
            data = self._parse_program()
        self._program_data = data
        if data is not None:
            validate_suites(data, self.method_test_suites)

    # ------------------------------------------------------------------ program

    @property
    def is_delegate_lens_program(self) -> bool:
        """Whether the bundled program is in delegate-lens's program format (runnable)."""
        return self.program_buffer[:4] == MAGIC

    def _parse_program(self) -> ProgramData:
        try:
            return deserialize(self.program_buffer)
        except ProgramFormatError as exc:
            raise BundledProgramError(f"bundled program: program: {exc}") from None

    @property
    def program(self) -> ProgramData:
        """The bundled program, parsed (only for delegate-lens programs)."""
        if self._program_data is None:
            if not self.is_delegate_lens_program:
                raise BundledProgramError(
                    f"bundled program: program: starts with {self.program_buffer[4:8]!r} at "
                    f"byte 4, not a delegate-lens program (magic {MAGIC!r}); an ExecuTorch "
                    ".pte cannot run in delegate-lens's runtime"
                )
            self._program_data = self._parse_program()
        return self._program_data

    # ------------------------------------------------------------------ test cases

    @property
    def method_names(self) -> list[str]:
        return [s.method_name for s in self.method_test_suites]

    def method_test_suite(self, method_name: str) -> MethodTestSuite:
        for suite in self.method_test_suites:
            if suite.method_name == method_name:
                return suite
        raise BundledProgramError(
            f"no test suite for method {method_name!r} (suites: "
            f"{', '.join(self.method_names) or 'none'})"
        )

    def test_case(self, method_name: str, test_index: int) -> MethodTestCase:
        """Test case ``test_index`` of method ``method_name``."""
        cases = self.method_test_suite(method_name).test_cases
        if isinstance(test_index, bool) or not isinstance(test_index, int | np.integer):
            raise BundledProgramError(f"test_index must be an int, not {test_index!r}")
        if not 0 <= test_index < len(cases):
            raise BundledProgramError(
                f"method {method_name!r} has {len(cases)} test case(s); no test_index {test_index}"
            )
        return cases[int(test_index)]

    # ------------------------------------------------------------------ files

    def serialize_to_schema(self) -> bp.BundledProgram:
        """This bundled program as the reference's schema objects
        (:mod:`delegate_lens.bundled_program.schema`), made once."""
        if self._schema is None:
            from delegate_lens.bundled_program._schema_io import to_schema

            self._schema = to_schema(self)
        return self._schema

    def serialize(self) -> bytes:
        from delegate_lens.bundled_program._flatbuffer import (
            serialize_from_bundled_program_to_flatbuffer,
        )

        return serialize_from_bundled_program_to_flatbuffer(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ``.bpte`` to ``path`` atomically."""
        from delegate_lens.fileio import write_bytes_atomic

        return write_bytes_atomic(path, self.serialize())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BundledProgram:
        """Read a ``.bpte`` file; errors name the file and the field."""
        from delegate_lens.bundled_program._flatbuffer import (
            deserialize_from_flatbuffer_to_bundled_program,
        )
        from delegate_lens.fileio import read_input

        data = read_input(path, "bundled program")
        try:
            return deserialize_from_flatbuffer_to_bundled_program(data)
        except BundledProgramError as exc:
            raise BundledProgramError(f"{os.fspath(path)}: {exc}") from None

    def __repr__(self) -> str:
        cases = {s.method_name: len(s.test_cases) for s in self.method_test_suites}
        return f"BundledProgram(test_cases={cases}, program={len(self.program_buffer)} bytes)"


# --------------------------------------------------------------------------- validation


def _check_value(spec: Value, value: BundledValue, where: str) -> None:
    kind = value_kind(value)
    if isinstance(spec, TensorValue):
        if not isinstance(value, np.ndarray):
            raise BundledProgramError(
                f"{where}: expected a tensor {spec.dtype}{list(spec.shape)}, got {kind}"
            )
        if value.dtype.name != spec.dtype:
            raise BundledProgramError(
                f"{where}: dtype {value.dtype.name}, the program expects {spec.dtype}"
            )
        if tuple(value.shape) != spec.shape:
            raise BundledProgramError(
                f"{where}: shape {list(value.shape)}, the program expects {list(spec.shape)}"
            )
        return
    expected = {IntValue: "int", FloatValue: "float", BoolValue: "bool"}.get(type(spec))
    if expected is not None and kind != expected:
        raise BundledProgramError(f"{where}: expected {expected}, got {kind}")


def _check_values(
    method: MethodData,
    ids: Sequence[int],
    values: Sequence[BundledValue],
    what: str,
    where: str,
) -> None:
    if len(values) != len(ids):
        raise BundledProgramError(
            f"{where}: {len(values)} {what}, method {method.name!r} has {len(ids)}"
        )
    for i, (vid, value) in enumerate(zip(ids, values)):
        _check_value(method.values[vid], value, f"{where}.{what}[{i}]")


def validate_suites(program: ProgramData, suites: Sequence[MethodTestSuite]) -> None:
    """Raise :class:`BundledProgramError` unless every suite fits ``program``."""
    seen: set[str] = set()
    for suite in suites:
        name = suite.method_name
        if name in seen:
            raise BundledProgramError(f"two test suites for method {name!r}")
        seen.add(name)
        try:
            method = program.method(name)
        except ProgramFormatError:
            raise BundledProgramError(
                f"test suite for method {name!r}, which the program lacks (methods: "
                f"{', '.join(program.method_names) or 'none'})"
            ) from None
        for k, case in enumerate(suite.test_cases):
            where = f"method {name!r} test case {k}"
            _check_values(method, method.inputs, case.inputs, "inputs", where)
            if case.expected_outputs:
                _check_values(
                    method, method.outputs, case.expected_outputs, "expected_outputs", where
                )
