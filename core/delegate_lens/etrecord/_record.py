"""The ETRecord object: torch-free views of an ETRecord archive, torch only on request."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

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
    MemorySource,
    ZipSource,
    write_zip_atomic,
    zip_bytes,
)
from delegate_lens.etrecord._graph import GraphInfo, parse_graph
from delegate_lens.etrecord._layout import program_entry_names
from delegate_lens.etrecord._maps import (
    DelegateEntry,
    Handles,
    canonical_identifier,
    load_json,
    normalize_handles,
    parse_debug_handle_map,
    parse_delegate_map,
    parse_export_graph_id,
    parse_num_outs_map,
)
from delegate_lens.etrecord._reference_api import ReferenceETRecordAPI

if TYPE_CHECKING:
    from torch.export import ExportedProgram


_GC_PAUSE_BYTES = 1 << 20


class ETRecord(ReferenceETRecordAPI):
    """An ETRecord: the ahead-of-time debug artifact (a zip archive of named entries).

    Make one with :func:`parse_etrecord` (a file, bytes or a binary file object) or
    :meth:`from_entries`. Everything the Inspector needs — methods, nodes with debug
    handles, op types, stack traces and module stacks, the debug handle and delegate
    maps — is read without torch. :attr:`edge_dialect_program`, :attr:`exported_program`
    and :attr:`graph_map` deserialize programs with torch.export's serializer, only when
    read.

    The constructor takes the reference's fields (all optional, live torch objects and
    maps as the reference's ``ETRecord`` holds them); such a record is filled in with the
    ``add_*`` / ``update_*`` methods and written with :meth:`save`. See
    :mod:`delegate_lens.etrecord._reference_api`.
    """

    def __init__(
        self,
        exported_program: object = None,
        export_graph_id: int | None = None,
        edge_dialect_program: object = None,
        graph_map: Mapping[str, object] | None = None,
        _debug_handle_map: Mapping[str, object] | None = None,
        _delegate_map: Mapping[str, object] | None = None,
        _instruction_id_to_num_outs_map: Mapping[str, object] | None = None,
        _reference_outputs: object = None,
        _representative_inputs: object = None,
    ) -> None:
        self._graph_map_given = False  # graph_map is None until given (the reference's)
        self._set_state(MemorySource({MARKER: b""}, "<ETRecord>"), strict=False)
        self._assign_fields(
            exported_program=exported_program,
            export_graph_id=export_graph_id,
            edge_dialect_program=edge_dialect_program,
            graph_map=graph_map,
            debug_handle_map=_debug_handle_map,
            delegate_map=_delegate_map,
            num_outs_map=_instruction_id_to_num_outs_map,
            reference_outputs=_reference_outputs,
            representative_inputs=_representative_inputs,
        )

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_entries(cls, entries: Mapping[str, bytes], *, origin: str = "<entries>") -> ETRecord:
        """An ETRecord from its entries (names and bytes as in the archive).

        Checked as a parsed file is: ETRecordFormatError on a missing entry or a bad map.
        """
        return cls._load(MemorySource(entries, origin))

    @classmethod
    def _load(cls, source: EntrySource) -> ETRecord:
        record = cls.__new__(cls)
        record._graph_map_given = True  # read from a file: a dict, maybe empty
        record._set_state(source, strict=True)
        return record

    def _set_state(self, source: EntrySource, *, strict: bool) -> None:
        """Read the entry names and small maps of ``source``; ``strict`` (a file) checks
        that the required entries are there, else (a record being built) they may not be
        yet."""
        origin = source.origin
        names = source.names
        present = set(names)
        if strict and MARKER not in present:
            raise ETRecordFormatError(
                f"{origin}: not an ETRecord: missing entry {MARKER!r} (the format marker)"
            )
        programs = program_entry_names(names, origin)
        if strict and not programs:
            raise ETRecordFormatError(
                f"{origin}: missing entry '{EDGE_PROGRAM_PREFIX}/<method>' (no edge program)"
            )
        for required in (DEBUG_HANDLE_MAP, DELEGATE_MAP):
            if strict and required not in present:
                raise ETRecordFormatError(f"{origin}: missing entry {required!r}")
        serialized = list(programs.values())
        if EXPORTED_PROGRAM in present:
            serialized.append(EXPORTED_PROGRAM)
        for entry in serialized:
            for suffix in ARTIFACT_SUFFIXES:
                if entry + suffix not in present:
                    raise ETRecordFormatError(
                        f"{origin}: missing entry {entry + suffix!r} (an artifact of {entry!r})"
                    )
        small = [n for n in (DEBUG_HANDLE_MAP, DELEGATE_MAP) if n in present]
        small += [name for name in (NUM_OUTS_MAP, EXPORT_GRAPH_ID) if name in present]
        data = source.read_many(small)

        def where(name: str) -> str:
            return f"{origin}: entry {name!r}"

        debug_handles: dict[str, dict[int, Handles]] = {}
        if DEBUG_HANDLE_MAP in data:
            debug_handles = parse_debug_handle_map(
                load_json(data[DEBUG_HANDLE_MAP], where(DEBUG_HANDLE_MAP)),
                where(DEBUG_HANDLE_MAP),
            )
        delegates: dict[str, dict[int, DelegateEntry]] = {}
        if DELEGATE_MAP in data:
            delegates = parse_delegate_map(
                load_json(data[DELEGATE_MAP], where(DELEGATE_MAP)), where(DELEGATE_MAP)
            )
        num_outs: dict[str, dict[int, int]] = {}
        if NUM_OUTS_MAP in data:
            num_outs = parse_num_outs_map(
                load_json(data[NUM_OUTS_MAP], where(NUM_OUTS_MAP)), where(NUM_OUTS_MAP)
            )
        graph_id = None
        if EXPORT_GRAPH_ID in data:
            graph_id = parse_export_graph_id(data[EXPORT_GRAPH_ID], where(EXPORT_GRAPH_ID))
        self._source = source
        self._programs = programs
        self._debug_handles = debug_handles
        self._delegates = delegates
        self._num_outs = num_outs
        self._export_graph_id = graph_id
        self._graphs: dict[str, GraphInfo] = {}
        self._views: dict[str, Any] = {}
        old: dict[str, Any] = getattr(self, "_torch_programs", {})
        # live programs of entries that did not change are kept (a record being built)
        self._torch_programs: dict[str, Any] = {k: v for k, v in old.items() if k in present}

    # ------------------------------------------------------------------ entries

    @property
    def origin(self) -> str:
        """Where this ETRecord was read from (a path, ``<bytes>`` or ``<entries>``)."""
        return self._source.origin

    @property
    def entry_names(self) -> tuple[str, ...]:
        """Names of all entries, in archive order."""
        return self._source.names

    def entry_size(self, name: str) -> int:
        """Size in bytes of one entry (KeyError if absent)."""
        return self._source.size(name)

    def entry(self, name: str) -> bytes:
        """The bytes of one entry (KeyError if absent)."""
        if name not in set(self._source.names):
            raise KeyError(f"{self.origin}: no entry {name!r}")
        return self._source.read_many([name])[name]

    def entries(self) -> dict[str, bytes]:
        """All entries, in archive order (reads the whole archive)."""
        return self._source.read_many(self._source.names)

    def save(self, path: str | os.PathLike[str] | BinaryIO) -> Path | None:
        """Write the archive to ``path`` (a temporary file renamed into place; the path is
        returned) or to a binary file object (as the reference's ``save`` takes either).

        ETRecordStateError (a RuntimeError) when the record has no edge program or no
        debug handle map yet."""
        self._check_saveable()
        if isinstance(path, (str, os.PathLike)):
            return write_zip_atomic(path, self._iter_entries())
        write = getattr(path, "write", None)
        if write is None:
            raise UsageError(
                f"save needs a path or a binary file object, not {type(path).__name__}"
            )
        write(zip_bytes(self._iter_entries()))
        return None

    def _iter_entries(self) -> Iterator[tuple[str, bytes]]:
        names = self._source.names
        for name in names:
            yield name, self._source.read_many([name])[name]
        if DELEGATE_MAP not in set(names):  # a record being built: the file needs one
            yield DELEGATE_MAP, b"{}"

    def to_bytes(self) -> bytes:
        """The archive as bytes."""
        return zip_bytes(self._iter_entries())

    # ------------------------------------------------------------------ torch-free views

    @property
    def methods(self) -> tuple[str, ...]:
        """Method names of the edge programs (``edge_dialect_exported_program/<method>``)."""
        return tuple(self._programs)

    def graph(self, method: str = "forward") -> GraphInfo:
        """The nodes of one method's edge program, parsed from its JSON (cached)."""
        graph = self._graphs.get(method)
        if graph is None:
            entry = self._programs.get(method)
            if entry is None:
                raise UsageError(
                    f"{self.origin}: no method {method!r} (methods: {', '.join(self._programs)})"
                )
            graph = self._parse_graph(entry, method)
            self._graphs[method] = graph
        return graph

    @property
    def has_exported_program(self) -> bool:
        """Whether the ATen program before lowering (``exported_program``) is stored."""
        return EXPORTED_PROGRAM in set(self._source.names)

    def exported_program_graph(self) -> GraphInfo | None:
        """Nodes of the ATen program before lowering, or None if not stored."""
        if not self.has_exported_program:
            return None
        key = "\0" + EXPORTED_PROGRAM
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._parse_graph(EXPORTED_PROGRAM, "forward")
            self._graphs[key] = graph
        return graph

    def program_graph(self, entry: str) -> GraphInfo:
        """Nodes of any stored program by its entry name (e.g. a ``graph_map`` name such as
        ``"my_module/forward"``), cached; KeyError if there is no such entry."""
        key = "\0" + entry
        graph = self._graphs.get(key)
        if graph is None:
            if entry not in set(self._source.names):
                raise KeyError(f"{self.origin}: no entry {entry!r}")
            graph = self._parse_graph(entry, entry.rsplit("/", 1)[-1])
            self._graphs[key] = graph
        return graph

    def _parse_graph(self, entry: str, method: str) -> GraphInfo:
        where = f"{self.origin}: entry {entry!r}"
        data = self._source.read_many([entry])[entry]
        # Building many small objects triggers needless GC passes: pause the collector
        # for big graphs (about 2x faster at 100,000 nodes).
        paused = len(data) > _GC_PAUSE_BYTES and gc.isenabled()
        if paused:
            gc.disable()
        try:
            return parse_graph(load_json(data, where), method, entry, self.origin)
        finally:
            if paused:
                gc.enable()

    def validate(self) -> None:
        """Parse every stored graph now (errors that reading would raise later)."""
        for method in self._programs:
            self.graph(method)
        self.exported_program_graph()

    @property
    def debug_handle_map(self) -> dict[str, dict[int, tuple[int, ...]]]:
        """``{method: {instruction_id: handles}}``, handles always a tuple."""
        view = self._views.get("debug_handle_map")
        if view is None:
            view = {
                method: {iid: normalize_handles(h) for iid, h in per.items()}
                for method, per in self._debug_handles.items()
            }
            self._views["debug_handle_map"] = view
        return view

    @property
    def debug_handle_map_as_written(self) -> dict[str, dict[int, Handles]]:
        """``{method: {instruction_id: handles}}`` as written: an int, or a tuple for a list
        (the Inspector reports ``debug_handles`` in this form)."""
        return self._debug_handles

    def instruction_handles(
        self, method: str, instruction_id: int, *, as_written: bool = False
    ) -> Handles | None:
        """The debug handles of one instruction, or None if the map has no entry for it."""
        handles = self._debug_handles.get(method, {}).get(instruction_id)
        if handles is None or as_written:
            return handles
        return normalize_handles(handles)

    @property
    def delegate_map(self) -> dict[str, dict[int, dict[str, Any]]]:
        """``{method: {instruction_id: {"name": backend_id, "delegate_map": {identifier:
        handles tuple}}}}``. Identifiers are JSON key text; canonical decimal text is given
        back as int (how integer identifiers are written), anything else as str. Use
        :meth:`delegate_handles` to look an ETDump identifier up exactly."""
        view = self._views.get("delegate_map")
        if view is None:
            view = {
                method: {
                    iid: {
                        "name": entry.name,
                        "delegate_map": {
                            canonical_identifier(key): normalize_handles(h)
                            for key, h in entry.identifiers.items()
                        },
                    }
                    for iid, entry in per.items()
                }
                for method, per in self._delegates.items()
            }
            self._views["delegate_map"] = view
        return view

    @property
    def delegate_entries(self) -> dict[str, dict[int, DelegateEntry]]:
        """``{method: {instruction_id: DelegateEntry}}`` with identifier keys as written."""
        return self._delegates

    def delegate_backend(self, method: str, instruction_id: int) -> str | None:
        """Backend id of a delegate call instruction, or None if it is not one."""
        entry = self._delegates.get(method, {}).get(instruction_id)
        return None if entry is None else entry.name

    def delegate_handles(
        self,
        method: str,
        instruction_id: int,
        identifier: int | str,
        *,
        as_written: bool = False,
    ) -> Handles | None:
        """Handles the backend mapped ``identifier`` to in delegate call ``instruction_id``.

        An int identifier (ETDump's ``delegate_debug_id_int``) matches its decimal key, a
        str identifier (``delegate_debug_id_str``) matches the same text — as the reference
        Inspector matches them. None when the instruction or the identifier is unknown.
        """
        entry = self._delegates.get(method, {}).get(instruction_id)
        if entry is None:
            return None
        handles = entry.handles(identifier)
        if handles is None or as_written:
            return handles
        return normalize_handles(handles)

    @property
    def instruction_id_to_num_outs_map(self) -> dict[str, dict[int, int]]:
        """``{method: {instruction_id: number of outputs}}`` (empty if not stored)."""
        return self._num_outs

    @property
    def has_reference_outputs(self) -> bool:
        return REFERENCE_OUTPUTS in set(self._source.names)

    @property
    def has_representative_inputs(self) -> bool:
        return REPRESENTATIVE_INPUTS in set(self._source.names)

    # ------------------------------------------------------------------ torch, on request

    def edge_program(self, method: str = "forward") -> ExportedProgram:
        """One method's edge program as a live ``torch.export.ExportedProgram`` (imports torch).

        ETRecordFormatError if torch's serializer cannot read it (e.g. operators that only
        ExecuTorch registers). :attr:`edge_dialect_program` is the reference's spelling
        (the only program, or ``{method: program}``).
        """
        entry = self._programs.get(method)
        if entry is None:
            self.graph(method)  # raises the "no method" error
            raise AssertionError("unreachable")
        return self._live_program(entry, method)

    def _live_program(self, entry: str, method: str = "forward") -> Any:
        program = self._torch_programs.get(entry)
        if program is None:
            from delegate_lens.etrecord._torch_io import load_program

            program = load_program(self, entry, method)
            self._torch_programs[entry] = program
        return program

    def reference_outputs(self) -> Any:
        """The unpickled ``reference_outputs`` entry, or None. Unpickling runs code from the
        file and may import torch: only for ETRecords you trust."""
        return self._unpickle(REFERENCE_OUTPUTS)

    def representative_inputs(self) -> Any:
        """The ``representative_inputs`` entry (a list of inputs), or None.

        The reference writes it with ``torch.save`` (read here with torch's
        ``weights_only`` loader, so it imports torch); an older plain pickle is unpickled
        (see reference_outputs)."""
        return self._unpickle(REPRESENTATIVE_INPUTS)

    def _unpickle(self, name: str) -> Any:
        if name not in set(self._source.names):
            return None
        import pickle

        data = self.entry(name)
        try:
            if data[:2] == b"PK":  # torch.save's zip format, as the reference writes it
                import io

                import torch

                return torch.load(io.BytesIO(data), weights_only=True)
            return pickle.loads(data)  # trusted input only (documented)
        except Exception as exc:
            raise ETRecordFormatError(
                f"{self.origin}: entry {name!r} cannot be unpickled: {exc}"
            ) from None

    def __repr__(self) -> str:
        return (
            f"ETRecord({self.origin!r}, methods={list(self.methods)}, "
            f"entries={len(self._source.names)})"
        )


_Source = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO


def parse_etrecord(
    source: _Source | None = None,
    *,
    max_entry_size: int | None = None,
    etrecord_path: _Source | None = None,
) -> ETRecord:
    """Read an ETRecord from a path, bytes or a binary file object.

    ``etrecord_path=`` is the reference's name of ``source`` (give one of them).
    Only the archive's directory and the small JSON maps are read now (and checked);
    graphs are parsed on first use. Bad input raises ETRecordFormatError naming the file
    and the entry; a missing or unreadable file raises InputFileError (an OSError naming it).
    An entry whose uncompressed size exceeds ``max_entry_size`` bytes (default: the
    ``[etrecord] max_entry_size`` setting, else 1 GiB) is refused when read, from its zip
    header and again while inflating.
    """
    if (source is None) == (etrecord_path is None):
        raise TypeError(
            "parse_etrecord takes the ETRecord once: source or etrecord_path= (its other name)"
        )
    source = etrecord_path if source is None else source
    cap = max_entry_size
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
        raise UsageError(f"max_entry_size must be a positive int, got {cap!r}")
    if isinstance(source, (str, os.PathLike)):
        return ETRecord._load(ZipSource(source, origin=os.fspath(source), max_entry_size=cap))
    if isinstance(source, (bytes, bytearray, memoryview)):
        return ETRecord._load(ZipSource(bytes(source), origin="<bytes>", max_entry_size=cap))
    read = getattr(source, "read", None)
    if read is None:
        raise TypeError(
            f"parse_etrecord needs a path, bytes or a binary file, got {type(source).__name__}"
        )
    data = read()
    if not isinstance(data, bytes):
        raise TypeError("parse_etrecord needs a file opened in binary mode")
    name = getattr(source, "name", None)
    origin = str(name) if isinstance(name, str) else "<stream>"
    return ETRecord._load(ZipSource(data, origin=origin, max_entry_size=cap))
