"""Output paths are checked before any work: a command that cannot write its result says
so at once (one line, exit 2), before running anything or printing a result."""

from __future__ import annotations

from pathlib import Path

import pytest

from delegate_lens.cli import main


@pytest.mark.torch
@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["--etdump", "{tmp}"], "it is a folder; give a file name"),
        (["--etdump", "{tmp}/no/such/run.etdp"], "does not exist"),
        (["--etdump", "{tmp}/run.etdp", "--debug-buffer", "{tmp}"], "it is a folder"),
        (["--etdump", "{tmp}/x", "--debug-buffer", "{tmp}/x"], "it is also the output"),
    ],
)
def test_verify_checks_its_outputs_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], outputs: list[str], message: str
) -> None:
    from test_bundled_runtime import bundle

    program = bundle().save(tmp_path / "ok.bpte")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", str(program), *(o.format(tmp=tmp_path) for o in outputs)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no test case ran
    assert captured.err.count("\n") == 1 and message in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.bpte"]
