"""delegate_lens.config: where the configuration comes from and how bad values are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens.config import (
    Config,
    ConfigError,
    Section,
    derived_per_config,
    get_config,
    load_config,
    plugin_config,
    reset_config,
)


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DELEGATE_LENS_CONFIG", raising=False)
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    reset_config()
    return tmp_path


def test_no_configuration_is_empty() -> None:
    config = load_config()
    assert config.data == {}
    assert plugin_config("cycle_clock").values == {}
    assert plugin_config("cycle_clock").get_str("unit", "ns") == "ns"


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.delegate-lens.p]\nsource = "pyproject"\n')
    assert load_config().section("p").get("source") == "pyproject"
    assert load_config().origin == "pyproject.toml [tool.delegate-lens]"
    (tmp_path / "delegate-lens.toml").write_text('[p]\nsource = "file"\n')
    assert load_config().section("p").get("source") == "file"
    other = tmp_path / "sub" / "mine.toml"
    other.parent.mkdir()
    other.write_text('[p]\nsource = "env"\nkeep = 1\n')
    monkeypatch.setenv("DELEGATE_LENS_CONFIG", str(other))
    assert load_config().section("p").get("source") == "env"
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "p.source = 'option'; p.extra = [1, 2]")
    section = load_config().section("p")
    assert dict(section.values) == {"source": "option", "keep": 1, "extra": [1, 2]}


def test_pyproject_named_by_env_var_uses_its_tool_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "elsewhere" / "pyproject.toml"
    path.parent.mkdir()
    path.write_text('[project]\nname = "x"\n[tool.delegate-lens.p]\nk = 2\n')
    monkeypatch.setenv("DELEGATE_LENS_CONFIG", str(path))
    assert load_config().data == {"p": {"k": 2}}


def test_pyproject_without_our_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_config().data == {}


def test_get_config_is_cached_per_directory_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "delegate-lens.toml").write_text("[p]\nk = 1\n")
    first = get_config()
    assert get_config() is first
    (tmp_path / "delegate-lens.toml").write_text("[p]\nk = 2\n")
    assert get_config() is first  # cached until reset or a change of cwd / environment
    reset_config()
    assert get_config().section("p").get("k") == 2
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "p.k = 3")
    assert get_config().section("p").get("k") == 3
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS")
    assert get_config().data == {}


def test_derived_values_are_computed_once_per_configuration_read(tmp_path: Path) -> None:
    calls: list[Config] = []

    @derived_per_config
    def k_doubled(config: Config) -> int:
        calls.append(config)
        return 2 * int(config.section("p").get("k"))

    (tmp_path / "delegate-lens.toml").write_text("[p]\nk = 1\n")
    assert k_doubled() == 2 and k_doubled() == 2
    assert len(calls) == 1
    (tmp_path / "delegate-lens.toml").write_text("[p]\nk = 5\n")
    reset_config()
    assert k_doubled() == 10 and len(calls) == 2
    explicit = Config({"p": {"k": 7}})
    assert k_doubled(explicit) == 14 and calls[-1] is explicit


def test_missing_file_named_by_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELEGATE_LENS_CONFIG", "nowhere.toml")
    with pytest.raises(ConfigError, match=r"^DELEGATE_LENS_CONFIG=nowhere\.toml: no such"):
        load_config()


def test_invalid_toml_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "delegate-lens.toml").write_text("[p]\nk = 1\nbroken =\n")
    with pytest.raises(ConfigError, match=r"delegate-lens\.toml: not valid TOML: .*line 3"):
        load_config()


def test_section_must_be_a_table(tmp_path: Path) -> None:
    (tmp_path / "delegate-lens.toml").write_text('cycle_clock = "fast"\n')
    with pytest.raises(ConfigError, match=r"^delegate-lens\.toml: cycle_clock: expected a table"):
        load_config()


def test_bad_option_assignment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "p.k = 1; p.j = oops")
    with pytest.raises(ConfigError, match=r"DELEGATE_LENS_OPTIONS: 'p\.j = oops'"):
        load_config()


def test_option_separators_inside_strings_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", 'p.a = "x;y"\np.b = \'z;w\'; p.c = "q\\";r"')
    assert dict(load_config().section("p").values) == {"a": "x;y", "b": "z;w", "c": 'q";r'}


def test_section_getters_name_the_key() -> None:
    section = Section("sec", {"s": 1, "n": "x", "l": ["a", 2], "t": 3, "z": 0}, "f.toml")
    with pytest.raises(ConfigError, match=r"^f\.toml: sec\.s: expected a string, got int 1"):
        section.get_str("s")
    with pytest.raises(ConfigError, match=r"^f\.toml: sec\.n: expected a number"):
        section.get_number("n")
    with pytest.raises(ConfigError, match=r"^f\.toml: sec\.z: expected a positive number"):
        section.get_number("z", positive=True)
    with pytest.raises(ConfigError, match=r"^f\.toml: sec\.l: expected a list of strings"):
        section.get_str_list("l")
    with pytest.raises(ConfigError, match=r"^f\.toml: sec\.t: expected a table"):
        section.get_table("t")
    with pytest.raises(ConfigError, match=r"^f\.toml: sec\.missing: missing setting"):
        section.get_str("missing")
    with pytest.raises(ConfigError, match=r"sec\.s: expected one of 'a', 'b'"):
        Section("sec", {"s": "c"}, "f.toml").get_choice("s", ["a", "b"])
    with pytest.raises(ConfigError, match=r"sec\.\"My NPU\": unknown setting"):
        Section("sec", {"My NPU": 1}, "f.toml").check_keys({"unit"})
    assert section.get_number("t") == 3
    assert section.get_str("absent", None) is None
    assert Section("sec", {"sub": {"a": 1}}).get_table("sub").key("a") == "sec.sub.a"


def test_config_value_class() -> None:
    config = Config({"a": {"b": 1}}, "x.toml")
    assert config.section("a").get("b") == 1
    assert config.section("missing").values == {}
    with pytest.raises(ConfigError, match=r"^x\.toml: c: expected a table"):
        Config({"c": 5}, "x.toml").section("c")


@settings(max_examples=80, deadline=None)
@given(
    values=st.dictionaries(
        st.from_regex(r"[a-z][a-z_0-9]{0,6}", fullmatch=True),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
        min_size=1,
        max_size=5,
    ),
    separator=st.sampled_from(["; ", "\n", " ;\n"]),
)
def test_options_round_trip_any_string(values: dict[str, str], separator: str) -> None:
    text = separator.join(f"sec.{key} = {_toml_string(value)}" for key, value in values.items())
    config = load_config(environ={"DELEGATE_LENS_OPTIONS": text})
    assert dict(config.section("sec").values) == values
    assert config.origin == "DELEGATE_LENS_OPTIONS"


def _toml_string(value: str) -> str:
    """A TOML basic string (the test's own writer, so the parser is checked independently)."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
