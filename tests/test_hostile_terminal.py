"""Names read from files cannot drive the terminal (issue 24 defect 7): control characters
in event names, delegate identifiers and paths are printed escaped by ``etdump summary``,
``inspect``, ``query`` and in error lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.cli import main
from delegate_lens.cli._terminal import escape_controls

MLP = VECTORS / "mlp_xnnpack"
TITLE = "\x1b]0;pwned\x07"  # sets the terminal's title
CSI = "\x9b2J"  # C1 control: clears the screen on some terminals


def _crafted(tmp_path: Path) -> Path:
    view = json.loads((MLP / "etdump.json").read_text())
    for block in view["run_data"]:
        for event in block["events"]:
            profile = event.get("profile_event")
            if profile and profile.get("name") == "native_call__to_dim_order_copy.out":
                profile["name"] = f"evil{TITLE}{CSI}\rname"
            elif profile and profile.get("delegate_debug_id_str"):
                profile["delegate_debug_id_str"] += "\x1b[31m\u202e"
    source = tmp_path / "crafted.json"
    source.write_text(json.dumps(view))
    out = tmp_path / "crafted.etdp"
    assert main(["etdump", "from-json", str(source), "-o", str(out)]) == 0
    return out


def _clean(text: str) -> None:
    for char in ("\x1b", "\x07", "\x9b", "\r", "\u202e"):
        assert char not in text, repr(text)


def test_escape_controls() -> None:
    assert escape_controls(f"a{TITLE}b\tc\nd\u202e") == "a\\x1b]0;pwned\\x07b\tc\nd\\u202e"
    assert escape_controls("plain é ✓") == "plain é ✓"


def test_etdump_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    etdump = _crafted(tmp_path)
    capsys.readouterr()
    assert main(["etdump", "summary", str(etdump)]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "evil\\x1b]0;pwned\\x07" in out


def test_inspect_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    etdump = _crafted(tmp_path)
    capsys.readouterr()
    assert main(["inspect", str(etdump), "--etrecord", str(MLP / "etrecord.bin")]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "\\x1b" in out


def test_query_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("duckdb")
    etdump = _crafted(tmp_path)
    assert main(["collect", str(etdump), "-o", str(tmp_path / "D"), "-q"]) == 0
    capsys.readouterr()
    sql = "select distinct event_name from events order by 1"
    assert main(["query", str(tmp_path / "D"), sql]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "evil\\x1b" in out


def test_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["etdump", "summary", str(tmp_path / f"missing{TITLE}.etdp")])
    _clean(capsys.readouterr().err)
