"""A clone holds everything its tests, docs, benchmarks and CI need: no file names a path
outside the repository, and the reference vectors it carries are whole and described."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, VECTORS

SCANNED = (
    "tests",
    "benchmarks",
    "docs",
    "scripts",
    ".ci",
    "core",
    "plugins",
    "README.md",
    "CONTRIBUTING.md",
)
_SHARED = "sha" + "red"  # spelled apart so that this file does not match itself
OUTSIDE = re.compile(
    rf"{_SHARED}/vectors|{_SHARED}/spec|\.\./{_SHARED}"  # the folder beside the clone
    rf"|[\"']{_SHARED}[\"']\s*/\s*[\"'](?:vectors|spec)[\"']"  # ... as path parts
    r"|\b(?:REPO|ROOT)\.parent\b"  # the folder that holds the repository
    r"|/wor"
    r"k/"  # an absolute path into the workplace
)
CLIMB = re.compile(
    r"__file__\)(?:\.resolve\(\))?((?:\.parent\b)+)|\.parents\[(\d+)\]((?:\.parent\b)*)"
)
"""Climbing from a file's own path: ``.parent`` steps or ``.parents[N]``."""


def climbs_out(line: str, depth: int) -> bool:
    """Whether ``line`` climbs above the repository from a file ``depth`` folders below it."""
    for match in CLIMB.finditer(line):
        if match.group(1) is not None:
            up = match.group(1).count(".parent")
        else:
            up = int(match.group(2)) + 1 + match.group(3).count(".parent")
        if up > depth + 1:
            return True
    return False


VECTOR_DIRS = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable", "gpt_portable_big")


def _tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *SCANNED],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist)
        names = [
            str(p.relative_to(REPO))
            for top in SCANNED
            for p in ((REPO / top).rglob("*") if (REPO / top).is_dir() else [REPO / top])
            if p.is_file()
        ]
    files = []
    for name in names:
        path = REPO / name
        if (
            path.suffix in {".xz", ".bin", ".pte", ".etdp", ".bpte", ".png", ".so"}
            or not path.is_file()
        ):
            continue
        files.append(path)
    return files


def test_the_pattern_finds_what_it_is_for() -> None:
    for line in (
        f"VECTORS = REPO.parent / '{_SHARED}' / 'vectors'",
        f"load('../{_SHARED}/vectors/mlp_xnnpack/etdump.etdp')",
        f"see {_SHARED}/spec/etdump-format.md",
        'os.environ.get("X", "/work/somewhere")',
    ):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("tests/data/vectors/mlp_xnnpack/etdump.etdp")
    assert climbs_out("Path(__file__).resolve().parents[2]", depth=1)  # from tests/
    assert climbs_out("Path(__file__).parent.parent.parent", depth=1)
    assert climbs_out("Path(__file__).resolve().parents[3].parent", depth=3)  # plugins/x/tests/
    assert not climbs_out("Path(__file__).resolve().parents[3]", depth=3)
    assert not climbs_out("Path(__file__).resolve().parent.parent", depth=1)


def test_no_file_names_a_path_outside_the_repository() -> None:
    files = _tracked_text_files()
    assert len(files) > 200  # the scan saw the repository
    found = []
    for path in files:
        if path == Path(__file__).resolve():  # its examples of what is refused
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        depth = len(path.relative_to(REPO).parts) - 1
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line) or climbs_out(line, depth):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def test_every_vector_file_is_whole() -> None:
    """unpack.py (run by conftest) gave every file SHA256SUMS lists, with those bytes."""
    import hashlib

    sums = (REPO / "tests" / "data" / "vectors" / "SHA256SUMS").read_text().split("\n")
    listed = dict(reversed(line.split()) for line in sums if line.strip())
    assert {name.split("/")[0] for name in listed} == set(VECTOR_DIRS)
    for name, digest in listed.items():
        assert hashlib.sha256((VECTORS / name).read_bytes()).hexdigest() == digest, name


def test_packed_files_are_unpacked_and_ignored() -> None:
    """Each ``.xz`` is unpacked beside it, and git ignores exactly the unpacked names."""
    folder = REPO / "tests" / "data" / "vectors"
    packed = sorted(p.relative_to(folder).with_suffix("").as_posix() for p in folder.glob("*/*.xz"))
    assert "gpt_portable_big/etdump.etdp" in packed
    ignored = sorted(
        line.lstrip("/")
        for line in (folder / ".gitignore").read_text().splitlines()
        if line and not line.startswith("#") and "/" in line
    )
    assert ignored == packed
    for name in packed:
        assert (VECTORS / name).stat().st_size > (folder / f"{name}.xz").stat().st_size


def test_the_data_says_what_made_it() -> None:
    readme = (REPO / "tests" / "data" / "vectors" / "README.md").read_text()
    assert "ExecuTorch 1.5.1" in readme
    for name in VECTOR_DIRS:
        assert f"`{name}`" in readme
    for doc in ("README.md", "CONTRIBUTING.md"):
        assert "tests/data/vectors" in (REPO / doc).read_text(), doc


@pytest.mark.parametrize("name", VECTOR_DIRS)
def test_each_vector_has_its_files(name: str) -> None:
    names = {p.name for p in (VECTORS / name).iterdir() if not p.name.endswith(".xz")}
    assert {"etdump.etdp", "etrecord.bin", "model.pte", "expected.json"} <= names


def test_unpack_refuses_damaged_bytes_and_leaves_no_part(tmp_path: Path) -> None:
    import importlib.util
    import lzma
    import shutil

    source = REPO / "tests" / "data" / "vectors"
    spec = importlib.util.spec_from_file_location("_unpack_under_test", source / "unpack.py")
    assert spec is not None and spec.loader is not None
    unpack = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(unpack)

    folder = tmp_path / "vectors"
    shutil.copytree(
        source / "mlp_xnnpack", folder / "mlp_xnnpack", ignore=shutil.ignore_patterns("debug.bin")
    )
    sums = [
        line for line in (source / "SHA256SUMS").read_text().splitlines() if "mlp_xnnpack/" in line
    ]
    (folder / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    assert unpack.unpack(folder) == folder  # whole: unpacked and checked
    assert (folder / "mlp_xnnpack" / "debug.bin").read_bytes() == (
        VECTORS / "mlp_xnnpack" / "debug.bin"
    ).read_bytes()

    (folder / "mlp_xnnpack" / "debug.bin").unlink()
    (folder / "mlp_xnnpack" / "debug.bin.xz").write_bytes(lzma.compress(b"not the buffer"))
    with pytest.raises(RuntimeError, match="do not match SHA256SUMS"):
        unpack.unpack(folder)
    assert sorted(p.name for p in (folder / "mlp_xnnpack").iterdir() if "debug" in p.name) == [
        "debug.bin.xz"
    ]
