"""The one attribution of time: checked against the raw ETDump of the reference vectors, across
every view (CLI, Inspector API, report, Model Explorer overlays, compare, dataset), and as
properties over generated ETDumps."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import VECTORS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dumps, load
from delegate_lens.inspector import Inspector
from delegate_lens.inspector._attribution import (
    EXECUTE,
    RowRole,
    attribute,
    kernel_op_name,
    node_samples,
    op_name,
)

GPT = VECTORS / "gpt_portable"
BIG = VECTORS / "gpt_portable_big"
MLP = VECTORS / "mlp_xnnpack"
WRAPPERS = {"OPERATOR_CALL", "DELEGATE_CALL", "Method::execute", "Method::init"}
WRAPPERS |= {"Program::load_method"}


def _inspector(folder: Path, etrecord: bool = True) -> Inspector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(
            etdump_path=folder / "etdump.etdp",
            etrecord=str(folder / "etrecord.bin") if etrecord else None,
        )


def _raw_kernel_totals(path: Path) -> tuple[dict[str, float], float]:
    """Per kernel name, its ticks summed over the whole ETDump; and Method::execute's."""
    totals: dict[str, float] = defaultdict(float)
    for run in load(path).run_data:
        for event in run.events:
            p = event.profile_event
            if p is not None and p.name is not None:
                totals[p.name] += p.end_time - p.start_time
    return dict(totals), totals["Method::execute"]


def test_names() -> None:
    assert kernel_op_name("native_call_addmm.out") == "addmm"
    assert kernel_op_name("native_call__softmax.out") == "_softmax"
    assert kernel_op_name("native_call_arange.start_out") == "arange"
    assert kernel_op_name("OPERATOR_CALL") is None
    assert op_name("aten.addmm.default") == "addmm"
    assert op_name("dim_order_ops._clone_dim_order.default") == "_clone_dim_order"


@pytest.mark.parametrize("folder", [GPT, BIG], ids=["gpt_portable", "gpt_portable_big"])
def test_op_type_totals_are_the_kernel_totals_of_the_etdump(folder: Path) -> None:
    raw, execute = _raw_kernel_totals(folder / "etdump.etdp")
    inspector = _inspector(folder)
    rows = {r.op_type: r for r in inspector.get_op_type_summary("Execute")}
    factor = inspector.time_factor
    for name, ticks in raw.items():
        op = kernel_op_name(name)
        if op is None:
            continue
        [row] = [r for key, r in rows.items() if r.kind == "op" and op_name(key) == op]
        assert row.total_time == pytest.approx(ticks / factor, rel=1e-9), name
        assert row.share == pytest.approx(ticks / execute, rel=1e-9), name
        assert row.denominator == EXECUTE
    assert sum(r.share for r in rows.values()) == pytest.approx(1.0, rel=1e-9)
    assert rows["Method::execute (unattributed)"].kind == "unattributed"
    if folder == BIG:  # the figures: addmm 69%, view_copy 1.1 ms in all
        assert round(rows["aten.addmm.default"].share, 3) == 0.691
        assert rows["aten.view_copy.default"].total_time == pytest.approx(1.0966, abs=1e-3)
        assert rows["aten.addmm.default"].count == 17  # 34,000 events over 2,000 runs
        assert rows["aten.permute_copy.default"].count == 37


def test_cli_json_csv_and_table_name_their_denominator() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "delegate_lens", "inspect", str(GPT / "etdump.etdp")]
        command += ["--etrecord", str(GPT / "etrecord.bin"), "--by", "op-type", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    inspector = _inspector(GPT)
    api = inspector.get_op_type_summary()
    data = json.loads(run("-f", "json").stdout)
    assert data["blocks"] == [
        {
            "block": "Execute",
            "index": 1,
            "runs": 50,
            "denominator": "Method::execute",
            "denominator_per_run": pytest.approx(inspector.get_attribution()[1].run_time),
        }
    ]
    assert [r["op_type"] for r in data["op_types"]] == [r.op_type for r in api]
    assert [r["share"] for r in data["op_types"]] == pytest.approx([r.share for r in api])
    csv_lines = run("-f", "csv").stdout.splitlines()
    assert csv_lines[0].split(",")[:4] == ["block", "op_type", "kind", "count"]
    assert len(csv_lines) == len(api) + 1
    table = run().stdout
    assert "share = % of Method::execute" in table and "50 run(s)" in table
    assert "time/run (ms)" in table and "total (ms)" in table


def test_every_view_takes_the_same_numbers(tmp_path: Path) -> None:
    from delegate_lens.compare import compare
    from delegate_lens.report import build_report_data

    inspector = _inspector(GPT)
    [_, execute] = inspector.get_attribution()
    by_key = {c.key: c for c in execute.charges}
    report = build_report_data(inspector)
    for row in report["top_operators"]:
        charge = by_key[row["op_type"]]
        assert row["share"] == pytest.approx(charge.share, rel=1e-8)
        assert row["total"] == pytest.approx(charge.total_time, rel=1e-8)
        assert row["time_per_run"] == pytest.approx(charge.time_per_run, rel=1e-8)
        assert row["count"] == charge.count
    # the report's graph and the Model Explorer overlay give each node the same share
    [graph] = report["graphs"]
    nodes = node_samples(inspector.tables[1], execute)
    whole = float(np.sum(execute.run_samples))
    assert graph["measures"]["share"] == pytest.approx(
        {k: float(np.sum(v)) / whole for k, v in nodes.items()}, rel=1e-8
    )
    # each kernel's time is on the one node of the op it ran, so the nodes' shares sum to
    # the charges' (every charge of this block is linked to nodes)
    charged = sum(c.share for c in execute.charges if c.kind != "unattributed")
    assert sum(graph["measures"]["share"].values()) == pytest.approx(charged, rel=1e-9)
    assert all(len(p) <= 1 for p in execute.row_positions)
    me = pytest.importorskip("delegate_lens_model_explorer.overlays")
    from delegate_lens_model_explorer.graph import build_method_graph

    times, denominator = me.node_times(inspector, build_method_graph(inspector.etrecord, "forward"))
    assert denominator == "Method::execute"
    assert {k: v[2] for k, v in times.items()} == pytest.approx(graph["measures"]["share"])
    # compare's block summary: the median over runs of the same denominator
    result = compare(inspector, _inspector(GPT))
    [summary] = [b for b in result.blocks if b.block == "Execute"]
    assert summary.base_total == pytest.approx(float(np.median(execute.run_samples)))


def test_a_kernel_of_a_shared_handle_is_charged_to_one_node(tmp_path: Path) -> None:
    # gpt_portable's last linear became view_copy_72, permute_copy, addmm and view_copy_73,
    # all with handle 102; only view_copy_73 ran a kernel (after the addmm, in program
    # order): its time goes there once, not to both view_copy nodes
    pytest.importorskip("delegate_lens_model_explorer")
    from delegate_lens.cli import main

    inspector = _inspector(GPT)
    [_, execute] = inspector.get_attribution()
    table = inspector.tables[1]
    [view] = [
        j
        for j, key in enumerate(table.keys)
        if key.name == "native_call_view_copy.out" and table.links[j].debug_handles == 102
    ]
    names = table.links[view].node_names
    assert [n.startswith("aten_view_copy") for n in names] == [True, False, False, True]
    assert [names[k] for k in execute.row_positions[view]] == [names[3]]
    nodes = node_samples(table, execute)
    assert names[0] not in nodes
    assert float(np.sum(nodes[names[3]])) == pytest.approx(float(np.sum(table.samples[view])))
    # the overlay's shares (rounded to 4 decimals, in %) sum to the attribution's total
    out = tmp_path / "me"
    args = ["inspect", str(GPT / "etdump.etdp"), "--etrecord", str(GPT / "etrecord.bin")]
    assert main([*args, "-f", "model-explorer", "-o", str(out)]) == 0
    shares = json.loads((out / "share_of_run.json").read_text())["forward"]["results"]
    total = 100 * sum(c.share for c in execute.charges if c.kind != "unattributed")
    rounding = 5e-5 * len(shares)  # half the last decimal, per node
    assert sum(r["value"] for r in shares.values()) == pytest.approx(total, abs=rounding)
    assert names[0] not in shares


@pytest.mark.parametrize(
    ("ops", "kernels", "ran"),
    [
        # a decomposed linear: the view after the addmm ran, the one before did not
        ("view permute addmm view", "permute addmm view", [(1,), (2,), (3,)]),
        ("view permute addmm view", "view permute addmm", [(0,), (1,), (2,)]),
        ("view permute addmm view", "view permute addmm view", [(0,), (1,), (2,), (3,)]),
        # one view kernel alone: which view node ran it is not known
        ("view permute addmm view", "view", [(0, 3)]),
        ("view addmm view view", "addmm view", [(1,), (2, 3)]),
        # no order-keeping match: each kernel keeps every node of its op
        ("view addmm", "addmm view", [(1,), (0,)]),
        ("view view", "view view view", [(0, 1)] * 3),
    ],
)
def test_kernels_of_one_handle_are_matched_to_nodes_in_program_order(
    ops: str, kernels: str, ran: list[tuple[int, ...]]
) -> None:
    from types import SimpleNamespace

    from delegate_lens.inspector._kernel_nodes import kernel_positions
    from delegate_lens.inspector._linking import RowKey, RowLink

    op_types = [f"aten.{op}.default" for op in ops.split()]
    names = tuple(f"n{k}" for k in range(len(op_types)))
    link = RowLink(debug_handles=7, op_types=op_types, node_names=names)
    keys = [RowKey(f"native_call_{op}.out", 10 + i, None) for i, op in enumerate(kernels.split())]
    table = SimpleNamespace(keys=keys, links=[link] * len(keys))
    positions = kernel_positions(table)  # type: ignore[arg-type]
    assert [positions[j] for j in range(len(keys))] == ran


def test_dataset_rows_are_charged_like_the_inspector(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from delegate_lens.dataset._event_table import events_table

    inspector = _inspector(GPT)
    table = events_table(
        inspector.file_columns, source="x", file_hash="0" * 32, labels={}, inspector=inspector
    ).to_pydict()
    per_key: dict[str, float] = defaultdict(float)
    for key, duration in zip(table["charged_to"], table["duration"], strict=True):
        if key is not None:
            per_key[key] += duration / inspector.time_factor
    charges = {c.key: c for a in inspector.get_attribution() for c in a.charges}
    measured = {k: c.total_time for k, c in charges.items() if c.kind != "unattributed"}
    assert per_key == pytest.approx(measured, rel=1e-9)
    wrappers = {
        n for n, k in zip(table["event_name"], table["charged_to"], strict=True) if k is None
    }
    assert wrappers == {"OPERATOR_CALL", "Method::execute", "Method::init", "Program::load_method"}


def test_delegate_events_are_charged_and_the_rest_is_unattributed() -> None:
    inspector = _inspector(MLP)
    [_, execute] = inspector.get_attribution()
    table = inspector.tables[1]
    by_name = {key.name: j for j, key in enumerate(table.keys)}
    call = table.samples[by_name["DELEGATE_CALL"]]
    logged = sum(table.samples[j] for j, k in enumerate(table.keys) if k.identifier is not None)
    keys = {c.key: c for c in execute.charges}
    rest = keys["XnnpackBackend (unattributed)"]
    assert rest.samples == pytest.approx(np.clip(call - logged, 0, None))
    assert rest.op_types[:2] == ("aten.linear.default", "aten.relu.default")
    # XNNPACK's events are not linked: charged under their own names, never split
    assert keys["Add (ND) #1"].kind == "event"
    assert execute.roles[by_name["DELEGATE_CALL"]] == RowRole.WRAPPER
    assert sum(c.share for c in execute.charges) == pytest.approx(1.0)


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch")
    from delegate_lens.backends_demo._demo import run_demo

    result = run_demo(
        runs=3, out_dir=tmp_path_factory.mktemp("demo"), echo=lambda _: None, show_table=False
    )
    return result.paths


def test_fused_event_is_a_group_and_summary_event_a_wrapper(demo_files: dict[str, Path]) -> None:
    inspector = Inspector(etdump_path=demo_files["etdump"], etrecord=str(demo_files["etrecord"]))
    attribution = next(a for a in inspector.get_attribution() if a.charges)
    keys = {c.key: c for c in attribution.charges}
    group = keys["aten.linear.default + aten.relu.default"]
    assert group.kind == "group" and group.count == 1
    assert keys["aten.linear.default"].count == 1  # the second linear, its own event
    assert keys["aten.tan.default"].count == 3  # tan decomposed into three events
    table = inspector.tables[attribution.index]
    summary = [
        j
        for j, link in enumerate(table.links)
        if table.keys[j].identifier is not None and len(set(link.op_types)) > 3
    ]
    assert summary and all(attribution.roles[j] == RowRole.WRAPPER for j in summary)
    # the delegate call's time beyond its per-op events is shown as the backend's own
    calls = [j for j, k in enumerate(table.keys) if k.name == "DELEGATE_CALL"]
    logged = sum(
        table.samples[j]
        for j, role in enumerate(attribution.roles)
        if role == RowRole.DELEGATE_EVENT
    )
    expected = np.clip(sum(table.samples[j] for j in calls) - logged, 0, None)
    assert keys["DemoBackend (unattributed)"].samples == pytest.approx(expected)
    assert sum(c.share for c in attribution.charges) <= 1 + 1e-9


# --- properties over generated ETDumps -------------------------------------------------

_KERNELS = ["native_call_add.out", "native_call_mm.out", "native_call_tan.out"]


@st.composite
def _runs(draw: st.DrawFn) -> list[list[tuple[str, int, int | None, int]]]:
    """Runs of (name, instruction id, delegate identifier, duration); every run has the
    same rows (one block), durations vary."""
    shape: list[tuple[str, int, int | None]] = []
    for iid in range(draw(st.integers(1, 6))):
        what = draw(st.sampled_from(["kernel", "alone", "delegate"]))
        if what == "kernel":
            shape += [(draw(st.sampled_from(_KERNELS)), iid, None), ("OPERATOR_CALL", iid, None)]
        elif what == "alone":
            shape.append(("OPERATOR_CALL", iid, None))
        else:
            inner = draw(st.integers(0, 3))
            shape += [("", iid, k) for k in range(inner)]
            shape.append(("DELEGATE_CALL", iid, None))
    with_execute = draw(st.booleans())
    runs = []
    for _ in range(draw(st.integers(1, 4))):
        durations = [draw(st.integers(0, 10**6)) for _ in shape]
        run = [(n, i, d, t) for (n, i, d), t in zip(shape, durations, strict=True)]
        if with_execute:
            run.append((EXECUTE, -1, None, draw(st.integers(0, 10**7))))
        runs.append(run)
    return runs


def _etdump(runs: list[list[tuple[str, int, int | None, int]]]) -> bytes:
    data = []
    for run in runs:
        events = []
        for name, iid, ident, duration in run:
            p = ProfileEvent(
                name=name or None,
                instruction_id=iid,
                delegate_debug_id_int=-1 if ident is None else ident,
                start_time=1000,
                end_time=1000 + duration,
            )
            events.append(Event(profile_event=p))
        data.append(RunData(name="Execute", events=events))
    return dumps(ETDump(run_data=data))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_runs())
def test_shares_sum_to_at_most_one_and_totals_are_the_events(
    runs: list[list[tuple[str, int, int | None, int]]],
) -> None:
    inspector = Inspector(etdump_data=_etdump(runs))
    [attribution] = attribute(inspector.tables)
    assert sum(c.share for c in attribution.charges) <= 1 + 1e-9
    assert all(c.share >= 0 and c.total_time >= 0 for c in attribution.charges)
    # every charged key totals the raw events it comes from: kernels by name, an
    # OPERATOR_CALL alone (no kernel in its instruction) as itself, a delegate's events
    expected: dict[str, float] = defaultdict(float)
    for run in runs:
        kernel_at = {i for n, i, d, _ in run if n in _KERNELS}
        for name, iid, ident, duration in run:
            if ident is not None:
                key = str(ident)
            elif name in _KERNELS or (name == "OPERATOR_CALL" and iid not in kernel_at):
                key = name
            else:
                continue
            expected[key] += duration / inspector.time_factor
    measured = {c.key: c.total_time for c in attribution.charges if c.kind != "unattributed"}
    assert measured == pytest.approx(dict(expected), rel=1e-9, abs=1e-12)
    # the unattributed delegate time is the calls' time beyond their events, per run
    rest = sum(c.total_time for c in attribution.charges if c.key == "DELEGATE_CALL (unattributed)")
    want = 0.0
    for run in runs:
        for name, iid, _, duration in run:
            if name == "DELEGATE_CALL":
                inner = sum(t for n, i, d, t in run if d is not None and i == iid)
                want += max(duration - inner, 0) / inspector.time_factor
    assert rest == pytest.approx(want, rel=1e-9, abs=1e-12)
    if attribution.denominator == EXECUTE:
        execute = sum(t for run in runs for n, _, _, t in run if n == EXECUTE)
        assert float(np.sum(attribution.run_samples)) * inspector.time_factor == pytest.approx(
            execute
        )
