"""Numeric debugging on the demo backend: exact, fp16 and int8 modes, the loop end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numerics_helpers import demo_run

from delegate_lens import Inspector
from delegate_lens.errors import InspectorError, NumericGapUsageError, PluginError, UsageError
from delegate_lens.inspector._linking import InspectorWarning
from delegate_lens.numerics import CACHE_SUFFIX, AotOutputs, NumericGapTable

# torch; a fresh plugin manager with every installed plugin, as for a user
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]


_RUNS: dict[tuple[Any, ...], dict[str, Path]] = {}


def run(tmp_path_factory: pytest.TempPathFactory, model: str, **specs: bytes) -> dict[str, Path]:
    key = (model, tuple(sorted(specs.items())))
    if key not in _RUNS:
        _RUNS[key] = demo_run(tmp_path_factory.mktemp("num"), model, specs)
    return _RUNS[key]


def gaps(paths: dict[str, Path], distance: Any = "MSE", **kwargs: Any) -> NumericGapTable:
    inspector = Inspector(
        etdump_path=paths["etdump"],
        etrecord=paths["etrecord"],
        debug_buffer_path=paths["debug_buffer"],
    )
    table = inspector.calculate_numeric_gap(distance, as_dataframe=False, **kwargs)
    assert isinstance(table, NumericGapTable)
    return table


def test_exact_mode_has_no_gap_and_covers_every_backend_op(tmp_path_factory: Any) -> None:
    table = gaps(run(tmp_path_factory, "mlp"))
    assert table.reference_graph == "exported_program"
    assert [r["aot_ops"] for r in table] == [
        ["linear", "relu"],
        ["linear_1"],
        ["tan"],
        ["add"],
        ["softmax"],
    ]
    # one row per backend op's output: the fused linear+relu is one unit; tan's last op
    assert table["delegate_identifiers"][:4] == [
        ["linear_relu#0"],
        ["linear#1"],
        ["tan/div#4"],
        ["add#5"],
    ]
    assert table["delegate_backend"] == ["DemoBackend"] * 4 + [None]
    assert max(g for row in table for g in row["gap"]) < 1e-12
    assert table.first_divergence is None and not any(table["diverged"])
    # the fused unit is compared with the output of its last node (relu: no negatives)
    assert (table.rows[0]["aot_intermediate_output"] >= 0).all()
    assert table.unmatched == []


def test_fp16_gap_first_appears_inside_the_delegate(tmp_path_factory: Any) -> None:
    # only the div of the decomposed tan runs in fp16: the gap first appears at tan
    paths = run(tmp_path_factory, "mlp", precision=b"fp16", precision_kernels=b"div")
    table = gaps(paths)
    first = table.first_divergence
    assert first is not None
    assert first["aot_ops"] == ["tan"] and first["delegate_identifiers"] == ["tan/div#4"]
    assert first["delegate_backend"] == "DemoBackend"
    assert "models.py" in next(iter(first["stacktraces"].values()))
    assert table.rows[0]["gap"][0] < 1e-12 and not table.rows[0]["diverged"]
    assert table.rows[3]["diverged"] and not table.rows[3]["first_divergence"]  # downstream
    assert first["runtime_intermediate_output"].dtype == np.float16


def test_fp16_whole_model_names_first_backend_op(tmp_path_factory: Any) -> None:
    table = gaps(run(tmp_path_factory, "convnet", precision=b"fp16"), "SNR")
    first = table.first_divergence
    assert first is not None and first["delegate_identifiers"] == ["conv2d_relu#0"]
    assert first["aot_ops"] == ["conv2d", "relu"]
    assert 40 < first["gap"][0] < 100  # fp16: about 3 decimal digits


def test_gpt_exact_and_fp16(tmp_path_factory: Any) -> None:
    exact = gaps(run(tmp_path_factory, "gpt"))
    assert len(exact) > 40 and exact.unmatched == []
    assert exact.first_divergence is None
    assert max(g for row in exact for g in row["gap"]) < 1e-10  # masked -inf scores: no nan
    fp16 = gaps(run(tmp_path_factory, "gpt", precision=b"fp16"))
    first = fp16.first_divergence
    assert first is not None and first["delegate_backend"] == "DemoBackend"
    assert first["aot_ops"] == ["add"]  # token + position embeddings: the first backend op


@pytest.mark.filterwarnings("ignore::delegate_lens.inspector._linking.InspectorWarning")
def test_int8_is_dequantized_by_the_backend_hook(tmp_path_factory: Any) -> None:
    paths = run(tmp_path_factory, "convnet", precision=b"int8")
    table = gaps(paths, "SNR")
    first = table.first_divergence
    assert first is not None and first["delegate_identifiers"] == ["conv2d_relu#0"]
    assert first["runtime_intermediate_output"].dtype == np.float32  # not the raw [int8, scale]
    assert 15 < first["gap"][0] < 60
    # without the demo plugin's dl_intermediate_output, the raw [int8 values, scale] list
    # is what the runtime gives: named per operator, never a traceback
    from delegate_lens.pluginmanager import apply_plugin_options

    apply_plugin_options(["no:demo_backend"])
    with pytest.warns(InspectorWarning, match=r"conv2d, relu \(conv2d_relu#0\): shapes disagree"):
        raw = gaps(paths, "SNR")
    assert np.isnan(raw.rows[0]["gap"][0])


def test_cache_round_trip_and_torch_free_gap(tmp_path_factory: Any) -> None:
    paths = run(tmp_path_factory, "mlp", precision=b"fp16", precision_kernels=b"div")
    first = gaps(paths, cache=True)
    cache = Path(str(paths["etrecord"]) + CACHE_SUFFIX)
    loaded = AotOutputs.load(cache)
    assert loaded.graph == "exported_program" and set(loaded.outputs) == {(h,) for h in range(1, 7)}
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from delegate_lens import Inspector\n"
        f"i = Inspector(etdump_path={str(paths['etdump'])!r}, etrecord={str(paths['etrecord'])!r},"
        f" debug_buffer_path={str(paths['debug_buffer'])!r})\n"
        f"t = i.calculate_numeric_gap('MSE', aot_outputs={str(cache)!r}, as_dataframe=False)\n"
        "print(t.first_divergence['delegate_identifiers'][0], t.rows[2]['gap'][0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ident, gap = out.stdout.split()
    assert ident == "tan/div#4" and float(gap) == pytest.approx(first.rows[2]["gap"][0])


def test_representative_inputs_round_trip(tmp_path_factory: Any, tmp_path: Path) -> None:
    import torch

    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.etrecord import parse_etrecord

    record = parse_etrecord(run(tmp_path_factory, "mlp")["etrecord"])
    stored = record.representative_inputs()
    assert torch.equal(stored[0], make_model("mlp")[1][0])
    paths = demo_run(tmp_path, "mlp", representative_inputs=False)
    assert not parse_etrecord(paths["etrecord"]).has_representative_inputs
    with pytest.raises(InspectorError, match=r"no representative inputs.*--inputs"):
        gaps(paths)
    # inputs given instead: same answer as stored ones
    table = gaps(paths, inputs=[stored[0].numpy()])
    assert max(g for row in table for g in row["gap"]) < 1e-12


@pytest.mark.filterwarnings("ignore::delegate_lens.inspector._linking.InspectorWarning")
def test_bad_inputs_are_named(tmp_path_factory: Any, tmp_path: Path) -> None:
    paths = run(tmp_path_factory, "mlp")
    with pytest.raises(InspectorError, match="takes 1 input"):
        gaps(paths, inputs=[np.zeros((2, 16), np.float32)] * 2)
    with pytest.raises(UsageError, match=r"unknown distance 'nope'.*MSE") as raised:
        gaps(paths, "nope")
    # a ValueError and a RuntimeError: the reference raises either, by which check runs first
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, RuntimeError)
    with pytest.raises(InspectorError, match="running the reference graph on the inputs failed"):
        gaps(paths, inputs=[np.zeros((3, 16), np.float32)])  # the export's shape guard
    # reference outputs of another shape: named per operator, gap nan, row kept
    from delegate_lens.numerics import capture_intermediate_outputs

    aot = capture_intermediate_outputs(paths["etrecord"])
    outputs = dict(aot.outputs)
    outputs[(2,)] = outputs[(2,)][:1]
    bad = AotOutputs(aot.graph, outputs, aot.op_names, aot.stack_traces, aot.order, aot.inputs_of)
    with pytest.warns(InspectorWarning, match=r"numeric gap of linear, relu .*shapes disagree"):
        table = gaps(paths, aot_outputs=bad)
    assert np.isnan(table.rows[0]["gap"][0]) and "shapes disagree" in table.rows[0]["note"]
    assert table.first_divergence is table.rows[0]  # nan counts as diverged
    # truncated debug buffer: the rows whose values are gone are named and listed
    short = tmp_path / "short.bin"
    short.write_bytes(paths["debug_buffer"].read_bytes()[:100])
    with pytest.warns(InspectorWarning, match=r"numeric gap of .* runtime value is unavailable"):
        table = gaps({**paths, "debug_buffer": short})
    assert {u.reason for u in table.unmatched} == {
        "runtime value unavailable (debug buffer missing or truncated)"
    }
    # no debug events at all
    plain = demo_run(tmp_path / "plain", "mlp", debug_buffer_size=0)
    with pytest.raises(InspectorError, match="no intermediate outputs"):
        gaps(plain)


def test_no_etrecord_or_no_debug_buffer_is_a_clear_error(tmp_path_factory: Any) -> None:
    """Deliberate differences (docs/migrating.md): without the ETRecord the reference fails
    with an AttributeError, and without the debug buffer it compares tensors of zeros (a
    table of false gaps); ours say what is missing, never an empty table."""
    from delegate_lens.errors import NumericGapUsageError

    paths = run(tmp_path_factory, "mlp")
    no_record = Inspector(etdump_path=paths["etdump"], debug_buffer_path=paths["debug_buffer"])
    with pytest.raises(NumericGapUsageError, match=r"needs the program's ETRecord.*etrecord="):
        no_record.calculate_numeric_gap("MSE")
    no_buffer = Inspector(etdump_path=paths["etdump"], etrecord=paths["etrecord"])
    for as_dataframe in (True, False):
        with pytest.raises(NumericGapUsageError, match=r"given none: pass debug_buffer_path="):
            no_buffer.calculate_numeric_gap("MSE", as_dataframe=as_dataframe)


def test_comparator_plugins_and_callables(tmp_path_factory: Any) -> None:
    from delegate_lens import hookimpl
    from delegate_lens.numerics import Comparator
    from delegate_lens.pluginmanager import get_plugin_manager

    paths = run(tmp_path_factory, "mlp", precision=b"fp16", precision_kernels=b"div")

    class MaxAbs:
        @hookimpl
        def dl_numerical_comparators(self) -> list[Comparator]:
            return [
                Comparator(
                    "max-abs",
                    "largest difference",
                    lambda a, b: float(abs(a - b).max()),
                    default_threshold=1e-4,
                )
            ]

    get_plugin_manager().register(MaxAbs(), name="maxabs")
    table = gaps(paths, "MAX-ABS")
    assert table.distance == "max-abs" and table.first_divergence["aot_ops"] == ["tan"]
    mse = gaps(paths, "MSE")
    by_callable = gaps(paths, lambda a, b: float(np.mean((a - b) ** 2)), threshold=1e-10)
    assert by_callable["gap"] == mse["gap"]

    class ReferenceStyle:  # the reference's NumericalComparatorBase shape
        def element_compare(self, a: Any, b: Any) -> float:
            return float(np.abs(a - b).sum())

    assert gaps(paths, ReferenceStyle())["gap"] == gaps(paths, "L1")["gap"]

    class Clash:
        @hookimpl
        def dl_numerical_comparators(self) -> list[Comparator]:
            return [Comparator("mse", "again", lambda a, b: 0.0)]

    get_plugin_manager().register(Clash(), name="clash")
    with pytest.raises(PluginError, match="'mse' is given by two plugins"):
        gaps(paths, "MSE")


def test_dataframe_has_the_reference_columns(tmp_path_factory: Any) -> None:
    pytest.importorskip("pandas")
    paths = run(tmp_path_factory, "mlp")
    inspector = Inspector(
        etdump_path=paths["etdump"],
        etrecord=paths["etrecord"],
        debug_buffer_path=paths["debug_buffer"],
    )
    frame = inspector.calculate_numeric_gap("L1")
    reference = [
        "aot_debug_handle",
        "aot_ops",
        "aot_intermediate_output",
        "runtime_ops",
        "runtime_debug_handle",
        "runtime_intermediate_output",
        "gap",
        "stacktraces",
    ]
    # by default the reference's frame exactly: its columns, object dtypes, tensor cells
    assert list(frame.columns) == reference
    assert all(str(d) == "object" for d in frame.dtypes)
    cells = [frame[c][0] for c in ("aot_intermediate_output", "runtime_intermediate_output")]
    assert [type(cell).__name__ for cell in cells] == ["Tensor", "Tensor"]
    assert len(frame) == 5
    detailed = inspector.calculate_numeric_gap("L1", detailed=True)  # ours: our columns after
    assert list(detailed.columns[:8]) == reference
    assert {"delegate_backend", "delegate_identifiers", "first_divergence"} <= set(detailed.columns)
    assert type(detailed["aot_intermediate_output"][0]).__name__ == "ndarray"
    assert len(detailed) == 5


def test_cli_numerics(tmp_path_factory: Any, tmp_path: Path, capsys: Any) -> None:
    from delegate_lens.cli import main

    paths = run(tmp_path_factory, "mlp", precision=b"fp16", precision_kernels=b"div")
    args = [
        "numerics",
        str(paths["etdump"]),
        "--etrecord",
        str(paths["etrecord"]),
        "--debug-buffer",
        str(paths["debug_buffer"]),
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "first divergence: tan (runtime tan/div#4 in DemoBackend)" in text
    assert "models.py" in text and "<- first divergence" in text
    assert main([*args, "--format", "json", "--distance", "snr"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["distance"] == "SNR"
    assert [r["first_divergence"] for r in document["rows"]] == [False, False, True, False, False]
    out = tmp_path / "gaps.csv"
    assert main([*args, "--format", "csv", "-o", str(out)]) == 0
    assert out.read_text().splitlines()[3].startswith("4,tan,")
    with pytest.raises(SystemExit) as exit_info:
        main([*args[:-1], str(tmp_path / "missing.bin")])
    assert exit_info.value.code == 2
    assert "missing.bin" in capsys.readouterr().err


def test_debug_outputs_none_compares_the_delegate_as_a_whole(tmp_path_factory: Any) -> None:
    table = gaps(
        run(tmp_path_factory, "mlp", debug_outputs=b"none"),
        reference_graph="edge_dialect_exported_program",
    )
    assert table.reference_graph == "edge_dialect_exported_program/forward"
    delegate, softmax = table.rows
    assert softmax["aot_ops"] == ["_softmax"] or softmax["aot_ops"] == ["softmax"]
    assert delegate["runtime_ops"] == ["DELEGATE_CALL"] and delegate["delegate_identifiers"] == []
    assert list(delegate["aot_debug_handle"]) == [1, 2, 3, 4, 5]
    assert delegate["aot_ops"][-1] == "add" and delegate["gap"][0] < 1e-12


def test_demo_debug_prints_the_first_divergence(tmp_path: Path, capsys: Any) -> None:
    from delegate_lens.cli import main

    args = ["demo", "--model", "mlp", "--runs", "1", "--out", str(tmp_path), "--no-table"]
    assert main([*args, "--precision", "int8", "--debug", "--identifiers", "str"]) == 0
    out = capsys.readouterr().out
    assert "first divergence: linear, relu (runtime linear_relu#0 in DemoBackend)" in out
    with pytest.raises(SystemExit):
        main([*args, "--debug", "--debug-buffer-size", "0"])
    assert "--debug needs a debug buffer" in capsys.readouterr().err


def test_the_reference_frame_reduces_as_the_reference_does() -> None:
    """Within ``torch_reductions`` (the reference's frame) MSE, L1 and SNR are torch's float64
    reductions, as the reference's: its gaps to the last bit (numpy sums in another order and
    torch's log10 is not the C library's; on 128 values a few SNRs in 100 differ otherwise)."""
    import torch

    from delegate_lens.numerics._comparators import l1, mse, snr, torch_reductions

    for seed, shape in [(s, (8, 16)) for s in range(100)] + [(s, (50_000,)) for s in range(5)]:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(shape).astype(np.float32).astype(np.float64)
        b = (a + 1e-6 * rng.standard_normal(shape)).astype(np.float32).astype(np.float64)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        signal, noise = torch.mean(ta**2), torch.mean((ta - tb) ** 2)
        theirs = (
            noise.item(),
            (ta - tb).abs().sum().item(),
            (10 * (signal / noise).log10()).item(),
        )
        with torch_reductions():
            assert (mse(a, b), l1(a, b), snr(a, b)) == theirs


def test_an_unknown_reference_graph_is_named_before_missing_inputs(vectors_dir: Path) -> None:
    """The reference checks ``reference_graph`` first: a name that is not a graph is that
    error (a ValueError, as the reference's), even where the ETRecord also lacks the
    representative inputs (the reference vectors store none)."""
    vector = vectors_dir / "mlp_xnnpack"
    inspector = Inspector(
        etdump_path=vector / "etdump.etdp",
        etrecord=vector / "etrecord.bin",
        debug_buffer_path=vector / "debug.bin",
    )
    with pytest.raises(NumericGapUsageError, match="reference graph 'nope/forward' not found"):
        inspector.calculate_numeric_gap("MSE", reference_graph="nope")
    with pytest.raises(InspectorError, match="no representative inputs"):
        inspector.calculate_numeric_gap("MSE")
