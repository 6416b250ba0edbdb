"""The executorch bridge (issue 23): conformance on a real partitioner (XNNPACK from the
wheel), and the one line every command gives without the extra.

Tests needing real ExecuTorch skip, with the reason, only where ``executorch`` is not
installed; the missing-extra tests always run (the bridge plugin is blocked with
``-p no:executorch``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from delegate_lens.cli import main
from delegate_lens.errors import MissingExtraError, UsageError
from delegate_lens.testing import RULES

pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")

HAVE_EXECUTORCH = importlib.util.find_spec("executorch") is not None
HAVE_XNNPACK_PLUGIN = importlib.util.find_spec("delegate_lens_xnnpack") is not None
"""``delegate-lens-xnnpack`` recovers XNNPACK's maps from the program (docs/xnnpack.md)."""
needs_executorch = pytest.mark.skipif(
    not HAVE_EXECUTORCH,
    reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
)
XNNPACK = "executorch.backends.xnnpack.partition.xnnpack_partitioner:XnnpackPartitioner"
EXTRA = "pip install 'delegate-lens[executorch]'"
REFERENCE_BPTE = Path(__file__).parent / "data" / "bundled_program" / "reference_add.bpte"

# What XNNPACK 1.5.1 breaks (docs/executorch.md): its Debug Handle Map is empty, and its
# runtime logs events under its own operator names ("Fully Connected (NC, F32) GEMM #1").
XNNPACK_EXPECTED = {"no-orphan-events", "delegated-nodes-covered"}


def _one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


# ----------------------------------------------------------------- without the extra


@pytest.mark.parametrize(
    "argv",
    [
        ["check-backend", "--executorch-partitioner", XNNPACK],
        ["profile", "model.pte"],
        ["verify", str(REFERENCE_BPTE)],
    ],
)
def test_without_the_bridge_each_command_names_the_extra(
    capsys: pytest.CaptureFixture[str], argv: list[str], tmp_path: Path
) -> None:
    err = _one_error_line(capsys, ["-p", "no:executorch", *argv])
    assert EXTRA in err
    assert not any(tmp_path.iterdir())


def test_without_the_bridge_python_api_names_the_extra() -> None:
    import delegate_lens
    from delegate_lens.pluginmanager import apply_plugin_options
    from delegate_lens.testing import check_backend

    apply_plugin_options(["no:executorch"])
    with pytest.raises(MissingExtraError, match=r"delegate-lens\[executorch\]"):
        delegate_lens.profile("model.pte")
    with pytest.raises(MissingExtraError, match=r"delegate-lens\[executorch\]"):
        check_backend(object())  # type: ignore[arg-type]


def test_check_backend_needs_a_name_or_a_partitioner(capsys: pytest.CaptureFixture[str]) -> None:
    assert "one" in _one_error_line(capsys, ["check-backend"])
    err = _one_error_line(
        capsys, ["check-backend", "DemoBackend", "--executorch-partitioner", "a:B"]
    )
    assert "one" in err


# ----------------------------------------------------------------- with real ExecuTorch


@needs_executorch
@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nosuch_module_xyz:Part", "does not import"),
        ("json:dumps", "not an ExecuTorch Partitioner"),
        ("json:NoSuchName", "has no"),
        ("no_colon", "module:Name"),
    ],
)
def test_a_bad_partitioner_spec_is_one_line(
    capsys: pytest.CaptureFixture[str], spec: str, words: str
) -> None:
    err = _one_error_line(capsys, ["check-backend", "--executorch-partitioner", spec])
    assert words in err and spec in err


@needs_executorch
def test_resolve_partitioner_takes_object_class_or_spec() -> None:
    from delegate_lens_executorch.conformance import backend_id_of, resolve_partitioner
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    made = XnnpackPartitioner()
    assert resolve_partitioner(made) is made
    for given in (XnnpackPartitioner, XNNPACK):
        assert isinstance(resolve_partitioner(given), XnnpackPartitioner)
    assert backend_id_of(made) == "XnnpackBackend"
    with pytest.raises(UsageError, match="not an ExecuTorch Partitioner"):
        resolve_partitioner(42)


def _xnnpack_check(recover: bool) -> object:
    """One fixed model through every rule, on XNNPACK from the wheel; without ``recover``
    the plugin that recovers XNNPACK's maps from the program is blocked."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    from delegate_lens import get_plugin_manager
    from delegate_lens.pluginmanager import reset_plugin_manager
    from delegate_lens.testing import check_backend

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4), torch.nn.Sigmoid()
    ).eval()
    inputs = (torch.randn(2, 8),)
    reset_plugin_manager()
    if not recover:
        get_plugin_manager().set_blocked("xnnpack")
    try:
        return check_backend(XnnpackPartitioner(), models=[(model, inputs)], max_examples=0)  # type: ignore[arg-type]
    finally:
        reset_plugin_manager()


@pytest.fixture(scope="module")
def xnnpack_report() -> object:
    """One fixed model through every rule, on XNNPACK, its map not recovered."""
    return _xnnpack_check(recover=False)


@needs_executorch
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_XNNPACK_PLUGIN, reason="delegate-lens-xnnpack is not installed")
def test_xnnpack_with_its_map_recovered_passes_every_rule() -> None:
    report = _xnnpack_check(recover=True)
    assert report.failed_rules == []  # type: ignore[attr-defined]
    assert report.recovered_by == ("xnnpack",)  # type: ignore[attr-defined]
    assert "recovered from the programs by plugin(s): xnnpack" in report.to_table()  # type: ignore[attr-defined]


@needs_executorch
@pytest.mark.slow
def test_xnnpack_runs_through_every_rule(xnnpack_report: object) -> None:
    from delegate_lens_executorch.conformance import BRIDGE_RULES

    report = xnnpack_report
    assert report.backend_id == "XnnpackBackend"  # type: ignore[attr-defined]
    assert report.rules == tuple(BRIDGE_RULES)  # type: ignore[attr-defined]
    assert report.models_checked == 1  # type: ignore[attr-defined]
    # every other rule holds on the real artefacts: it lowered, ran, matched eager, its
    # ETRecord round-trips, events nest in their DELEGATE_CALL, numeric gaps are nil
    assert set(report.failed_rules) == XNNPACK_EXPECTED  # type: ignore[attr-defined]


@needs_executorch
@pytest.mark.slow
def test_xnnpack_expected_findings_carry_their_evidence(xnnpack_report: object) -> None:
    orphans = xnnpack_report.findings_for("no-orphan-events")  # type: ignore[attr-defined]
    # the identifier logged is XNNPACK's own operator name, absent from its (empty) map
    assert any("Fully Connected" in f.message for f in orphans)
    uncovered = xnnpack_report.findings_for("delegated-nodes-covered")  # type: ignore[attr-defined]
    assert any("aten_linear_default" in f.subject for f in uncovered)


@needs_executorch
@pytest.mark.slow
def test_xnnpack_partition_with_two_outputs_passes_numeric_gaps() -> None:
    """Both outputs of one XNNPACK call are logged under the partition's whole handle set
    (its map is empty); the Inspector pairs each with the graph output it is (the
    reference's pairs ``y`` with ``y + y``, MSE 0.219): no false finding."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    from delegate_lens.testing import check_backend

    class TwoOutputs(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(2)
            self.linear = torch.nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = self.linear(x)
            return y, (y + y) * y

    inputs = (torch.randn(2, 6, generator=torch.Generator().manual_seed(2)),)
    report = check_backend(
        XnnpackPartitioner(),  # type: ignore[arg-type]
        models=[(TwoOutputs().eval(), inputs)],
        max_examples=0,
    )
    # with delegate-lens-xnnpack installed, the map recovered from the program holds them
    assert set(report.failed_rules) == (set() if HAVE_XNNPACK_PLUGIN else XNNPACK_EXPECTED)
    assert not report.findings_for("numeric-gaps")
    assert not report.findings_for("outputs-match-eager")  # the outputs themselves are right


@needs_executorch
@pytest.mark.slow
def test_check_backend_cli_on_xnnpack_json(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        [
            "check-backend",
            "--executorch-partitioner",
            XNNPACK,
            "--max-examples",
            "2",
            "--format",
            "json",
            "-p",
            "no:xnnpack",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert status == 1  # the expected findings: exit 1, as for any finding
    assert report["backend"] == "XnnpackBackend" and report["models_checked"] == 2
    failed = {rule for rule, state in report["rules"].items() if state == "failed"}
    assert failed == XNNPACK_EXPECTED  # numeric-gaps holds, on two-output partitions too


@needs_executorch
@pytest.mark.slow
def test_pytest_option_runs_a_real_partitioner(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--delegate-lens-executorch-partitioner={XNNPACK}",
            "--delegate-lens-max-examples=1",
            "-rs",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if HAVE_XNNPACK_PLUGIN:  # XNNPACK's maps recovered from the program: the map rules hold
        assert "breaks no-orphan-events" not in done.stdout, done.stdout[-2000:]
        assert "breaks delegated-nodes-covered" not in done.stdout, done.stdout[-2000:]
        assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]
        return
    assert done.returncode == 1, done.stdout[-2000:]
    counts = re.search(r"(\d+) failed, (\d+) passed, (\d+) skipped", done.stdout)
    assert counts is not None, done.stdout[-2000:]
    failed, passed, skipped = int(counts[1]), int(counts[2]), int(counts[3])
    # one test per registered rule; the 4 XNNPACK gives nothing to check (no Debug Handle
    # Map: handles-in-partition, every-identifier-logged, sequential-events; no per-op
    # output: outputs-belong-to-ops) are skipped with the reason, never passed
    assert failed in (2, 3) and failed + passed + skipped == len(RULES)
    assert skipped == 4 and "no delegate call had a Debug Handle Map" in done.stdout
    assert "breaks no-orphan-events" in done.stdout
    assert "Fully Connected" in done.stdout


def test_pytest_option_without_the_bridge_names_the_extra(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--delegate-lens-plugin=no:executorch",
            f"--delegate-lens-executorch-partitioner={XNNPACK}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 4, done.stdout + done.stderr  # a usage error
    assert EXTRA in done.stderr + done.stdout


def test_loading_the_plugin_imports_neither_torch_nor_executorch() -> None:
    code = (
        "import sys\n"
        "from delegate_lens.hookcalls import call_hook\n"
        "from delegate_lens.pluginmanager import get_plugin_manager\n"
        "pm = get_plugin_manager()\n"
        "assert pm.get_plugin('executorch') is not None, 'the bridge is not installed'\n"
        "call_hook('dl_executorch_bridge')\n"
        "heavy = sorted(m for m in ('torch', 'executorch') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
