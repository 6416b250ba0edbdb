"""An ETDump and an ETRecord whose every name is hostile to an HTML page: event names, run
names, delegate identifiers and metadata, node names, op types, module paths and types,
stack traces, the backend's name (for the report's tests and ``benchmarks/hostile.py``).

Written by the project's own writers (``delegate_lens.etdump.dumps``, an ETRecord's entries
as the reference lays them out). Each name tries to change how the page parses: end or
re-open a ``<script>`` element, open an HTML comment inside one (``<!--<script>``), break out
of an attribute, end a JavaScript string (U+2028, U+2029), fill a template slot of the
page (``{{DATA}}``), or be very long or outside the Basic Multilingual Plane.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dumps

PWNED = "__dlPwned"
"""The global a name's script sets if it ever runs (the tests check it stays undefined)."""

HOSTILE_NAMES: tuple[str, ...] = (
    "<!--<script>",
    f"</script><script>window.{PWNED}=1</script>",
    "</script><script>alert(1)</script>",
    f'"onmouseover="window.{PWNED}=2" x="',
    f"'><img src=x onerror=window.{PWNED}=3>",
    "line\u2028separator\u2029paragraph",
    "]]><![CDATA[",
    "{{DATA}}",
    "{{SCRIPT}}{{TITLE}}{{x}}",
    "&amp;&lt;&#x3c;\\u003c",
    "</SCRIPT ><!-- -->",
    "\U0001d518\U0001d52b\U0001d526 \U0001f600 non-BMP",
    "long_" + "<x>" * 1500,
)
"""Distinct names (in a module path or type, ``,`` and ``;`` become ``_``: they separate an
``nn_module_stack``'s frames)."""

BACKEND = "<!--<script>Backend</script>"
TITLE = "<!--<script>{{DATA}}</title>"
DELEGATED = 3
"""The last three nodes run in one delegate call: the first two as one fused identifier, the
last decomposed into two identifiers."""


@attrs.frozen
class HostileFiles:
    etdump: Path
    etrecord: Path
    names: tuple[str, ...]
    n_rows: int
    """Rows of the Inspector's tables (every block)."""


def _node(i: int, name: str, previous: str | None) -> dict[str, object]:
    frame = name.replace(",", "_").replace(";", "_")
    inputs = (
        [] if previous is None else [{"name": "self", "arg": {"as_tensor": {"name": previous}}}]
    )
    return {
        "name": name,
        "target": name,  # no dialect prefix: the op type is the name itself
        "inputs": inputs,
        "outputs": [{"as_tensor": {"name": name}}],
        "metadata": {
            "debug_handle": str(i + 1),
            "stack_trace": f'File "{name}.py", line {i}, in forward\n    {name}',
            "nn_module_stack": f"L__self__,,{frame};L__self__l{i},layers.{i}.{frame},{frame}",
        },
    }


def etrecord_entries(names: tuple[str, ...] = HOSTILE_NAMES) -> dict[str, bytes]:
    """The ETRecord: one node per name in a chain; the last :data:`DELEGATED` nodes run in
    one delegate call of backend :data:`BACKEND`, the other nodes each by a kernel."""
    nodes = [_node(i, name, names[i - 1] if i else None) for i, name in enumerate(names)]
    key = "edge_dialect_exported_program/forward"
    entries = {
        "ETRECORD_V0": b"",
        key: json.dumps({"graph_module": {"graph": {"nodes": nodes}}}).encode(),
    }
    for suffix in ("_state_dict", "_constants", "_example_inputs"):
        entries[key + suffix] = b""
    n = len(names)
    portable = n - DELEGATED
    handle_map: dict[str, object] = {str(i): i + 1 for i in range(portable)}
    handle_map[str(portable)] = list(range(portable + 1, n + 1))
    entries["debug_handle_map"] = json.dumps({"forward": handle_map}).encode()
    identifiers = {names[portable]: [portable + 1, portable + 2]}  # a fused group
    identifiers.update({names[i]: [i + 1] for i in range(portable + 2, n)})
    identifiers["\u2028decomposed {{DATA}}"] = [n]  # the last node: two identifiers
    delegate = {str(portable): {"name": BACKEND, "delegate_map": identifiers}}
    entries["delegate_map"] = json.dumps({"forward": delegate}).encode()
    return entries


def etdump_bytes(names: tuple[str, ...] = HOSTILE_NAMES, runs: int = 2) -> bytes:
    """The ETDump: per run (named by a hostile name), a kernel event named by each portable
    node's name inside its ``OPERATOR_CALL``, the delegate call with one event per delegate
    identifier (hostile metadata bytes), and ``Method::execute``."""
    n = len(names)
    portable = n - DELEGATED
    run_data = []
    for r in range(runs):
        events, t = [], 10
        for i in range(portable):
            kernel = ProfileEvent(
                name=names[i], instruction_id=i, start_time=t + 5, end_time=t + 95
            )
            call = ProfileEvent(
                name="OPERATOR_CALL", instruction_id=i, start_time=t, end_time=t + 100
            )
            events += [Event(profile_event=kernel), Event(profile_event=call)]
            t += 110 + r
        start = t
        for i in range(portable, n):
            if i == portable + 1:
                continue  # fused into the identifier of node ``portable``
            event = ProfileEvent(
                instruction_id=portable,
                delegate_debug_id_str=names[i],
                delegate_debug_metadata=names[(i + 1) % n].encode(),
                start_time=t + 5,
                end_time=t + 50,
            )
            events.append(Event(profile_event=event))
            t += 60
        call = ProfileEvent(
            name="DELEGATE_CALL", instruction_id=portable, start_time=start, end_time=t
        )
        execute = ProfileEvent(
            name="Method::execute", instruction_id=0, chain_index=-1, start_time=0, end_time=t + 10
        )
        events += [Event(profile_event=call), Event(profile_event=execute)]
        run_data.append(RunData(name=names[r % n], events=events))
    return dumps(ETDump(run_data=run_data))


def write_hostile_files(folder: Path, stem: str = "<!--<script>{{DATA}}") -> HostileFiles:
    """Write the ETDump (named ``stem``.etdp: the report's default title is its file name)
    and the ETRecord (a zip of :func:`etrecord_entries`) into ``folder``."""
    import zipfile

    from delegate_lens.inspector import Inspector

    etdump = folder / f"{stem}.etdp"
    etdump.write_bytes(etdump_bytes())
    etrecord = folder / f"{stem}.etrecord"
    with zipfile.ZipFile(etrecord, "w") as archive:
        for name, data in etrecord_entries().items():
            archive.writestr(name, data)
    inspector = Inspector(etdump_path=etdump, etrecord=str(etrecord))
    return HostileFiles(etdump, etrecord, HOSTILE_NAMES, sum(t.n_rows for t in inspector.tables))
