"""`demo --slowdown OP:FACTOR`: the op is a name the tables show (``tan``,
``aten.tan.default``, a kernel, an identifier); a malformed value or a name no backend op
answers to is one line, exit 2, before any file is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from delegate_lens.cli import main

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: --slowdown")
    return captured.err


@pytest.mark.parametrize("value", ["bogus", "tan:0", "tan:x", ":20", "tan:-1"])
def test_malformed_value_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    out = tmp_path / "demo"
    err = _fails(["demo", "--out", str(out), "--slowdown", value], capsys)
    assert "'<op>:<factor>'" in err and "[1/6]" not in capsys.readouterr().out
    assert not out.exists()


def test_unknown_op_names_the_valid_ones_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    err = _fails(["demo", "--out", str(out), "--slowdown", "bogus:20", "--runs", "1"], capsys)
    assert "no DemoBackend op is called 'bogus'" in err
    for name in ("tan", "sin", "linear_relu", "aten.tan.default", "add"):
        assert name in err
    assert "softmax" not in err  # not run by the backend: slowing it is not possible
    assert not out.exists()


@pytest.mark.parametrize(
    ("target", "kernels"),
    [
        ("tan", ["sin", "cos", "div"]),  # the operator as the tables show it: all its ops
        ("aten.tan.default", ["sin", "cos", "div"]),
        ("sin", ["sin"]),  # a kernel
        ("linear", ["linear_relu", "linear"]),  # a fused op runs linear too
        ("tan/div#4", ["div"]),  # an identifier
    ],
)
def test_the_names_the_tables_show_select_backend_ops(target: str, kernels: list[str]) -> None:
    import torch

    import delegate_lens as dl
    from delegate_lens.aot._lowering import LoweredBackendModule
    from delegate_lens.backends_demo._blob import from_bytes
    from delegate_lens.backends_demo._demo import check_slowdown_target
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.backends_demo._partitioner import DemoPartitioner
    from delegate_lens.backends_demo._runtime import DemoExecutable

    module, inputs = make_model("mlp")
    spec = dl.CompileSpec("identifiers", b"str")
    edge = dl.to_edge_transform_and_lower(
        torch.export.export(module, inputs), partitioner=[DemoPartitioner([spec])]
    )
    graph_module = edge.exported_program().graph_module
    check_slowdown_target(graph_module, f"{target}:20")
    (lowered,) = [m for m in graph_module.modules() if isinstance(m, LoweredBackendModule)]
    blob = from_bytes(lowered.processed_bytes)
    repeats = DemoExecutable(blob, slowdown=(target, 20)).repeats
    assert sorted(blob.ops[i].kernel for i in repeats) == sorted(kernels)
    assert set(repeats.values()) == {20}
