"""The one attribution without an ETRecord: a delegate event that contains others of the
same call in time (a backend's per-call summary) is a wrapper, never charged on top of the
events inside it; and `inspect --by op-type` tells apart blocks of one name."""

from __future__ import annotations

from pathlib import Path

import pytest

from delegate_lens.cli import main
from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dump, dumps
from delegate_lens.inspector import Inspector
from delegate_lens.inspector._attribution import RowRole

pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")

Span = tuple[int, int]


def _run(delegate: dict[int, Span], call: Span = (10, 900), execute: Span = (0, 1000)) -> RunData:
    """One run: a delegate call (instruction 0) with the events its delegate logged, then
    Method::execute, as the runtime logs them."""
    events = [
        Event(
            profile_event=ProfileEvent(
                instruction_id=0, delegate_debug_id_int=ident, start_time=s, end_time=e
            )
        )
        for ident, (s, e) in delegate.items()
    ]
    events.append(
        Event(
            profile_event=ProfileEvent(
                "DELEGATE_CALL", instruction_id=0, start_time=call[0], end_time=call[1]
            )
        )
    )
    events.append(
        Event(
            profile_event=ProfileEvent(
                "Method::execute", start_time=execute[0], end_time=execute[1]
            )
        )
    )
    return RunData(name="Execute", events=events)


def _attribution(*runs: RunData) -> tuple[dict[str, float], list[str], str]:
    """Charged ticks per key, the role of each delegate event (by identifier), the
    denominator (times in ns, the Inspector's target unit)."""
    inspector = Inspector(etdump_data=dumps(ETDump(run_data=list(runs))), target_time_scale="ns")
    [attribution] = inspector.get_attribution()
    table = inspector.tables[0]
    roles = [attribution.roles[j] for j, key in enumerate(table.keys) if key.identifier is not None]
    charged = {c.key: round(c.total_time) for c in attribution.charges}
    return charged, roles, attribution.denominator


def test_a_per_call_summary_is_not_charged_on_top_of_the_events_inside_it() -> None:
    # ids 0 and 1: one op each; id 2: the backend's summary of the whole call
    first = _run({0: (20, 300), 1: (300, 600), 2: (15, 850)})
    second = _run({0: (1020, 1200), 1: (1210, 1400), 2: (1015, 1500)}, (1010, 1600), (1000, 1700))
    charged, roles, denominator = _attribution(first, second)
    assert roles == [RowRole.DELEGATE_EVENT, RowRole.DELEGATE_EVENT, RowRole.WRAPPER]
    assert "2" not in charged
    assert charged == {
        "0": 280 + 180,
        "1": 300 + 190,
        # the call beyond the events inside it: 890 - 580, 590 - 370
        "DELEGATE_CALL (unattributed)": 310 + 220,
        "Method::execute (unattributed)": (1000 - 890) + (700 - 590),
    }
    assert denominator == "Method::execute"  # what is charged fits in it, run by run


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # one after the other, a zero-length event on the edge of another: no container
        ({0: (20, 300), 1: (300, 300)}, {0: (1020, 1300), 1: (1300, 1300)}),
        # inside in one run only (the second sticks out in the other run)
        ({0: (20, 600), 1: (100, 300)}, {0: (1020, 1200), 1: (1100, 1300)}),
        # the very same span in every run: neither contains the other
        ({0: (20, 300), 1: (20, 300)}, {0: (1020, 1100), 1: (1020, 1100)}),
        # durations logged from one start (0): the longer does not hold the shorter
        ({0: (0, 300), 1: (0, 100)}, {0: (0, 200), 1: (0, 150)}),
    ],
    ids=["edge", "one-run", "same-span", "one-start"],
)
def test_events_that_do_not_nest_are_all_charged(
    first: dict[int, Span], second: dict[int, Span]
) -> None:
    charged, roles, _ = _attribution(_run(first), _run(second, (1010, 1600), (1000, 1700)))
    assert roles == [RowRole.DELEGATE_EVENT, RowRole.DELEGATE_EVENT]
    assert charged["0"] == sum(e - s for s, e in (first[0], second[0]))
    assert charged["1"] == sum(e - s for s, e in (first[1], second[1]))


def test_many_events_logged_from_one_start_are_all_charged() -> None:
    """A backend that logs durations from one start (0) in every run: however many events,
    none holds another (each one's ticks, not its neighbours', are its own)."""
    first = {k: (0, 10 * (k + 1)) for k in range(8)}
    second = {k: (0, 7 * (k + 1)) for k in range(8)}
    charged, roles, _ = _attribution(_run(first), _run(second, (1010, 1600), (1000, 1700)))
    assert roles == [RowRole.DELEGATE_EVENT] * 8
    assert all(charged[str(k)] == 17 * (k + 1) for k in range(8))


def test_summaries_nest_in_levels_and_only_within_their_call() -> None:
    """A per-layer summary inside a per-call one: both are wrappers. An event of another
    call (instruction) is never a child, even when the times would say so."""
    delegate = {0: (20, 100), 1: (100, 200), 2: (15, 210), 3: (10, 890)}
    runs = [
        _run(delegate),
        _run(
            {k: (s + 1000, e + 1000) for k, (s, e) in delegate.items()}, (1005, 1900), (1000, 2000)
        ),
    ]
    charged, roles, _ = _attribution(*runs)
    assert roles == [
        RowRole.DELEGATE_EVENT,
        RowRole.DELEGATE_EVENT,
        RowRole.WRAPPER,
        RowRole.WRAPPER,
    ]
    assert set(charged) == {
        "0",
        "1",
        "DELEGATE_CALL (unattributed)",
        "Method::execute (unattributed)",
    }
    # the same events, the summary logged under another instruction: no longer a child
    other = RunData(
        name="Execute",
        events=[
            *runs[0].events[:3],
            Event(
                profile_event=ProfileEvent(
                    instruction_id=1, delegate_debug_id_int=3, start_time=10, end_time=890
                )
            ),
            *runs[0].events[4:],
        ],
    )
    charged, roles, _ = _attribution(other)
    assert roles == [
        RowRole.DELEGATE_EVENT,
        RowRole.DELEGATE_EVENT,
        RowRole.WRAPPER,
        RowRole.DELEGATE_EVENT,
    ]
    assert charged["3"] == 880


def test_cli_by_op_type_without_an_etrecord(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _run({0: (20, 300), 1: (300, 600), 2: (15, 850)})
    dump(ETDump(run_data=[first]), tmp_path / "summary.etdp")
    assert main(["inspect", str(tmp_path / "summary.etdp"), "--by", "op-type"]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = [line.split()[1] for line in lines[2:-1]]
    assert sorted(keys) == ["0", "1", "DELEGATE_CALL", "Method::execute"]
    assert lines[-1] == "Execute: 1 run(s); share = % of Method::execute (over all runs)"
    shares = [float(line.split()[-2].rstrip("%")) for line in lines[2:-1]]
    assert sum(shares) == pytest.approx(100.0, abs=0.25)  # rounded to 0.1% each


def _two_blocks(tmp_path: Path) -> Path:
    """Two blocks both named Execute (two methods' runs: different events)."""

    def run(kernel: str, end: int) -> RunData:
        events = [
            Event(
                profile_event=ProfileEvent(kernel, instruction_id=0, start_time=10, end_time=end)
            ),
            Event(
                profile_event=ProfileEvent(
                    "OPERATOR_CALL", instruction_id=0, start_time=5, end_time=end + 5
                )
            ),
            Event(profile_event=ProfileEvent("Method::execute", start_time=0, end_time=end + 10)),
        ]
        return RunData(name="Execute", events=events)

    runs = [run("native_call_add.out", 100), run("native_call_mul.out", 200)] * 2
    path = tmp_path / "two.etdp"
    dump(ETDump(run_data=runs), path)
    return path


@pytest.mark.parametrize("by", ["op-type", "module"])
def test_blocks_of_one_name_are_labelled_with_their_index(
    by: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two_blocks(tmp_path)
    assert main(["inspect", str(path), "--by", by, "--target-time-scale", "ns"]) == 0
    lines = capsys.readouterr().out.splitlines()
    blocks = [line.split(": ")[0] + ": " + line.split()[1] for line in lines[2:-2]]
    assert set(blocks) == {"0: Execute", "1: Execute"}
    assert lines[-2:] == [
        "0: Execute: 2 run(s); share = % of Method::execute (over all runs)",
        "1: Execute: 2 run(s); share = % of Method::execute (over all runs)",
    ]
    if by == "op-type":
        body = {tuple(line.split()[:3]) for line in lines[2:-2]}
        assert ("0:", "Execute", "native_call_add.out") in body
        assert ("1:", "Execute", "native_call_mul.out") in body


def test_json_and_csv_say_the_block_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    path = _two_blocks(tmp_path)
    assert main(["inspect", str(path), "--by", "op-type", "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(b["block"], b["index"]) for b in data["blocks"]] == [("Execute", 0), ("Execute", 1)]
    kernels = {r["op_type"]: r["block_index"] for r in data["op_types"] if r["kind"] == "event"}
    assert kernels == {"native_call_add.out": 0, "native_call_mul.out": 1}
    assert main(["inspect", str(path), "--by", "op-type", "-f", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert header[:4] == ["block", "op_type", "kind", "count"] and header[-1] == "block_index"


def test_one_block_of_a_name_keeps_its_plain_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump(ETDump(run_data=[_run({0: (20, 300)})]), tmp_path / "one.etdp")
    assert main(["inspect", str(tmp_path / "one.etdp"), "--by", "op-type"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("Execute ") for line in lines[2:-1])
    assert lines[-1].startswith("Execute: 1 run(s)")


@pytest.mark.torch
def test_the_demo_without_its_etrecord_charges_as_with_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The demo's backend logs a per-call summary around its per-op events: without the
    ETRecord (no Debug Handle Map) the nesting in time makes it the wrapper it is with one,
    and the delegate's time splits the same way."""
    pytest.importorskip("torch")
    from delegate_lens.backends_demo._demo import run_demo

    out = tmp_path_factory.mktemp("demo")
    quiet = {"echo": lambda _: None, "show_table": False, "debug_buffer_size": 0}
    paths = run_demo("mlp", runs=2, out_dir=out, **quiet).paths
    bare = Inspector(etdump_path=paths["etdump"])
    linked = Inspector(etdump_path=paths["etdump"], etrecord=paths["etrecord"])
    [_, without] = bare.get_attribution()
    [_, with_record] = linked.get_attribution()
    assert without.roles == with_record.roles
    wrapped = [j for j, role in enumerate(without.roles) if role == RowRole.WRAPPER]
    names = {bare.tables[1].keys[j].name for j in wrapped}
    assert names == {"DELEGATE_CALL", "OPERATOR_CALL", "6"}  # 6: the summary of the call
    assert without.denominator == with_record.denominator == "Method::execute"
    assert sum(c.share for c in without.charges) == pytest.approx(1.0)
    unattributed = {c.key: c.total_time for c in without.charges if c.kind == "unattributed"}
    linked_rest = {c.key: c.total_time for c in with_record.charges if c.kind == "unattributed"}
    assert unattributed["DELEGATE_CALL (unattributed)"] == pytest.approx(
        linked_rest["DemoBackend (unattributed)"], rel=1e-9
    )
