"""The help texts name every format `inspect --format` takes, from the exporters' registry
(the built-ins, installed plugins and plugins registered at run time), never a fixed list."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from delegate_lens import hookimpl
from delegate_lens.cli import main
from delegate_lens.exporters import Exporter, get_exporters

pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    return capsys.readouterr().out


def _inspect_line(text: str) -> str:
    """The top-level help's entry of `inspect`, its wrapped lines joined."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("inspect "))
    entry = [lines[start]]
    for line in lines[start + 1 :]:
        if line.startswith(" " * 10) and not line.strip().startswith("report "):
            entry.append(line.strip())
        else:
            break
    return " ".join(entry)


def test_the_top_level_help_lists_every_registered_format(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping
    line = _inspect_line(_help(["--help"], capsys))
    names = line.split("(formats: ", 1)[1].rstrip(")").split(", ")
    assert names[0] == "table"  # the default first
    assert sorted(names) == sorted(get_exporters())
    assert {"perfetto", "chrome-trace", "tsv"} <= set(names)


def test_a_format_a_plugin_adds_shows_in_both_helps(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from delegate_lens.pluginmanager import get_plugin_manager

    class Names:
        @hookimpl
        def dl_exporters(self) -> Any:
            return [Exporter("block-names", "one block name per line", lambda i, s: None)]

    get_plugin_manager().register(Names(), name="names_for_help")
    monkeypatch.setenv("COLUMNS", "400")
    assert "block-names" in _inspect_line(_help(["--help"], capsys))
    inspect_help = _help(["inspect", "--help"], capsys)
    fmt = next(line for line in inspect_help.splitlines() if "output format:" in line)
    assert "block-names" in fmt and "perfetto" in fmt and "(default: table)" in fmt


def test_help_still_answers_when_a_plugin_is_broken(tmp_path: Any) -> None:
    """A plugin whose exporters are bad fails the command that uses them, not the help:
    the built-in formats are listed."""
    module = tmp_path / "bad_exporters_plugin.py"
    module.write_text(
        "from delegate_lens import hookimpl\n\n"
        "@hookimpl\n"
        "def dl_exporters():\n"
        "    return ['not an exporter']\n"
    )
    env_path = f"{tmp_path}"
    code = (
        "import sys\n"
        f"sys.path.insert(0, {env_path!r})\n"
        "from delegate_lens.pluginmanager import get_plugin_manager\n"
        "import bad_exporters_plugin\n"
        "get_plugin_manager().register(bad_exporters_plugin, name='bad')\n"
        "from delegate_lens.cli import main\n"
        "main(['--help'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert done.returncode == 0, done.stderr
    line = _inspect_line(done.stdout)
    assert "table, chrome-trace, csv, json, perfetto, tsv" in line
