"""The reference's ``ETRecord`` interface, on our archive-backed record.

The reference's ``ETRecord`` is a bag of live torch objects (``exported_program``,
``edge_dialect_program``, ``graph_map``) and maps (``_debug_handle_map``, ...), filled in
with ``add_*`` / ``update_*`` and written by ``save``. Ours is the archive itself, read
without torch; this mixin gives it the same fields and methods. Every change is written to
the record's entries at once (programs serialized as :mod:`delegate_lens.etrecord._writer`
writes them), so the torch-free views (``graph``, ``debug_handle_map``, ...) and ``save``
always agree with the fields. Live objects given are kept: reading a field back gives the
same object, as the reference does.

Where the reference raises ``RuntimeError`` (a field already set, a program of a type it
does not take, a reserved name, a record saved without an edge program or a debug handle
map), we raise :class:`ETRecordStateError`, which is one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import UsageError
from delegate_lens.etrecord._entries import (
    ARTIFACT_SUFFIXES,
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    EDGE_PROGRAM_PREFIX,
    EXPORT_GRAPH_ID,
    EXPORTED_PROGRAM,
    NUM_OUTS_MAP,
    REFERENCE_OUTPUTS,
    REPRESENTATIVE_INPUTS,
    EntrySource,
)
from delegate_lens.etrecord._layout import (
    RESERVED_NAMES,
    ETRecordStateError,
    OverlaySource,
    edge_programs,
    graph_map_entry_names,
    inputs_of_bundled,
    is_bundled,
    outputs_of_bundled,
    program_of,
    torch_save,
    torch_values,
)
from delegate_lens.etrecord._maps import dumps_json

if TYPE_CHECKING:
    from torch.export import ExportedProgram

    from delegate_lens.etrecord._graph import GraphInfo
    from delegate_lens.etrecord._maps import DelegateEntry, Handles


_MAP_ENTRIES = (
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    NUM_OUTS_MAP,
    REFERENCE_OUTPUTS,
    REPRESENTATIVE_INPUTS,
)


class ReferenceETRecordAPI:
    """The reference's fields and methods (mixed into :class:`~delegate_lens.etrecord.ETRecord`)."""

    if TYPE_CHECKING:
        _source: EntrySource
        _programs: dict[str, str]
        _torch_programs: dict[str, Any]
        _debug_handles: dict[str, dict[int, Handles]]
        _delegates: dict[str, dict[int, DelegateEntry]]
        _num_outs: dict[str, dict[int, int]]
        _export_graph_id: int | None
        _graph_map_given: bool
        _live_maps: dict[str, Any]

        def _set_state(self, source: EntrySource, *, strict: bool) -> None: ...
        def _live_program(self, entry: str, method: str = "forward") -> Any: ...
        def edge_program(self, method: str = "forward") -> Any: ...
        def graph(self, method: str = "forward") -> GraphInfo: ...
        def reference_outputs(self) -> Any: ...
        def representative_inputs(self) -> Any: ...

        @property
        def delegate_map(self) -> dict[str, dict[int, dict[str, Any]]]: ...
        @property
        def has_exported_program(self) -> bool: ...

    # ------------------------------------------------------------------ writing entries

    def _update(self, updates: Mapping[str, bytes | None], live: Mapping[str, object] = {}) -> None:
        source = OverlaySource(self._source, updates, self._source.origin)
        for name in updates:
            self._torch_programs.pop(name, None)
            self._given_maps().pop(name, None)
        self._set_state(source, strict=False)
        self._torch_programs.update(live)

    def _program_updates(self, name: str, program: ExportedProgram) -> dict[str, bytes | None]:
        from delegate_lens.etrecord._writer import program_entries

        return dict(program_entries(name, program))

    @staticmethod
    def _removal(name: str) -> dict[str, bytes | None]:
        return {name: None, **{name + s: None for s in ARTIFACT_SUFFIXES}}

    def _assign_fields(
        self,
        *,
        exported_program: object,
        export_graph_id: int | None,
        edge_dialect_program: object,
        graph_map: Mapping[str, object] | None,
        debug_handle_map: Mapping[str, object] | None,
        delegate_map: Mapping[str, object] | None,
        num_outs_map: Mapping[str, object] | None,
        reference_outputs: object,
        representative_inputs: object,
    ) -> None:
        if exported_program is not None:
            self.exported_program = exported_program
        if export_graph_id is not None:
            self.export_graph_id = export_graph_id
        if edge_dialect_program is not None:
            self.edge_dialect_program = edge_dialect_program
        if graph_map is not None:
            self.graph_map = dict(graph_map)
        if debug_handle_map is not None:
            self._debug_handle_map = debug_handle_map
        if delegate_map is not None:
            self._delegate_map = delegate_map
        if num_outs_map is not None:
            self._instruction_id_to_num_outs_map = num_outs_map
        if reference_outputs is not None:
            self._reference_outputs = reference_outputs
        if representative_inputs is not None:
            self._representative_inputs = representative_inputs

    # ------------------------------------------------------------------ programs

    @property
    def edge_dialect_program(self) -> Any:
        """The edge program (imports torch): the ``ExportedProgram`` when the record has one
        method, ``{method: ExportedProgram}`` when it has several, None when it has none —
        as the reference gives it. :meth:`edge_program` takes a method name."""
        methods = list(self._programs)
        if not methods:
            return None
        if len(methods) == 1:
            return self.edge_program(methods[0])
        return {m: self.edge_program(m) for m in methods}

    @edge_dialect_program.setter
    def edge_dialect_program(self, value: object) -> None:
        updates: dict[str, bytes | None] = {}
        for entry in self._programs.values():
            updates.update(self._removal(entry))
        live: dict[str, Any] = {}
        if value is not None:
            for method, program in edge_programs(value).items():
                name = f"{EDGE_PROGRAM_PREFIX}/{method}"
                updates.update(self._program_updates(name, program))
                live[name] = program
        self._update(updates, live)

    @property
    def exported_program(self) -> Any:
        """The ATen program before lowering (imports torch), or None if not stored."""
        if EXPORTED_PROGRAM not in set(self._source.names):
            return None
        return self._live_program(EXPORTED_PROGRAM)

    @exported_program.setter
    def exported_program(self, value: object) -> None:
        if value is None:
            self._update(self._removal(EXPORTED_PROGRAM))
            return
        program = program_of(value, "exported_program")
        self._update(self._program_updates(EXPORTED_PROGRAM, program), {EXPORTED_PROGRAM: program})

    @property
    def export_graph_id(self) -> int | None:
        """The id of the exported graph (``export_graph_id``), or None if not stored."""
        return self._export_graph_id

    @export_graph_id.setter
    def export_graph_id(self, value: int | None) -> None:
        if value is None:
            self._update({EXPORT_GRAPH_ID: None})
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"export_graph_id must be an int, not {value!r}")
        self._update({EXPORT_GRAPH_ID: json.dumps(value).encode("ascii")})

    def _graph_map_entries(self) -> list[str]:
        return graph_map_entry_names(self._source.names)

    @property
    def graph_map_names(self) -> list[str]:
        """Names of the extra programs recorded (``graph_map``'s keys), read without torch."""
        return self._graph_map_entries()

    @property
    def graph_map(self) -> dict[str, Any] | None:
        """Extra programs recorded, ``{"<name>/<method>": ExportedProgram}`` (imports torch
        when not empty). As the reference's: None for a record made here that was given no
        graph map and no extra modules (``ETRecord()``), a dict (maybe empty) once one was
        given and for a record read from a file."""
        names = self._graph_map_entries()
        if not names and not self._graph_map_given:
            return None
        return {name: self._live_program(name) for name in names}

    @graph_map.setter
    def graph_map(self, value: Mapping[str, object] | None) -> None:
        updates: dict[str, bytes | None] = {}
        for name in self._graph_map_entries():
            updates.update(self._removal(name))
        live: dict[str, Any] = {}
        for key, program in (value or {}).items():
            name = key if "/" in key else f"{key}/forward"
            program = program_of(program, f"graph_map[{key!r}]")
            updates.update(self._program_updates(name, program))
            live[name] = program
        self._update(updates, live)
        self._graph_map_given = value is not None

    # ------------------------------------------------------------------ maps

    @property
    def _debug_handle_map(self) -> dict[str, Any] | None:
        """``{method: {instruction_id: handle or [handles]}}`` as the reference has it: the
        map given (kept as given), or the stored JSON's (string instruction ids, as the
        reference's parsed record), None when not stored."""
        return self._map_field(DEBUG_HANDLE_MAP)

    @_debug_handle_map.setter
    def _debug_handle_map(self, value: Mapping[str, object] | None) -> None:
        self._set_map_field(DEBUG_HANDLE_MAP, value)

    @property
    def _delegate_map(self) -> dict[str, Any] | None:
        """The delegate map as the reference has it (see :attr:`_debug_handle_map`)."""
        return self._map_field(DELEGATE_MAP)

    @_delegate_map.setter
    def _delegate_map(self, value: Mapping[str, object] | None) -> None:
        self._set_map_field(DELEGATE_MAP, value)

    @property
    def _instruction_id_to_num_outs_map(self) -> dict[str, Any] | None:
        """Outputs per instruction as the reference has it (see :attr:`_debug_handle_map`)."""
        return self._map_field(NUM_OUTS_MAP)

    @_instruction_id_to_num_outs_map.setter
    def _instruction_id_to_num_outs_map(self, value: Mapping[str, object] | None) -> None:
        self._set_map_field(NUM_OUTS_MAP, value)

    def _given_maps(self) -> dict[str, Any]:
        maps: dict[str, Any] | None = getattr(self, "_live_maps", None)
        if maps is None:
            maps = {}
            self._live_maps = maps
        return maps

    def _map_field(self, entry: str) -> Any:
        given = self._given_maps()
        if entry in given:
            return given[entry]
        if entry not in set(self._source.names):
            return None
        return json.loads(self._source.read_many([entry])[entry])

    def _set_map_field(self, entry: str, value: Mapping[str, object] | None) -> None:
        self._update({entry: None if value is None else dumps_json(value)})
        if value is not None:
            self._given_maps()[entry] = value

    @property
    def _reference_outputs(self) -> Any:
        """``{method: [outputs of each test case]}`` (imports torch), or None."""
        return self.reference_outputs()

    @_reference_outputs.setter
    def _reference_outputs(self, value: object) -> None:
        data = None if value is None else torch_save(torch_values(value))
        self._update({REFERENCE_OUTPUTS: data})

    @property
    def _representative_inputs(self) -> Any:
        """The inputs numeric debugging runs the graph on (imports torch), or None."""
        return self.representative_inputs()

    @_representative_inputs.setter
    def _representative_inputs(self, value: object) -> None:
        if value is None:
            self._update({REPRESENTATIVE_INPUTS: None})
            return
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise UsageError(
                "representative inputs must be a list of inputs (tensors, arrays, numbers) "
                f"or a BundledProgram, not {type(value).__name__}"
            )
        from delegate_lens.etrecord._torch_io import encode_inputs

        self._update({REPRESENTATIVE_INPUTS: encode_inputs(list(value))})

    # ------------------------------------------------------------------ the reference's methods

    def update_representative_inputs(self, representative_inputs: object) -> None:
        """Store the inputs numeric debugging runs the reference graph on: a list (or tuple)
        of inputs, or a BundledProgram (its first ``forward`` test case's inputs)."""
        if is_bundled(representative_inputs):
            self._representative_inputs = inputs_of_bundled(representative_inputs)
        else:
            self._representative_inputs = representative_inputs

    def update_reference_outputs(self, reference_outputs: object) -> None:
        """Store expected outputs: ``{method: [outputs per test case]}``, a list (the
        ``forward`` method's) or a BundledProgram (every test case's expected outputs)."""
        if is_bundled(reference_outputs):
            self._reference_outputs = outputs_of_bundled(reference_outputs)
        elif isinstance(reference_outputs, list):
            self._reference_outputs = {"forward": reference_outputs}
        else:
            self._reference_outputs = reference_outputs

    def add_exported_program(self, exported_program: object) -> None:
        """Record the ATen program (or ``{method: program}``, whose ``forward`` is kept) and
        its graph id. ETRecordStateError if one is already recorded."""
        if self.has_exported_program or self._export_graph_id is not None:
            raise ETRecordStateError(
                "the ETRecord already has an exported program; it cannot be added again"
            )
        if exported_program is None:
            return
        program = exported_program
        if isinstance(exported_program, Mapping):
            program = exported_program.get("forward")
            if program is None:
                return  # as the reference: a dict without forward records nothing
        program = program_of(program, "exported_program")
        self.exported_program = program
        self.export_graph_id = id(program.graph)

    def add_edge_dialect_program(self, edge_dialect_program: object) -> None:
        """Record the edge program(s): an EdgeProgramManager (every method) or a program.
        ETRecordStateError if already recorded."""
        if self._programs:
            raise ETRecordStateError(
                "the ETRecord already has an edge dialect program; it cannot be added again"
            )
        self.edge_dialect_program = edge_dialect_program

    def add_executorch_program(self, executorch_program: object) -> None:
        """Record the debug handle, delegate and output-count maps of the program (what
        ``to_executorch()`` / ``to_program()`` returned), or of a BundledProgram's program
        with its reference outputs and representative inputs."""
        present = set(self._source.names)
        if any(name in present for name in _MAP_ENTRIES):
            raise ETRecordStateError(
                "the ETRecord already has executorch program data; it cannot be added again"
            )
        manager = executorch_program
        bundled = is_bundled(executorch_program)
        if bundled:
            manager = getattr(executorch_program, "executorch_program", None)
        maps = [getattr(manager, n, None) for n in ("debug_handle_map", "delegate_map")]
        if not all(isinstance(m, Mapping) for m in maps):
            raise UsageError(
                "executorch_program must be what to_executorch() / to_program() returned "
                f"(or a BundledProgram made from it), not {type(executorch_program).__name__}"
            )
        updates: dict[str, bytes | None] = {
            DEBUG_HANDLE_MAP: dumps_json(maps[0]),
            DELEGATE_MAP: dumps_json(maps[1]),
        }
        num_outs = getattr(manager, "instruction_id_to_num_outs_map", None)
        if isinstance(num_outs, Mapping):
            updates[NUM_OUTS_MAP] = dumps_json(num_outs)
        self._update(updates)
        if bundled:
            self._reference_outputs = outputs_of_bundled(executorch_program)
            inputs = inputs_of_bundled(executorch_program)
            if inputs is not None:
                self._representative_inputs = inputs

    def add_extra_export_modules(self, extra_recorded_export_modules: Mapping[str, Any]) -> None:
        """Record more programs in ``graph_map``: ``{name: ExportedProgram or edge
        manager}`` (stored as ``name/forward``, or ``name/<method>`` per method)."""
        updates: dict[str, bytes | None] = {}
        live: dict[str, Any] = {}
        for name, module in extra_recorded_export_modules.items():
            if any(reserved in name for reserved in RESERVED_NAMES):
                raise ETRecordStateError(
                    f"the name {name!r} given in extra_recorded_export_modules contains a "
                    "name the ETRecord format reserves"
                )
            if hasattr(module, "methods") and callable(getattr(module, "exported_program", None)):
                programs = {m: module.exported_program(m) for m in module.methods}
            else:
                programs = {"forward": program_of(module, f"module {name!r}")}
            for method, program in programs.items():
                entry = f"{name}/{method}"
                updates.update(self._program_updates(entry, program))
                live[entry] = program
        self._update(updates, live)
        self._graph_map_given = True

    def copy(self) -> Any:
        """A new ETRecord with this one's programs (exported, edge, graph_map) and graph id,
        without the program's maps, reference outputs and representative inputs."""
        from delegate_lens.etrecord._record import ETRecord

        record = ETRecord()
        kept = [n for n in self._source.names if n not in _MAP_ENTRIES]
        record._update(self._source.read_many(kept))
        record._torch_programs.update(self._torch_programs)
        record._graph_map_given = self._graph_map_given
        return record

    def _check_saveable(self) -> None:
        if not self._programs or DEBUG_HANDLE_MAP not in set(self._source.names):
            raise ETRecordStateError(
                "the ETRecord must have an edge dialect program and the executorch program's "
                "debug handle map to be saved (add_edge_dialect_program, "
                "add_executorch_program)"
            )
