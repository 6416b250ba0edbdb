"""The delegates of a program file, read without torch or executorch.

:func:`read_delegates` takes an ExecuTorch program (``.pte``: the ``ET12`` FlatBuffer of
ExecuTorch 1.x, ``executorch/schema/program.fbs``, with its extended header and data
segments) or a program of ours (``.dlp``) and returns every delegate call of every method:
its method, the instruction id the runtime logs for it, the backend id, the compile specs
and the delegate's processed bytes, wherever the program keeps them (inline in the
FlatBuffer or in a data segment after it). Named data (the ``named_data`` table: key ->
segment, where backends keep shared constants) is read on request.

Fields of ``program.fbs`` by slot, as this reader uses them:

* ``Program``: ``execution_plan`` 1, ``backend_delegate_data`` 3, ``segments`` 4,
  ``named_data`` 7;
* ``ExecutionPlan``: ``name`` 0, ``chains`` 5, ``delegates`` 7; ``Chain``:
  ``instructions`` 2; ``Instruction``: the union ``instr_args`` 0-1, whose member 2 is
  ``DelegateCall`` (``delegate_index`` 0);
* ``BackendDelegate``: ``id`` 0, ``processed`` 1 (``location`` 0: 0 inline, 1 segment;
  ``index`` 1), ``compile_specs`` 2 (``key`` 0, ``value`` 1);
* ``BackendDelegateInlineData.data`` 0; ``DataSegment``: ``offset`` 0, ``size`` 1;
  ``NamedData``: ``key`` 0, ``segment_index`` 1.

The extended header (``eh00`` at byte 8: its length, the program size and the base offset
that segment offsets count from) is read when present.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Mapping

import attrs

from delegate_lens.errors import ProgramFormatError
from delegate_lens.program._flatbuffer import FlatBuffer, FlatTable

PTE_IDENTIFIER = b"ET12"
"""The file identifier of ExecuTorch 1.x programs."""
_EXTENDED_MAGIC = b"eh00"
_DELEGATE_CALL = 2  # member of the InstructionArguments union
_INLINE, _SEGMENT = 0, 1


@attrs.frozen
class ProgramDelegate:
    """One delegate call of a program.

    :param method: the method (execution plan) that makes the call.
    :param instruction_id: the id the runtime logs for the call (its position in the
        method's instructions; ``chain`` > 0 numbers its own chain's).
    :param chain: the chain holding the instruction (0 in programs of one chain).
    :param delegate_index: the index into the method's delegates.
    :param backend_id: the backend's id (``"XnnpackBackend"``).
    :param compile_specs: ``(key, value)`` pairs as the program stores them.
    :param processed: the delegate's processed bytes (a read-only view into the file's
        bytes; ``bytes(processed)`` copies it).
    :param location: where the program keeps them: ``"inline"`` or ``"segment"``.
    """

    method: str
    instruction_id: int
    chain: int
    delegate_index: int
    backend_id: str
    compile_specs: tuple[tuple[str, bytes], ...]
    processed: memoryview = attrs.field(eq=False, repr=False)
    location: str


@attrs.frozen
class ProgramDelegates:
    """Every delegate call of a program file (:func:`read_delegates`).

    :param origin: the file (or ``"program"`` for bytes), as errors name it.
    :param methods: the program's method names, in program order.
    :param delegates: each delegate call, by method then instruction.
    :param named_data: the program's named data, key -> bytes (read on lookup).
    """

    origin: str
    methods: tuple[str, ...]
    delegates: tuple[ProgramDelegate, ...]
    named_data: Mapping[str, memoryview] = attrs.field(eq=False, repr=False)

    def at(self, method: str, instruction_id: int) -> ProgramDelegate | None:
        """The delegate call of ``method`` at ``instruction_id`` (chain 0), or None."""
        for delegate in self.delegates:
            if (
                delegate.method == method
                and delegate.instruction_id == instruction_id
                and delegate.chain == 0
            ):
                return delegate
        return None


class _NamedData(Mapping[str, memoryview]):
    """Named data of a ``.pte``: key -> the bytes of its segment, read on lookup."""

    def __init__(self, keys: dict[str, int], segment: Mapping[int, memoryview]) -> None:
        self._keys = keys
        self._segment = segment

    def __getitem__(self, key: str) -> memoryview:
        return self._segment[self._keys[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class _Segments(Mapping[int, memoryview]):
    """The data segments of a ``.pte`` by index, each checked when read."""

    def __init__(self, fb: FlatBuffer, tables: list[FlatTable], base: int) -> None:
        self._fb, self._tables, self._base = fb, tables, base

    def __getitem__(self, index: int) -> memoryview:
        if not 0 <= index < len(self._tables):
            raise self._fb.fail("segments", f"no segment {index} (the program has {len(self)})")
        table = self._tables[index]
        offset = self._base + table.integer(0, "ulong", "offset")
        size = table.integer(1, "ulong", "size")
        if offset + size > self._fb.size:
            raise self._fb.fail(
                table.path,
                f"segment of {size} bytes at offset {offset} overruns the {self._fb.size}-byte file",
            )
        return memoryview(self._fb.data).toreadonly()[offset : offset + size]

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._tables)))

    def __len__(self) -> int:
        return len(self._tables)


def _segment_base(fb: FlatBuffer) -> int:
    """The offset segment offsets count from (0 without an extended header)."""
    if fb.size < 32 or bytes(fb.data[8:12]) != _EXTENDED_MAGIC:
        return 0
    length, _program_size, base = struct.unpack_from("<IQQ", fb.data, 12)
    if length < 24:
        raise fb.fail("extended header", f"length {length} is below the minimum of 24")
    return int(base)


def _read_pte(data: bytes | memoryview, origin: str) -> ProgramDelegates:
    fb = FlatBuffer(data, origin)
    root = fb.root(PTE_IDENTIFIER, "program")
    segments = _Segments(fb, root.tables(4, "segments"), _segment_base(fb))
    inline = root.tables(3, "backend_delegate_data")
    named = {
        (t.string(0, "key") or ""): t.integer(1, "uint", "segment_index")
        for t in root.tables(7, "named_data")
    }
    methods: list[str] = []
    found: list[ProgramDelegate] = []
    for plan in root.tables(1, "execution_plan"):
        name = plan.string(0, "name") or ""
        methods.append(name)
        backends = plan.tables(7, "delegates")
        for c, chain in enumerate(plan.tables(5, "chains")):
            for iid, instruction in enumerate(chain.tables(2, "instructions")):
                kind, args = instruction.union(0, "instr_args")
                if kind != _DELEGATE_CALL or args is None:
                    continue
                index = args.integer(0, "int", "delegate_index")
                if not 0 <= index < len(backends):
                    raise fb.fail(
                        f"{args.path}.delegate_index",
                        f"{index} names no delegate (method {name!r} has {len(backends)})",
                    )
                found.append(_delegate(fb, backends[index], name, iid, c, index, inline, segments))
    return ProgramDelegates(origin, tuple(methods), tuple(found), _NamedData(named, segments))


def _delegate(
    fb: FlatBuffer,
    backend: FlatTable,
    method: str,
    iid: int,
    chain: int,
    index: int,
    inline: list[FlatTable],
    segments: _Segments,
) -> ProgramDelegate:
    specs = tuple(
        (s.string(0, "key") or "", bytes(s.bytes(1, "value") or b""))
        for s in backend.tables(2, "compile_specs")
    )
    ref = backend.table(1, "processed")
    if ref is None:
        raise fb.fail(f"{backend.path}.processed", "missing")
    location = ref.integer(0, "byte", "location")
    at = ref.integer(1, "uint", "index")
    if location == _INLINE:
        if not 0 <= at < len(inline):
            raise fb.fail(
                f"{ref.path}.index", f"no inline data {at} (the program has {len(inline)})"
            )
        processed = inline[at].bytes(0, "data")
        where = "inline"
    elif location == _SEGMENT:
        processed = segments[at]
        where = "segment"
    else:
        raise fb.fail(f"{ref.path}.location", f"unknown data location {location}")
    return ProgramDelegate(
        method=method,
        instruction_id=iid,
        chain=chain,
        delegate_index=index,
        backend_id=backend.string(0, "id") or "",
        compile_specs=specs,
        processed=processed if processed is not None else memoryview(b""),
        location=where,
    )


def _read_dlp(data: bytes, origin: str) -> ProgramDelegates:
    from delegate_lens.program._format import deserialize
    from delegate_lens.program._model import DelegateCallInstruction

    try:
        program = deserialize(data)
    except ProgramFormatError as exc:
        raise ProgramFormatError(f"{origin}: {exc}") from None
    found = []
    for method in program.methods:
        for iid, instruction in enumerate(method.instructions):
            if not isinstance(instruction, DelegateCallInstruction):
                continue
            index = instruction.delegate_index
            if not 0 <= index < len(program.delegates):
                raise ProgramFormatError(
                    f"{origin}: method {method.name!r} instruction {iid}: delegate {index} "
                    f"does not exist (the program has {len(program.delegates)})"
                )
            delegate = program.delegates[index]
            found.append(
                ProgramDelegate(
                    method=method.name,
                    instruction_id=iid,
                    chain=0,
                    delegate_index=index,
                    backend_id=delegate.backend_id,
                    compile_specs=tuple((s.key, s.value) for s in delegate.compile_specs),
                    processed=memoryview(delegate.processed_bytes).toreadonly(),
                    location="inline",
                )
            )
    methods = tuple(m.name for m in program.methods)
    return ProgramDelegates(origin, methods, tuple(found), {})


def read_delegates(
    program: str | os.PathLike[str] | bytes | bytearray | memoryview, *, origin: str | None = None
) -> ProgramDelegates:
    """Every delegate call of a program: a path or the bytes of an ExecuTorch ``.pte`` or
    of a ``.dlp`` of ours (told apart by content). Errors are
    :class:`~delegate_lens.errors.ProgramFormatError` naming the file and field, or
    :class:`~delegate_lens.errors.InputFileError` for a file that cannot be read."""
    from delegate_lens.program._format import MAGIC

    if isinstance(program, (str, os.PathLike)):
        from delegate_lens.fileio import read_input

        data = read_input(program, "program")
        shown = origin or os.fspath(program)
    else:
        data = bytes(program)
        shown = origin or "program"
    if data[4:8] == PTE_IDENTIFIER:
        return _read_pte(data, shown)
    if data[: len(MAGIC)] == MAGIC:
        return _read_dlp(data, shown)
    raise ProgramFormatError(
        f"{shown}: not a program (neither an ExecuTorch .pte, identifier {PTE_IDENTIFIER!r} at "
        f"byte 4, nor a delegate-lens .dlp)"
    )
