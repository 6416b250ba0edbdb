"""Misbehaving plugins, loaded as real modules with ``-p`` (issue 24 defect 8): a
``print()`` in a hook never reaches machine-readable stdout (the command line sends what
plugins print to stderr, once, at its start: issue 31 item 3), a result of the wrong type
is named (never written into the output), ``sys.exit()`` in a hook is named instead of
ending the command silently."""

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
}


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
