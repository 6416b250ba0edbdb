"""The ``plugins`` class of ``benchmarks/hostile.py``: misbehaving plugins, loaded with ``-p``
and as entry points (issues 24 and 35).

In a hook: prints, answers of the wrong type, ``sys.exit()``, exceptions, recursion, a bad
signature. At import: prints, ``sys.exit(0)``, a ``BaseException`` of its own, for ``-p``
modules and entry points alike. A list answer whose items have the wrong type
(``[1, None, b"x"]`` where strings are due), on an ETDump whose delegate events carry
metadata (so that the parsing hook is asked). Each run must print the same stdout as the
run without the plugin (exit 0, a warning naming it) or stop with one ``error:`` line naming
it (exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hostile_common import MLP, Tally, run

PLUGINS = {
    "p_print": "def dl_delegate_time_scale_array(backend_id, event_name, ticks):\n    print('noise')",
    "p_42": "def dl_delegate_time_scale_array(backend_id, event_name, ticks):\n    return 42",
    "p_str": "def dl_delegate_time_scale(backend_id, event_name, ticks):\n    return 'fast'",
    "p_exit0": "def dl_delegate_time_scale_array(backend_id, event_name, ticks):\n    import sys; sys.exit(0)",
    "p_exit3": "def dl_exporters():\n    import sys; sys.exit(3)",
    "p_raise": "def dl_delegate_time_scale_array(backend_id, event_name, ticks):\n    raise RuntimeError('x')",
    "p_exporters_42": "def dl_exporters():\n    return 42",
    "p_exporters_print": "def dl_exporters():\n    print('noise')",
    "p_keyerror": "def dl_delegate_time_scale_array(backend_id, event_name, ticks):\n    return {}['k']",
    "p_recursion": "def dl_delegate_time_scale_array(backend_id, event_name, ticks):\n    return dl_delegate_time_scale_array(backend_id, event_name, ticks)",
    "p_bad_signature": "def dl_exporters(nonsense):\n    return []",
    "p_import_error": "import no_such_module_anywhere",
    "p_print_at_import": "import sys\nprint('noise at import')",
    "p_exit0_at_import": "import sys\nsys.exit(0)",
    "p_base_exception_at_import": "import sys\nclass Stop(BaseException): pass\nraise Stop('x')",
    "p_bad_items": "def dl_parse_delegate_metadata(backend_id, metadatas):\n    return [1, None, b'x']",
}
"""``-p`` modules; a body starting with ``import`` is the module's code, any other a hook."""

ENTRY_POINTS = {
    "ep_print_at_import": "print('noise at import')\n",
    "ep_exit0_at_import": "import sys\nsys.exit(0)\n",
}
"""Modules loaded as the entry point ``hostile`` of a distribution ``hostile-ep``."""


def _with_path(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    return env


def _entry_point(folder: Path, module: str, body: str) -> dict[str, str]:
    """A distribution in ``folder`` whose entry point is ``module``; the env finding it."""
    folder.mkdir()
    (folder / f"{module}.py").write_text(body)
    info = folder / "hostile_ep-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-ep\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[delegate_lens]\nhostile = {module}\n")
    return _with_path(folder)


def _metadata_etdump(tally: Tally, work: Path, timeout: float) -> Path:
    """The MLP's ETDump with metadata on every delegate event (``etdump from-json``)."""
    view = json.loads((MLP / "etdump.json").read_text(encoding="utf-8"))
    for run_data in view["run_data"]:
        for event in run_data["events"]:
            profile = event.get("profile_event") or {}
            if "delegate_debug_metadata" in profile:
                profile["delegate_debug_metadata"] = list(b"meta")
    (work / "metadata.json").write_text(json.dumps(view), encoding="utf-8")
    out = work / "metadata.etdp"
    run(
        tally, ["etdump", "from-json", str(work / "metadata.json"), "-o", str(out)], timeout=timeout
    )
    return out


def _judge(tally: Tally, name: str, plain: str, result: tuple[int | None, str, str]) -> None:
    code, out, err = result
    if code == 0 and out != plain:
        tally.bad_files += 1
        tally.notes.append(f"{name}: stdout differs from the run without it")
    if code not in (0, 2) or (code == 2 and name not in err):
        tally.notes.append(f"{name}: exit {code}, plugin not named: {err.strip()[-120:]}")
        tally.bad_files += 1


def plugins(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("plugins")
    folder = work / "plugins"
    folder.mkdir()
    for name, body in PLUGINS.items():
        text = "from delegate_lens import hookimpl\n\n" + (
            body if body.startswith("import") else "@hookimpl\n" + body + "\n"
        )
        (folder / f"{name}.py").write_text(text)
    env = _with_path(folder)
    etdump = str(MLP / "etdump.etdp")
    argv = ["inspect", etdump, "--etrecord", str(MLP / "etrecord.bin"), "-f", "json"]
    _, plain, _ = run(tally, argv, timeout=args.timeout, env=env)
    for name in PLUGINS:
        _judge(tally, name, plain, run(tally, ["-p", name, *argv], timeout=args.timeout, env=env))
    for name, body in ENTRY_POINTS.items():
        ep_env = _entry_point(work / name, name, body)
        _judge(tally, "hostile", plain, run(tally, argv, timeout=args.timeout, env=ep_env))
    metadata = [argv[0], str(_metadata_etdump(tally, work, args.timeout)), *argv[2:]]
    _, plain, _ = run(tally, metadata, timeout=args.timeout, env=env)
    found = run(tally, ["-p", "p_bad_items", *metadata], timeout=args.timeout, env=env)
    _judge(tally, "p_bad_items", plain, found)
    if "plugin 'p_bad_items'" not in found[2]:
        tally.bad_files += 1
        tally.notes.append("p_bad_items: its list of the wrong items was not named")
    return tally
