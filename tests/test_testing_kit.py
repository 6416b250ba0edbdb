"""delegate_lens.testing: the demo backend passes every rule, each broken backend breaks
exactly its rule (found within hypothesis's default budget), the strategies make valid
values, the CLI's exit codes and the pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import broken_backends
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.backend import INT_IDENTIFIER_MAX
from delegate_lens.testing import strategies as dls

TESTS = Path(__file__).parent


def test_import_is_cheap() -> None:
    code = (
        "import sys, delegate_lens, delegate_lens.testing, delegate_lens.testing.pytest_plugin; "
        "delegate_lens.testing.RULES; delegate_lens.testing.BackendProfile; "
        "bad = [m for m in ('torch', 'hypothesis') if m in sys.modules]; "
        "sys.exit(str(bad) if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    code = "import sys, delegate_lens; sys.exit(1 if 'delegate_lens.testing' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --------------------------------------------------------------------------- strategies


@settings(max_examples=200)
@given(st.data())
def test_delegate_mappings_are_valid(data: st.DataObject) -> None:
    partition = data.draw(st.sets(st.integers(0, 50), min_size=1, max_size=8), label="partition")
    kind = data.draw(st.sampled_from(["int", "str", "any"]))
    mapping = data.draw(dls.delegate_mappings(partition, identifiers_kind=kind))
    assert mapping
    for ident, handles in mapping.items():
        if kind == "int":
            assert isinstance(ident, int)
        if isinstance(ident, int):
            assert 0 <= ident <= INT_IDENTIFIER_MAX and not isinstance(ident, bool)
        else:
            assert kind != "int" and ident != ""
        assert handles and list(handles) == sorted(set(handles)) and set(handles) <= partition
    # the built-in validator (what to_backend runs) accepts it against the partition
    from delegate_lens import DelegateMappingBuilder

    builder = DelegateMappingBuilder()
    for ident, handles in mapping.items():
        builder.insert_delegate_mapping_entry(handles=handles, identifier=ident)
    assert builder.get_delegate_mapping() == mapping


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_etdump_runs_round_trip_and_keep_the_time_rule(data: st.DataObject) -> None:
    from delegate_lens.etdump import dumps, loads
    from delegate_lens.testing import ModelCheck, check_events

    mapping = data.draw(dls.delegate_mappings(range(10)))
    etdump = data.draw(dls.etdump_runs(mapping))
    again = loads(dumps(etdump))

    def events(dump: Any) -> list[Any]:
        return [[e.profile_event for e in run.events] for run in dump.run_data]

    assert events(again) == events(etdump)
    case = ModelCheck("etdump", None, None)
    calls = {
        e.profile_event.instruction_id: {"delegate_map": mapping}
        for run in again.run_data
        for e in run.events
        if e.profile_event is not None and e.profile_event.name == "DELEGATE_CALL"
    }
    check_events(case, again, calls, "X")
    assert case.findings == []


@settings(max_examples=100)
@given(dls.metadata("DemoBackend"))
def test_demo_metadata_round_trips(value: dict[str, Any]) -> None:
    from delegate_lens.backends_demo._metadata import encode, parse

    assert {k: v[0] for k, v in parse([encode(value)]).items()} == value


def test_unknown_ops_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown ops \\['conv9'\\]"):
        dls.models(["relu", "conv9"])


torch = pytest.importorskip("torch")


@settings(max_examples=10, deadline=None)
@given(dls.models())
def test_generated_models_print_as_code_that_rebuilds_them(model: Any) -> None:
    namespace: dict[str, Any] = {}
    exec(model.to_source(), namespace)
    (x,) = namespace["inputs"]
    assert torch.equal(x, model.example_inputs[0])
    with torch.no_grad():
        got, want = namespace["model"](x), model(x)
    for a, b in zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    ):
        assert torch.equal(a, b)
    assert "GeneratedModel(ops=" in repr(model)


@settings(max_examples=10, deadline=None)
@given(
    dls.graphs(["linear", "relu", "add"]).flatmap(
        lambda g: st.tuples(st.just(g), dls.partitions(g))
    )
)
def test_partitions_are_contiguous_runs(case: Any) -> None:
    graph, owner = case
    names = [n.name for n in dls._op_nodes(graph)]
    tags = [owner.get(name) for name in names]
    for tag in set(owner.values()):
        where = [i for i, t in enumerate(tags) if t == tag]
        assert where == list(range(where[0], where[-1] + 1))


# --------------------------------------------------------------------------- conformance


@pytest.fixture
def broken(dl_plugin_manager: Any) -> Iterator[Any]:
    dl_plugin_manager.register(broken_backends)
    yield dl_plugin_manager


@pytest.mark.torch
def test_demo_backend_passes_every_rule() -> None:
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.testing import RULES, check_backend

    report = check_backend("DemoBackend", models=[make_model("mlp")], max_examples=3)
    assert report.ok, report.to_table()
    assert report.models_checked == 2 + 3  # the given model in both identifier modes
    assert json.loads(report.to_json())["rules"] == dict.fromkeys(RULES, "passed")


@pytest.mark.torch
@pytest.mark.parametrize("flaw", sorted(broken_backends.FLAWS))
def test_each_broken_backend_breaks_exactly_its_rule(broken: Any, flaw: str) -> None:
    from delegate_lens.testing import check_backend

    report = check_backend(f"Broken/{flaw}", fail_fast=True)  # the default budget
    rule = broken_backends.FLAWS[flaw]
    # a fused relu mapped nowhere (or only by the summary) also shows in the numerics: the
    # fused op's output is the relu's, not the linear's its identifier names
    also = {"numeric-gaps"} if flaw in ("missing-fused-node", "summary-hides-fused-node") else set()
    assert rule in report.failed_rules, report.to_table()
    assert set(report.failed_rules) <= {rule} | also, report.to_table()
    finding = report.findings_for(rule)[0]
    assert finding.seed == 0 and finding.example is not None
    assert "GeneratedModel(ops=" in finding.model and "class Model" in finding.source
    expected_subject = {
        "handle-outside": "handle 1",
        "orphan-identifier": "'ghost_kernel'",
        "unreadable-metadata": "metadata {'kernel'",
        "unparsed-metadata": "metadata {'kernel'",
        "end-before-start": "identifier",
        "wrong-output": "output 0",
        "missing-fused-node": "node relu",
        "summary-hides-fused-node": "node relu",
    }[flaw]
    assert expected_subject in finding.subject
    assert rule in report.to_table()
    if flaw == "summary-hides-fused-node":
        assert "covered only by summary identifier" in finding.message


@pytest.mark.torch
@pytest.mark.parametrize("max_examples", [0, 3])
def test_checking_nothing_is_not_a_pass(broken: Any, max_examples: int) -> None:
    """``max_examples=0`` with no model, or a profile with no ops: an error, never "passed"."""
    from delegate_lens.errors import PluginError, UsageError
    from delegate_lens.testing import check_backend

    if max_examples == 0:  # a backend that breaks a rule on every model
        with pytest.raises(UsageError, match="nothing to check"):
            check_backend("Broken/wrong-output", max_examples=0)
        with pytest.raises(UsageError, match="ops=\\(\\) leaves no model"):
            check_backend("DemoBackend", ops=())
    for flaw, why in broken_backends.VACUOUS.items():
        with pytest.raises(PluginError, match=why):
            check_backend(f"Broken/{flaw}", max_examples=max_examples or 1)


@pytest.mark.torch
def test_given_models_alone_are_checked() -> None:
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.testing import check_backend

    report = check_backend("DemoBackend", models=[make_model("mlp")], max_examples=0)
    assert report.ok and report.models_checked == 2  # both identifier modes


@pytest.mark.torch
def test_a_given_model_without_inputs_is_a_usage_error() -> None:
    """A module given without ``example_inputs`` (nor as a pair): our error naming it."""
    import torch

    from delegate_lens.errors import UsageError
    from delegate_lens.testing import check_backend

    with pytest.raises(UsageError, match="ReLU has no example_inputs"):
        check_backend("DemoBackend", models=[torch.nn.ReLU()], max_examples=0)


class _Node:
    """Enough of an fx node for the coverage rule."""

    op = "call_function"

    def __init__(self, name: str, handle: int) -> None:
        self.name = name
        self.target = type("Target", (), {"__name__": name})()
        self.meta = {"debug_handle": handle}


def _coverage_findings(mapping: dict[Any, Any], profile: Any = None) -> list[str]:
    from delegate_lens.testing import BackendProfile, ModelCheck, Recorder, check_maps

    program = type("Program", (), {})()
    program.graph = type("Graph", (), {})()
    program.graph.nodes = [_Node("linear", 1), _Node("relu", 2), _Node("tan", 3)]
    result = type("Result", (), {"debug_handle_map": mapping})()
    recorder = Recorder("X")
    recorder.preprocessed.append((program, result))
    case = ModelCheck("model", None, None)
    check_maps(case, recorder, profile or BackendProfile())
    return [f.subject for f in case.findings if f.rule == "delegated-nodes-covered"]


def test_a_summary_does_not_cover_a_node() -> None:
    """Coverage is over per-op identifiers: one covering the whole partition next to
    narrower ones is a summary and covers nothing by itself."""
    from delegate_lens.testing import BackendProfile

    summary = (1, 2, 3)
    # the fused linear_relu maps only the linear: the summary hides the relu
    assert _coverage_findings({0: (1,), 1: (3,), 9: summary}) == ["node relu, handle 2"]
    # fused and decomposed ops with a summary: every node has a per-op identifier
    assert _coverage_findings({0: (1, 2), 1: (3,), 2: (3,), 9: summary}) == []
    # the whole partition as one fused op, alone or with a summary: covered
    assert _coverage_findings({0: summary}) == []
    assert _coverage_findings({0: summary, 9: summary}) == []
    # handles given as a bare int are read too
    assert _coverage_findings({0: 1, 1: (2,), 2: 3, 9: summary}) == []
    # a backend naming its summaries explicitly (here: none) is taken at its word
    none = BackendProfile(is_summary=lambda ident, handles, partition: False)
    assert _coverage_findings({0: (1,), 1: (3,), 9: summary}, none) == []
    named = BackendProfile(is_summary=lambda ident, handles, partition: ident == 0)
    assert _coverage_findings({0: (1, 2, 3), 1: (3,)}, named) == [
        "node linear, handle 1",
        "node relu, handle 2",
    ]


@pytest.mark.torch
def test_check_backend_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    from delegate_lens.cli import main
    from delegate_lens.pluginmanager import reset_plugin_manager

    try:
        status = main(
            [
                "-p",
                "broken_backends",
                "check-backend",
                "Broken/wrong-output",
                "--max-examples",
                "1",
                "--format",
                "json",
            ]
        )
        out = json.loads(capsys.readouterr().out)
        assert status == 1
        assert out["rules"]["outputs-match-eager"] == "failed" and not out["ok"]
        for argv in (
            ["check-backend", "NoSuchBackend"],
            ["check-backend", "X", "--max-examples", "-1"],
        ):
            with pytest.raises(SystemExit) as info:
                main(argv)
            assert info.value.code == 2
        err = capsys.readouterr().err
        assert "NoSuchBackend" in err and "must be >= 1" in err and "Traceback" not in err
        # checking nothing is not a pass: one line, exit 2 (a broken backend, a vacuous one)
        for argv in (
            ["check-backend", "Broken/wrong-output", "--max-examples", "0"],
            ["-p", "broken_backends", "check-backend", "Broken/no-ops"],
        ):
            with pytest.raises(SystemExit) as info:
                main(argv)
            assert info.value.code == 2
            captured = capsys.readouterr()
            assert "passed" not in captured.out
            (line,) = captured.err.strip().splitlines()
            assert "checking no" in line or "checking nothing" in line, line
    finally:
        reset_plugin_manager()


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_pytest_plugin_is_off_without_the_flag(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 5, done.stdout  # no tests collected
    assert "delegate-lens" not in done.stdout


@pytest.mark.slow
@pytest.mark.torch
def test_pytest_plugin_one_test_per_rule(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(
        "from delegate_lens.testing.strategies import GeneratedModel\n"
        "def test_own(dl_lower, dl_run_traced):\n"
        "    model = GeneratedModel([('linear_relu', (0,))]).eval()\n"
        "    run = dl_run_traced(dl_lower(model), model.example_inputs, runs=2)\n"
        "    assert len(run.etdump.run_data) == 3\n"
    )
    done = _pytest(
        tmp_path,
        "--delegate-lens-backend=Broken/wrong-output",
        "--delegate-lens-plugin=broken_backends",
        "--delegate-lens-max-examples=1",
        "-rA",
    )
    assert done.returncode == 1, done.stdout
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1, done.stdout
    assert "test_conformance[Broken/wrong-output-outputs-match-eager]" in failed[0]
    from delegate_lens.testing import registered_rules

    others = len(registered_rules()) - 1  # every other rule passes, and test_own
    assert f"1 failed, {others + 1} passed" in done.stdout
    assert "class Model" in done.stdout  # the model printed as code


def test_delegate_times_understand_wrap_around() -> None:
    from delegate_lens.testing._checks import _nested, _wrapped_end

    top = 2**32 - 10
    assert _wrapped_end(top, 5) == 2**32 + 5  # a 32-bit counter wrapped: not backwards
    assert _wrapped_end(1000, 10) is None  # plainly backwards
    assert _nested(top + 2, 3, top, 20)  # event and call across the wrap
    assert not _nested(top - 5, 3, top, 20)  # starts before its call
    assert _nested(100, 200, 50, 250) and not _nested(100, 300, 50, 250)
