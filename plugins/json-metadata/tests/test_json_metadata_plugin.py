"""delegate-lens-json-metadata, as delegate-lens finds it: through its entry point."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.config import ConfigError, reset_config
from delegate_lens.errors import MissingExtraError
from delegate_lens.hookcalls import call_hook, call_hook_or_warn
from delegate_lens.pluginmanager import AUTOLOAD_ENV, PluginWarning, build_plugin_manager

DIST = "delegate-lens-json-metadata"


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("DELEGATE_LENS_CONFIG", "DELEGATE_LENS_OPTIONS", AUTOLOAD_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text(
        '[json_metadata.backends]\nNPU = "json"\nDSP = "msgpack"\n'
    )
    return tmp_path


@pytest.fixture(scope="module")
def pm() -> Any:
    return build_plugin_manager()


def encode(pm: Any, backend: str, value: Any) -> bytes | None:
    result: bytes | None = call_hook(
        "dl_encode_delegate_metadata", pm=pm, backend_id=backend, metadata=value
    )
    return result


def parse(pm: Any, backend: str, metadatas: list[bytes]) -> Any:
    """The parsed form, or None when no plugin parsed (the built-in metadata_fallback then
    answers with the very list it was given)."""
    result = call_hook("dl_parse_delegate_metadata", pm=pm, backend_id=backend, metadatas=metadatas)
    return None if result is metadatas else result


def test_found_through_its_entry_point(pm: Any) -> None:
    (ep,) = importlib.metadata.entry_points(group="delegate_lens", name="json_metadata")
    assert ep.dist is not None and ep.dist.metadata["Name"] == DIST
    assert ep.value == "delegate_lens_json_metadata.plugin"
    plugin = pm.get_plugin("json_metadata")
    assert plugin is not None and plugin is ep.load()
    assert pm.plugin_sources["json_metadata"].distribution == DIST
    hooks = {caller.name for caller in pm.get_hookcallers(plugin)}
    assert hooks == {"dl_encode_delegate_metadata", "dl_parse_delegate_metadata"}
    assert "json_metadata" not in {
        name for name, _ in build_plugin_manager(autoload=False).list_name_plugin()
    }


def test_json_round_trip_of_objects(pm: Any) -> None:
    first = encode(pm, "NPU", {"flops": 1024, "kernel": "gemm"})
    assert first == b'{"flops":1024,"kernel":"gemm"}'
    second = encode(pm, "NPU", {"flops": 8, "tile": [4, 4]})
    assert second is not None
    assert parse(pm, "NPU", [first, second, b""]) == {
        "flops": [1024, 8, None],
        "kernel": ["gemm", None, None],
        "tile": [None, [4, 4], None],
    }


def test_non_objects_give_one_string_per_sample(pm: Any) -> None:
    samples = [encode(pm, "NPU", "fused conv"), encode(pm, "NPU", [1, 2.5]), b""]
    assert parse(pm, "NPU", samples) == ["fused conv", "[1,2.5]", ""]


def test_numpy_values_are_encoded(pm: Any) -> None:
    np = pytest.importorskip("numpy")
    data = encode(pm, "NPU", {"shape": np.array([2, 3]), "n": np.int64(6)})
    assert data is not None and json.loads(data) == {"shape": [2, 3], "n": 6}


def test_msgpack_round_trip(pm: Any) -> None:
    pytest.importorskip("msgpack")
    data = encode(pm, "DSP", {"cycles": 12, "raw": b"\x00\x01"})
    assert data is not None and data[:1] == b"\x82"  # a MessagePack map of 2
    assert parse(pm, "DSP", [data]) == {"cycles": [12], "raw": [b"\x00\x01"]}


def test_msgpack_missing_names_the_extra(pm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "msgpack", None)  # makes `import msgpack` fail
    with pytest.raises(MissingExtraError, match=r"delegate-lens-json-metadata\[msgpack\]"):
        encode(pm, "DSP", {"a": 1})


def test_unconfigured_backends_are_left_to_others(pm: Any) -> None:
    assert encode(pm, "OtherBackend", {"a": 1}) is None
    assert parse(pm, "OtherBackend", [b'{"a":1}']) is None


def test_without_any_configuration_every_backend_is_left_to_others(
    pm: Any, _config_dir: Path
) -> None:
    (_config_dir / "delegate-lens.toml").unlink()
    reset_config()
    assert encode(pm, "NPU", {"a": 1}) is None
    assert parse(pm, "NPU", [b'{"a":1}']) is None


def test_bad_bytes_warn_naming_the_plugin(pm: Any) -> None:
    with pytest.warns(PluginWarning, match=rf"'json_metadata' \({DIST} .*not valid JSON"):
        result = call_hook_or_warn(
            "dl_parse_delegate_metadata", pm=pm, backend_id="NPU", metadatas=[b"{oops"]
        )
    assert result is None


def test_backend_list_with_default_format(pm: Any, _config_dir: Path) -> None:
    (_config_dir / "delegate-lens.toml").write_text(
        '[json_metadata]\nbackends = ["A", "B"]\nformat = "msgpack"\n'
    )
    pytest.importorskip("msgpack")
    assert encode(pm, "B", [1]) == b"\x91\x01"
    assert encode(pm, "NPU", [1]) is None


def test_configured_from_pyproject(pm: Any, _config_dir: Path) -> None:
    (_config_dir / "delegate-lens.toml").unlink()
    (_config_dir / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.delegate-lens.json_metadata]\nbackends = ["P"]\n'
    )
    assert encode(pm, "P", {"k": True}) == b'{"k":true}'


def test_configured_from_environment(pm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", 'json_metadata.backends.ENV = "json"')
    assert encode(pm, "ENV", 1) == b"1"
    assert encode(pm, "NPU", 1) == b"1"  # the file still applies


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[json_metadata]\nformat = "xml"\nbackends = ["A"]\n', "json_metadata.format"),
        ("[json_metadata]\nbackends = [1]\n", "json_metadata.backends"),
        ('[json_metadata.backends]\nA = "yaml"\n', "json_metadata.backends.A"),
        ('[json_metadata]\nbackend = ["A"]\n', "json_metadata.backend"),
    ],
)
def test_bad_configuration_names_file_and_key(
    pm: Any, _config_dir: Path, toml: str, key: str
) -> None:
    (_config_dir / "delegate-lens.toml").write_text(toml)
    with pytest.raises(ConfigError, match=rf"^delegate-lens\.toml: {key}: "):
        encode(pm, "A", {})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(samples=st.lists(st.dictionaries(st.text(max_size=5), json_values, max_size=4), max_size=4))
def test_objects_round_trip_to_per_key_lists(pm: Any, samples: list[dict[str, Any]]) -> None:
    encoded = [encode(pm, "NPU", sample) or b"" for sample in samples]
    result = parse(pm, "NPU", encoded)
    if not samples:
        assert result == []
        return
    assert isinstance(result, dict)
    keys = {key for sample in samples for key in sample}
    assert set(result) == keys
    for key, values in result.items():
        assert values == [sample.get(key) for sample in samples]
