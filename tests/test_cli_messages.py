"""What the commands say besides their output: a warning once and only where it matters."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

DEBUG_WARNING = "refer to a debug buffer but none was given"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["inspect", "{v}/etdump.etdp", "--etrecord", "{v}/etrecord.bin"], 0),
        (["inspect", "{v}/etdump.etdp", "-f", "csv"], 0),
        (["report", "{v}/etdump.etdp", "--etrecord", "{v}/etrecord.bin", "-o", "r.html"], 0),
        (
            # (5 runs: a verdict at --alpha 0.1; at 0.05 no row could be tested, exit 2)
            [
                "compare",
                "{v}/etdump.etdp",
                "{v}/etdump.etdp",
                "--etrecord",
                "{v}/etrecord.bin",
                "--alpha",
                "0.1",
            ],
            0,
        ),
        # the JSON holds the debug values (as null): said there, once
        (["inspect", "{v}/etdump.etdp", "-f", "json", "-o", "i.json"], 1),
    ],
)
def test_missing_debug_buffer_is_said_once_where_values_are_used(
    vectors_dir: Path, tmp_path: Path, args: list[str], said: int
) -> None:
    v = vectors_dir / "mlp_xnnpack"  # logs debug values (its buffer is debug.bin)
    result = _cli(*(a.format(v=v) for a in args), cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr.count(DEBUG_WARNING) == said, result.stderr


def test_missing_debug_buffer_is_not_said_before_an_error(
    vectors_dir: Path, tmp_path: Path
) -> None:
    v = vectors_dir / "mlp_xnnpack"
    result = _cli("report", str(v / "etdump.etdp"), "--run", "99", "-o", "r.html", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "{v}/etdump.etdp", "--etrecord", "{v}/etrecord.bin", "-f", "json"],
        ["inspect", "{v}/etdump.etdp", "-o", "{out}/i.csv", "-f", "csv"],
        ["report", "{v}/etdump.etdp", "-o", "{out}/r.html"],
        ["numerics", "{v}/etdump.etdp", "--etrecord", "{v}/etrecord.bin", "-o", "{out}/g.json"],
    ],
)
def test_an_empty_debug_buffer_is_the_same_error_in_every_command(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    from delegate_lens.cli import main

    empty = tmp_path / "debug.bin"
    empty.write_bytes(b"")
    out = tmp_path / "out"
    out.mkdir()
    v = vectors_dir / "mlp_xnnpack"
    with pytest.raises(SystemExit) as exit_info:
        main([*(a.format(v=v, out=out) for a in args), "--debug-buffer", str(empty)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"error: --debug-buffer {empty}: the debug buffer is empty (0 bytes); give the buffer "
        "the run wrote with this ETDump\n"
    )
    assert captured.out == "" and list(out.iterdir()) == []


@pytest.mark.usefixtures("fresh_plugin_manager")
def test_blocking_a_plugin_no_one_has_is_said(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from delegate_lens.cli import main

    etdump = str(vectors_dir / "mlp_xnnpack" / "etdump.etdp")
    capsys.readouterr()
    assert main(["inspect", etdump, "-f", "csv", "-p", "no:nosuch"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "warning: -p no:nosuch: no plugin is called 'nosuch'; nothing blocked "
        "(delegate-lens plugins lists their names)\n"
    )
    assert main(["inspect", etdump, "-f", "csv", "-p", "no:mapping_validator"]) == 0
    assert capsys.readouterr().err == ""  # a built-in by its short name: blocked, quietly


def _subcommands() -> list[tuple[str, argparse.ArgumentParser]]:
    from delegate_lens.cli import build_parser

    found = []

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append((f"{prefix}{name}", sub))
                    walk(sub, f"{prefix}{name} ")

    walk(build_parser(), "")
    return found


def test_options_are_spelled_the_same_in_every_command() -> None:
    """-f/--format wherever a format is chosen, -o/--output wherever a file is written."""
    pairs = {"--format": "-f", "--output": "-o"}
    checked = set()
    for name, parser in _subcommands():
        for action in parser._actions:
            for long, short in pairs.items():
                if long in action.option_strings:
                    assert short in action.option_strings, f"{name}: {long} without {short}"
                    checked.add((name, long))
    assert {"numerics", "compare", "plugins", "check-backend", "inspect", "query"} <= {
        name for name, option in checked if option == "--format"
    }
