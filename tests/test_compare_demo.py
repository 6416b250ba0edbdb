"""delegate-lens compare on demo runs: the same program twice shows no significant change;
a demo backend built with the ``slowdown`` compile spec is flagged at exactly that
operator, inside the delegate.

The three traced sides run interleaved, one call each in turn, so that the load of this
shared machine falls on every side alike (as the docs advise for real A/B runs). Two
loaded instances of one program can still differ by some 20 % on a 10 us kernel (memory
layout, caches) while the whole suite runs on 2 shared cores, so the A/A pair is judged at
a 50 % threshold and the slowdown (an injected factor of 40) at 90 %.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from delegate_lens.cli import main
from delegate_lens.compare import FASTER, NO_CHANGE, SLOWER, TOO_FEW, compare

pytestmark = pytest.mark.slow  # about 30 s: two lowerings and 120 traced calls

RUNS = 40
SLOW_FACTOR = 40
WORK_CLOCK = time.thread_time_ns
"""The traced runs' clock: this thread's CPU time, so that what the files record is the
work done, the same on a loaded machine (other processes' time is not counted) as on an
idle one; wall time there made "the same program twice" differ by 5x under load."""


@pytest.fixture(scope="module")
def demo_dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ETDumps ``base``, ``again`` (same program) and ``slow`` (sigmoid x40) of convnet,
    with their ETRecords ``base.etrecord`` / ``slow.etrecord``."""
    torch = pytest.importorskip("torch")
    from delegate_lens.backends_demo._demo import run_demo
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.runtime import ETDumpGen, Program

    root = tmp_path_factory.mktemp("compare_demo")
    quiet = {"runs": 1, "debug_buffer_size": 0, "echo": lambda _: None, "show_table": False}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        built = {
            "base": run_demo("convnet", out_dir=root / "base", **quiet),
            "slow": run_demo(
                "convnet", out_dir=root / "slow", slowdown=f"sigmoid:{SLOW_FACTOR}", **quiet
            ),
        }
        _, inputs = make_model("convnet")
        sides = {"base": "base", "again": "base", "slow": "slow"}
        tracers = {name: ETDumpGen(clock=WORK_CLOCK) for name in sides}
        methods = {
            name: Program.load(built[program].paths["program"]).load_method(
                "forward", event_tracer=tracers[name]
            )
            for name, program in sides.items()
        }
        order = list(sides)
        with torch.no_grad():
            for i in range(RUNS):
                for name in order[i % 3 :] + order[: i % 3]:
                    methods[name].execute(list(inputs))
    finally:
        torch.set_num_threads(threads)
    paths = {}
    for name, tracer in tracers.items():
        paths[name] = root / f"{name}.etdp"
        tracer.write(paths[name])
    paths["base.etrecord"] = built["base"].paths["etrecord"]
    paths["slow.etrecord"] = built["slow"].paths["etrecord"]
    return paths


def _interleaved(root: Path, model: str, slowdown: str, runs: int) -> dict[str, Path]:
    """ETDumps ``base`` and ``slow`` of ``model`` (``slow`` with ``slowdown``), ``runs``
    traced calls each, one call of each side in turn on one thread; their ETRecords
    ``base.etrecord`` / ``slow.etrecord``."""
    torch = pytest.importorskip("torch")
    from delegate_lens.backends_demo._demo import run_demo
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.runtime import ETDumpGen, Program

    quiet: dict[str, Any] = {"runs": 1, "debug_buffer_size": 0, "show_table": False}
    quiet.update(echo=lambda _: None, identifiers="str")  # rows named by kernel: "tan/sin#2"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        built = {
            "base": run_demo(model, out_dir=root / "base", **quiet),
            "slow": run_demo(model, out_dir=root / "slow", slowdown=slowdown, **quiet),
        }
        _, inputs = make_model(model)
        tracers = {name: ETDumpGen(clock=WORK_CLOCK) for name in built}
        methods = {
            name: Program.load(built[name].paths["program"]).load_method(
                "forward", event_tracer=tracers[name]
            )
            for name in built
        }
        with torch.no_grad():
            for i in range(runs):
                for name in ("base", "slow") if i % 2 else ("slow", "base"):
                    methods[name].execute(list(inputs))
    finally:
        torch.set_num_threads(threads)
    paths = {}
    for name, tracer in tracers.items():
        paths[name] = root / f"{name}.etdp"
        tracer.write(paths[name])
        paths[f"{name}.etrecord"] = built[name].paths["etrecord"]
    return paths


def test_ten_runs_flag_the_slow_op_and_the_rows_that_contain_it(tmp_path: Path) -> None:
    """docs/compare.md: with 10 runs, ``sin`` x20 inside the demo model's delegate is flagged
    on the ``sin`` row and on the rows containing it (the delegate's summary row,
    ``DELEGATE_CALL``, ``Method::execute``), and on no other row."""
    delegate_ops: tuple[str, ...] = ("aten.linear.default", "aten.relu.default")
    delegate_ops += ("aten.linear.default", "aten.tan.default", "aten.add.Tensor")
    expected = {
        ("tan/sin#2", ("aten.tan.default",)),
        ("DemoBackend/partition", delegate_ops),  # the per-call summary
        ("DELEGATE_CALL", delegate_ops),
        ("Method::execute", ()),
    }
    for attempt in (1, 2, 3):
        # a burst of load from other processes on this shared machine widens the intervals
        # of 10 runs (an honest "no significant change" on a row that grew 1.6x): measure
        # again then; three independent measurements all missing it is a failure
        dumps = _interleaved(tmp_path / str(attempt), "mlp", "sin:20", runs=10)
        result = compare(
            dumps["base"],
            dumps["slow"],
            base_etrecord=dumps["base.etrecord"],
            new_etrecord=dumps["slow.etrecord"],
            threshold=0.3,
        )
        assert result.programs.same_program is True and result.programs.matched_share == 1
        table = [(r.identity.name, r.identity.op_types, r.ratio, r.ratio_ci) for r in result.rows]
        slower = {
            (row.identity.name, tuple(row.identity.op_types))
            for row in result.rows
            if row.verdict == SLOWER
        }
        if slower == expected:
            break
    assert slower == expected, table
    assert all(row.ratio_ci[0] > 1 for row in result.rows if row.verdict == SLOWER), table


def test_same_program_twice_shows_no_significant_change(demo_dumps: dict[str, Path]) -> None:
    etrecord = demo_dumps["base.etrecord"]
    result = compare(
        demo_dumps["base"],
        demo_dumps["again"],
        base_etrecord=etrecord,
        new_etrecord=etrecord,
        threshold=0.5,
    )
    assert not result.only_base and not result.only_new
    # convnet: 2 delegate calls (5 + 3 delegate rows), a portable mean, framework rows
    assert result.match_counts() == {"delegate": 9, "instruction": 4, "name": 3}
    timed = [row for row in result.rows if row.base_samples.size == RUNS]
    assert len(timed) == 14
    changed = [(row.identity.name, row.ratio) for row in timed if row.verdict != NO_CHANGE]
    assert changed == []
    assert not result.has_regression
    assert [b.backend for b in result.backends] == ["DemoBackend"]
    assert result.backends[0].base_calls == result.backends[0].new_calls == 2


def test_slowdown_is_flagged_at_exactly_that_operator(demo_dumps: dict[str, Path]) -> None:
    result = compare(
        demo_dumps["base"],
        demo_dumps["slow"],
        base_etrecord=demo_dumps["base.etrecord"],
        new_etrecord=demo_dumps["slow.etrecord"],
        threshold=0.9,
    )
    assert result.has_regression
    table = [(r.identity.name, r.identity.instruction_id, r.ratio, r.verdict) for r in result.rows]
    delegated = [row for row in result.rows if row.identity.is_delegated_op]
    slower = [row for row in delegated if row.verdict == SLOWER]
    # the sigmoid op itself, and the summary row of its own delegate call (which spans it)
    sigmoid = [row for row in slower if row.identity.op_types == ["aten.sigmoid.default"]]
    assert len(sigmoid) == 1, table
    op = sigmoid[0]
    assert op.match == "delegate"
    assert op.identity.delegate_backend_name == "DemoBackend"
    # the slowed op grew the most of all delegated ops, and surely more than 2x (no figure
    # of how much: a loaded machine shrinks a 40x slowdown's measured ratio)
    assert op.ratio == max(row.ratio for row in delegated) and op.ratio_ci[0] > 2, table
    others = [row for row in slower if row is not op]
    assert all(row.identity.instruction_id == op.identity.instruction_id for row in others), table
    assert all(set(op.identity.op_types) < set(row.identity.op_types) for row in others), table
    # every other operator inside the delegates is unchanged (not faster or slower); the
    # per-call summary rows span their whole delegate call (the handles of DELEGATE_CALL)
    call_handles = {
        row.identity.instruction_id: row.identity.debug_handles
        for row in result.rows
        if row.identity.name == "DELEGATE_CALL"
    }
    assert len(call_handles) == 2
    leaf_ops = [
        row
        for row in delegated
        if row.identity.debug_handles != call_handles[row.identity.instruction_id] and row is not op
    ]
    assert len(leaf_ops) == 6
    assert leaf_ops and all(row.verdict not in (SLOWER, FASTER) for row in leaf_ops), [
        (row.identity.name, row.identity.op_types, row.ratio) for row in leaf_ops
    ]
    timed = [row for row in result.rows if row.verdict != TOO_FEW]  # not the 1-sample loads
    assert max(timed, key=lambda row: row.ratio) is op, table
    (backend,) = result.backends
    assert backend.new_time > backend.base_time


def test_cli_exit_status_gates_on_regressions(
    demo_dumps: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    base, etrecord = str(demo_dumps["base"]), str(demo_dumps["base.etrecord"])
    same = ["compare", base, str(demo_dumps["again"]), "--etrecord", etrecord, "--threshold", "50%"]
    assert main([*same, "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["regressions"] == 0
    slow = ["compare", base, str(demo_dumps["slow"]), "--base-etrecord", etrecord]
    slow += ["--new-etrecord", str(demo_dumps["slow.etrecord"])]
    assert main([*slow, "--format", "markdown"]) == 1
    captured = capsys.readouterr()
    # the report on stdout, nothing on stderr (compare's two loading threads call hooks at
    # once; hook calls never swap stdout: tests/test_hookcalls_threads.py)
    assert captured.err == ""
    text = captured.out
    assert "| aten.sigmoid" not in text  # op types are not in the markdown table
    # the sigmoid op (identifier 1 of the second delegate call, debug handle 8): flagged
    sigmoid = [
        line for line in text.splitlines() if line.startswith("| Execute | 1 | DemoBackend | 8 |")
    ]
    assert len(sigmoid) == 1 and sigmoid[0].endswith("| slower |"), text
