"""Calling hooks so that a plugin's failure is named (split from the plugin host).

Every function here calls the hook's :class:`pluggy.HookCaller` (``pm.hook.<name>``) with
pluggy's own call loop — its order, its *firstresult* semantics, the plugins' own
wrappers — and adds one hook wrapper of its own (``wrapper=True``, outermost): the error
policy of the call, which names the plugin that failed.

* :func:`call_hook` (raise) — an exception of our own type propagates, any other exception
  raised by a plugin becomes a :class:`~delegate_lens.errors.PluginError` naming the
  plugin and its distribution.
* :func:`call_hook_or_warn` (warn) — where a fallback exists: warn
  (:class:`PluginWarning`) and return ``None``.
* :func:`call_hook_or_skip` (skip) — for a *firstresult* hook with a built-in fallback
  plugin (the Inspector's metadata parsing and clocks): a plugin that fails is reported
  (:class:`PluginWarning`, naming it and what it was working on) and the hook is called
  again without it, so the next plugin answers, in the end the built-in fallback.
* :func:`call_each` — every implementation, in registration order:
  ``[(plugin name, result)]``; failures as in :func:`call_hook`.

A plugin fails by raising, by calling ``sys.exit()``, or (a *firstresult* hook, whose
answer is used as it is) by answering with another type than its hook spec declares: the
spec's return annotation, evaluated (:func:`typing.get_type_hints`), checked by outer type
and, for a list or a dict, item by item (:mod:`delegate_lens._hookanswers`): ``[1, None,
b"x"]`` where ``list[str]`` is due is a failure too. An answer that is one of the call's
arguments handed back (the built-in ``metadata_fallback`` gives ``metadatas`` back) passes.
Each implementation is called through a stand-in noting its plugin's name, so the
wrapper knows which plugin raised or answered.

Nothing here touches ``sys.stdout``: the command line sends what plugins print to stderr,
once, at its start (:mod:`delegate_lens.cli`).

Each takes the plugin manager as ``pm`` (default: the process's). This module imports the
plugin host (:mod:`delegate_lens.pluginmanager`), never the other way.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
import warnings
import weakref
from collections.abc import Callable, Generator, Sequence
from types import CodeType, FrameType, TracebackType
from typing import Any

import attrs
import pluggy

from delegate_lens._hookanswers import answer_check, shown
from delegate_lens.errors import (
    ConfigError,
    DelegateLensError,
    PluginError,
    PluginWarning,
    UsageError,
)
from delegate_lens.pluginmanager import describe_plugin, exception_text, get_plugin_manager

__all__ = ["call_each", "call_hook", "call_hook_or_skip", "call_hook_or_warn"]

Teardown = Generator[None, object, object]
"""A new-style hook wrapper (pluggy's ``wrapper=True``): ``result = yield``."""


def _caller(
    pm: pluggy.PluginManager | None, hook_name: str
) -> tuple[pluggy.PluginManager, pluggy.HookCaller]:
    """The plugin manager (default: the process's) and its caller of ``hook_name``."""
    manager = get_plugin_manager() if pm is None else pm
    caller = getattr(manager.hook, hook_name, None)
    if not isinstance(caller, pluggy.HookCaller) or not hook_name.startswith("dl_"):
        raise UsageError(f"unknown hook {hook_name!r}")
    return manager, caller


def _is_wrapper(impl: pluggy.HookImpl) -> bool:
    return bool(impl.hookwrapper or impl.wrapper)


# --------------------------------------------------------------------------- one call


@attrs.define
class _BadAnswer(Exception):
    """``plugin`` answered with another type than its hook declares (``error`` says so)."""

    plugin: str | None
    error: PluginError


@attrs.define(eq=False)
class _Call:
    """One call of a hook through a policy wrapper: what it is given, and what the
    implementations did (noted by their stand-ins: the plugin that raised, the answers)."""

    pm: pluggy.PluginManager
    caller: pluggy.HookCaller
    kwargs: dict[str, object]
    policy: Callable[[_Call], Teardown]
    impls: list[pluggy.HookImpl]  # as pluggy takes them: called last to first
    firstresult: bool
    origin: FrameType | None = None  # where a warning points at
    where: str | None = None  # what the plugins work on, for messages
    failed: tuple[str, BaseException] | None = None
    answers: list[tuple[str, object]] = attrs.Factory(list)

    def run(self) -> Any:
        """pluggy's call loop over :attr:`impls`, each through its stand-in, inside the
        policy wrapper (the current call while it runs, in this thread)."""
        stand_ins = _stand_ins(self.pm)
        methods = [
            impl if _is_wrapper(impl) else stand_ins.get(impl) or _stand_in(impl, stand_ins)
            for impl in self.impls
        ]
        methods.append(_POLICY)
        token = _CURRENT.set(self)
        try:
            return self.caller._hookexec(self.caller.name, methods, self.kwargs, self.firstresult)
        finally:
            _CURRENT.reset(token)

    def without(self, plugin: str) -> _Call:
        """This call again, without ``plugin``'s implementations (and nothing noted yet)."""
        impls = [impl for impl in self.impls if impl.plugin_name != plugin]
        return attrs.evolve(self, impls=impls, failed=None, answers=[])

    def checked(self, result: object) -> object:
        """``result``, when it is the answer of a *firstresult* hook (a plugin's own wrapper
        may make another: then it is not checked) of a type its spec allows."""
        if not self.firstresult or result is None or any(map(_is_wrapper, self.impls)):
            return result
        accepts, declared = answer_check(self.caller)
        if accepts is None or accepts(result):
            return result
        if any(result is given for given in self.kwargs.values()):
            return result  # an argument handed back: "not mine" (a fallback's raw metadatas)
        plugin = self.answers[0][0] if self.answers else None
        raise _BadAnswer(
            plugin, PluginError(f"returned {shown(result)}, but the hook returns {declared}")
        )

    def failure(
        self, exc: BaseException, passing: type[BaseException]
    ) -> tuple[str | None, BaseException] | None:
        """The plugin that failed (``None``: not known) and its error, when ``exc`` is a
        plugin's failure: an exception other than ``passing``, ``sys.exit()``, a bad
        answer. ``None`` for anything else (it propagates)."""
        if isinstance(exc, pluggy.HookCallError):
            raise UsageError(
                f"{self.caller.name}: the call must give argument {self._missing()!r}"
            ) from None
        if isinstance(exc, _BadAnswer):
            return exc.plugin, exc.error
        if isinstance(exc, passing) or not isinstance(exc, (Exception, SystemExit)):
            return None
        error = (
            PluginError(f"called sys.exit({exc.code!r})") if isinstance(exc, SystemExit) else exc
        )
        if self.failed is not None and self.failed[1] is exc:
            return self.failed[0], error
        return _culprit(self.impls, exc), error

    def _missing(self) -> str | None:
        for impl in reversed(self.impls):  # the first one pluggy reached without it
            for name in impl.argnames:
                if name not in self.kwargs:
                    return name
        return None

    def message(self, plugin: str | None, error: BaseException) -> str:
        """What failed where."""
        if plugin is None:
            names = ", ".join(repr(impl.plugin_name) for impl in self.caller.get_hookimpls())
            who = f"one of the plugins {names}"
        else:
            who = f"plugin {describe_plugin(plugin, self.pm)}"
        on = f" on {self.where}" if self.where else ""
        return f"{who} failed in {self.caller.name}{on}: {exception_text(error)}"

    def warn(self, message: str) -> None:
        """Warn (:class:`PluginWarning`) pointing at :attr:`origin`."""
        level, frame = 1, sys._getframe()
        while frame.f_back is not None and frame is not self.origin:
            level, frame = level + 1, frame.f_back
        warnings.warn(message, PluginWarning, stacklevel=level if frame is self.origin else 2)

    def can_skip(self, plugin: str | None) -> bool:
        return (
            plugin is not None
            and self.pm.get_plugin(plugin) is not None
            and any(impl.plugin_name == plugin for impl in self.impls)
        )


# --------------------------------------------------------------------------- the policies


def _raise_policy(call: _Call) -> Teardown:
    """raise: a plugin's failure is a :class:`PluginError` naming it; errors of our own
    type propagate unchanged."""
    try:
        return call.checked((yield))
    except BaseException as exc:
        failure = call.failure(exc, passing=DelegateLensError)
        if failure is None:
            raise
        plugin, error = failure
        raise PluginError(call.message(plugin, error)) from error


def _warn_policy(call: _Call) -> Teardown:
    """warn: a plugin's failure is a :class:`PluginWarning` naming it, and the answer is
    ``None`` (the caller falls back); a :class:`ConfigError` propagates."""
    try:
        return call.checked((yield))
    except BaseException as exc:
        failure = call.failure(exc, passing=ConfigError)
        if failure is None:
            raise
        call.warn(f"{call.message(*failure)}; falling back")
        return None


def _skip_policy(call: _Call) -> Teardown:
    """skip: a plugin's failure is a :class:`PluginWarning` naming it, and the hook is
    called again without it (so the next plugin answers); when the plugin is not known,
    the answer is ``None``. A :class:`ConfigError` propagates."""
    try:
        return call.checked((yield))
    except BaseException as exc:
        failure = call.failure(exc, passing=ConfigError)
        if failure is None:
            raise
        plugin, error = failure
        message = call.message(plugin, error)
        if plugin is None or not call.can_skip(plugin):
            call.warn(f"{message}; falling back")
            return None
        call.warn(f"{message}; the next plugin answers")
        return call.without(plugin).run()


_CURRENT: contextvars.ContextVar[_Call] = contextvars.ContextVar("delegate_lens_hook_call")
"""The call running in this thread (a hook a plugin calls is current until it returns)."""


def _policy_wrapper() -> Teardown:
    call = _CURRENT.get()
    return call.policy(call)


_POLICY = pluggy.HookImpl(
    None,
    __name__,
    _policy_wrapper,
    pluggy.HookimplOpts(
        wrapper=True,
        hookwrapper=False,
        optionalhook=False,
        tryfirst=True,
        trylast=False,
        specname=None,
    ),
)
"""The policy wrapper of the current call, as pluggy takes it: outermost (last in the list
pluggy calls from the end), no hook arguments."""

_STAND_INS: weakref.WeakKeyDictionary[
    pluggy.PluginManager, dict[pluggy.HookImpl, pluggy.HookImpl]
] = weakref.WeakKeyDictionary()
"""The stand-ins of each plugin manager's implementations, made once each and kept as long
as the manager (a plugin unregistered with them)."""


def _stand_ins(pm: pluggy.PluginManager) -> dict[pluggy.HookImpl, pluggy.HookImpl]:
    found = _STAND_INS.get(pm)
    return _STAND_INS.setdefault(pm, {}) if found is None else found


def _stand_in(
    impl: pluggy.HookImpl, made: dict[pluggy.HookImpl, pluggy.HookImpl]
) -> pluggy.HookImpl:
    """``impl`` (the same arguments, plugin and options) calling its function through one
    that notes, in the current call, its plugin's failure or answer."""
    function, plugin = impl.function, str(impl.plugin_name)

    def noted(*args: object) -> object:
        try:
            result = function(*args)
        except BaseException as exc:
            _CURRENT.get().failed = (plugin, exc)
            raise
        if result is not None:
            _CURRENT.get().answers.append((plugin, result))
        return result

    stand_in = object.__new__(pluggy.HookImpl)
    for slot in pluggy.HookImpl.__slots__:
        object.__setattr__(stand_in, slot, noted if slot == "function" else getattr(impl, slot))
    return made.setdefault(impl, stand_in)


# --------------------------------------------------------------------------- failures


def _code_of(function: Callable[..., object]) -> CodeType | None:
    target: object = inspect.unwrap(function)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    if code is None:
        call = type(target).__dict__.get("__call__")
        code = getattr(call, "__code__", None)
    return code if isinstance(code, CodeType) else None


def _culprit(impls: Sequence[pluggy.HookImpl], exc: BaseException) -> str | None:
    """The plugin whose code among ``impls`` raised ``exc`` where no stand-in noted it (a
    plugin's own wrapper): found in the traceback; the only plugin when there is one."""
    codes: dict[CodeType, pluggy.HookImpl] = {}
    for impl in impls:
        code = _code_of(impl.function)
        if code is not None:
            codes.setdefault(code, impl)
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        found = codes.get(tb.tb_frame.f_code)
        if found is not None:
            return str(found.plugin_name)
        tb = tb.tb_next
    plugins = {str(impl.plugin_name) for impl in impls}
    return plugins.pop() if len(plugins) == 1 else None


def _origin() -> FrameType:
    """The frame a warning points at: the caller of the ``call_hook_or_*`` function that
    calls this, past the typed callers of :mod:`delegate_lens.hooks`."""
    frame = sys._getframe(2)
    while frame.f_back is not None and frame.f_globals.get("__name__") == "delegate_lens.hooks":
        frame = frame.f_back
    return frame


# --------------------------------------------------------------------------- the calls


def _call(
    hook_name: str,
    pm: pluggy.PluginManager | None,
    kwargs: dict[str, object],
    policy: Callable[[_Call], Teardown],
    **more: Any,
) -> _Call:
    manager, caller = _caller(pm, hook_name)
    firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
    return _Call(manager, caller, kwargs, policy, caller.get_hookimpls(), firstresult, **more)


def call_hook(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> Any:
    """Call a hook like ``pm.hook.<hook_name>(**kwargs)``; a plugin's failure is named.

    Errors of our own type propagate unchanged; any other exception raised by a plugin
    becomes a :class:`PluginError` naming it (see the module docstring).
    """
    return _call(hook_name, pm, kwargs, _raise_policy).run()


def call_hook_or_warn(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> Any:
    """Call a hook where a fallback exists: on a plugin's failure warn and return ``None``.

    The warning's category is :class:`PluginWarning` and its message names the plugin and
    the hook. A :class:`~delegate_lens.config.ConfigError` (bad user configuration) still
    propagates.
    """
    return _call(hook_name, pm, kwargs, _warn_policy, origin=_origin()).run()


def call_hook_or_skip(
    hook_name: str,
    /,
    *,
    pm: pluggy.PluginManager | None = None,
    where: str | None = None,
    **kwargs: object,
) -> Any:
    """Call a *firstresult* hook; a plugin that fails is skipped and the next one answers.

    Each failure is reported with ``warnings.warn(message, PluginWarning)``, the message
    naming the plugin, the hook and ``where`` (e.g. ``"row '7' of block 0"``); the hook is
    then called again without that plugin (the plugins of a built-in fallback, asked last,
    thus still answer). ``None`` when every plugin declined, or when the failing plugin
    cannot be told (the warning then names the candidates). A
    :class:`~delegate_lens.config.ConfigError` (bad user configuration) propagates.
    """
    return _call(hook_name, pm, kwargs, _skip_policy, origin=_origin(), where=where).run()


def call_each(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> list[tuple[str, Any]]:
    """Call every implementation of a hook, one by one, in registration order.

    :returns: ``[(plugin_name, result), ...]`` for the results that are not ``None``.
        Wrapper implementations are skipped. Failures are handled as in :func:`call_hook`.
    """
    manager, caller = _caller(pm, hook_name)
    plain = [impl for impl in caller.get_hookimpls() if not _is_wrapper(impl)]
    for impl in plain:
        missing = [arg for arg in impl.argnames if arg not in kwargs]
        if missing:
            raise UsageError(f"{hook_name}: the call must give argument(s) {missing}")
    # pluggy calls its list last to first: reversed, registration order; all, not the first
    call = _Call(manager, caller, kwargs, _raise_policy, plain[::-1], firstresult=False)
    call.run()
    return call.answers
