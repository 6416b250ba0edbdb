"""User configuration shared by delegate-lens and its plugins (one TOML table per plugin).

Where it is read from — the first that exists wins:

1. the file named by the environment variable ``DELEGATE_LENS_CONFIG`` (it must exist);
2. ``delegate-lens.toml`` in the current directory (its top-level tables are the sections);
3. the ``[tool.delegate-lens]`` table of ``pyproject.toml`` in the current directory.

Then ``DELEGATE_LENS_OPTIONS`` overrides single values: TOML assignments with dotted keys,
separated by newlines or ``;``, e.g.
``DELEGATE_LENS_OPTIONS='cycle_clock.backends.MyNPU = "800 MHz"; cycle_clock.unit = "us"'``.

Each plugin reads its own section, named after its entry point
(``[cycle_clock]``, ``[json_metadata]``)::

    from delegate_lens.config import plugin_config

    section = plugin_config("cycle_clock")
    unit = section.get_str("unit", "ns")
    section.check_keys({"unit", "backends"})

A bad file or value raises :class:`ConfigError` naming the file and the dotted key, e.g.
``delegate-lens.toml: cycle_clock.backends.MyNPU: expected a clock rate such as
'800 MHz' or a number of Hz, got 'fast'``. The configuration is read once per (working
directory, environment variables) and cached; :func:`reset_config` forgets it.
"""

from __future__ import annotations

import enum
import functools
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Final, Protocol, TypeVar, overload

import attrs

from delegate_lens.errors import ConfigError, DelegateLensWarning

__all__ = [
    "CONFIG_ENV",
    "CONFIG_FILE",
    "OPTIONS_ENV",
    "Config",
    "ConfigError",
    "Section",
    "cached_config",
    "chosen_config",
    "derived_per_config",
    "get_config",
    "load_config",
    "plugin_config",
    "reset_config",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Derived(Protocol[T_co]):
    """What :func:`derived_per_config` returns: call it with or without a config."""

    def __call__(self, config: Config | None = None) -> T_co: ...


CONFIG_ENV = "DELEGATE_LENS_CONFIG"
OPTIONS_ENV = "DELEGATE_LENS_OPTIONS"
CONFIG_FILE = "delegate-lens.toml"
PYPROJECT_TABLE = "tool.delegate-lens"
NO_COMPILED_ENV = "DELEGATE_LENS_NO_COMPILED"
"""On: the compiled extensions are left out and their Python twins run (see
:func:`compiled_code_off`)."""

SWITCH_ON_WORDS: Final = frozenset({"1", "true", "yes", "on"})
SWITCH_OFF_WORDS: Final = frozenset({"", "0", "false", "no", "off"})
"""The words of an environment switch (:func:`env_switch`), read without case and
surrounding spaces; unset is off."""


class _Missing(enum.Enum):
    """The type of :data:`_MISSING`: no default given (the setting is required)."""

    MISSING = enum.auto()


_MISSING: Final = _Missing.MISSING


@attrs.frozen
class Section:
    """One plugin's table of the configuration.

    :param name: the section's name (its dotted key path, e.g. ``"cycle_clock"``).
    :param values: the table (empty when the section is absent).
    :param origin: where it was read, used in error messages (a path or ``"(no file)"``).
    """

    name: str
    values: Mapping[str, object] = attrs.field(factory=dict)
    origin: str = "(no configuration file)"

    def key(self, key: str) -> str:
        """The dotted name of ``key`` in this section, as error messages show it."""
        return f"{self.name}.{_quote(key)}"

    def error(self, key: str, problem: str) -> ConfigError:
        """A :class:`ConfigError` naming the origin and ``section.key``."""
        return ConfigError(f"{self.origin}: {self.key(key)}: {problem}")

    def __contains__(self, key: object) -> bool:
        return key in self.values

    def get(self, key: str, default: object = None) -> object:
        return self.values.get(key, default)

    @overload
    def get_str(self, key: str) -> str: ...
    @overload
    def get_str(self, key: str, default: T) -> str | T: ...
    def get_str(self, key: str, default: object = _MISSING) -> object:
        value = self._get(key, default)
        if value is not default and not isinstance(value, str):
            raise self.error(key, f"expected a string, got {_show(value)}")
        return value

    @overload
    def get_choice(self, key: str, choices: Iterable[str]) -> str: ...
    @overload
    def get_choice(self, key: str, choices: Iterable[str], default: T) -> str | T: ...
    def get_choice(self, key: str, choices: Iterable[str], default: object = _MISSING) -> object:
        allowed = list(choices)
        value = self.get_str(key, default)
        if value is not default and value not in allowed:
            raise self.error(key, f"expected one of {', '.join(map(repr, allowed))}, got {value!r}")
        return value

    @overload
    def get_number(self, key: str, *, positive: bool = False) -> int | float: ...
    @overload
    def get_number(self, key: str, default: T, *, positive: bool = False) -> int | float | T: ...
    def get_number(self, key: str, default: object = _MISSING, *, positive: bool = False) -> object:
        value = self._get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, got {_show(value)}")
        if positive and not value > 0:
            raise self.error(key, f"expected a positive number, got {value!r}")
        return value

    @overload
    def get_str_list(self, key: str) -> list[str]: ...
    @overload
    def get_str_list(self, key: str, default: T) -> list[str] | T: ...
    def get_str_list(self, key: str, default: object = _MISSING) -> object:
        value = self._get(key, default)
        if value is default:
            return value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"expected a list of strings, got {_show(value)}")
        return list(value)

    def get_table(self, key: str) -> Section:
        """The sub-table ``key`` as a :class:`Section` (empty when absent)."""
        value = self.values.get(key, {})
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected a table, got {_show(value)}")
        return Section(self.key(key), value, self.origin)

    def check_keys(self, allowed: Iterable[str]) -> None:
        """Reject keys not in ``allowed`` (typos), suggesting the closest known key."""
        known = sorted(allowed)
        for key in self.values:
            if key not in known:
                import difflib

                guess = difflib.get_close_matches(key, known, n=1)
                hint = f" (did you mean {guess[0]!r}?)" if guess else ""
                raise self.error(key, f"unknown setting{hint}; known: {', '.join(known)}")

    def _get(self, key: str, default: object) -> object:
        if key in self.values:
            return self.values[key]
        if default is _MISSING:
            raise self.error(key, "missing setting")
        return default


@attrs.frozen
class Config:
    """The whole configuration: ``data`` maps section names to tables."""

    data: Mapping[str, object] = attrs.field(factory=dict)
    origin: str = "(no configuration file)"

    def section(self, name: str) -> Section:
        """The table ``name`` (empty when absent)."""
        value = self.data.get(name, {})
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"{self.origin}: {_quote(name)}: expected a table, got {_show(value)}"
            )
        return Section(_quote(name), value, self.origin)


def load_config(
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    chosen_only: bool = False,
) -> Config:
    """Read the configuration afresh (see the module docstring for where from).

    ``chosen_only``: only what the user named (the file of ``DELEGATE_LENS_CONFIG`` and
    ``DELEGATE_LENS_OPTIONS``), never a file found in the current folder: what may raise a
    safety limit (see :func:`chosen_config`)."""
    env = os.environ if environ is None else environ
    base = Path.cwd() if cwd is None else Path(cwd)
    data: dict[str, object] = {}
    origin = "(no configuration file)"
    explicit = env.get(CONFIG_ENV, "").strip()
    if explicit:
        path = Path(explicit)
        if not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={explicit}: no such configuration file")
        data, origin = _read_toml(path), str(explicit)
        if path.name == "pyproject.toml":
            data = _pyproject_table(data, origin)
    elif chosen_only:
        pass
    elif (base / CONFIG_FILE).is_file():
        data, origin = _read_toml(base / CONFIG_FILE), CONFIG_FILE
    elif (base / "pyproject.toml").is_file():
        data = _pyproject_table(_read_toml(base / "pyproject.toml"), "pyproject.toml")
        if data:
            origin = "pyproject.toml [tool.delegate-lens]"
    overrides = env.get(OPTIONS_ENV, "")
    if overrides.strip():
        origin = OPTIONS_ENV if not data else f"{origin} + {OPTIONS_ENV}"
        data = _merge(data, _parse_options(overrides))
    for name, value in data.items():
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"{origin}: {_quote(name)}: expected a table (one per plugin), got {_show(value)}"
            )
    return Config(data, origin)


_cache: tuple[tuple[str, ...], Config] | None = None


def get_config() -> Config:
    """The configuration for the current directory and environment (cached)."""
    global _cache
    key = (os.getcwd(), os.environ.get(CONFIG_ENV, ""), os.environ.get(OPTIONS_ENV, ""))
    cached = _cache
    if cached is not None and cached[0] == key:
        return cached[1]
    config = load_config()
    _cache = (key, config)
    return config


def cached_config() -> Config | None:
    """The configuration :func:`get_config` read last and keeps (``None``: none read yet,
    or forgotten by :func:`reset_config`); reads nothing. Another read gives another
    :class:`Config` object."""
    cached = _cache
    return None if cached is None else cached[1]


_chosen_cache: tuple[tuple[str, ...], Config] | None = None


def chosen_config() -> Config:
    """The configuration the user chose on purpose (cached): the file named by
    ``DELEGATE_LENS_CONFIG`` and ``DELEGATE_LENS_OPTIONS``, never a file that merely lies
    in the current folder. Safety limits (e.g. ``[etrecord]``'s) are raised only from here;
    a file in the current folder may only lower them."""
    global _chosen_cache
    key = (os.getcwd(), os.environ.get(CONFIG_ENV, ""), os.environ.get(OPTIONS_ENV, ""))
    cached = _chosen_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    config = load_config(chosen_only=True)
    _chosen_cache = (key, config)
    return config


def reset_config() -> None:
    """Forget the cached configuration (e.g. after editing the file)."""
    global _cache, _chosen_cache
    _cache = None
    _chosen_cache = None


def plugin_config(name: str) -> Section:
    """The section ``name`` of :func:`get_config` — what a plugin calls."""
    return get_config().section(name)


def derived_per_config(derive: Callable[[Config], T]) -> Derived[T]:
    """Cache what a plugin derives from the configuration, once per configuration read.

    ``derive(config)`` runs again only when :func:`get_config` gives another
    :class:`Config` (another working directory or environment, or after
    :func:`reset_config`). The wrapped function takes an optional ``config``; without
    one it uses :func:`get_config`::

        @derived_per_config
        def clock_rates(config: Config) -> dict[str, float]:
            section = config.section("my_clock")
            ...
    """
    cache: list[tuple[Config, T]] = []

    @functools.wraps(derive)
    def get(config: Config | None = None) -> T:
        config = get_config() if config is None else config
        if cache and cache[0][0] is config:
            return cache[0][1]
        value = derive(config)
        cache[:] = [(config, value)]
        return value

    return get


def env_switch(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment switch ``name`` is on (``environ``: the process's environment
    unless given): ``1``, ``true``, ``yes`` or ``on`` turn it on; unset, empty, ``0``,
    ``false``, ``no`` or ``off`` leave it off (any case, spaces around ignored). Any other
    word turns it on, as being set always did, with a :class:`DelegateLensWarning` that
    names the words. Every switch of delegate-lens (``DELEGATE_LENS_NO_COMPILED``,
    ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD``) is read here."""
    env = os.environ if environ is None else environ
    text = env.get(name, "")
    word = text.strip().lower()
    if word in SWITCH_OFF_WORDS:
        return False
    if word not in SWITCH_ON_WORDS:
        warnings.warn(
            f"{name}={text!r} is not a switch word, taken as on (on: 1, true, yes, on; "
            "off: 0, false, no, off, empty or unset)",
            DelegateLensWarning,
            stacklevel=2,
        )
    return True


@functools.cache
def compiled_code_off() -> bool:
    """Whether ``DELEGATE_LENS_NO_COMPILED`` switches the compiled extensions off (their
    Python twins run instead), read once per process: the modules that choose between an
    extension and its twin ask when they are imported."""
    return env_switch(NO_COMPILED_ENV)


def _tomllib() -> ModuleType:
    """The TOML reader, imported when there is TOML to read (not by every start)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def _read_toml(path: Path) -> dict[str, object]:
    tomllib = _tomllib()
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _pyproject_table(data: Mapping[str, object], origin: str) -> dict[str, object]:
    tool = data.get("tool", {})
    table = tool.get("delegate-lens", {}) if isinstance(tool, Mapping) else {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{origin}: {PYPROJECT_TABLE}: expected a table, got {_show(table)}")
    return dict(table)


def _parse_options(text: str) -> dict[str, object]:
    tomllib = _tomllib()
    merged: dict[str, object] = {}
    for assignment in _split_assignments(text):
        try:
            parsed = tomllib.loads(assignment)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{OPTIONS_ENV}: {assignment.strip()!r} is not a TOML assignment "
                f"such as 'section.key = \"value\"': {exc}"
            ) from exc
        merged = _merge(merged, parsed)
    return merged


def _split_assignments(text: str) -> list[str]:
    """Split on newlines and on ``;`` outside quoted strings."""
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    escaped = False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in ";\n":
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def _merge(base: Mapping[str, object], extra: Mapping[str, object]) -> dict[str, object]:
    merged = dict(base)
    for key, value in extra.items():
        prior = merged.get(key)
        if isinstance(value, Mapping) and isinstance(prior, Mapping):
            merged[key] = _merge(prior, value)
        else:
            merged[key] = value
    return merged


def _quote(key: str) -> str:
    bare = key.replace("_", "").replace("-", "")
    return key if key and bare.isascii() and bare.isalnum() else f'"{key}"'


def _show(value: object) -> str:
    return f"{type(value).__name__} {value!r}"
