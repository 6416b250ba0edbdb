"""Misbehaving plugins, loaded as real modules with ``-p`` (issue 24 defect 8): a
``print()`` in a hook never reaches machine-readable stdout (the command line sends what
plugins print to stderr, once, at its start: issue 31 item 3), a result of the wrong type
is named (never written into the output), ``sys.exit()`` in a hook is named instead of
ending the command silently.

At import (issue 35 item 5): what a plugin prints goes to stderr, for ``-p`` modules and
entry points alike, from the command line and from the library; ``sys.exit()`` (or any
other ``BaseException`` but ``KeyboardInterrupt``) is one line naming the plugin, exit 2.
A list answer with items of another type than the hook declares (``[1, None, b"x"]`` where
strings are due) is the plugin's failure, named, never written into the output."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import VECTORS

MLP = VECTORS / "mlp_xnnpack"
CLI = Path(__file__).resolve().parents[1] / "core" / "delegate_lens" / "cli"
INSPECT = [
    "inspect",
    str(MLP / "etdump.etdp"),
    "--etrecord",
    str(MLP / "etrecord.bin"),
    "-f",
    "json",
]
CHROME_TRACE = [*INSPECT[:-1], "chrome-trace"]  # written by a thread of its own

PLUGINS = {
    "noisy_plugin": """
        @hookimpl
        def dl_delegate_time_scale_array(backend_id, event_name, ticks):
            print("hello from a plugin")
            return None
    """,
    "chatty_plugin": """
        import sys

        print("chatty: imported")


        @hookimpl
        def dl_parse_delegate_metadata(backend_id, metadatas):
            print("chatty: parse", backend_id)
            return None


        @hookimpl
        def dl_delegate_time_scale_array(backend_id, event_name, ticks):
            print("chatty: ticks", len(ticks), flush=True)
            sys.stdout.write("chatty: written\\n")
            return None


        @hookimpl
        def dl_exporters():
            print("chatty: exporters")
            return []
    """,
    "bad_result_plugin": """
        @hookimpl
        def dl_delegate_time_scale_array(backend_id, event_name, ticks):
            return 42
    """,
    "exiting_plugin": """
        import sys

        @hookimpl
        def dl_delegate_time_scale_array(backend_id, event_name, ticks):
            sys.exit(0)
    """,
    "bad_exporters_plugin": """
        @hookimpl
        def dl_exporters():
            return 42
    """,
    "exiting_exporters_plugin": """
        import sys

        @hookimpl
        def dl_exporters():
            print("about to leave")
            sys.exit(0)
    """,
    "exiting_at_import_plugin": """
        import sys

        print("leaving at import")
        sys.exit(0)
    """,
    "base_exception_at_import_plugin": """
        class Stop(BaseException):
            pass

        raise Stop("not an Exception")
    """,
    "bad_items_plugin": """
        @hookimpl
        def dl_parse_delegate_metadata(backend_id, metadatas):
            return [1, None, b"x"]
    """,
}

ENTRY_POINT_PLUGIN = "from delegate_lens import hookimpl\nprint('entry point: imported')\n"


def _run(
    tmp_path: Path, plugin: str | None, command: list[str] = INSPECT
) -> subprocess.CompletedProcess[str]:
    for name, body in PLUGINS.items():
        source = "from delegate_lens import hookimpl\n" + textwrap.dedent(body)
        (tmp_path / f"{name}.py").write_text(source)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    argv = ["-p", plugin] if plugin else []
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *argv, *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> object:
    result = _run(tmp_path_factory.mktemp("plain"), None)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_print_in_a_hook_keeps_stdout_clean(tmp_path: Path, baseline: object) -> None:
    result = _run(tmp_path, "noisy_plugin")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == baseline  # JSON, unchanged
    assert "hello from a plugin" in result.stderr


@pytest.mark.parametrize("command", [INSPECT, CHROME_TRACE], ids=["json", "chrome-trace"])
def test_plugin_prints_go_to_stderr_and_stdout_stays_json(
    tmp_path: Path, command: list[str]
) -> None:
    """A plugin printing at import and in its hooks (print(), sys.stdout.write): stdout is
    the same JSON as without it, every line the plugin printed is on stderr."""
    plain = _run(tmp_path, None, command)
    assert plain.returncode == 0, plain.stderr
    result = _run(tmp_path, "chatty_plugin", command)
    assert result.returncode == 0, result.stderr
    assert result.stdout == plain.stdout  # byte for byte
    json.loads(result.stdout)
    printed = set(result.stderr.splitlines())
    assert {"chatty: imported", "chatty: exporters", "chatty: written"} <= printed
    assert any(line.startswith("chatty: ticks ") for line in printed)
    assert "chatty" not in result.stdout


def test_commands_write_their_output_through_their_own_stdout() -> None:
    """The command line sends ``sys.stdout`` to stderr for its whole run (what plugins
    print): a command writes through ``fileio.standard_output()``, never ``print()``
    without ``file=`` nor ``sys.stdout``."""
    offenders = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
                and not any(keyword.arg == "file" for keyword in node.keywords)
            ):
                offenders.append(f"{path.name}:{node.lineno} print() without file=")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr == "stdout"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                offenders.append(f"{path.name}:{node.lineno} sys.stdout")
    assert len(list(CLI.glob("*_cmd.py"))) > 10
    assert offenders == []


def test_result_of_the_wrong_type_is_named_not_written(tmp_path: Path, baseline: object) -> None:
    result = _run(tmp_path, "bad_result_plugin")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == baseline  # the next plugin answered
    assert "plugin 'bad_result_plugin'" in result.stderr
    assert "returned int 42, but the hook returns" in result.stderr


def test_exit_in_a_hook_with_a_fallback_is_named(tmp_path: Path, baseline: object) -> None:
    result = _run(tmp_path, "exiting_plugin")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == baseline
    assert "plugin 'exiting_plugin'" in result.stderr and "sys.exit(0)" in result.stderr


@pytest.mark.parametrize(
    ("plugin", "says"),
    [("bad_exporters_plugin", "returned int"), ("exiting_exporters_plugin", "sys.exit(0)")],
)
def test_hook_without_a_fallback_is_exit_2_naming_the_plugin(
    tmp_path: Path, plugin: str, says: str
) -> None:
    result = _run(tmp_path, plugin)
    assert result.returncode == 2
    assert result.stdout == ""
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"error: plugin '{plugin}'") and says in last
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- at import


@pytest.mark.parametrize(
    ("plugin", "says"),
    [
        ("exiting_at_import_plugin", "called sys.exit(0)"),
        ("base_exception_at_import_plugin", "Stop: not an Exception"),
    ],
)
def test_exit_at_import_is_one_line_naming_the_plugin(
    tmp_path: Path, plugin: str, says: str
) -> None:
    result = _run(tmp_path, plugin)
    assert result.returncode == 2
    assert result.stdout == ""
    last = result.stderr.splitlines()[-1]
    assert last == f"error: plugin module '{plugin}' (-p {plugin}) failed to load: {says}"
    assert "Traceback" not in result.stderr


def _entry_point(folder: Path, module: str, body: str) -> dict[str, str]:
    """A distribution ``hostile-ep 0.1`` in ``folder`` whose entry point ``hostile`` (group
    ``delegate_lens``) is ``module`` (``body``); the environment that finds it."""
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(body)
    info = folder / "hostile_ep-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-ep\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[delegate_lens]\nhostile = {module}\n")
    env = {k: v for k, v in os.environ.items() if k != "DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    return env


def test_exit_at_import_of_an_entry_point_is_one_line_naming_it(tmp_path: Path) -> None:
    env = _entry_point(tmp_path / "ep", "leaving_ep", "import sys\nsys.exit(0)\n")
    result = subprocess.run(
        [sys.executable, "-m", "delegate_lens", *INSPECT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: plugin 'hostile' (hostile-ep 0.1) failed to load (leaving_ep): called sys.exit(0)"
    ]


LIBRARY_USER = """
import sys
from delegate_lens.errors import PluginError
from delegate_lens.pluginmanager import build_plugin_manager

try:
    pm = build_plugin_manager(sys.argv[1:])
except PluginError as exc:
    print("PluginError:", exc)
else:
    names = [p for p in pm.plugin_sources if p.endswith("_plugin") or p == "hostile"]
    print("loaded:", ", ".join(sorted(names)))
"""


def _library_user(
    tmp_path: Path, options: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A script building a plugin manager with ``options`` (``-p`` modules of
    :data:`PLUGINS`); it prints the plugins it loaded, or the :class:`PluginError`."""
    environment = {**(env or os.environ)}
    for name, body in PLUGINS.items():
        source = "from delegate_lens import hookimpl\n" + textwrap.dedent(body)
        (tmp_path / f"{name}.py").write_text(source)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(tmp_path), environment.get("PYTHONPATH")])
    )
    return subprocess.run(
        [sys.executable, "-c", LIBRARY_USER, *options],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


def test_prints_at_import_go_to_stderr_for_a_library_user_too(tmp_path: Path) -> None:
    """Building the plugin manager from Python: what a ``-p`` module and an entry point
    print while they are imported goes to stderr; stdout holds the script's own lines."""
    env = _entry_point(tmp_path / "ep", "printing_ep", ENTRY_POINT_PLUGIN)
    result = _library_user(tmp_path, ["chatty_plugin"], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "loaded: chatty_plugin, hostile\n"
    assert {"chatty: imported", "entry point: imported"} <= set(result.stderr.splitlines())


def test_exit_at_import_is_a_plugin_error_for_a_library_user(tmp_path: Path) -> None:
    result = _library_user(tmp_path, ["exiting_at_import_plugin"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "PluginError: plugin module 'exiting_at_import_plugin' (-p exiting_at_import_plugin) "
        "failed to load: called sys.exit(0)\n"
    )
    assert "leaving at import" in result.stderr


# --------------------------------------------------------------------------- items of a list


@pytest.fixture(scope="module")
def metadata_etdump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MLP's ETDump with metadata on its delegate events (so that
    ``dl_parse_delegate_metadata`` is asked), written by ``etdump from-json``."""
    folder = tmp_path_factory.mktemp("metadata")
    view = json.loads((MLP / "etdump.json").read_text(encoding="utf-8"))
    for run in view["run_data"]:
        for event in run["events"]:
            profile = event.get("profile_event") or {}
            if "delegate_debug_metadata" in profile:
                profile["delegate_debug_metadata"] = list(b"meta")
    (folder / "view.json").write_text(json.dumps(view), encoding="utf-8")
    out = folder / "with_metadata.etdp"
    made = _run(folder, None, ["etdump", "from-json", str(folder / "view.json"), "-o", str(out)])
    assert made.returncode == 0, made.stderr
    return out


def test_list_answer_with_items_of_another_type_is_named_not_written(
    tmp_path: Path, metadata_etdump: Path
) -> None:
    command = ["inspect", str(metadata_etdump), "--etrecord", str(MLP / "etrecord.bin")]
    command += ["-f", "json"]
    plain = _run(tmp_path, None, command)
    assert plain.returncode == 0, plain.stderr
    result = _run(tmp_path, "bad_items_plugin", command)
    assert result.returncode == 0, result.stderr
    assert result.stdout == plain.stdout  # the built-in fallback answered instead
    warned = [line for line in result.stderr.splitlines() if "bad_items_plugin" in line]
    assert warned and all("failed in dl_parse_delegate_metadata" in line for line in warned)
    assert "returned list [1, None, b'x'], but the hook returns list[str]" in warned[0]
    assert "the next plugin answers" in warned[0]


@pytest.mark.parametrize(
    "answer", [[1, None, b"x"], ["a", 2], {1: "not a str key"}], ids=["mixed", "one", "key"]
)
def test_a_list_answer_is_checked_item_by_item(answer: object) -> None:
    from delegate_lens import hookimpl, hooks
    from delegate_lens.errors import PluginError, PluginWarning
    from delegate_lens.pluginmanager import build_plugin_manager

    class BadItems:
        @hookimpl
        def dl_parse_delegate_metadata(self, backend_id: str, metadatas: object) -> object:
            return answer

    pm = build_plugin_manager(autoload=False)
    pm.register(BadItems(), name="bad_items")
    metadatas = [b"a", b"b", b"c"]
    with pytest.warns(PluginWarning, match="plugin 'bad_items' .*dl_parse_delegate_metadata"):
        assert hooks.parse_delegate_metadata("B", metadatas, pm=pm) is metadatas  # fallback
    with pytest.raises(PluginError, match="but the hook returns list\\[str\\]"):
        hooks.parse_delegate_metadata("B", metadatas, pm=pm, strict=True)
