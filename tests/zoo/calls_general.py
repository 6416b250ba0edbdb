"""The differential suite's calls on no one model (``calls.py`` imports it by name from
its folder): misuse (the class of the exception), the value classes made by hand
(``PerfData``, ``Event``, ``EventBlock``), ``compare_results``, the VGF metadata parsers,
the comparators and ``convert_to_float_tensor``, and the two cases of a numeric gap on a
run read without its ETRecord or without its debug buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from calls_canon import canon, graph_canon, stdout_of
from calls_surface import etdump_representation, perf_fields

Calls = dict[str, Callable[[], Any]]


VGF = {
    "schema": "executorch.vgf.neural_statistics",
    "schema_version": 1,
    "segments": [
        {
            "name": "segment 0",
            "debug_database": {"available": True, "encoding": "base64", "data": "AAEC"},
            "statistics_info": {"available": False},
        }
    ],
}
"""VGF neural statistics metadata as a backend logs it (one blob decoded, one absent)."""


def _vgf_calls(lib: Any) -> Calls:
    import json

    inspector = lib.module("inspector")
    good = json.dumps(VGF).encode()
    other = json.dumps({"schema": "another backend's"}).encode()
    bad_blob = json.dumps({**VGF, "segments": [{"debug_database": {**_blob(), "data": "@"}}]})
    return {
        "parse_vgf_neural_statistics_metadata": lambda: canon(
            inspector.parse_vgf_neural_statistics_metadata(good)
        ),
        "parse_vgf_neural_statistics_metadata(str)": lambda: canon(
            inspector.parse_vgf_neural_statistics_metadata(good.decode())
        ),
        "parse_vgf_neural_statistics_metadata(another schema)": lambda: canon(
            inspector.parse_vgf_neural_statistics_metadata(other)
        ),
        "parse_vgf_neural_statistics_metadata(bad base64)": lambda: canon(
            inspector.parse_vgf_neural_statistics_metadata(bad_blob)
        ),
        "parse_vgf_neural_statistics_delegate_metadata": lambda: canon(
            inspector.parse_vgf_neural_statistics_delegate_metadata(
                [good, b"", None, other, b"\xff not json", 3, bytearray(good)]
            )
        ),
        "parse_vgf_neural_statistics_delegate_metadata(malformed)": lambda: canon(
            inspector.parse_vgf_neural_statistics_delegate_metadata([good[:-1]])
        ),
    }


def _blob() -> dict[str, Any]:
    return {"available": True, "encoding": "base64"}


def _value_class_calls(lib: Any) -> Calls:
    inspector = lib.module("inspector")
    perf = inspector.PerfData

    def event(name: str, identifier: Any, samples: list[float] | None) -> Any:
        return inspector.Event(
            name=name,
            perf_data=None if samples is None else perf(samples),
            op_types=["aten.add.Tensor", "aten.mul.Tensor"],
            delegate_debug_identifier=identifier,
            is_delegated_op=identifier is not None,
        )

    def block() -> Any:
        events = [event("native_call_add.out", None, [1.0, 3.0]), event("7", 7, [2.5])]
        events.append(event("Method::execute", None, None))
        return inspector.EventBlock(name="Execute", events=events)

    samples = [3.0, 1.0, 2.0, 10.0, 0.5]
    return {
        "PerfData(raw) statistics": lambda: perf_fields(event("e", None, samples)),
        "Event(...).asdict(' (ms)')": lambda: canon(event("e", 3, samples).asdict(" (ms)")),
        "Event(...).to_dataframe": lambda: canon(event("e", None, samples).to_dataframe()),
        "Event(...).delegate_debug_metadatas": lambda: canon(
            [event("e", 3, samples).delegate_debug_metadatas, event("e", 3, None).start_time]
        ),
        "EventBlock(...).to_dataframe(include_units=True)": lambda: canon(
            block().to_dataframe(include_units=True)
        ),
        "EventBlock(...) time scales": lambda: canon(
            [block().source_time_scale, block().target_time_scale, block().run_output]
        ),
    }


def _comparator_calls(lib: Any) -> Calls:
    import torch

    module = lib.module("inspector.numerical_comparator")
    a = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
    b = torch.tensor([[1.5, 2.0], [2.0, 4.0]])
    calls: Calls = {}
    for name in ("MSEComparator", "L1Comparator", "SNRComparator"):
        calls[f"numerical_comparator.{name}().element_compare"] = lambda n=name: canon(  # type: ignore[misc]
            getattr(module, n)().element_compare(a.double(), b.double())
        )
    calls["numerical_comparator.NumericalComparatorBase() (abstract)"] = lambda: canon(
        module.NumericalComparatorBase()
    )
    calls["numerical_comparator.MSEComparator().inspector"] = lambda: canon(
        module.MSEComparator().inspector
    )
    return calls


def _misuse_calls(lib: Any, etdump: str, record: str) -> Calls:
    """The exception classes of misuse (the reference's own checks and failures). Not the
    reference's ``assert``s (``convert_to_float_tensor`` of a list): ``python -O`` drops
    them, so no code can rely on them."""
    ts = lib.TimeScale
    u = lib.utils
    return {
        "Inspector(source_time_scale=NS, target_time_scale=CYCLES)": lambda: canon(
            lib.Inspector(etdump_path=etdump, target_time_scale=ts.CYCLES)
        ),
        "Inspector(target_time_scale='bad')": lambda: canon(
            lib.Inspector(etdump_path=etdump, target_time_scale="bad")
        ),
        "Inspector() (no etdump)": lambda: canon(lib.Inspector()),
        "Inspector(etdump_path=, etdump_data=)": lambda: canon(
            lib.Inspector(etdump_path=etdump, etdump_data=Path(etdump).read_bytes())
        ),
        "Inspector(etrecord=3)": lambda: canon(lib.Inspector(etdump_path=etdump, etrecord=3)),
        "TimeScale('ms')": lambda: canon(ts("ms")),
        "TimeScale('bad')": lambda: canon(ts("bad")),
        "TimeScale['CYCLES']": lambda: canon(ts["CYCLES"]),
        "_inspector_utils.calculate_time_scale_factor('ms', 'ns')": lambda: canon(
            u.calculate_time_scale_factor("ms", "ns")
        ),
        "_inspector_utils.convert_to_float_tensor": lambda: canon(
            [
                u.convert_to_float_tensor(2),
                u.convert_to_float_tensor(1.5),
                u.convert_to_float_tensor(_tensor([1.0, float("nan")])),
                u.convert_to_float_tensor(_tensor([[1, 2]], "int32")),
            ]
        ),
        "Inspector(reference_graph_name='nope')": lambda: canon(
            lib.Inspector(etdump_path=etdump, etrecord=record, reference_graph_name="nope")
        ),
        "Inspector(no etrecord, reference_graph_name='nope')": lambda: canon(
            len(lib.Inspector(etdump_path=etdump, reference_graph_name="nope").event_blocks)
        ),
    }


def _tensor(values: Any, dtype: str = "float32") -> Any:
    import torch

    return torch.tensor(values, dtype=getattr(torch, dtype))


def _compare_calls(lib: Any) -> Calls:
    reference = [_tensor([1.0, 2.0, 3.0]), _tensor([[0.5, -1.0]]), _tensor([4.0, 0.0])]
    run = [_tensor([1.1, 2.0, 2.9]), _tensor([[0.5, -1.0]]), _tensor([3.5, 0.5])]
    return {
        "compare_results printed": lambda: stdout_of(lib.compare_results, reference, run),
        "compare_results(metrics=['mse', 'snr'])": lambda: canon(
            lib.compare_results(reference, run, metrics=["mse", "snr"])
        ),
    }


def surface_general_calls(lib: Any, model: Path | None) -> Calls:
    """Calls on no one model (``model``: a folder with an ETRecord and a debug buffer, for
    the numeric gaps of a run read without one of them; None: those calls left out)."""
    calls: Calls = {
        **_vgf_calls(lib),
        **_value_class_calls(lib),
        **_comparator_calls(lib),
        **_compare_calls(lib),
    }
    if model is None:
        return calls
    etdump = str(model / "etdump.etdp")
    record, debug = str(model / "etrecord.bin"), str(model / "debug.bin")
    calls.update(_misuse_calls(lib, etdump, record))
    calls["Inspector(no etrecord).calculate_numeric_gap('MSE')"] = lambda: canon(
        lib.Inspector(etdump_path=etdump, debug_buffer_path=debug).calculate_numeric_gap("MSE")
    )
    calls["Inspector(no debug buffer).calculate_numeric_gap('MSE')"] = lambda: canon(
        lib.Inspector(etdump_path=etdump, etrecord=record).calculate_numeric_gap("MSE")
    )
    calls["etdump.serialize.deserialize_from_etdump_flatcc: allocators, Value.val"] = lambda: (
        etdump_representation(
            lib.module("etdump.serialize").deserialize_from_etdump_flatcc(Path(etdump).read_bytes())
        )
    )
    calls["get_exported_program('exported_program', 'edge_dialect_exported_program')"] = lambda: [
        graph_canon(lib.Inspector(etdump_path=etdump, etrecord=record).get_exported_program(g))
        for g in ("exported_program", "edge_dialect_exported_program")
    ]
    calls["Inspector.op_graph_dict"] = lambda: canon(
        sorted(lib.Inspector(etdump_path=etdump, etrecord=record).op_graph_dict)
    )
    calls["Inspector(no etrecord).get_exported_program()"] = lambda: canon(
        lib.Inspector(etdump_path=etdump).get_exported_program()
    )
    return calls
