"""Time rolled up by module hierarchy (`get_module_summary`, `inspect --by module`, the
report's module table), on the one attribution of time."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from conftest import VECTORS

from delegate_lens.errors import UsageError
from delegate_lens.inspector import Inspector

GPT = VECTORS / "gpt_portable"


@pytest.fixture(scope="module")
def gpt() -> Inspector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(etdump_path=GPT / "etdump.etdp", etrecord=str(GPT / "etrecord.bin"))


def test_layers_add_up_and_match_find_total_for_module(gpt: Inspector) -> None:
    layers = {r.module: r for r in gpt.get_module_summary("Execute", depth=1)}
    assert {f"blocks.{i}" for i in range(4)} | {"head", "ln", "tok", "pos"} <= set(layers)
    assert layers["blocks.0"].module_type == "Block" and layers["blocks.0"].depth == 1
    # every charged event in exactly one row: the shares are the attribution's
    assert sum(r.share for r in layers.values()) == pytest.approx(1.0)
    assert {r.denominator for r in layers.values()} == {"Method::execute"}
    # the reference's one-name-at-a-time total (row averages, OPERATOR_CALL skipped)
    for name in ("head", "blocks.2", "tok"):
        assert layers[name].time_per_run == pytest.approx(gpt.find_total_for_module(name))


def test_deeper_rows_split_their_parent(gpt: Inspector) -> None:
    layers = {r.module: r for r in gpt.get_module_summary("Execute", depth=1)}
    subs = gpt.get_module_summary("Execute", depth=2)
    for i in range(4):
        parent = f"blocks.{i}"
        inside = [r for r in subs if r.module == parent or r.module.startswith(parent + ".")]
        assert {r.depth for r in inside} == {1, 2}  # ops of Block.forward itself, and children
        assert sum(r.total_time for r in inside) == pytest.approx(layers[parent].total_time)
        assert sum(r.count for r in inside) == layers[parent].count
    whole = gpt.get_module_summary("Execute")
    assert sum(r.total_time for r in whole) == pytest.approx(sum(r.total_time for r in subs))


def test_by_type_sums_the_modules_of_a_class(gpt: Inspector) -> None:
    layers = gpt.get_module_summary("Execute", depth=1)
    types = {r.module: r for r in gpt.get_module_summary("Execute", depth=1, by="type")}
    blocks = [r for r in layers if r.module_type == "Block"]
    assert types["Block"].total_time == pytest.approx(sum(r.total_time for r in blocks))
    assert types["Block"].count == sum(r.count for r in blocks)
    with pytest.raises(UsageError, match="depth"):
        gpt.get_module_summary(depth=0)
    with pytest.raises(UsageError, match="by must be one of"):
        gpt.get_module_summary(by="class")


def test_without_etrecord_events_are_not_linked() -> None:
    inspector = Inspector(etdump_path=GPT / "etdump.etdp")
    rows = {r.module: r for r in inspector.get_module_summary("Execute")}
    assert set(rows) <= {"(not linked)", "Method::execute (unattributed)"}
    assert rows["(not linked)"].kind == "not linked"


def test_cli_by_module() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "delegate_lens", "inspect", str(GPT / "etdump.etdp")]
        command += ["--etrecord", str(GPT / "etrecord.bin"), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    proc = run("--by", "module", "--depth", "1", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["blocks"][0]["denominator"] == "Method::execute"
    assert data["modules"][0]["module"].startswith("blocks.")
    table = run("--by", "module-type", "--depth", "2").stdout
    assert "Linear" in table and "share = % of Method::execute" in table
    proc = run("--by", "module", "--depth", "0")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--depth" in proc.stderr
    proc = run("--depth", "2")
    assert proc.returncode == 2 and "--depth goes with --by module" in proc.stderr
    proc = run("--by", "module", "-f", "csv")
    assert proc.returncode == 0 and proc.stdout.startswith("block,module,module_type,depth,")


def test_report_holds_the_module_tree(gpt: Inspector) -> None:
    from delegate_lens.report import build_report_data

    modules = build_report_data(gpt)["modules"]
    names = [m["module"] for m in modules if m["kind"] == "module"]
    assert names.index("blocks.0") < names.index("blocks.0.qkv") < names.index("blocks.1")
    depth1 = [m for m in modules if m["kind"] == "module" and m["depth"] == 1]
    others = [m for m in modules if m["kind"] != "module"]
    assert sum(m["share"] for m in depth1 + others) == pytest.approx(1.0, rel=1e-6)
