"""The zoo: models made by the reference toolchain and runtime (ExecuTorch 1.5.1), built once
per test run into a cache folder (see ``README.md`` here).

    from zoo import ZOO_NAMES, ZOO_BACKENDS, zoo_model
    folder = zoo_model("gpt", "xnnpack")  # model.pte, etrecord.bin, etdump.etdp, debug.bin, ...
    folder = zoo_model("block", "xnnpack")  # an extra (ZOO_EXTRAS), on the backends it lists

``zoo_model`` builds the whole zoo on first use (in a subprocess with the reference's Python,
``conftest.REFERENCE_PYTHON``; two worker processes) unless the cache already holds it; it
skips the test where the reference is not installed (fails in CI) and fails, naming the
error, for a model the toolchain could not build.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import hashlib
import importlib.metadata as md
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _models_constant(name: str) -> Any:
    """A constant of ``models.py``, read from its source: that module imports torch, which
    taking a name of the zoo must not."""
    tree = ast.parse((HERE / "models.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return ast.literal_eval(node.value)
    raise LookupError(f"tests/zoo/models.py defines no {name}")


ZOO_NAMES: tuple[str, ...] = tuple(_models_constant("NAMES"))
"""The models built on every backend, which the differential suite measures
(``models.NAMES``)."""
ZOO_BACKENDS: tuple[str, ...] = tuple(_models_constant("BACKENDS"))
"""Every backend each model of ``ZOO_NAMES`` is built for (``models.BACKENDS``)."""
ZOO_EXTRAS: dict[str, tuple[str, ...]] = {
    name: tuple(backends) for name, backends in _models_constant("EXTRAS").items()
}
"""The extra models, each with the backends it is built for (``models.EXTRAS``): built for
one test module's facts, not measured by the differential suite."""
ZOO_ENV = "DELEGATE_LENS_ZOO_DIR"
"""Set to a folder to keep the zoo there instead of ``~/.cache/delegate-lens/zoo/``."""
BUILD_TIMEOUT = 1800


def _version(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "none"


def zoo_builds() -> list[tuple[str, str]]:
    """Every ``(name, backend)`` the zoo builds: ``ZOO_NAMES`` on ``ZOO_BACKENDS``, then
    ``ZOO_EXTRAS``."""
    every = [(n, b) for n in ZOO_NAMES for b in ZOO_BACKENDS]
    return every + [(n, b) for n, backends in ZOO_EXTRAS.items() for b in backends]


def zoo_key() -> str:
    """A hash of the builder's source and the executorch and torch versions."""
    digest = hashlib.sha256()
    for name in ("build.py", "models.py"):
        digest.update((HERE / name).read_bytes())
    python = os.environ.get("DELEGATE_LENS_REFERENCE_PYTHON", "")
    digest.update(f"executorch={_version('executorch')};torch={_version('torch')}".encode())
    digest.update(python.encode())
    return digest.hexdigest()[:16]


def zoo_root() -> Path:
    """The cache folder of this zoo (built or not)."""
    base = os.environ.get(ZOO_ENV)
    parent = Path(base) if base else Path.home() / ".cache" / "delegate-lens" / "zoo"
    return parent / zoo_key()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_BUILT: dict[str, Any] = {}


def build_zoo() -> dict[str, Any]:
    """Build the zoo into :func:`zoo_root` unless it is there; its top manifest (``models``
    and ``extras``, with ``build_seconds``: this build's time, 0 when it came from the
    cache)."""
    if "manifest" in _BUILT:
        return _BUILT["manifest"]  # type: ignore[no-any-return]
    import pytest
    from conftest import NO_REFERENCE, REFERENCE_PYTHON

    root = zoo_root()
    done = root / "manifest.json"
    with _locked(root.parent / f"{root.name}.lock"):
        seconds = 0.0
        if not done.exists():
            if REFERENCE_PYTHON is None:
                if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}:
                    pytest.fail(f"the zoo needs the reference: {NO_REFERENCE}", pytrace=False)
                pytest.skip(NO_REFERENCE)
            started = time.monotonic()
            tmp = root.with_name(root.name + ".building")
            proc = subprocess.run(
                [REFERENCE_PYTHON, str(HERE / "build.py"), str(tmp), "--jobs", "2"],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
                check=False,
            )
            if proc.returncode != 0 or not (tmp / "manifest.json").exists():
                pytest.fail(f"the zoo did not build:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            os.replace(tmp, root)
            seconds = time.monotonic() - started
        manifest: dict[str, Any] = json.loads(done.read_text())
    manifest["build_seconds"] = round(seconds, 1)
    _BUILT["manifest"] = manifest
    return manifest


def zoo_manifest(name: str, backend: str) -> dict[str, Any]:
    """The manifest of one model on one backend (its methods, input shapes, error ...)."""
    build_zoo()
    return json.loads((zoo_root() / name / backend / "manifest.json").read_text())  # type: ignore[no-any-return]


def zoo_model(name: str, backend: str) -> Path:
    """The folder of zoo model ``name`` on ``backend`` (``"xnnpack"`` or ``"portable"``):
    ``model.pte`` (and ``model.bpte`` for ``bundled``), ``etrecord.bin``, ``etdump.etdp``,
    ``debug.bin``, ``inputs.pt``, ``eager.pt``, ``runtime.pt``, ``manifest.json``."""
    if (name, backend) not in zoo_builds():
        raise KeyError(f"no zoo model {name!r} on {backend!r}")
    manifest = zoo_manifest(name, backend)
    if "error" in manifest:
        import pytest

        pytest.fail(f"zoo model {name}/{backend} did not build: {manifest['error']}")
    return zoo_root() / name / backend
