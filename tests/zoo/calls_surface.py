"""The rest of the user-touched surface of 1.5.1's devtools on one model, for the
differential suite (``calls.py`` imports it; it runs as a script there, so this module is
imported by name from its folder; ``calls_general.py`` holds the calls on no one model).

``surface_model_calls`` adds, on one model's folder: the Inspector's other arguments
(``etdump_data``, an ``ETRecord`` object, time scales, ``delegate_metadata_parser``,
``delegate_time_scale_converter``, ``enable_module_hierarchy``), every
``Event``/``EventBlock``/``PerfData`` attribute, the Inspector's other methods and
attributes, ``ETRecord.copy``/``save``, the delegation counts, the ETDump's schema objects
and a bundled program's bytes; ``gap_calls`` the numeric gap's other arguments (names as
users spell them, a comparator of their own, the reference graph).
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calls_canon import canon, fields_canon, graph_canon, printed

Calls = dict[str, Callable[[], Any]]


def metadata_parser(metadatas: list[Any]) -> dict[str, Any]:
    """A user's ``delegate_metadata_parser``: how many metadata it was given."""
    return {"metadata_count": len(metadatas)}


def time_converter(name: Any, time: Any) -> float:
    """A user's ``delegate_time_scale_converter``: delegate ticks as microseconds."""
    return float(time) / 1000.0


def perf_fields(event: Any) -> Any:
    """Every statistic of an event's ``PerfData`` (None without samples)."""
    perf = event.perf_data
    if perf is None:
        return None
    stats = [perf.p10, perf.p50, perf.p90, perf.avg, perf.min, perf.max]
    return canon([list(perf.raw), *stats])


def other_fields(event: Any) -> Any:
    """The event's attributes that ``calls._event_fields`` leaves out."""
    return canon(
        [
            event.start_time,
            event._start_time,
            list(event.raw_delegate_debug_metadatas),
            event.delegate_debug_metadatas,
            event._delegate_metadata_parser is None,
            callable(event._delegate_time_scale_converter),
        ]
    )


def _no_values(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "debug_data"}


def frame_canon(frame: Any) -> Any:
    """A DataFrame without its ``debug_data`` column: the debug values are compared once,
    in ``calls.py``'s ``event_blocks fields`` and ``to_dataframe`` (a difference there is
    not counted again in every other frame of the same rows)."""
    return canon(frame.drop(columns=["debug_data"], errors="ignore"))


def _each_event(inspector: Any, field: Callable[[Any], Any]) -> Any:
    return [[field(e) for e in b.events] for b in inspector.event_blocks]


_PROFILE = ("name", "chain_index", "instruction_id", "delegate_debug_id_int")
_PROFILE += ("delegate_debug_id_str", "delegate_debug_metadata", "start_time", "end_time")
_DEBUG = ("name", "chain_index", "instruction_id", "delegate_debug_id_int", "delegate_debug_id_str")
_VALUE = ("val", "int_value", "float_value", "double_value", "bool_value", "output")
_TENSOR = ("scalar_type", "sizes", "strides", "offset")


def _named(value: Any, names: tuple[str, ...], **nested: Callable[[Any], Any]) -> Any:
    """``value``'s fields ``names`` (the reference's schema's), then ``nested`` ones, each
    read by its function; None for None."""
    if value is None:
        return None
    fields = [(n, fields_canon(getattr(value, n))) for n in names]
    return fields + [(n, read(getattr(value, n))) for n, read in nested.items()]


def _tensor_list(value: Any) -> Any:
    return None if value is None else [_named(x, _TENSOR) for x in value.tensors]


def _value(value: Any) -> Any:
    kind = getattr(value, "val", None)  # the reference's str, our ValueType: by its name
    read = _named(value, _VALUE[1:], tensor=lambda x: _named(x, _TENSOR), tensor_list=_tensor_list)
    return None if read is None else [("val", getattr(kind, "name", kind)), *read]


def etdump_canon(etdump: Any) -> Any:
    """An ETDump's schema objects by the reference's field names (``schema_flatcc``), in one
    representation: ``Value.val`` by its name (the reference's is the str, ours the
    ``ValueType``), a run's ``allocators`` None as ``[]``; ``etdump_representation`` compares
    those two representations, once."""

    def event(e: Any) -> Any:
        return [
            _named(e.profile_event, _PROFILE),
            _named(e.allocation_event, ("allocator_id", "allocation_size")),
            _named(e.debug_event, _DEBUG, debug_entry=_value),
        ]

    return canon(etdump.version), [
        (
            r.name,
            canon(r.bundled_input_index),
            [a.name for a in r.allocators or []],
            None if r.events is None else [event(e) for e in r.events],
        )
        for r in etdump.run_data
    ]


def etdump_representation(etdump: Any) -> Any:
    """How an ETDump's schema objects hold a run's allocators (none logged) and a
    ``Value``'s kind (see ``etdump_canon``)."""
    runs = etdump.run_data
    entries = [e.debug_event.debug_entry for r in runs for e in r.events if e.debug_event]
    return canon([[r.allocators for r in runs], [v.val for v in entries[:1]]])


def _record_fields(record: Any) -> Any:
    """An ETRecord's fields, read the way the reference's own calls read them."""
    graph_map = record.graph_map
    return [
        graph_canon(record.exported_program),
        canon(record.export_graph_id),
        graph_canon(record.edge_dialect_program),
        canon(None if graph_map is None else sorted(graph_map)),
        canon(record._debug_handle_map),
        canon(record._delegate_map),
        canon(record._instruction_id_to_num_outs_map),
        canon(record._representative_inputs),
        canon(record._reference_outputs),
    ]


def _saved_and_parsed(lib: Any, record: Any) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "etrecord.bin"
        record.save(str(path))
        return _record_fields(lib.parse_etrecord(str(path)))


def _tsv(inspector: Any, **kwargs: Any) -> str:
    out = io.StringIO()
    inspector.save_data_to_tsv(out, **kwargs)
    return out.getvalue()


def _written(inspector: Any) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        returned = inspector.write_tensorboard_artifact(tmp)
        return canon([returned, sorted(p.name for p in Path(tmp).iterdir())])


def comparator_class(lib: Any) -> type:
    """A comparator of the user's own, on the library's base class: the largest absolute
    difference."""
    base = lib.module("inspector.numerical_comparator").NumericalComparatorBase

    class MaxAbs(base):  # type: ignore[misc, valid-type]
        def element_compare(self, a: Any, b: Any) -> float:
            return float((a - b).abs().max())

    return MaxAbs


def gap_calls(lib: Any, inspector: Callable[[], Any]) -> Calls:
    """The numeric gap's other arguments (a distance spelled as users spell it, a
    comparator of their own, the validation flag, the reference graph by name). They test
    the arguments, not the model: ``calls.py`` runs them on a few models only."""
    gap = "calculate_numeric_gap"  # the keys keep the method's name first
    return {
        f"{gap}(' mse ')": lambda: canon(inspector().calculate_numeric_gap(" mse ")),
        f"{gap}(a comparator of the user's)": lambda: canon(
            inspector().calculate_numeric_gap(comparator_class(lib)())
        ),
        f"{gap}('L1', disable_debug_handle_valdiation=True)": lambda: canon(
            inspector().calculate_numeric_gap("L1", disable_debug_handle_valdiation=True)
        ),
        f"{gap}('MSE', reference_graph='edge_dialect_exported_program')": lambda: canon(
            inspector().calculate_numeric_gap(
                "MSE", reference_graph="edge_dialect_exported_program"
            )
        ),
        f"{gap}('SNR', reference_graph='exported_program')": lambda: canon(
            inspector().calculate_numeric_gap("SNR", reference_graph="exported_program")
        ),
        f"{gap}('MSE', reference_graph='nope')": lambda: canon(
            inspector().calculate_numeric_gap("MSE", reference_graph="nope")
        ),
    }


def _bundled_bytes(lib: Any, folder: Path) -> Any:
    """A bundled program made from the folder's program, inputs and the runtime's outputs,
    serialized (the bytes), and read back (its schema objects, as fields)."""
    import torch

    config = lib.module("bundled_program.config")
    inputs = torch.load(folder / "inputs.pt")
    outputs = torch.load(folder / "runtime.pt")
    suites = [
        config.MethodTestSuite(
            method_name=method,
            test_cases=[
                config.MethodTestCase(
                    inputs=list(inputs[method]), expected_outputs=list(outputs[method])
                )
            ],
        )
        for method in sorted(inputs)
    ]
    core = lib.module("bundled_program.core")
    serialize = lib.module("bundled_program.serialize")
    program = core.BundledProgram(None, suites, pte_file_path=str(folder / "model.pte"))
    data = serialize.serialize_from_bundled_program_to_flatbuffer(program)
    back = serialize.deserialize_from_flatbuffer_to_bundled_program(data)
    return [canon(bytes(data)), fields_canon(back)]


def surface_model_calls(
    lib: Any,
    folder: Path,
    files: dict[str, str | None],
    inspector: Callable[[], Any],
    record: Callable[[], Any],
    edge_graph: Callable[[], Any],
) -> tuple[Calls, dict[str, bool]]:
    """The calls on one model's folder (``files``: the Inspector's file arguments;
    ``inspector``, ``record``, ``edge_graph``: calls.py's, made once), and the prefixes of
    those that need a file the folder may lack (``{prefix: whether the folder has it}``)."""
    ts = lib.TimeScale

    def made(**kwargs: Any) -> Any:
        return lib.Inspector(**{**files, **kwargs})

    def etdump_data() -> Any:
        data = Path(str(files["etdump_path"])).read_bytes()
        others = {k: v for k, v in files.items() if k != "etdump_path"}
        return lib.Inspector(etdump_data=data, **others)

    def with_record_object() -> Any:
        return lib.Inspector(
            etdump_path=files["etdump_path"],
            etrecord=record(),
            debug_buffer_path=files["debug_buffer_path"],
        )

    kept: dict[str, Any] = {}

    def parsed() -> Any:  # made once, on first use
        if "parsed" not in kept:
            kept["parsed"] = made(delegate_metadata_parser=metadata_parser)
        return kept["parsed"]

    def scaled() -> Any:
        if "scaled" not in kept:
            kept["scaled"] = made(delegate_time_scale_converter=time_converter)
        return kept["scaled"]

    calls: Calls = {
        "Inspector(etdump_data=).print_data_tabular": lambda: printed(
            etdump_data().print_data_tabular
        ),
        "Inspector(etrecord=ETRecord object).print_data_tabular": lambda: printed(
            with_record_object().print_data_tabular
        ),
        "Inspector(source_time_scale=US, target_time_scale=S).print_data_tabular": lambda: printed(
            made(source_time_scale=ts.US, target_time_scale=ts.S).print_data_tabular
        ),
        "Inspector(source_time_scale=NS, target_time_scale=NS).event_blocks perf_data": lambda: (
            _each_event(made(source_time_scale=ts.NS, target_time_scale=ts.NS), perf_fields)
        ),
        "Inspector(CYCLES, CYCLES).print_data_tabular": lambda: printed(
            made(source_time_scale=ts.CYCLES, target_time_scale=ts.CYCLES).print_data_tabular
        ),
        "Inspector(delegate_metadata_parser=).print_data_tabular(include_delegate_debug_data=True)": (
            lambda: printed(parsed().print_data_tabular, include_delegate_debug_data=True)
        ),
        "Inspector(delegate_metadata_parser=).event_blocks other fields": lambda: _each_event(
            parsed(), other_fields
        ),
        "Inspector(delegate_metadata_parser=).to_dataframe(include_delegate_debug_data=True)": (
            lambda: frame_canon(parsed().to_dataframe(include_delegate_debug_data=True))
        ),
        "Inspector(delegate_metadata_parser=).save_data_to_tsv(include_delegate_debug_data=True)": (
            lambda: _tsv(parsed(), include_delegate_debug_data=True)
        ),
        "Inspector(delegate_time_scale_converter=).print_data_tabular": lambda: printed(
            scaled().print_data_tabular
        ),
        "Inspector(delegate_time_scale_converter=).event_blocks perf_data": lambda: _each_event(
            scaled(), perf_fields
        ),
        "Inspector(enable_module_hierarchy=True).event_blocks hierarchy": lambda: _each_event(
            made(enable_module_hierarchy=True),
            lambda e: canon([dict(e.module_hierarchy), dict(e.stack_traces), e.op_types]),
        ),
        "event_blocks perf_data": lambda: _each_event(inspector(), perf_fields),
        "event_blocks other fields": lambda: _each_event(inspector(), other_fields),
        "event_blocks time scales": lambda: canon(
            [(b.source_time_scale, b.target_time_scale) for b in inspector().event_blocks]
        ),
        "event_blocks[].events[].asdict(' (ms)')": lambda: _each_event(
            inspector(), lambda e: canon(_no_values(e.asdict(" (ms)")))
        ),
        "event_blocks[].events[].to_dataframe": lambda: _each_event(
            inspector(), lambda e: frame_canon(e.to_dataframe())
        ),
        "event_blocks[].to_dataframe(include_units=True)": lambda: [
            frame_canon(b.to_dataframe(include_units=True)) for b in inspector().event_blocks
        ],
        "event_blocks[].to_dataframe(include_delegate_debug_data=True)": lambda: [
            frame_canon(b.to_dataframe(include_delegate_debug_data=True))
            for b in inspector().event_blocks
        ],
        "save_data_to_tsv(text stream)": lambda: _tsv(inspector()),
        "save_data_to_tsv(include_units=False, include_delegate_debug_data=True)": lambda: _tsv(
            inspector(), include_units=False, include_delegate_debug_data=True
        ),
        "write_tensorboard_artifact": lambda: _written(inspector()),
        "get_vgf_neural_statistics": lambda: canon(inspector().get_vgf_neural_statistics()),
        "Inspector._reference_outputs": lambda: canon(inspector()._reference_outputs),
        "Inspector._etrecord": lambda: canon(
            None if inspector()._etrecord is None else type(inspector()._etrecord).__name__
        ),
        "ETRecord.copy()": lambda: _record_fields(record().copy()),
        "ETRecord.save() read back": lambda: _saved_and_parsed(lib, record()),
        "get_delegation_info(edge) counts": lambda: canon(
            [
                (i.num_delegated_subgraphs, i.num_delegated_nodes, i.num_non_delegated_nodes)
                for i in [lib.get_delegation_info(edge_graph())]
            ]
        ),
        "etdump.serialize.deserialize_from_etdump_flatcc": lambda: etdump_canon(
            lib.module("etdump.serialize").deserialize_from_etdump_flatcc(
                Path(str(files["etdump_path"])).read_bytes()
            )
        ),
        "BundledProgram(program, suites) serialized": lambda: _bundled_bytes(lib, folder),
    }
    has_record = files["etrecord"] is not None
    bundle = all((folder / f).is_file() for f in ("model.pte", "inputs.pt", "runtime.pt"))
    needs = {
        "Inspector(etrecord=ETRecord object)": has_record,
        "ETRecord.copy": has_record,
        "ETRecord.save": has_record,
        "get_delegation_info(edge) counts": has_record,
        "BundledProgram": bundle,
    }
    return calls, needs
