"""The reference's ``ETRecord`` fields and methods on our record, the comparator classes
and the numeric-gap options the reference has (``reference_graph`` from ``graph_map``),
and the cases where the reference crashes and we do not (multi-method records, a record
without representative inputs)."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from numerics_helpers import demo_run

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("builtin_plugins_only")]


@pytest.fixture(scope="module")
def lowered() -> dict[str, Any]:
    import torch

    import delegate_lens as dl
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.backends_demo._partitioner import DemoPartitioner

    module, inputs = make_model("mlp")
    ep = torch.export.export(module, inputs)
    edge = dl.to_edge_transform_and_lower(ep, partitioner=[DemoPartitioner()])
    return {"ep": ep, "edge": edge, "program": edge.to_program(), "inputs": inputs}


def test_built_record_saves_and_reads_back(lowered: dict[str, Any]) -> None:
    from delegate_lens.etrecord import ETRecord, ETRecordStateError, parse_etrecord

    record = ETRecord()
    assert record.edge_dialect_program is None and record._debug_handle_map is None
    with pytest.raises(RuntimeError, match="edge dialect program"):  # as the reference
        record.save(io.BytesIO())
    record.add_exported_program({"forward": lowered["ep"]})
    assert record.exported_program is lowered["ep"]
    assert record.export_graph_id == id(lowered["ep"].graph)
    record.add_edge_dialect_program(lowered["edge"])
    record.add_executorch_program(lowered["program"])
    record.add_extra_export_modules({"aten_again": lowered["ep"]})
    for again in (
        lambda: record.add_exported_program(lowered["ep"]),
        lambda: record.add_edge_dialect_program(lowered["edge"]),
        lambda: record.add_executorch_program(lowered["program"]),
    ):
        with pytest.raises(ETRecordStateError, match="already"):
            again()
    with pytest.raises(ETRecordStateError, match="reserves"):
        record.add_extra_export_modules({"my_exported_program": lowered["ep"]})
    buffer = io.BytesIO()
    assert record.save(buffer) is None
    back = parse_etrecord(buffer.getvalue())
    assert back.methods == ("forward",)
    assert back.debug_handle_map == {
        m: {i: tuple(h) for i, h in per.items()}
        for m, per in lowered["program"].debug_handle_map.items()
    }
    assert back.graph_map_names == ["aten_again/forward"]
    assert list(back.graph_map) == ["aten_again/forward"]
    assert back.export_graph_id == id(lowered["ep"].graph)
    handles = [n.debug_handle for n in back.graph("forward").nodes if n.debug_handle is not None]
    assert handles and handles == sorted(handles)


def test_constructor_fields_and_copy(lowered: dict[str, Any]) -> None:
    from delegate_lens.etrecord import ETRecord, parse_etrecord

    program = lowered["program"]
    edge_program = lowered["edge"].unlowered_program("forward")
    record = ETRecord(
        exported_program=lowered["ep"],
        export_graph_id=7,
        edge_dialect_program=edge_program,
        _debug_handle_map=program.debug_handle_map,
        _delegate_map=program.delegate_map,
        _instruction_id_to_num_outs_map=program.instruction_id_to_num_outs_map,
        _representative_inputs=list(lowered["inputs"]),
    )
    assert record.edge_dialect_program is edge_program and record.export_graph_id == 7
    assert record._instruction_id_to_num_outs_map == program.instruction_id_to_num_outs_map
    copied = record.copy()
    assert copied.edge_dialect_program is edge_program and copied.export_graph_id == 7
    assert copied._debug_handle_map is None and copied._representative_inputs is None
    record.update_reference_outputs([[1.0]])
    assert record._reference_outputs == {"forward": [[1.0]]}
    path = record.save(Path(pytest.importorskip("tempfile").mkdtemp()) / "r.etrecord")
    back = parse_etrecord(path)
    assert back.has_representative_inputs and back.has_reference_outputs
    assert back.delegate_map == record.delegate_map
    # the private field as the reference has it: given, as given; read back, the JSON's
    assert back._delegate_map == json.loads(json.dumps(record._delegate_map))


def test_update_keeps_every_other_entry_byte_for_byte(vectors_dir: Path, tmp_path: Path) -> None:
    import torch

    from delegate_lens.etrecord import REPRESENTATIVE_INPUTS, parse_etrecord

    record = parse_etrecord(vectors_dir / "mlp_xnnpack" / "etrecord.bin")  # reference-made
    before = record.entries()
    record.update_representative_inputs((torch.ones(1, 16),))
    record.save(tmp_path / "with_inputs.bin")
    after = parse_etrecord(tmp_path / "with_inputs.bin").entries()
    assert set(after) - set(before) == {REPRESENTATIVE_INPUTS}
    assert all(after[name] == data for name, data in before.items())
    assert torch.equal(
        parse_etrecord(tmp_path / "with_inputs.bin")._representative_inputs[0], torch.ones(1, 16)
    )


def test_representative_inputs_from_a_bundled_program(lowered: dict[str, Any]) -> None:
    import numpy as np

    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite
    from delegate_lens.etrecord import ETRecord

    inputs = [np.ones((2, 16), np.float32)]
    bundled = BundledProgram(
        lowered["program"],
        [MethodTestSuite("forward", [MethodTestCase(inputs, [np.zeros((2, 8), np.float32)])])],
    )
    record = ETRecord()
    record.add_edge_dialect_program(lowered["edge"])
    record.add_executorch_program(bundled)  # its maps, reference outputs and inputs
    assert record._representative_inputs[0].tolist() == inputs[0].tolist()
    assert record._reference_outputs["forward"][0][0].shape == (2, 8)
    record.update_representative_inputs(bundled)
    assert record._representative_inputs[0].shape == (2, 16)


# --------------------------------------------------------------------------- numerics


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return demo_run(tmp_path_factory.mktemp("ref_api_run"), "mlp", {"precision": b"fp16"})


def _inspector(paths: dict[str, Path], etrecord: Any = None) -> Any:
    from delegate_lens import Inspector

    return Inspector(
        etdump_path=paths["etdump"],
        etrecord=etrecord or paths["etrecord"],
        debug_buffer_path=paths["debug_buffer"],
    )


def test_comparator_classes_match_the_named_distances(run: dict[str, Path]) -> None:
    from delegate_lens.inspector.numerical_comparator import (
        L1Comparator,
        MSEComparator,
        SNRComparator,
    )

    inspector = _inspector(run)
    for name, cls in (("MSE", MSEComparator), ("L1", L1Comparator), ("SNR", SNRComparator)):
        by_name = inspector.calculate_numeric_gap(name, as_dataframe=False)
        comparator = cls()
        by_class = inspector.calculate_numeric_gap(comparator, as_dataframe=False)
        assert by_class["gap"] == by_name["gap"] and by_class.distance == name
        assert comparator.inspector is inspector  # handed the Inspector, as the reference
        assert cls().element_compare([1.0, 2.0], [1.0, 2.0]) in (0.0, float("inf"))


def test_custom_comparator_gets_tensors_and_preprocessing_applies(run: dict[str, Path]) -> None:
    import torch

    from delegate_lens.errors import UsageError
    from delegate_lens.inspector.numerical_comparator import NumericalComparatorBase

    seen: list[Any] = []

    class Doubling(NumericalComparatorBase):
        def preprocessing(self, mapping: dict[Any, Any]) -> dict[Any, Any]:
            return {key: (handles, value * 2) for key, (handles, value) in mapping.items()}

        def element_compare(self, a: Any, b: Any) -> float:
            seen.append((type(a), a.dtype))
            return float(torch.sum(b) / torch.sum(a))  # 2 after the doubling

    table = _inspector(run).calculate_numeric_gap(Doubling(), as_dataframe=False)
    assert seen and all(s == (torch.Tensor, torch.float64) for s in seen)
    assert len(table) >= 3 and all(1.5 < g[0] < 2.5 for g in table["gap"])

    class Broken(Doubling):
        def preprocessing(self, mapping: dict[Any, Any]) -> Any:
            return [1, 2]

    with pytest.raises(UsageError, match="must return a dict"):
        _inspector(run).calculate_numeric_gap(Broken())
    with pytest.raises(ValueError, match="unknown distance"):
        _inspector(run).calculate_numeric_gap("nope")


def test_reference_graph_from_graph_map_and_get_exported_program(
    run: dict[str, Path], tmp_path: Path
) -> None:
    from delegate_lens.etrecord import parse_etrecord

    record = parse_etrecord(run["etrecord"])
    record.add_extra_export_modules({"edge_copy": record.edge_program("forward")})
    record.save(tmp_path / "more.etrecord")
    inspector = _inspector(run, tmp_path / "more.etrecord")
    edge = inspector.calculate_numeric_gap(
        "MSE", reference_graph="edge_dialect_exported_program", as_dataframe=False
    )
    extra = inspector.calculate_numeric_gap("MSE", reference_graph="edge_copy", as_dataframe=False)
    assert extra.reference_graph == "edge_copy/forward"
    assert extra["gap"] == edge["gap"] and len(extra) >= 3  # the edge program, stored twice
    assert inspector.get_exported_program("edge_copy") is not None
    assert inspector.get_exported_program("exported_program") is not None
    with pytest.warns(Warning, match="no graph 'nope'"):
        assert inspector.get_exported_program("nope") is None
    edge = inspector.get_exported_program()
    assert edge is inspector.get_exported_program("edge_dialect_exported_program")


def test_without_representative_inputs_the_error_says_how(tmp_path: Path) -> None:
    from delegate_lens.errors import InspectorError

    paths = demo_run(tmp_path, "mlp", representative_inputs=False)
    with pytest.raises(InspectorError, match=r"no representative inputs.*inputs="):
        _inspector(paths).calculate_numeric_gap("MSE")


def test_multi_method_etrecord(tmp_path: Path) -> None:
    """The reference reads only ``forward`` of a multi-method record (its Inspector indexes
    ``edge_dialect_program`` as one program); we link and compare any method."""
    import torch

    import delegate_lens as dl
    from delegate_lens import Inspector
    from delegate_lens.backends_demo._partitioner import DemoPartitioner
    from delegate_lens.etrecord import parse_etrecord
    from delegate_lens.runtime import ETDumpGen, Program

    class Scale(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * 3.0

    class Shift(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tan(x) + 1.0

    x = (torch.randn(4, 4),)
    programs = {
        "forward": torch.export.export(Scale(), x),
        "shift": torch.export.export(Shift(), x),
    }
    edge = dl.to_edge_transform_and_lower(
        programs, partitioner=[DemoPartitioner()], generate_etrecord=True
    )
    manager = edge.to_executorch()
    manager.save(tmp_path / "two.pte")
    etrecord = manager.get_etrecord()
    assert set(etrecord.edge_dialect_program) == {"forward", "shift"}  # a dict, as the reference
    etrecord.update_representative_inputs(x)
    etrecord.save(tmp_path / "two.etrecord")
    tracer = ETDumpGen(debug_buffer_size=1 << 20)
    Program.load(tmp_path / "two.pte").load_method("shift", event_tracer=tracer).execute(list(x))
    tracer.write(tmp_path / "two.etdp", tmp_path / "two.debug")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(
            etdump_path=tmp_path / "two.etdp",
            etrecord=tmp_path / "two.etrecord",
            debug_buffer_path=tmp_path / "two.debug",
        )
    table = inspector.calculate_numeric_gap("MSE", as_dataframe=False)
    assert table["aot_ops"] and all(g[0] < 1e-10 for g in table["gap"])
    assert any("tan" in op for ops in table["aot_ops"] for op in ops)
    assert parse_etrecord(tmp_path / "two.etrecord").methods == ("forward", "shift")
