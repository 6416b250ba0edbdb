"""Which entries of an ETRecord archive are what, and building records entry by entry.

* :func:`program_entry_names` — the edge programs (``edge_dialect_exported_program/<method>``);
* :func:`graph_map_entry_names` — the extra programs (the reference's ``graph_map``);
* :class:`OverlaySource` — an archive's entries with some replaced, added or removed (how
  a record changes when a field is set);
* helpers turning what the reference's ``ETRecord`` methods accept into programs and values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from delegate_lens.errors import ETRecordFormatError, UsageError
from delegate_lens.etrecord._entries import (
    ARTIFACT_SUFFIXES,
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    EDGE_PROGRAM_PREFIX,
    EXPORT_GRAPH_ID,
    EXPORTED_PROGRAM,
    MARKER,
    NUM_OUTS_MAP,
    REFERENCE_OUTPUTS,
    REPRESENTATIVE_INPUTS,
    EntrySource,
)


class ETRecordStateError(UsageError, RuntimeError):
    """An ETRecord field cannot be set (a value of the wrong type, a name the format
    reserves, a field already set) or the record cannot be saved in its present state (a
    ``RuntimeError``, as the reference raises, and a :class:`UsageError`)."""


RESERVED_NAMES = (
    MARKER,
    EXPORTED_PROGRAM,
    EXPORT_GRAPH_ID,
    EDGE_PROGRAM_PREFIX,
    "et_dialect_graph_module",
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    NUM_OUTS_MAP,
    REFERENCE_OUTPUTS,
    REPRESENTATIVE_INPUTS,
)
"""Entry names of the format; a name in ``graph_map`` may not contain one (as in the
reference)."""


def program_entry_names(names: tuple[str, ...], origin: str) -> dict[str, str]:
    """``{method: entry}`` of the edge programs, in archive order.

    An artifact (``<entry>_state_dict``, ...) whose program document is missing is an
    error naming the missing entry, unless it has artifacts of its own (then it is the
    document of a method whose name happens to end like an artifact).
    """
    present = set(names)
    prefix = EDGE_PROGRAM_PREFIX + "/"
    programs: dict[str, str] = {}
    for name in names:
        if name == EDGE_PROGRAM_PREFIX:  # older single-program layout
            programs.setdefault("forward", name)
            continue
        if not name.startswith(prefix) or len(name) == len(prefix):
            continue
        artifact_of = next((name[: -len(s)] for s in ARTIFACT_SUFFIXES if name.endswith(s)), None)
        if artifact_of is not None:
            if artifact_of in present:
                continue  # a companion artifact of another entry
            if not any(name + s in present for s in ARTIFACT_SUFFIXES):
                raise ETRecordFormatError(
                    f"{origin}: missing entry {artifact_of!r} (the program that "
                    f"{name!r} belongs to)"
                )
        programs.setdefault(name[len(prefix) :], name)
    return programs


def graph_map_entry_names(names: tuple[str, ...]) -> list[str]:
    """Entries of extra programs (the reference's ``graph_map``): a program document with
    its three artifacts, under a name the format does not reserve."""
    present = set(names)
    out = []
    for name in names:
        if name in RESERVED_NAMES or name.startswith(EDGE_PROGRAM_PREFIX + "/"):
            continue
        if any(name.endswith(s) for s in ARTIFACT_SUFFIXES):
            continue
        if all(name + s in present for s in ARTIFACT_SUFFIXES):
            out.append(name)
    return out


class OverlaySource:
    """Entries of ``base`` with some replaced, added (``bytes``) or removed (``None``)."""

    def __init__(self, base: EntrySource, updates: Mapping[str, bytes | None], origin: str):
        self._base: EntrySource = base
        base_names = base.names
        self._mine: dict[str, bytes] = {}
        inherited: set[str] = set(base_names)
        if isinstance(base, OverlaySource):  # flatten chains of overlays
            self._base = base._base
            self._mine = dict(base._mine)
            inherited = set(base._inherited)
        for name, data in updates.items():
            inherited.discard(name)
            if data is None:
                self._mine.pop(name, None)
            else:
                self._mine[name] = bytes(data)
        self._inherited: set[str] = inherited
        order = [n for n in base_names if n in inherited or n in self._mine]
        order += [n for n in self._mine if n not in set(order)]
        self._names = tuple(order)
        self.origin = origin

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def size(self, name: str) -> int:
        if name in self._mine:
            return len(self._mine[name])
        if name not in self._inherited:
            raise KeyError(name)
        return self._base.size(name)

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        wanted = list(names)
        out = {n: self._mine[n] for n in wanted if n in self._mine}
        rest = [n for n in wanted if n not in self._mine]
        missing = [n for n in rest if n not in self._inherited]
        if missing:
            raise KeyError(missing[0])
        out.update(self._base.read_many(rest))
        return {n: out[n] for n in wanted}


def torch_save(value: object) -> bytes:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def is_exported_program(value: object) -> bool:
    try:
        from torch.export import ExportedProgram
    except ImportError:  # pragma: no cover - torch is there whenever one is given
        return False
    return isinstance(value, ExportedProgram)


def program_of(value: object, what: str) -> Any:
    """The ExportedProgram of ``value`` (one, or what the reference's ``ExirExportedProgram``
    wraps as ``.exported_program``)."""
    if is_exported_program(value):
        return value
    inner = getattr(value, "exported_program", None)
    if is_exported_program(inner):
        return inner
    raise ETRecordStateError(
        f"{what} must be a torch.export.ExportedProgram, not {type(value).__name__}"
    )


def edge_programs(value: Any) -> dict[str, Any]:
    """``{method: program}`` from what the reference accepts as an edge dialect program."""
    if callable(getattr(value, "unlowered_program", None)) and hasattr(value, "methods"):
        # every node and handle visible: the programs before lowering (the reference keeps
        # what its manager holds, lowered or not)
        return {m: value.unlowered_program(m) for m in value.methods}
    if isinstance(value, Mapping):
        return {str(m): program_of(p, f"edge_dialect_program[{m!r}]") for m, p in value.items()}
    methods = getattr(value, "methods", None)
    if methods is not None and callable(getattr(value, "exported_program", None)):
        return {m: program_of(value.exported_program(m), "edge program") for m in methods}
    return {"forward": program_of(value, "edge_dialect_program")}


def inputs_of_bundled(bundled: Any) -> list[Any] | None:
    """The first ``forward`` test case's inputs (as the reference picks them), or None."""
    for suite in bundled.method_test_suites:
        if suite.method_name == "forward":
            if not suite.test_cases:
                raise UsageError(
                    "the bundled program has a 'forward' test suite without test cases "
                    "(no representative inputs to take)"
                )
            return list(suite.test_cases[0].inputs)
    return None


def outputs_of_bundled(bundled: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for suite in bundled.method_test_suites:
        out[suite.method_name] = []
        for k, case in enumerate(suite.test_cases):
            if not case.expected_outputs:
                raise UsageError(
                    f"method {suite.method_name!r} test case {k} has no expected outputs "
                    "(reference outputs need them for every test case)"
                )
            out[suite.method_name].append(list(case.expected_outputs))
    return out


def is_bundled(value: object) -> bool:
    return hasattr(value, "method_test_suites")


def torch_values(value: object) -> Any:
    """Numpy arrays (our test cases hold them) as torch tensors, recursively."""
    import numpy as np
    import torch

    if isinstance(value, (list, tuple)):
        return type(value)(torch_values(v) for v in value)
    if isinstance(value, dict):
        return {k: torch_values(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return value
