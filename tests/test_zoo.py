"""The zoo (tests/zoo/): every model built by the reference toolchain on both backends (the
extras on theirs), run by its runtime, with the files the differential suite reads."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import needs_reference
from zoo import ZOO_BACKENDS, ZOO_EXTRAS, ZOO_NAMES, zoo_builds, zoo_manifest, zoo_model

pytestmark = [pytest.mark.slow, needs_reference]

FILES = {"model.pte", "etrecord.bin", "etdump.etdp", "debug.bin", "inputs.pt", "manifest.json"}


def test_names_are_the_builders() -> None:
    """The names come from the builder's own lists (``models.NAMES``, ``models.BACKENDS``)."""
    assert len(ZOO_NAMES) >= 12 and len(set(ZOO_NAMES)) == len(ZOO_NAMES)
    assert ZOO_BACKENDS == ("xnnpack", "portable")
    assert "mlp" in ZOO_NAMES and "two_methods" in ZOO_NAMES
    assert not set(ZOO_EXTRAS) & set(ZOO_NAMES)
    assert all(backends and set(backends) <= set(ZOO_BACKENDS) for backends in ZOO_EXTRAS.values())


def test_the_zoo_builds_within_budget(zoo: dict[str, Any]) -> None:
    every = zoo["models"] + zoo["extras"]
    print(f"\nzoo: {len(every)} builds, {zoo['build_seconds']} s this run")
    failed = [f"{m['name']}/{m['backend']}: {m['error']}" for m in every if m.get("error")]
    assert not failed
    # the differential suite measures the models the top manifest lists as ``models``
    assert {(m["name"], m["backend"]) for m in zoo["models"]} == {
        (n, b) for n in ZOO_NAMES for b in ZOO_BACKENDS
    }
    assert {(m["name"], m["backend"]) for m in zoo["extras"]} == {
        (n, b) for n, backends in ZOO_EXTRAS.items() for b in backends
    }


@pytest.mark.parametrize(("name", "backend"), zoo_builds())
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
    with pytest.raises(KeyError, match="no zoo model"):
        zoo_model("block", "portable")  # an extra built on XNNPACK only
