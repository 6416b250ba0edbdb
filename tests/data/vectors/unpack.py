"""Unpack the reference vectors kept compressed in this folder, once, and check every file.

The large files (``*.xz``: the big GPT vector's ETDump and expected answers, one JSON dump,
one debug buffer) are stored compressed so that a clone stays small. ``unpack()`` writes each
beside its ``.xz`` (the unpacked names are ignored by git), checks every vector file against
``SHA256SUMS`` and returns the folder that holds them all. Where this folder cannot be
written (a read-only checkout), the vectors are put together in a cache folder instead
(``$XDG_CACHE_HOME/delegate-lens``, else ``~/.cache/delegate-lens``) and that folder is
returned. A file is unpacked to a temporary name and renamed, so concurrent runs never see a
half-written file.

    python tests/data/vectors/unpack.py      # prints the folder

Used by ``tests/conftest.py``, ``benchmarks/machine.py`` and the docs' examples. Standard
library only.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUMS = HERE / "SHA256SUMS"
CHUNK = 1 << 20


def expected_digests(sums: Path = SUMS) -> dict[str, str]:
    """``relative path -> sha256`` of every vector file, as ``SHA256SUMS`` lists them."""
    digests: dict[str, str] = {}
    for line in sums.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            digests[name.strip()] = digest
    return digests


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _writable(folder: Path) -> bool:
    subfolders = [p for p in folder.iterdir() if p.is_dir()]
    return all(os.access(p, os.W_OK) for p in [folder, *subfolders])


def _cache_folder(sums: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "delegate-lens"
    tag = hashlib.sha256(sums.read_bytes()).hexdigest()[:16]
    return base / f"vectors-{tag}"


def _decompress(source: Path, target: Path, digest: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, lzma.open(source, "rb") as src:
            shutil.copyfileobj(src, out, CHUNK)
        if sha256_of(Path(tmp)) != digest:
            raise RuntimeError(f"{source}: unpacks to bytes that do not match SHA256SUMS")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def unpack(folder: Path = HERE) -> Path:
    """The folder holding every reference vector, unpacked and checked against SHA256SUMS."""
    sums = folder / "SHA256SUMS"
    digests = expected_digests(sums)
    out = folder if _writable(folder) else _cache_folder(sums)
    for name, digest in digests.items():
        stored, packed, target = folder / name, folder / f"{name}.xz", out / name
        if target.is_file() and sha256_of(target) == digest:
            continue
        if packed.is_file():
            _decompress(packed, target, digest)
        elif stored.is_file() and out != folder:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(stored, target)
        else:
            raise RuntimeError(f"{target}: missing or changed (SHA256SUMS lists {digest})")
        if sha256_of(target) != digest:
            raise RuntimeError(f"{target}: does not match SHA256SUMS")
    return out


if __name__ == "__main__":
    try:
        print(unpack())
    except (OSError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
