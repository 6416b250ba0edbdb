"""The :class:`Inspector`: ETDump + ETRecord -> event blocks, tables and exports."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from delegate_lens.errors import UsageError
from delegate_lens.etrecord import load_etrecord
from delegate_lens.inspector._build import (
    FileColumns,
    build_blocks,
    concat_runs,
    decoded_file_columns,
)
from delegate_lens.inspector._debugdata import DebugBuffer, debug_problems_message
from delegate_lens.inspector._delegate_rows import DelegateRows, MetadataParser, TimeScaleConverter
from delegate_lens.inspector._etrecord_access import (
    EDGE_DIALECT_GRAPH_KEY,
    check_reference_graph_name,
    exported_program_of,
    reference_output_loader,
)
from delegate_lens.inspector._events import Event, EventBlock, LazyEvents, PerfData
from delegate_lens.inspector._linking import InspectorWarning, Linker
from delegate_lens.inspector._recovery import ProgramSource, Recovery, read_program
from delegate_lens.inspector._reference_extras import ReferenceExtras
from delegate_lens.inspector._tablebuild import build_table
from delegate_lens.inspector._tables import BlockTable
from delegate_lens.inspector._timescale import TimeScale, scale_factor
from delegate_lens.inspector._views import TimeViews

if TYPE_CHECKING:
    from delegate_lens.backend import RecoveredMap
    from delegate_lens.etdump import DecodedColumns, ETDump
    from delegate_lens.etrecord import ETRecord
    from delegate_lens.inspector._attribution import BlockAttribution
    from delegate_lens.inspector._graph_view import GraphView
    from delegate_lens.program import ProgramDelegates


PathLike = str | os.PathLike[str]


def _decode(path: PathLike | None, data: bytes | bytearray | memoryview | None) -> DecodedColumns:
    """The file-wide columns of an ETDump file or buffer; errors name the file."""
    from delegate_lens.etdump import decode_columns

    if path is None:
        assert data is not None
        return decode_columns(bytes(data))
    from delegate_lens.etdump import decode_file

    return decode_file(path)  # mapped, never held whole


def _warn(message: str) -> None:
    warnings.warn(message, InspectorWarning, stacklevel=3)


class Inspector(TimeViews, ReferenceExtras):
    """Joins an ETDump (runtime events) with an ETRecord (ahead-of-time graph and maps).

    :param etdump_path: path of the ETDump file (exactly one of this, ``etdump_data`` and
        ``etdump``).
    :param etdump_data: the ETDump bytes.
    :param etrecord: an :class:`~delegate_lens.etrecord.ETRecord` or the path of one.
    :param source_time_scale: unit of the runtime's clock (default ns).
    :param target_time_scale: unit of the samples (default ms).
    :param debug_buffer_path: the debug buffer that debug events' tensors point into.
    :param delegate_metadata_parser: ``f(list of bytes) -> list[str] | dict`` parsing the
        metadata of delegate-logged rows; without it, ``dl_parse_delegate_metadata``
        plugins are asked by backend name (the built-in ``metadata_fallback`` last: the
        raw bytes kept).
    :param delegate_time_scale_converter: ``f(event name, ticks) -> time in the target
        scale`` for delegate-logged events; without it, ``dl_delegate_time_scale_array``
        and ``dl_delegate_time_scale`` plugins, the built-in ``time_scale_fallback`` last
        (the source/target factor). See :mod:`delegate_lens.inspector._delegate_rows`.
    :param enable_module_hierarchy: accepted for compatibility; module hierarchies are
        always reported.
    :param reference_graph_name: the graph events are linked to; the reference's default
        ``"edge_dialect_graph_module"`` (the edge program: every handle of the run is in
        it) is the one supported; with an ETRecord, other names are an error naming it.
    :param etdump: an :class:`~delegate_lens.etdump.ETDump` already decoded or built (e.g.
        one file of :func:`~delegate_lens.etdump.decode_many`); keyword only, our addition.
    :param program: the program that ran (the path or bytes of its ``.pte``, or a
        ``.dlp``); keyword only, our addition. With it, a delegate whose Debug Handle Map
        the ETRecord leaves empty gets the map a ``dl_recover_delegate_map`` plugin
        recovers from its processed bytes (e.g. ``delegate-lens-xnnpack``); a non-empty
        ETRecord map always wins. Without it (or without an ETRecord) nothing changes.
    """

    def __init__(
        self,
        etdump_path: PathLike | None = None,
        etdump_data: bytes | bytearray | memoryview | None = None,
        etrecord: object = None,
        source_time_scale: TimeScale | str = TimeScale.NS,
        target_time_scale: TimeScale | str = TimeScale.MS,
        debug_buffer_path: PathLike | None = None,
        delegate_metadata_parser: MetadataParser | None = None,
        delegate_time_scale_converter: TimeScaleConverter | None = None,
        enable_module_hierarchy: bool = False,
        reference_graph_name: str = EDGE_DIALECT_GRAPH_KEY,
        *,
        etdump: ETDump | None = None,
        program: ProgramSource | ProgramDelegates | None = None,
    ) -> None:
        self.source_time_scale = TimeScale.coerce(source_time_scale)
        self.target_time_scale = TimeScale.coerce(target_time_scale)
        self._factor = scale_factor(self.source_time_scale, self.target_time_scale)
        if [etdump_path, etdump_data, etdump].count(None) != 2:
            raise UsageError("give exactly one of etdump_path, etdump_data and etdump")
        if delegate_metadata_parser is not None and not callable(delegate_metadata_parser):
            raise UsageError("delegate_metadata_parser must be callable")
        if delegate_time_scale_converter is not None and not callable(
            delegate_time_scale_converter
        ):
            raise UsageError("delegate_time_scale_converter must be callable")
        self._delegate_rows = DelegateRows(
            self._factor, delegate_metadata_parser, delegate_time_scale_converter
        )
        self.enable_module_hierarchy = enable_module_hierarchy
        self.reference_graph_name = reference_graph_name
        self.etdump_path = None if etdump_path is None else Path(etdump_path)
        self._etrecord = load_etrecord(etrecord)
        if self._etrecord is not None:  # the name is used with an ETRecord only
            check_reference_graph_name(reference_graph_name)

        if etdump is not None:
            from delegate_lens.etdump import ETDump

            if not isinstance(etdump, ETDump):
                raise UsageError(
                    f"etdump must be a delegate_lens.etdump.ETDump, not {type(etdump).__name__} "
                    "(bytes go to etdump_data, a path to etdump_path)"
                )
            self._etdump: ETDump | None = etdump
            self._decoded: DecodedColumns | None = None
            fc = concat_runs(etdump)
        else:
            # straight to the file-wide columns: no object per run unless asked for
            self._etdump = None
            self._decoded = _decode(etdump_path, etdump_data)
            fc = decoded_file_columns(self._decoded)
        buffer_data = None
        if debug_buffer_path is not None:
            from delegate_lens.fileio import read_input

            buffer_data = read_input(debug_buffer_path, "debug buffer")
        origin = "the ETDump" if etdump_path is None else os.fspath(etdump_path)
        self._debug_buffer = DebugBuffer(buffer_data, origin)

        self._fc: FileColumns = fc
        grouping = build_blocks(self._fc)
        self._grouping = grouping
        self._recovery = None if program is None else Recovery(read_program(program))
        self._linker = (
            Linker(self._etrecord, self._recovery) if self._etrecord is not None else None
        )
        self._tables: list[BlockTable] = [
            build_table(
                i, block, self._fc, grouping, self._linker, self._delegate_rows, self._debug_buffer
            )
            for i, block in enumerate(grouping.blocks)
        ]
        # said once, when debug values are used (events, JSON), not on every Inspector
        self._debug_problems = debug_problems_message(self._debug_buffer)
        self._metadata_cache: dict[tuple[int, int], tuple[list[bytes], Any]] = {}
        self._any_metadata: bool | None = None  # whether any event of the file has some
        self._blocks: list[EventBlock] | None = None
        self._attribution: list[BlockAttribution] | None = None

    def _repr_html_(self) -> str | None:
        """Jupyter's display, from the ``dl_html_display`` hook (the built-in ``notebook``
        plugin: :func:`delegate_lens.report._notebook.inspector_html`); None: the repr."""
        from delegate_lens import hooks

        html = hooks.html_display(self)
        return html if isinstance(html, str) else None

    @property
    def etdump(self) -> ETDump:
        """The decoded ETDump (:class:`delegate_lens.etdump.ETDump`), its run objects made
        on first use."""
        if self._etdump is None:
            assert self._decoded is not None
            self._etdump = self._decoded.etdump(0)
        return self._etdump

    @property
    def time_factor(self) -> float:
        """The divisor from source ticks to target units (ns -> ms: 1e6)."""
        return self._factor

    # ------------------------------------------------------------------ row access

    @property
    def tables(self) -> list[BlockTable]:
        """The columnar tables behind :attr:`event_blocks` (for exporters)."""
        return self._tables

    @property
    def file_columns(self) -> FileColumns:
        """Every event of the ETDump as numpy columns."""
        return self._fc

    def row_metadata(self, table: BlockTable, row: int) -> tuple[list[bytes], Any]:
        """Raw metadata of a row (one bytes value per sample, ``[]`` when none has any)
        and the parsed form (the raw list when nothing parses it; see
        :mod:`delegate_lens.inspector._delegate_rows`)."""
        cache_key = (table.index, row)
        cached = self._metadata_cache.get(cache_key)
        if cached is not None:
            return cached
        result: tuple[list[bytes], Any] = ([], [])
        if self._any_metadata is None:
            self._any_metadata = bool((self._fc.metadata_length > 0).any())
        events = table.block.events[:, row]
        if (
            self._any_metadata
            and table.block.has_perf[row]
            and (self._fc.metadata_length[events] > 0).any()
        ):
            raws = [self._fc.metadata(int(e)) or b"" for e in events]
            if any(raws):
                backend = table.links[row].delegate_backend_name
                where = f"block {table.index}"
                parsed = self._delegate_rows.parse_metadata(backend, table.keys[row], raws, where)
                result = (raws, parsed)
        if not result[0] and self._delegate_rows.metadata_parser is not None:
            # the user's parser answers for every delegate row, as the reference asks it
            # for one without metadata too (with [])
            key = table.keys[row]
            where = f"block {table.index}"
            result = ([], self._delegate_rows.parse_metadata(None, key, [], where))
        self._metadata_cache[cache_key] = result
        return result

    def make_event(self, table: BlockTable, row: int) -> Event:
        """The :class:`Event` of one row (what :attr:`event_blocks` holds)."""
        key = table.keys[row]
        link = table.links[row]
        block = table.block
        perf: PerfData | None = None
        start_time: list[int] | None = None
        if block.has_perf[row]:
            st = table.stats[:, row]
            perf = PerfData(
                raw=table.samples[row].tolist(),
                p10=float(st[0]),
                p50=float(st[1]),
                p90=float(st[2]),
                avg=float(st[3]),
                min=float(st[4]),
                max=float(st[5]),
            )
            start_time = self._fc.start_time[block.events[:, row]].tolist()
        raws, parsed = self.row_metadata(table, row)
        num_outputs = 1
        if self._etrecord is not None and key.instruction_id >= 0:
            outs = self._etrecord.instruction_id_to_num_outs_map.get(link.method or "forward", {})
            num_outputs = int(outs.get(key.instruction_id, 1))
        if table.debug_data.get(row):
            self.say_debug_problems()
        return Event(
            name=key.name,
            perf_data=perf,
            op_types=list(link.op_types),
            delegate_debug_identifier=key.identifier,
            debug_handles=link.debug_handles,
            stack_traces=dict(link.stack_traces),
            module_hierarchy=dict(link.module_hierarchy),
            is_delegated_op=key.identifier is not None,
            delegate_backend_name=link.delegate_backend_name,
            debug_data=list(table.reference_debug_data(row)),
            start_time=start_time,
            delegate_debug_metadatas=parsed,
            raw_delegate_debug_metadatas=raws,
            instruction_id=None if key.instruction_id < 0 else key.instruction_id,
            method=link.method,
            num_outputs=num_outputs,
            _delegate_metadata_parser=self._delegate_rows.metadata_parser,
            _delegate_time_scale_converter=self._delegate_rows.converter,
        )

    def say_debug_problems(self) -> None:
        """Warn, once per Inspector, about debug values that are unavailable (no debug
        buffer, or one they do not fit); called where debug values are used."""
        if self._debug_problems is not None:
            message, self._debug_problems = self._debug_problems, None
            warnings.warn(message, InspectorWarning, stacklevel=3)

    @property
    def event_blocks(self) -> list[EventBlock]:
        """One :class:`EventBlock` per run signature, in first-appearance order."""
        if self._blocks is None:
            self._blocks = [self._event_block(t) for t in self._tables]
        return self._blocks

    def _event_block(self, table: BlockTable) -> EventBlock:
        if table.run_output:
            self.say_debug_problems()

        def make(row: int) -> Event:
            return self.make_event(table, row)

        return EventBlock(
            name=table.name,
            events=LazyEvents(table.n_rows, make),
            bundled_input_index=table.block.bundled_input_index,
            source_time_scale=self.source_time_scale,
            target_time_scale=self.target_time_scale,
            run_indices=[int(r) for r in table.block.runs],
            method=table.method,
            run_output=list(table.reference_run_output()),
            reference_loader=reference_output_loader(
                self._etrecord, table.block.bundled_input_index
            ),
        )

    @property
    def recovered_maps(self) -> list[RecoveredMap]:
        """The Debug Handle Maps recovered from the program (``program=``) for delegates
        the ETRecord left unmapped, one per delegate call, with the plugin that recovered
        each and why any logged identifier stays unlinked; ``[]`` without a program."""
        if self._recovery is None:
            return []
        return [self._recovery.maps[k] for k in sorted(self._recovery.maps)]

    @property
    def etrecord(self) -> ETRecord | None:
        """The ETRecord given (parsed), or None."""
        return self._etrecord

    def graph_view(self) -> GraphView | None:
        """The ETRecord's graph of every method as this Inspector joins it: operator nodes
        (each with the rows of :attr:`tables` linked to it), data edges and delegate calls;
        None without an ETRecord. See :mod:`delegate_lens.inspector._graph_view`."""
        if self._etrecord is None:
            return None
        from delegate_lens.inspector._graph_view import graph_view

        return graph_view(self._etrecord, self._tables)

    # ------------------------------------------------------------------ outputs

    def print_data_tabular(
        self,
        file: IO[str] | None = None,
        include_units: bool = True,
        include_delegate_debug_data: bool = False,
    ) -> None:
        """Print the reference's table: one row per event (``OPERATOR_CALL`` rows left out),
        its columns (``start_time`` included) in its grid with an index column, cell for
        cell as the reference prints it (``delegate-lens inspect`` prints a compact one)."""
        from delegate_lens._texttable import format_fancy_grid
        from delegate_lens.exporters import reference_rows
        from delegate_lens.inspector._writer_input import table_input

        table = table_input(self, metadata=include_delegate_debug_data, start_times=True)
        headers, rows = reference_rows(table, include_units, include_delegate_debug_data)
        print(format_fancy_grid(headers, rows), file=sys.stdout if file is None else file)

    def save_data_to_tsv(
        self,
        file: PathLike | IO[str],
        include_units: bool = True,
        include_delegate_debug_data: bool = False,
    ) -> None:
        """Write the printed table as TSV (as the reference's ``DataFrame.to_csv(sep="\\t")``:
        an index column, floats in full) to a path (atomically) or a text stream."""
        from delegate_lens.exporters import reference_rows, write_reference_tsv
        from delegate_lens.fileio import write_atomic
        from delegate_lens.inspector._writer_input import table_input

        table = table_input(self, metadata=include_delegate_debug_data, start_times=True)
        headers, rows = reference_rows(table, include_units, include_delegate_debug_data)

        def write(stream: IO[str]) -> None:
            write_reference_tsv(headers, rows, stream)

        if isinstance(file, (str, os.PathLike)):
            write_atomic(file, write)
        else:
            write(file)

    def to_dataframe(
        self, include_units: bool = True, include_delegate_debug_data: bool = False
    ) -> Any:
        """A pandas DataFrame with one row per event (needs the ``pandas`` extra), built
        from the tables' columns (:mod:`delegate_lens.inspector._frames`)."""
        from delegate_lens.inspector._frames import inspector_dataframe

        return inspector_dataframe(
            self,
            include_units=include_units,
            include_delegate_debug_data=include_delegate_debug_data,
        )

    def get_exported_program(self, graph: str | None = None, *, method: str | None = None) -> Any:
        """A program of the ETRecord (deserialized with torch, on request): with ``graph``
        None the edge program (the reference's ``edge_dialect_program``: the program, or
        ``{method: program}`` for several methods; ``method=`` picks one), else
        ``"exported_program"``, ``"edge_dialect_exported_program"`` or a ``graph_map``
        name (``"name"`` meaning ``"name/forward"``). None with a warning when no ETRecord
        was given or the graph is unknown (the warning lists the known ones)."""
        if self._etrecord is None:
            _warn("get_exported_program needs an ETRecord (etrecord=...)")
            return None
        return exported_program_of(self._etrecord, graph, method, _warn)

    def calculate_numeric_gap(
        self,
        distance: Any = "MSE",
        disable_debug_handle_valdiation: bool = False,
        reference_graph: str | None = None,
        *,
        inputs: Any = None,
        aot_outputs: Any = None,
        cache: bool | PathLike = False,
        threshold: float | None = None,
        method: str | None = None,
        as_dataframe: bool | None = None,
        detailed: bool = False,
    ) -> Any:
        """Compare every intermediate output of the run with the reference graph's.

        :param distance: ``"MSE"``, ``"L1"``, ``"SNR"``, ``"cosine"`` or any name a
            ``dl_numerical_comparators`` plugin adds; a ``Comparator``, an object with
            ``element_compare(a, b)`` (the reference's comparator classes) or a callable.
        :param disable_debug_handle_valdiation: (spelled as the reference does) use the
            ATen graph even when some handles do not map back to it; by default it is
            used only when every handle does, else the edge graph.
        :param reference_graph: ``"exported_program"``, ``"edge_dialect_exported_program"``
            or None (ATen when possible).
        :param inputs: inputs for the reference graph (default: the ETRecord's
            representative inputs, one method's), or ``{method: inputs}``: with
            ``method=None``, every method given is compared, in one table.
        :param aot_outputs: reference outputs already captured (an ``AotOutputs`` or the
            path of a cache); the gap is then computed without torch (but for the
            reference's frame, below).
        :param cache: keep the captured reference outputs beside the ETRecord (``True``)
            or at a path, and reuse them.
        :param threshold: where a gap counts as diverged (default: the comparator's).
        :param method: the method to compare (default ``forward``; a run's other methods
            are warned about and listed in ``unmatched`` unless ``inputs`` gives theirs).
        :param as_dataframe: a pandas DataFrame (default when pandas is installed) or a
            :class:`~delegate_lens.numerics.NumericGapTable`.
        :param detailed: (ours) the DataFrame with delegate-lens's columns: by default it
            is the reference's frame exactly (its eight columns, intermediate outputs as
            torch tensors, torch imported to build it, gaps reduced with torch as the
            reference's: the same to the last bit); ``detailed=True`` adds
            ``delegate_backend``, ``delegate_identifiers``, ``diverged``,
            ``first_divergence``, ``note`` and ``method``, keeps outputs as numpy arrays
            and every row (see ``docs/numerics.md``). The table is always detailed.
        :returns: one row per matched output, in graph order.
        """
        from delegate_lens.numerics import calculate_numeric_gap

        if as_dataframe is None:
            import importlib.util

            as_dataframe = importlib.util.find_spec("pandas") is not None

        table = calculate_numeric_gap(
            self,
            distance,
            inputs=inputs,
            aot_outputs=aot_outputs,
            reference_graph=reference_graph,
            cache=cache,
            threshold=threshold,
            method=method,
            disable_debug_handle_validation=disable_debug_handle_valdiation,
            reference_pairing=False,  # right where the reference pairs wrongly (issue 32 item 2)
            # the reference's frame holds tensors (torch): its gaps reduce as the reference's
            reference_reductions=bool(as_dataframe) and not detailed,
        )
        return table.to_dataframe(detailed=detailed) if as_dataframe else table
