"""Calling hooks so that a plugin's failure is named (split from the plugin host).

* :func:`call_hook` — call a hook as pluggy does (same order and *firstresult*
  semantics); an exception of our own type propagates, any other exception raised by a
  plugin becomes a :class:`~delegate_lens.errors.PluginError` naming the plugin and its
  distribution.
* :func:`call_hook_or_warn` — where a fallback exists: warn (:class:`PluginWarning`) and
  return ``None``.
* :func:`call_each` — every implementation one by one: ``[(plugin name, result)]``.
* :func:`call_hook_or_skip` — for a *firstresult* hook with a built-in fallback plugin
  (the Inspector's metadata parsing and clocks): a plugin that raises is reported
  (:class:`PluginWarning`, naming it and what it was working on) and the hook is asked
  again without it, so the next plugin answers, in the end the built-in fallback.

Each takes the plugin manager as ``pm`` (default: the process's). This module imports the
plugin host (:mod:`delegate_lens.pluginmanager`), never the other way.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from types import CodeType, TracebackType
from typing import Any, TextIO

import pluggy

from delegate_lens.errors import DelegateLensError, PluginError, PluginWarning, UsageError
from delegate_lens.pluginmanager import describe_plugin, exception_text, get_plugin_manager

__all__ = ["call_each", "call_hook", "call_hook_or_skip", "call_hook_or_warn"]


def _manager(pm: pluggy.PluginManager | None) -> pluggy.PluginManager:
    return get_plugin_manager() if pm is None else pm


def _describe(name: str, pm: pluggy.PluginManager) -> str:
    return describe_plugin(name, pm)


_exc_text = exception_text


def _caller(pm: pluggy.PluginManager, hook_name: str) -> pluggy.HookCaller:
    caller = getattr(pm.hook, hook_name, None)
    if not isinstance(caller, pluggy.HookCaller) or not hook_name.startswith("dl_"):
        raise UsageError(f"unknown hook {hook_name!r}")
    return caller


_stdout_lock = threading.Lock()
_stdout_users = 0  # hook calls running now, in every thread
_stdout_saved: TextIO | None = None  # the stdout to give back when the last of them ends


def _new_stdout_lock() -> None:  # a forked child (collect's workers) gets a free lock
    global _stdout_lock
    _stdout_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_stdout_lock)


@contextlib.contextmanager
def _plugin_stdout_to_stderr() -> Iterator[None]:
    """``sys.stdout`` is ``sys.stderr`` while any hook call runs, in any thread, and is given
    back when the last one ends. (``contextlib.redirect_stdout`` per call is not enough:
    compare reads its two sides in two threads, and a call that began during another's
    saved stderr as the stdout to give back; ending last, it left stdout on stderr.)"""
    global _stdout_users, _stdout_saved
    with _stdout_lock:
        if _stdout_users == 0:
            _stdout_saved = sys.stdout
            sys.stdout = sys.stderr
        _stdout_users += 1
    try:
        yield
    finally:
        with _stdout_lock:
            _stdout_users -= 1
            if _stdout_users == 0 and _stdout_saved is not None:
                sys.stdout, _stdout_saved = _stdout_saved, None


class _Failed(Exception):
    """A plugin named ``plugin`` failed: raised, exited, or returned what its hook does
    not declare (``error``: the exception, or a PluginError saying what it returned)."""

    def __init__(self, plugin: str | None, error: BaseException) -> None:
        super().__init__(str(error))
        self.plugin = plugin
        self.error = error


_SIMPLE: dict[str, Callable[[object], bool]] = {
    "None": lambda v: v is None,
    "Any": lambda v: True,
    "bytes": lambda v: isinstance(v, (bytes, bytearray, memoryview)),
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "tuple": lambda v: isinstance(v, tuple),
    "Sequence": lambda v: isinstance(v, (list, tuple)),
    "npt.NDArray": lambda v: type(v).__name__ == "ndarray",
}


def _fits(value: object, annotation: str) -> bool:
    """Whether ``value`` has a type the hook's return ``annotation`` (its source text)
    allows: each alternative of a ``|`` union checked by its outer type (``list[str]``: a
    list); a type not known here is not checked."""
    depth, start, alternatives = 0, 0, []
    for i, char in enumerate(annotation):
        depth += char == "["
        depth -= char == "]"
        if char == "|" and depth == 0:
            alternatives.append(annotation[start:i])
            start = i + 1
    alternatives.append(annotation[start:])
    for alternative in alternatives:
        outer = alternative.strip().split("[", 1)[0]
        check = _SIMPLE.get(outer)
        if check is None or check(value):
            return True
    return False


def _declared(caller: pluggy.HookCaller) -> str | None:
    spec = getattr(caller, "spec", None)
    function = getattr(spec, "function", None)
    annotation = getattr(function, "__annotations__", {}).get("return")
    return annotation if isinstance(annotation, str) else None


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _invoke(
    caller: pluggy.HookCaller, hook_name: str, kwargs: dict[str, object], skip: set[str]
) -> Any:
    """Call the hook as pluggy does (the same order, *firstresult* stops at the first
    answer), without the plugins in ``skip``; plugins' stdout goes to stderr (machine
    readable output stays clean). Any failure of a plugin is a :class:`_Failed` naming it:
    an exception, ``sys.exit()``, or (*firstresult*: the answer is used as it is) a result
    of another type than the hook declares; the callers of other hooks check each result."""
    impls = caller.get_hookimpls()
    with _plugin_stdout_to_stderr():
        if any(impl.hookwrapper or impl.wrapper for impl in impls) and not skip:
            try:  # wrappers: pluggy calls them (results then unchecked)
                return caller(**kwargs)
            except SystemExit as exc:
                raise _Failed(None, _exited(exc)) from None
        spec = getattr(caller, "spec", None)
        first = bool(spec and spec.opts.get("firstresult"))
        declared = _declared(caller)
        results: list[object] = []
        for impl in reversed(_plain_impls(impls)):
            name = str(impl.plugin_name)
            if name in skip:
                continue
            try:
                result = impl.function(*[kwargs[arg] for arg in impl.argnames])
            except KeyError as exc:
                if exc.args and exc.args[0] in impl.argnames and exc.args[0] not in kwargs:
                    raise UsageError(f"{hook_name}: the call must give argument {exc}") from None
                raise _Failed(name, exc) from exc
            except SystemExit as exc:
                raise _Failed(name, _exited(exc)) from None
            except DelegateLensError:
                raise
            except Exception as exc:
                raise _Failed(name, exc) from exc
            if result is None:
                continue
            if first and declared is not None and not _fits(result, declared):
                raise _Failed(name, _bad_result(result, declared))
            if first:
                return result
            results.append(result)
        return None if first else results


def _stacklevel() -> int:
    """The ``stacklevel`` of a warning given by a ``call_hook_or_*`` function: where it was
    called from, past the typed callers of :mod:`delegate_lens.hooks`."""
    level, frame = 2, sys._getframe(2)
    while frame.f_back is not None and frame.f_globals.get("__name__") == "delegate_lens.hooks":
        level, frame = level + 1, frame.f_back
    return level


def _exited(exc: SystemExit) -> PluginError:
    return PluginError(f"called sys.exit({exc.code!r})")


def _bad_result(value: object, declared: str) -> PluginError:
    return PluginError(f"returned {_shown(value)}, but the hook returns {declared}")


def _code_of(function: Callable[..., object]) -> CodeType | None:
    target: object = inspect.unwrap(function)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    if code is None:
        call = type(target).__dict__.get("__call__")
        code = getattr(call, "__code__", None)
    return code if isinstance(code, CodeType) else None


def _culprit(caller: pluggy.HookCaller, exc: BaseException) -> str | None:
    """The name of the plugin whose implementation of ``caller`` raised ``exc``."""
    impls = caller.get_hookimpls()
    codes: dict[CodeType, pluggy.HookImpl] = {}
    for impl in impls:
        code = _code_of(impl.function)
        if code is not None:
            codes.setdefault(code, impl)
    candidate: str | None = None
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        found = codes.get(frame.f_code)
        if found is not None:
            return str(found.plugin_name)
        if frame.f_code.co_name == "_multicall" and candidate is None:
            current = frame.f_locals.get("hook_impl")
            if current is not None and current in impls:
                candidate = str(current.plugin_name)
        tb = tb.tb_next
    if candidate is None and len(impls) == 1:
        candidate = str(impls[0].plugin_name)
    return candidate


def _failure_message(
    pm: pluggy.PluginManager,
    caller: pluggy.HookCaller,
    hook_name: str,
    exc: BaseException,
    culprit: str | None = None,
) -> str:
    """What failed where; ``culprit`` is the failing plugin when the caller knows it (else
    it is looked for in the traceback)."""
    if culprit is None:
        culprit = _culprit(caller, exc)
    if culprit is None:
        names = ", ".join(repr(impl.plugin_name) for impl in caller.get_hookimpls())
        who = f"one of the plugins {names}"
    else:
        who = f"plugin {_describe(culprit, pm)}"
    return f"{who} failed in {hook_name}: {_exc_text(exc)}"


def call_hook(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> Any:
    """Call a hook like ``pm.hook.<hook_name>(**kwargs)``; a plugin's failure is named.

    Errors of our own type propagate unchanged; any other exception raised by a plugin
    becomes a :class:`PluginError` naming it (see the module docstring).
    """
    manager = _manager(pm)
    caller = _caller(manager, hook_name)
    try:
        return _invoke(caller, hook_name, kwargs, set())
    except _Failed as failed:
        message = _failure_message(manager, caller, hook_name, failed.error, failed.plugin)
        raise PluginError(message) from failed.error


def call_hook_or_warn(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> Any:
    """Call a hook where a fallback exists: on a plugin's failure warn and return ``None``.

    The warning's category is :class:`PluginWarning` and its message names the plugin and
    the hook. A :class:`~delegate_lens.config.ConfigError` (bad user configuration) still
    propagates.
    """
    manager = _manager(pm)
    caller = _caller(manager, hook_name)
    from delegate_lens.config import ConfigError

    try:
        return _invoke(caller, hook_name, kwargs, set())
    except ConfigError:
        raise
    except (_Failed, Exception) as exc:
        failed = exc if isinstance(exc, _Failed) else _Failed(None, exc)
        message = _failure_message(manager, caller, hook_name, failed.error, failed.plugin)
        warnings.warn(f"{message}; falling back", PluginWarning, stacklevel=_stacklevel())
        return None


def call_hook_or_skip(
    hook_name: str,
    /,
    *,
    pm: pluggy.PluginManager | None = None,
    where: str | None = None,
    **kwargs: object,
) -> Any:
    """Call a *firstresult* hook; a plugin that raises is skipped and the next one answers.

    Each failure is reported with ``warnings.warn(message, PluginWarning)``, the message
    naming the plugin, the hook and ``where`` (e.g. ``"row '7' of block 0"``); the hook is
    then called again without that plugin (the plugins of a built-in fallback, asked last,
    thus still answer). ``None`` when every plugin declined, or when the failing plugin
    cannot be told (the warning then names the candidates). A
    :class:`~delegate_lens.config.ConfigError` (bad user configuration) propagates.
    """
    from delegate_lens.config import ConfigError

    manager = _manager(pm)
    caller = _caller(manager, hook_name)
    skipped: set[str] = set()
    while True:
        try:
            return _invoke(caller, hook_name, kwargs, skipped)
        except ConfigError:
            raise
        except (_Failed, Exception) as exc:
            failed = exc if isinstance(exc, _Failed) else _Failed(None, exc)
            culprit = failed.plugin or _culprit(caller, failed.error)
            message = _failure_message(manager, caller, hook_name, failed.error, culprit)
            if where:
                head, _, tail = message.partition(f" failed in {hook_name}: ")
                message = f"{head} failed in {hook_name} on {where}: {tail}"
            if culprit is None or culprit in skipped or manager.get_plugin(culprit) is None:
                warnings.warn(f"{message}; falling back", PluginWarning, stacklevel=_stacklevel())
                return None
            warnings.warn(
                f"{message}; the next plugin answers", PluginWarning, stacklevel=_stacklevel()
            )
            skipped.add(culprit)


def call_each(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> list[tuple[str, Any]]:
    """Call every implementation of a hook, one by one, in registration order.

    :returns: ``[(plugin_name, result), ...]`` for the results that are not ``None``.
        Wrapper implementations are skipped. Failures are handled as in :func:`call_hook`.
    """
    manager = _manager(pm)
    caller = _caller(manager, hook_name)
    results: list[tuple[str, Any]] = []
    for impl in _plain_impls(caller.get_hookimpls()):
        missing = [arg for arg in impl.argnames if arg not in kwargs]
        if missing:
            raise UsageError(f"{hook_name}: the call must give argument(s) {missing}")
        args = [kwargs[arg] for arg in impl.argnames]
        name = str(impl.plugin_name)
        try:
            with _plugin_stdout_to_stderr():
                result = impl.function(*args)
        except DelegateLensError:
            raise
        except SystemExit as exc:
            message = _failure_message(manager, caller, hook_name, _exited(exc), name)
            raise PluginError(message) from None
        except Exception as exc:
            message = _failure_message(manager, caller, hook_name, exc, name)
            raise PluginError(message) from exc
        if result is not None:  # (what each plugin gave is checked by the caller)
            results.append((name, result))
    return results


def _plain_impls(impls: Iterable[pluggy.HookImpl]) -> list[pluggy.HookImpl]:
    return [impl for impl in impls if not (impl.hookwrapper or impl.wrapper)]
