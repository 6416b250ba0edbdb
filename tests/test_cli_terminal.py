"""``inspect --format table`` on a terminal: colour and a delayed progress bar (rich) only
on a TTY without NO_COLOR; plain text, byte for byte, everywhere else."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from delegate_lens.cli import main
from delegate_lens.cli._terminal import (
    delayed_progress,
    is_fancy_terminal,
    require_rich,
    rich_console,
)
from delegate_lens.errors import MissingExtraError

pytest.importorskip("rich")
pty = pytest.importorskip("pty")

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def inspect_args(vectors_dir: Path) -> list[str]:
    folder = vectors_dir / "mlp_xnnpack"
    return ["inspect", str(folder / "etdump.etdp"), "--etrecord", str(folder / "etrecord.bin")]


def without_warnings(text: str) -> str:
    """The terminal shows stderr too: drop the Inspector's one-line warnings."""
    return "".join(line for line in text.splitlines(True) if not line.startswith("warning: "))


def run_on_pty(args: list[str], **env: str) -> bytes:
    """Run the CLI with stdout and stderr on a pseudo-terminal; what the terminal got."""
    master, slave = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    environ.update(COLUMNS="250", TERM="xterm-256color", **env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "delegate_lens", *args], stdout=slave, stderr=slave, env=environ
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0, out[-500:]
    return out


@pytest.fixture(scope="module")
def plain(vectors_dir: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "delegate_lens", *inspect_args(vectors_dir)],
        capture_output=True,
        check=True,
        # the same width as the pseudo-terminal, so both fit the table alike
        env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "COLUMNS": "250"},
    ).stdout
    assert not ANSI.search(out)  # piped: never colour
    return out.decode()


def test_terminal_gets_colour_and_the_same_table(vectors_dir: Path, plain: str) -> None:
    out = run_on_pty(inspect_args(vectors_dir))
    assert ANSI.search(out)
    assert b"\x1b[1m" in out  # the bold header
    assert b"\x1b[32mXnnpackBackend" in out  # a delegated row's backend in green
    text = ANSI.sub(b"", out).decode().replace("\r\n", "\n")
    assert without_warnings(text) == plain


def test_no_color_on_a_terminal_is_plain(vectors_dir: Path, plain: str) -> None:
    out = run_on_pty(inspect_args(vectors_dir), NO_COLOR="1")
    assert not ANSI.search(out)
    assert without_warnings(out.decode().replace("\r\n", "\n")) == plain


def test_other_formats_and_files_stay_plain_on_a_terminal(
    vectors_dir: Path, tmp_path: Path
) -> None:
    out = run_on_pty([*inspect_args(vectors_dir), "-f", "tsv"])
    assert not ANSI.search(out)
    target = tmp_path / "t.txt"
    out = run_on_pty([*inspect_args(vectors_dir), "-o", str(target)])
    assert without_warnings(out.decode()) == ""
    assert not ANSI.search(target.read_bytes())


def test_the_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    tty, pipe = FakeTTY(), io.StringIO()
    assert is_fancy_terminal(tty, {}) and not is_fancy_terminal(pipe, {})
    assert not is_fancy_terminal(tty, {"NO_COLOR": "1"})
    assert is_fancy_terminal(tty, {"NO_COLOR": ""})  # no-color.org: only a non-empty value
    assert not is_fancy_terminal(tty, {"TERM": "dumb"})
    assert rich_console(tty, {}) is not None and rich_console(pipe, {}) is None
    monkeypatch.setitem(sys.modules, "rich", None)  # rich not installed
    assert rich_console(tty, {}) is None  # plain output, no error
    with pytest.raises(MissingExtraError, match=r"delegate-lens\[rich\]"):
        require_rich()


def test_progress_shows_only_after_the_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    console = rich_console(FakeTTY(), {})
    monkeypatch.delenv("NO_COLOR", raising=False)
    quick = FakeTTY()
    monkeypatch.setattr(sys, "stderr", quick)
    with delayed_progress(console, delay=5.0) as steps:
        steps.step("quick work")
    assert quick.getvalue() == ""
    slow = FakeTTY()
    monkeypatch.setattr(sys, "stderr", slow)
    with delayed_progress(console, delay=0.05) as steps:
        steps.step("slow work", total=2)
        steps.advance()
        time.sleep(0.4)
    assert "slow work" in slow.getvalue()
    with delayed_progress(None, delay=0.0) as steps:  # no console: nothing, no error
        steps.step("nothing")
        steps.advance()


def test_plain_in_process_output_unchanged(
    vectors_dir: Path,
    plain: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # the width the plain table was made at
    assert main(inspect_args(vectors_dir)) == 0
    assert capsys.readouterr().out == plain
