"""The zoo (tests/zoo/): every model built by the reference toolchain on both backends, run by
its runtime, with the files the differential suite reads."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import needs_reference
from zoo import ZOO_BACKENDS, ZOO_NAMES, zoo_manifest, zoo_model

pytestmark = [pytest.mark.slow, needs_reference]

FILES = {"model.pte", "etrecord.bin", "etdump.etdp", "debug.bin", "inputs.pt", "manifest.json"}


def test_names_are_the_builders() -> None:
    """The names come from the builder's own lists (``models.NAMES``, ``models.BACKENDS``)."""
    assert len(ZOO_NAMES) >= 12 and len(set(ZOO_NAMES)) == len(ZOO_NAMES)
    assert ZOO_BACKENDS == ("xnnpack", "portable")
    assert "mlp" in ZOO_NAMES and "two_methods" in ZOO_NAMES


def test_the_zoo_builds_within_budget(zoo: dict[str, Any]) -> None:
    print(f"\nzoo: {len(zoo['models'])} builds, {zoo['build_seconds']} s this run")
    failed = [f"{m['name']}/{m['backend']}: {m['error']}" for m in zoo["models"] if m.get("error")]
    assert not failed
    assert {(m["name"], m["backend"]) for m in zoo["models"]} == {
        (n, b) for n in ZOO_NAMES for b in ZOO_BACKENDS
    }


@pytest.mark.parametrize("backend", ZOO_BACKENDS)
@pytest.mark.parametrize("name", ZOO_NAMES)
def test_each_model_has_its_files_and_matches_eager(name: str, backend: str) -> None:
    folder = zoo_model(name, backend)
    assert {p.name for p in folder.iterdir()} >= FILES
    assert (folder / "debug.bin").stat().st_size > 0
    manifest = zoo_manifest(name, backend)
    assert all(error < 1e-4 for error in manifest["max_abs_error"].values())
    if name == "bundled":
        assert (folder / "model.bpte").is_file()
    if name == "two_methods":
        assert manifest["methods"] == ["forward", "other"]


def test_zoo_model_refuses_unknown_names() -> None:
    with pytest.raises(KeyError, match="no zoo model"):
        zoo_model("resnet", "xnnpack")
