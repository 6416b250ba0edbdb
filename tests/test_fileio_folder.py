"""fileio.write_folder_atomic: the folder appears whole or not at all; into an existing
folder the new files replace their namesakes and the others stay."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.fileio import write_folder_atomic

names = st.text(alphabet="abcdefgh_.", min_size=1, max_size=8).filter(
    lambda n: n not in (".", "..")
)
contents = st.dictionaries(names, st.binary(max_size=64), max_size=5)


@settings(max_examples=60, deadline=None)
@given(before=st.none() | contents, new=contents, fail=st.booleans())
def test_published_whole_or_not_at_all(
    before: dict[str, bytes] | None, new: dict[str, bytes], fail: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out"
        if before is not None:
            target.mkdir()
            for name, data in before.items():
                (target / name).write_bytes(data)

        def write(folder: Path) -> None:
            assert folder.is_dir() and not any(folder.iterdir())
            for name, data in new.items():
                (folder / name).write_bytes(data)
            if fail:
                raise RuntimeError("boom")

        if fail:
            with pytest.raises(RuntimeError):
                write_folder_atomic(target, write)
            expected = before
        else:
            assert write_folder_atomic(target, write) == target
            expected = {**(before or {}), **new}
        if expected is None:
            assert not target.exists()
        else:
            assert {p.name: p.read_bytes() for p in target.iterdir()} == expected
        assert [p.name for p in Path(tmp).iterdir()] == (["out"] if target.exists() else [])


def test_missing_parent_names_the_target(tmp_path: Path) -> None:
    target = tmp_path / "no" / "out"
    with pytest.raises(OSError) as exc:
        write_folder_atomic(target, lambda folder: None)
    assert exc.value.filename == str(target)
