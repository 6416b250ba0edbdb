"""The plugin host: one pluggy plugin manager per process, its plugins and where they came from.

Building the manager (:func:`get_plugin_manager`) does, in this order:

1. add the hook specs of :mod:`delegate_lens.hookspecs`;
2. block the names given as ``-p no:NAME`` (:func:`apply_plugin_options`; a built-in
   by its module name or its last component, e.g. ``no:mapping_validator``);
3. register the built-in plugins (:data:`BUILTIN_PLUGINS`, imported by name as pytest
   does its own), each under its module name or its alias in :data:`BUILTIN_NAMES`
   (the demo backend: ``demo_backend``); a module defining ``make_plugin(pm)`` is
   registered as the object that returns (e.g. ``tick_clock``, which calls another hook);
4. load every entry point of group ``delegate_lens`` (sorted by name), each registered
   under the entry point's name — unless ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD`` is set
   (to anything but ``""``/``0``/``false``/``no``); built-ins stay;
5. import and register every ``-p MODULE`` (last, so they are asked first by
   *firstresult* hooks). ``-p NAME`` naming an entry point loads that entry point even
   when autoloading is disabled.

A plugin whose import fails (an exception, ``sys.exit()``, any ``BaseException`` but
``KeyboardInterrupt``), whose hook implementation does not match its spec (an argument the
spec does not have, a wrapper that is not a generator) or that implements an unknown
``dl_`` hook raises :class:`~delegate_lens.errors.PluginError` naming the plugin and its
distribution (name and version). What a plugin prints while it is imported goes to
standard error (:func:`_plugin_import`), never into a command's output on stdout. As in
pytest, a routine of a plugin named ``dl_*`` is a hook implementation even without
``@hookimpl``.

Calling hooks is :mod:`delegate_lens.hookcalls`'s job (``call_hook``,
``call_hook_or_warn``, ``call_each``, ``call_hook_or_skip``): it imports this module, never
the other way. Here: :func:`has_implementations` (whether any plugin implements a hook),
:func:`describe_plugin` (``"name (distribution version)"`` / ``"name (built-in)"`` for
messages) and :func:`list_plugins` (:class:`PluginInfo` for every registered plugin).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import itertools
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pluggy

from delegate_lens import hookspecs
from delegate_lens.config import env_switch
from delegate_lens.errors import (
    DelegateLensWarning,
    PluginError,
    PluginWarning,
    UsageError,
)
from delegate_lens.hookspecs import PROJECT_NAME

__all__ = [
    "AUTOLOAD_ENV",
    "BUILTIN_NAMES",
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "DelegateLensPluginManager",
    "DelegateLensWarning",
    "PluginInfo",
    "PluginSource",
    "PluginWarning",
    "apply_plugin_options",
    "build_plugin_manager",
    "built_plugin_manager",
    "describe_plugin",
    "exception_text",
    "get_plugin_manager",
    "has_implementations",
    "list_plugins",
    "plugin_names",
    "plugin_options",
    "reset_plugin_manager",
]

BUILTIN_PLUGINS: tuple[str, ...] = (
    "delegate_lens.builtins.mapping_validator",
    "delegate_lens.builtins.exporters",
    "delegate_lens.builtins.comparators",
    "delegate_lens.builtins.metadata_fallback",
    "delegate_lens.builtins.tick_clock",  # before time_scale_fallback: asked before it
    "delegate_lens.builtins.time_scale_fallback",
    "delegate_lens.builtins.notebook",
    "delegate_lens.builtins.testing_rules",
    "delegate_lens.backends_demo._plugin",
)
"""Modules registered as built-in plugins, in registration order."""

BUILTIN_NAMES: dict[str, str] = {"delegate_lens.backends_demo._plugin": "demo_backend"}
"""Built-ins registered under a name other than their module name (the demo backend ships
in the package: it stays available with ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD`` set and
is blocked with ``-p no:demo_backend``)."""

ENTRY_POINT_GROUP = PROJECT_NAME
"""Entry-point group plugins register under (``delegate_lens``)."""

AUTOLOAD_ENV = "DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD"
"""Set to ``1`` to skip plugins found through entry points (built-ins stay); a switch,
read by :func:`delegate_lens.config.env_switch` (``true``/``yes``/``on`` too)."""


@attrs.frozen
class PluginSource:
    """Where a registered plugin came from.

    ``kind`` is ``"built-in"``, ``"entry point"``, ``"-p"`` (command line) or
    ``"registered"`` (``pm.register(...)`` called by code); ``distribution`` and
    ``version`` are ``None`` when unknown (and always for built-ins).
    """

    kind: str
    distribution: str | None = None
    version: str | None = None
    value: str | None = None  # the entry point's value or the -p module name


@attrs.frozen
class PluginInfo:
    """One row of ``delegate-lens plugins``."""

    name: str
    source: PluginSource
    hooks: tuple[str, ...]

    @property
    def distribution_label(self) -> str:
        if self.source.kind == "built-in":
            return "built-in"
        return self.source.distribution or f"({self.source.kind})"


_serials = itertools.count(1)

HOOK_POLICY_PLUGIN = "delegate-lens-hook-policy"
"""The name of the plugin :mod:`delegate_lens.hookcalls` registers in a plugin manager at
its first call (the error policies, as pluggy wrappers): not listed as a plugin here, and
not an implementation of a hook for :func:`has_implementations`."""


class DelegateLensPluginManager(pluggy.PluginManager):
    """pluggy's manager, remembering where each plugin came from."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.serial: int = next(_serials)
        """This manager's number in this process: another manager has another (e.g. the
        singleton rebuilt), which a plain value can tell without holding the manager."""
        self.plugin_sources: dict[str, PluginSource] = {}
        self.unknown_blocked: tuple[str, ...] = ()
        """Names given as ``-p no:NAME`` that match no built-in and no entry point."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("dl_"):
            method = getattr(plugin, name, None)
            if inspect.isroutine(method):
                return {}
        return opts


# --------------------------------------------------------------------------- the singleton

_lock = threading.RLock()
_pm: DelegateLensPluginManager | None = None
_options: tuple[str, ...] = ()
_building = False


def get_plugin_manager() -> pluggy.PluginManager:
    """The process's plugin manager, built on first use (see the module docstring)."""
    global _pm, _building
    pm = _pm
    if pm is not None:
        return pm
    with _lock:
        if _pm is None:
            if _building:
                raise PluginError(
                    "get_plugin_manager() was called while the plugins were being loaded "
                    "(a plugin must not use the plugin manager at import time)"
                )
            _building = True
            try:
                _pm = build_plugin_manager(_options)
            finally:
                _building = False
        return _pm


def apply_plugin_options(options: Sequence[str]) -> pluggy.PluginManager:
    """Apply the CLI's ``-p MODULE`` / ``-p no:NAME`` options and rebuild the singleton."""
    global _pm, _options
    parsed = tuple(options)
    _parse_options(parsed)  # fail early on a malformed option
    with _lock:
        _options = parsed
        _pm = None
    return get_plugin_manager()


def built_plugin_manager() -> DelegateLensPluginManager | None:
    """The process's plugin manager when it is built (``None``: not yet, or reset since);
    unlike :func:`get_plugin_manager`, never builds it."""
    return _pm


def plugin_options() -> tuple[str, ...]:
    """The ``-p`` options the process's plugin manager is built with (those last given to
    :func:`apply_plugin_options`; none after :func:`reset_plugin_manager`)."""
    return _options


def reset_plugin_manager() -> None:
    """Forget the singleton and any ``-p`` options (for tests); the next call rebuilds it."""
    global _pm, _options
    with _lock:
        _pm = None
        _options = ()


def _autoload_enabled() -> bool:
    return not env_switch(AUTOLOAD_ENV)


def _parse_options(options: Sequence[str]) -> tuple[list[str], list[str]]:
    blocked: list[str] = []
    modules: list[str] = []
    for option in options:
        text = option.strip()
        if text.startswith("no:"):
            name = text[3:].strip()
            if not name:
                raise UsageError(f"-p {option!r}: give a plugin name after 'no:'")
            blocked.append(name)
        elif text:
            modules.append(text)
        else:
            raise UsageError("-p: give a plugin module name or no:NAME")
    return blocked, modules


def build_plugin_manager(
    options: Sequence[str] = (), *, autoload: bool | None = None
) -> DelegateLensPluginManager:
    """Build a new, independent plugin manager (the singleton is built with this).

    :param options: ``-p`` options (``"MODULE"`` or ``"no:NAME"``).
    :param autoload: load entry points; default: unless ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD``.
    """

    blocked, modules = _parse_options(options)
    pm = DelegateLensPluginManager()
    pm.add_hookspecs(hookspecs)
    # a built-in is blocked by its module name or its short name (-p no:mapping_validator)
    # (an aliased built-in is registered and blocked by its alias or its module name)
    names = {module: BUILTIN_NAMES.get(module, module) for module in BUILTIN_PLUGINS}
    short_names = {
        module.rsplit(".", 1)[-1]: name for module, name in names.items() if module == name
    }
    short_names.update(names)
    for name in blocked:
        pm.set_blocked(short_names.get(name, name))
    for module_name, name in names.items():
        if pm.is_blocked(name):
            continue
        module = importlib.import_module(module_name)
        make_plugin = getattr(module, "make_plugin", None)  # a built-in object for this pm
        plugin = module if make_plugin is None else make_plugin(pm)
        _register(pm, plugin, name, PluginSource("built-in", value=module_name))
    entry_points = {ep.name: ep for ep in _entry_points()}
    known = {*names.values(), *short_names, *entry_points, *modules}
    pm.unknown_blocked = tuple(dict.fromkeys(name for name in blocked if name not in known))
    if autoload if autoload is not None else _autoload_enabled():
        for name in sorted(entry_points):
            _load_entry_point(pm, entry_points[name])
    for module_name in modules:
        registered_as = names.get(module_name, module_name)
        if pm.is_blocked(registered_as) or pm.has_plugin(registered_as):
            continue
        if module_name in entry_points:
            _load_entry_point(pm, entry_points[module_name])
        else:
            _load_module_option(pm, module_name)
    _check_pending(pm)
    return pm


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        other = found.get(ep.name)
        if other is not None and _dist_name(other) != _dist_name(ep):
            raise PluginError(
                f"plugin name {ep.name!r} is registered by two distributions: "
                f"{_dist_label(other)} and {_dist_label(ep)}"
            )
        found.setdefault(ep.name, ep)
    return list(found.values())


def _dist_name(ep: importlib.metadata.EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    return None if dist is None else str(dist.metadata["Name"] or dist.name)


def _dist_label(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown distribution"
    return f"{_dist_name(ep)} {dist.version}"


def _load_entry_point(pm: DelegateLensPluginManager, ep: importlib.metadata.EntryPoint) -> None:
    if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
        return
    dist = getattr(ep, "dist", None)
    source = PluginSource(
        "entry point",
        distribution=_dist_name(ep),
        version=None if dist is None else str(dist.version),
        value=ep.value,
    )
    with _plugin_import(f"plugin {_label(ep.name, source)} failed to load ({ep.value})"):
        plugin = ep.load()
    _register(pm, plugin, ep.name, source)


def _load_module_option(pm: DelegateLensPluginManager, module_name: str) -> None:
    with _plugin_import(f"plugin module {module_name!r} (-p {module_name}) failed to load"):
        module = importlib.import_module(module_name)
    if pm.is_registered(module):
        return
    distribution, version = _module_distribution(module_name)
    _register(pm, module, module_name, PluginSource("-p", distribution, version, module_name))


@contextlib.contextmanager
def _plugin_import(failed: str) -> Iterator[None]:
    """Around the import of a plugin's code (an entry point, a ``-p`` module): what it
    prints goes to standard error, so that a command's output on stdout stays what the
    command wrote (the command line also sends prints to stderr for its whole run; this
    holds for library users and worker processes too, for the import's duration); any
    failure (an exception, ``sys.exit()``, another ``BaseException`` but
    ``KeyboardInterrupt``) becomes a :class:`PluginError`, ``"<failed>: <what happened>"``.
    """
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise PluginError(f"{failed}: {exception_text(exc)}") from exc


def _module_distribution(module_name: str) -> tuple[str | None, str | None]:
    top = module_name.split(".", 1)[0]
    try:
        names = importlib.metadata.packages_distributions().get(top) or []
    except Exception:  # a broken installed distribution must not hide the plugin
        return None, None
    if not names:
        return None, None
    try:
        return names[0], importlib.metadata.version(names[0])
    except importlib.metadata.PackageNotFoundError:
        return names[0], None


def _register(
    pm: DelegateLensPluginManager, plugin: object, name: str, source: PluginSource
) -> None:
    pm.plugin_sources[name] = source
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        pm.plugin_sources.pop(name, None)
        raise PluginError(
            f"plugin {_label(name, source)} does not match the hook specs: {_validation_text(exc)}"
        ) from exc
    except ValueError as exc:  # registered twice
        pm.plugin_sources.pop(name, None)
        raise PluginError(f"plugin {_label(name, source)} could not be registered: {exc}") from exc
    _check_unknown_hooks(pm, plugin, name, source)


def _check_unknown_hooks(
    pm: pluggy.PluginManager, plugin: object, name: str, source: PluginSource
) -> None:
    known = sorted(n for n in dir(hookspecs) if n.startswith("dl_"))
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.has_spec():
            continue
        if all(impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin):
            continue
        import difflib  # an error's suggestion: not imported by every start

        guess = difflib.get_close_matches(caller.name, known, n=1)
        hint = f" (did you mean {guess[0]}?)" if guess else ""
        pm.unregister(plugin)
        raise PluginError(
            f"plugin {_label(name, source)} implements unknown hook {caller.name!r}{hint}"
        )


def _check_pending(pm: DelegateLensPluginManager) -> None:
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"plugin {describe_plugin(pm.get_name(exc.plugin) or repr(exc.plugin), pm)} "
            f"does not match the hook specs: {_validation_text(exc)}"
        ) from exc


def _validation_text(exc: pluggy.PluginValidationError) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if lines and lines[0].startswith("Plugin "):
        # pluggy's first line repeats the plugin name; keep the hook name it gives
        head = lines[0]
        hook = head.split(" for hook ", 1)[1] if " for hook " in head else None
        lines = lines[1:]
        if hook:
            lines.insert(0, f"hook {hook}:")
    return " ".join(lines)


def exception_text(exc: BaseException) -> str:
    """``"Type: first line of the message"`` (what a one-line error shows of an exception);
    ``"called sys.exit(code)"`` for a :class:`SystemExit`."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _label(name: str, source: PluginSource | None) -> str:
    if source is None:
        return repr(name)
    if source.kind == "built-in":
        return f"{name!r} (built-in)"
    if source.distribution:
        version = f" {source.version}" if source.version else ""
        return f"{name!r} ({source.distribution}{version})"
    where = f"-p {source.value}" if source.kind == "-p" and source.value else source.kind
    return f"{name!r} ({where})"


# --------------------------------------------------------------------------- introspection


def _manager(pm: pluggy.PluginManager | None) -> pluggy.PluginManager:
    return get_plugin_manager() if pm is None else pm


def _source(pm: pluggy.PluginManager, name: str) -> PluginSource:
    sources: dict[str, PluginSource] = getattr(pm, "plugin_sources", {})
    return sources.get(name) or PluginSource("registered")


def describe_plugin(name: str, pm: pluggy.PluginManager | None = None) -> str:
    """``'name' (distribution version)``, ``'name' (built-in)`` or ``'name' (registered)``."""
    return _label(name, _source(_manager(pm), name))


def _plugins(pm: pluggy.PluginManager) -> list[tuple[str, object]]:
    """``pm``'s plugins by name (``None``: blocked), the hook-policy plugin left out."""
    return [(name, p) for name, p in pm.list_name_plugin() if name != HOOK_POLICY_PLUGIN]


def plugin_names(pm: pluggy.PluginManager | None = None) -> frozenset[str]:
    """The names of every plugin registered or blocked (not the hook-policy plugin's)."""
    return frozenset(name for name, _ in _plugins(_manager(pm)))


def list_plugins(pm: pluggy.PluginManager | None = None) -> list[PluginInfo]:
    """Every registered plugin with where it came from and the hooks it implements."""
    pm = _manager(pm)
    rows = []
    for name, plugin in _plugins(pm):
        if plugin is None:  # blocked
            continue
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        rows.append(PluginInfo(name, _source(pm, name), tuple(hooks)))
    return rows


def has_implementations(hook_name: str, pm: pluggy.PluginManager | None = None) -> bool:
    """Whether any registered plugin implements ``hook_name``."""
    caller = getattr(_manager(pm).hook, hook_name, None)
    return caller is not None and any(
        impl.plugin_name != HOOK_POLICY_PLUGIN for impl in caller.get_hookimpls()
    )
