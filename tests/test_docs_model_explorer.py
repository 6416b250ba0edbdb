"""docs/model-explorer.md: the python block runs torch-free on the mlp_xnnpack vector's
files, and the CLI sample lists what the command writes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docblocks import DOCS, blocks, run_blocks_torch_free

DOC = DOCS / "model-explorer.md"

pytest.importorskip("delegate_lens_model_explorer")


@pytest.fixture
def workdir(tmp_path: Path, vectors_dir: Path) -> Path:
    for name in ("etdump.etdp", "etrecord.bin"):
        shutil.copy(vectors_dir / "mlp_xnnpack" / name, tmp_path / name)
    return tmp_path


def test_python_example_runs_without_torch(workdir: Path) -> None:
    assert len(blocks(DOC)) == 1
    run_blocks_torch_free(DOC, "docs_model_explorer_example", workdir)
    assert (workdir / "me-python" / "graph.json").is_file()


def test_cli_sample_matches_the_command(workdir: Path) -> None:
    ((_, sample),) = blocks(DOC, "text")
    lines = sample.splitlines()
    command = lines[0].removeprefix("$ ").split()
    assert command[0] == "delegate-lens" and lines[1] == "$ ls me"
    subprocess.run(
        [sys.executable, "-m", "delegate_lens", *command[1:]],
        cwd=workdir,
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert sorted(p.name for p in (workdir / "me").iterdir()) == lines[2:]
    # the viewing command names files the command wrote
    view = blocks(DOC, "sh")[1][1].split()
    assert view[:2] == ["model-explorer", "me/graph.json"]
    paths = view[2].removeprefix("--node_data_paths=").split(",")
    assert paths and all((workdir / path).is_file() for path in paths)
