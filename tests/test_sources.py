"""find_sources: the ETDumps under folders, globs and files, each file once (by any path,
link or hard link), in path order, with the sidecars of the rules in sources.py's docstring.
Checked against a plain reference (os.walk, a stat per candidate) on generated trees."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delegate_lens.dataset import _sources as sources
from delegate_lens.dataset._sources import ETDUMP_SUFFIXES, find_sources
from delegate_lens.errors import UsageError


def _reference(top: str) -> list[tuple[str, int, str | None, str | None]]:
    """What find_sources([top]) must give, the slow plain way."""
    found = []
    for root, _dirs, files in os.walk(top):
        root = os.path.normpath(root)
        found += [(root.split(os.sep), root, f) for f in files if f.endswith(ETDUMP_SUFFIXES)]
    found.sort(key=lambda item: (item[0], item[2]))
    out: list[tuple[str, int, str | None, str | None]] = []
    seen = set()
    for _, root, name in found:
        path = os.path.join(root, name)
        try:
            info = os.stat(path)
        except OSError:  # a broken link: kept, for collect to report
            info = None
        else:
            if (info.st_dev, info.st_ino) in seen or not os.path.isfile(path):
                continue
            seen.add((info.st_dev, info.st_ino))
        stem = name.rsplit(".", 1)[0]

        def first(*names: str, root: str = root) -> str | None:
            paths = (os.path.join(root, n) for n in names)
            return next((p for p in paths if os.path.isfile(p)), None)

        record = first(f"{stem}.etrecord", f"{stem}.etrecord.bin", "etrecord.bin")
        labels = first(f"{stem}.labels.json", "labels.json")
        out.append((path, info.st_size if info else 0, record, labels))
    return out


_NAMES = ["a", "b", "a.b", "Z"]
_FILES = ["x.etdp", "y.etdump", "x.etrecord", "x.etrecord.bin", "y.etrecord.bin", "etrecord.bin"]
_FILES += ["labels.json", "x.labels.json", "notes.txt", "x.etdp.bak"]
_KINDS = ["file", "file", "file", "dir", "link", "hardlink", "broken"]
_entry = st.tuples(
    st.lists(st.sampled_from(_NAMES), max_size=2),
    st.sampled_from(_FILES + _NAMES),
    st.sampled_from(_KINDS),
    st.integers(0, 30),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_entry, min_size=1, max_size=25))
def test_same_as_reference_on_generated_trees(
    entries: list[tuple[list[str], str, str, int]],
) -> None:
    top = Path(tempfile.mkdtemp(prefix="sources-"))
    try:
        made: list[Path] = []
        for parts, name, kind, size in entries:
            path = top.joinpath(*parts, name)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                if kind == "dir":
                    path.mkdir(exist_ok=True)
                elif kind == "broken":
                    path.symlink_to(top / "missing")
                elif kind in ("link", "hardlink") and made:
                    target = made[size % len(made)]
                    if kind == "link":
                        path.symlink_to(target)
                    elif target.is_file():
                        os.link(target, path)
                else:
                    path.write_bytes(b"e" * size)
                    made.append(path)
            except OSError:  # a name already taken by another kind: keep the first
                continue
        expected = _reference(str(top))
        if not expected:
            with pytest.raises(UsageError, match="no ETDump"):
                find_sources([str(top)])
            return
        got = [(s.path, s.size, s.etrecord, s.labels_file) for s in find_sources([str(top)])]
        assert got == expected
        by_path = sources._BY_FD
        sources._BY_FD = False  # as on an OS that cannot list or stat through a folder's fd
        try:
            assert [
                (s.path, s.size, s.etrecord, s.labels_file) for s in find_sources([str(top)])
            ] == expected
        finally:
            sources._BY_FD = by_path
    finally:
        shutil.rmtree(top)


def test_links_and_hard_links_count_once(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "1.etdp").write_bytes(b"x" * 10)
    (tmp_path / "b.etdp").symlink_to(tmp_path / "a" / "1.etdp")
    os.link(tmp_path / "a" / "1.etdp", tmp_path / "c.etdp")
    (tmp_path / "d").symlink_to(tmp_path / "a", target_is_directory=True)  # not followed
    found = find_sources([str(tmp_path), str(tmp_path / "d" / "1.etdp"), str(tmp_path / "*.etdp")])
    assert [s.path for s in found] == [str(tmp_path / "b.etdp")]  # the first path found
    assert found[0].size == 10


def test_sidecar_precedence(tmp_path: Path) -> None:
    for name in ("r.etdp", "s.etdp", "t.etdump", "etrecord.bin", "labels.json"):
        (tmp_path / name).write_bytes(b"")
    for name in ("r.etrecord", "r.etrecord.bin", "s.etrecord.bin", "s.labels.json"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "t.etrecord").mkdir()  # a folder is no sidecar
    found = find_sources([str(tmp_path)])
    assert [(Path(s.path).name, s.etrecord, s.labels_file) for s in found] == [
        ("r.etdp", str(tmp_path / "r.etrecord"), str(tmp_path / "labels.json")),
        ("s.etdp", str(tmp_path / "s.etrecord.bin"), str(tmp_path / "s.labels.json")),
        ("t.etdump", str(tmp_path / "etrecord.bin"), str(tmp_path / "labels.json")),
    ]
    forced = find_sources([str(tmp_path / "s.etdp")], etrecord=str(tmp_path / "r.etrecord"))
    assert [(s.etrecord, s.labels_file) for s in forced] == [
        (str(tmp_path / "r.etrecord"), str(tmp_path / "s.labels.json"))
    ]


def test_broken_link_is_a_file_collect_reports(tmp_path: Path, vectors_dir: Path) -> None:
    pytest.importorskip("pyarrow")
    from delegate_lens.dataset import collect

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(vectors_dir / "mlp_xnnpack" / "etdump.etdp", folder / "a.etdp")
    (folder / "b.etdp").symlink_to(folder / "gone.etdp")
    report = collect([str(folder)], str(tmp_path / "ds"))
    assert [r.source for r in report.collected] == [str(folder / "a.etdp")]
    assert [r.source for r in report.failed] == [str(folder / "b.etdp")]
    assert "cannot read the ETDump" in (report.failed[0].error or "")
