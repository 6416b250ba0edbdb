"""What the README says of the reference's files: the same content, not the same bytes.

Each ETDump the reference wrote decodes, re-encodes and decodes again to the same content
(and our encoding is stable), in fewer bytes; each ETRecord re-saved holds the same archive
members with the same bytes."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from delegate_lens.etdump import dumps, load, loads

VECTORS = ("mlp_xnnpack", "conv_xnnpack", "gpt_portable")  # gpt_portable_big: the same, slower
README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.parametrize("name", VECTORS)
def test_reference_etdump_round_trips_to_the_same_content(vectors_dir: Path, name: str) -> None:
    path = vectors_dir / name / "etdump.etdp"
    original = load(path)
    ours = dumps(original)
    assert loads(ours) == original
    assert dumps(loads(ours)) == ours
    assert ours != path.read_bytes() and len(ours) < path.stat().st_size  # not the same bytes


@pytest.mark.parametrize("name", VECTORS)
def test_reference_etrecord_resaved_has_the_same_members(
    vectors_dir: Path, tmp_path: Path, name: str
) -> None:
    from delegate_lens.etrecord import parse_etrecord

    path = vectors_dir / name / "etrecord.bin"
    parse_etrecord(path).save(tmp_path / "etrecord.bin")
    before = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    after = zipfile.ZipFile(tmp_path / "etrecord.bin")
    assert sorted(before.namelist()) == sorted(after.namelist())
    for member in before.namelist():
        assert after.read(member) == before.read(member), member


def test_readme_claims_the_same_content_not_the_same_bytes() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "the reference toolchain's formats, byte for byte" not in text
    assert "They are the same content, not the same bytes" in text
