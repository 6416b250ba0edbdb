"""Property: with a multi-method ETRecord, a run is linked to the method that ran it or to
none, never to another one, and a linked row shows exactly that method's operators.

Methods are drawn from a small alphabet so that equal, prefix and look-alike methods
(same operators, other handles; delegates with other identifier maps) are frequent."""

from __future__ import annotations

import warnings
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_inspector_synthetic import framework, graph_json, prof

from delegate_lens.etdump import ETDump, RunData, dumps
from delegate_lens.etrecord import ETRecord
from delegate_lens.inspector import Inspector

OP_TYPES = {
    "add": "aten.add.Tensor",
    "mul": "aten.mul.Tensor",
    "tan": "aten.tan.default",
}
DELEGATED_OP = "aten.convolution.default"

# an instruction: ("op", name) or ("delegate", identifiers it maps; empty: no map)
instruction = st.one_of(
    st.tuples(st.just("op"), st.sampled_from(sorted(OP_TYPES))),
    st.tuples(st.just("delegate"), st.frozensets(st.integers(0, 2), max_size=3)),
)
method = st.tuples(
    st.lists(instruction, min_size=1, max_size=3),
    st.sampled_from([1, 11]),  # first debug handle: same operators, other handles
)


def _etrecord(methods: list[Any]) -> ETRecord:
    entries: dict[str, bytes] = {"ETRECORD_V0": b""}
    handle_map: dict[str, Any] = {}
    delegate_map: dict[str, Any] = {}
    for m, (instructions, base) in enumerate(methods):
        name = f"m{m}"
        nodes = []
        handles: dict[str, int] = {}
        delegates: dict[str, Any] = {}
        for i, (kind, what) in enumerate(instructions):
            handle = base + i
            handles[str(i)] = handle
            if kind == "op":
                nodes.append((f"n{i}_{what}", OP_TYPES[what], handle))
            else:
                nodes.append((f"n{i}_conv", DELEGATED_OP, handle))
                ids = {str(ident): [handle] for ident in sorted(what)}
                delegates[str(i)] = {"name": "NPU", "delegate_map": ids}
        key = f"edge_dialect_exported_program/{name}"
        entries[key] = graph_json(nodes)
        for suffix in ("_state_dict", "_constants", "_example_inputs"):
            entries[key + suffix] = b""
        handle_map[name] = handles
        delegate_map[name] = delegates
    import json

    entries["debug_handle_map"] = json.dumps(handle_map).encode()
    entries["delegate_map"] = json.dumps(delegate_map).encode()
    return ETRecord.from_entries(entries)


def _run(instructions: list[Any], t0: int) -> RunData:
    """What the runtime logs for one run: every instruction, every mapped identifier."""
    events = []
    t = t0 + 10
    for i, (kind, what) in enumerate(instructions):
        if kind == "op":
            events.append(prof(f"native_call_{what}.out", i, t + 2, t + 50))
            events.append(prof("OPERATOR_CALL", i, t, t + 60))
        else:
            for k, ident in enumerate(sorted(what)):
                events.append(prof(None, i, t + 5 + k, t + 6 + k, delegate_debug_id_int=ident))
            events.append(prof("DELEGATE_CALL", i, t, t + 60))
        t += 100
    events.append(framework("Method::execute", t0, t + 10))
    return RunData(name="Execute", events=events)


def _expected_ops(instructions: list[Any], iid: int, identifier: Any) -> list[str]:
    kind, what = instructions[iid]
    if kind == "op":
        return [OP_TYPES[what]]
    if identifier is None or identifier in what:
        return [DELEGATED_OP]
    return []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(method, min_size=2, max_size=3),
    st.lists(st.integers(0, 2), min_size=1, max_size=6),
)
def test_a_run_is_linked_to_its_own_method_or_to_none(methods: list[Any], order: list[int]) -> None:
    ran = [m % len(methods) for m in order]
    runs = [_run(methods[m][0], 1000 * k) for k, m in enumerate(ran)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(etdump_data=dumps(ETDump(run_data=runs)), etrecord=_etrecord(methods))
        blocks = inspector.event_blocks
    for block in blocks:
        truth = {ran[r] for r in block.run_indices}  # identical runs of several methods merge
        if block.method is not None:
            assert len(truth) == 1 and block.method == f"m{next(iter(truth))}", (
                block.method,
                truth,
            )
        for event in block.events:
            if event.name == "Method::execute":
                continue
            assert event.method in (None, block.method)
            if not event.op_types:
                continue
            assert event.instruction_id is not None
            for m in truth:  # linked rows show the operators of every method that ran
                expected = _expected_ops(
                    methods[m][0], event.instruction_id, event.delegate_debug_identifier
                )
                assert event.op_types == expected, (event.name, m, event.op_types)
