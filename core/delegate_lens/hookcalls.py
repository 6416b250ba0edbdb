"""Calling hooks so that a plugin's failure is named (split from the plugin host).

Every function here calls the hook as ``pm.hook.<name>(**kwargs)``: pluggy's own call
loop, its order, its *firstresult* semantics, the plugins' own wrappers. The error policy
of the call is a hook wrapper (``wrapper=True``) of a plugin of ours, registered in the
manager at its first call through here and kept the outermost wrapper
(:data:`~delegate_lens.pluginmanager.HOOK_POLICY_PLUGIN`, not listed as a plugin); a hook
called directly passes through it unchanged.

* :func:`call_hook` (raise) — an exception of our own type propagates, any other exception
  raised by a plugin becomes a :class:`~delegate_lens.errors.PluginError` naming the
  plugin and its distribution; :func:`call_hook_answered` also gives the plugin that
  answered.
* :func:`call_hook_or_warn` (warn) — where a fallback exists: warn
  (:class:`PluginWarning`) and return ``None``.
* :func:`call_hook_or_skip` (skip) — for a *firstresult* hook with a built-in fallback
  plugin (the Inspector's metadata parsing and clocks): a plugin that fails is reported
  (:class:`PluginWarning`, naming it and what it was working on) and the hook is called
  again without it (pluggy's subset caller), so the next plugin answers, in the end the
  built-in fallback.
* :func:`call_each` — a hook every plugin answers: ``[(plugin name, result)]`` in
  registration order; failures as in :func:`call_hook`.

A plugin fails by raising, by calling ``sys.exit()``, or (a *firstresult* hook, whose
answer is used as it is) by answering with another type than its hook spec declares
(:mod:`delegate_lens._hookanswers`): ``[1, None, b"x"]`` where ``list[str]`` is due is a
failure too. An answer that is one of the call's arguments handed back (the built-in
``metadata_fallback`` gives ``metadatas`` back) passes. Each implementation's function is
wrapped once, where pluggy keeps it, by one noting its plugin's failure or answer in the
current call, so the policy knows which plugin raised or answered.

Nothing here touches ``sys.stdout``: the command line sends what plugins print to stderr,
once, at its start (:mod:`delegate_lens.cli`).

Each takes the plugin manager as ``pm`` (default: the process's). This module imports the
plugin host (:mod:`delegate_lens.pluginmanager`), never the other way.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import warnings
from collections.abc import Callable, Generator
from types import FrameType
from typing import Any

import attrs
import pluggy

from delegate_lens import hookspecs
from delegate_lens._hookanswers import answer_check, culprit, shown
from delegate_lens.errors import (
    ConfigError,
    DelegateLensError,
    PluginError,
    PluginWarning,
    UsageError,
)
from delegate_lens.hookspecs import hookimpl
from delegate_lens.pluginmanager import (
    HOOK_POLICY_PLUGIN,
    describe_plugin,
    exception_text,
    get_plugin_manager,
)

__all__ = [
    "call_each",
    "call_hook",
    "call_hook_answered",
    "call_hook_or_skip",
    "call_hook_or_warn",
]

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
    impls: list[pluggy.HookImpl]  # the plugins' (not the policy's), called last to first
    firstresult: bool
    origin: FrameType | None = None  # where a warning points at
    where: str | None = None  # what the plugins work on, for messages
    removed: tuple[str, ...] = ()  # plugins skipped (the skip policy's retries)
    entered: bool = False  # the policy wrapper runs (a nested call passes through it)
    failed: tuple[str, BaseException] | None = None
    answers: list[tuple[str, object]] = attrs.Factory(list)  # in call order
    retried: _Call | None = None  # this call again, without a failed plugin

    def run(self) -> Any:
        """``pm.hook.<name>(**kwargs)`` (or the subset caller of :meth:`without`): pluggy's
        call loop, inside the policy wrapper, with this call current in this thread."""
        token = _CURRENT.set(self)
        try:
            return self.caller(**self.kwargs)
        finally:
            _CURRENT.reset(token)

    def without(self, plugin: str) -> _Call:
        """This call again, without ``plugin``'s implementations (and nothing noted yet):
        through pluggy's subset caller of the hook."""
        removed = (*self.removed, plugin)
        objects = [self.pm.get_plugin(name) for name in removed]
        caller = self.pm.subset_hook_caller(
            self.caller.name, [obj for obj in objects if obj is not None]
        )
        retry = attrs.evolve(
            self, caller=caller, impls=_impls(caller), removed=removed, failed=None, answers=[]
        )
        self.retried = retry
        return retry

    def answered_by(self) -> tuple[str, object] | None:
        """The plugin whose answer the call gave, and that answer (``None``: no plugin
        answered, or a plugin's own wrapper made another)."""
        last = self
        while last.retried is not None:
            last = last.retried
        return last.answers[0] if last.answers else None

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
        return culprit(self.impls, exc), error

    def _missing(self) -> str | None:
        for impl in reversed(self.impls):  # the first one pluggy reached without it
            for name in impl.argnames:
                if name not in self.kwargs:
                    return name
        return None

    def message(self, plugin: str | None, error: BaseException) -> str:
        """What failed where."""
        if plugin is None:
            names = ", ".join(repr(impl.plugin_name) for impl in self.impls[::-1])
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


def _policy_impl(hook: str) -> Callable[[], Teardown]:
    """The policy plugin's wrapper of ``hook``: the current call's policy, when the call is
    of this hook and not yet inside its policy (a hook called directly, ``pm.hook.<name>``,
    by a plugin or a user: passed through)."""

    def wrapper() -> Teardown:
        call = _CURRENT.get(None)
        if call is None or call.entered or call.caller.name != hook:
            return (yield)
        call.entered = True
        return (yield from call.policy(call))

    wrapper.__name__ = wrapper.__qualname__ = hook
    marked: Callable[[], Teardown] = hookimpl(wrapper=True, tryfirst=True, optionalhook=True)(
        wrapper
    )
    return marked


class _HookPolicy:
    """The plugin holding the error policies: one wrapper (``wrapper=True``) per hook of
    :mod:`delegate_lens.hookspecs`, registered in a plugin manager at its first call through
    this module and kept its outermost wrapper (:data:`HOOK_POLICY_PLUGIN`; not listed)."""


for _hook in dir(hookspecs):
    if _hook.startswith("dl_"):
        setattr(_HookPolicy, _hook, staticmethod(_policy_impl(_hook)))

_POLICY = _HookPolicy()
_REGISTERING = threading.Lock()


def _impls(caller: pluggy.HookCaller) -> list[pluggy.HookImpl]:
    """The plugins' implementations of ``caller`` (not the policy's), as pluggy keeps them."""
    return [impl for impl in caller.get_hookimpls() if impl.plugin is not _POLICY]


def _prepared(pm: pluggy.PluginManager, caller: pluggy.HookCaller) -> list[pluggy.HookImpl]:
    """``pm`` with the policy plugin as ``caller``'s outermost wrapper (registered again when
    a plugin's own ``tryfirst`` wrapper came after it), and every implementation of
    ``caller`` noting its plugin's failure or answer in the current call: the plugins'
    implementations (the policy's left out)."""
    impls = caller.get_hookimpls()
    if not impls or impls[-1].plugin is not _POLICY:
        with _REGISTERING:
            impls = caller.get_hookimpls()
            if not impls or impls[-1].plugin is not _POLICY:
                if pm.is_registered(_POLICY):
                    pm.unregister(_POLICY)
                pm.register(_POLICY, name=HOOK_POLICY_PLUGIN)
                impls = caller.get_hookimpls()
    impls.pop()  # the policy's
    for impl in impls:
        if not (_is_wrapper(impl) or hasattr(impl.function, _NOTING)):
            _note(impl, caller.name)
    return impls


_NOTING = "__delegate_lens_noting__"


def _note(impl: pluggy.HookImpl, hook: str) -> None:
    """``impl`` calling its function through one that notes, in the current call of
    ``hook``, its plugin's failure or answer (its :attr:`pluggy.HookImpl.function` replaced
    once, keeping the original as ``__wrapped__``; its argument names are pluggy's)."""
    function, plugin = impl.function, str(impl.plugin_name)

    def noting(*args: object) -> object:
        call = _CURRENT.get(None)
        if call is not None and not (call.entered and call.caller.name == hook):
            call = None  # another hook, called directly inside the current call
        try:
            result = function(*args)
        except BaseException as exc:
            if call is not None:
                call.failed = (plugin, exc)
            raise
        if call is not None and result is not None:
            call.answers.append((plugin, result))
        return result

    noting.__wrapped__ = function  # type: ignore[attr-defined]
    setattr(noting, _NOTING, True)
    setattr(impl, "function", noting)  # noqa: B010 - pluggy declares the attribute Final


# --------------------------------------------------------------------------- failures


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
    impls = _prepared(manager, caller)
    firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
    return _Call(manager, caller, kwargs, policy, impls, firstresult, **more)


def call_hook(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> Any:
    """Call a hook as ``pm.hook.<hook_name>(**kwargs)``; a plugin's failure is named.

    Errors of our own type propagate unchanged; any other exception raised by a plugin
    becomes a :class:`PluginError` naming it (see the module docstring).
    """
    return _call(hook_name, pm, kwargs, _raise_policy).run()


def call_hook_answered(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> tuple[str, Any] | None:
    """Call a *firstresult* hook as :func:`call_hook` does: ``(plugin name, its answer)``,
    or ``None`` when no plugin answered."""
    call = _call(hook_name, pm, kwargs, _raise_policy)
    if not call.firstresult:
        raise UsageError(f"{hook_name} is not a firstresult hook: call_each asks every plugin")
    result = call.run()
    answered = call.answered_by()
    if result is None:
        return None
    return (answered[0], result) if answered is not None else (_ANY_PLUGIN, result)


_ANY_PLUGIN = "(a plugin's wrapper)"


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
    check: Callable[[object], str | None] | None = None,
    **kwargs: object,
) -> Any:
    """Call a *firstresult* hook; a plugin that fails is skipped and the next one answers.

    Each failure is reported with ``warnings.warn(message, PluginWarning)``, the message
    naming the plugin, the hook and ``where`` (e.g. ``"row '7' of block 0"``); the hook is
    then called again without that plugin (the plugins of a built-in fallback, asked last,
    thus still answer). ``None`` when every plugin declined, or when the failing plugin
    cannot be told (the warning then names the candidates). A
    :class:`~delegate_lens.config.ConfigError` (bad user configuration) propagates.

    ``check``, given, sees the answer (not ``None``) and returns what is wrong with it, or
    ``None``: what is wrong is a :class:`PluginError` beginning with the plugin that gave
    the answer (``"plugin 'name' (distribution version) " + what``).
    """
    call = _call(hook_name, pm, kwargs, _skip_policy, origin=_origin(), where=where)
    result = call.run()
    wrong = None if check is None or result is None else check(result)
    if wrong is not None:
        answered = call.answered_by()
        who = (
            f"plugin {describe_plugin(answered[0], call.pm)}"
            if answered is not None and answered[1] is result
            else "a plugin"
        )
        raise PluginError(f"{who} {wrong}")
    return result


def call_each(
    hook_name: str, /, *, pm: pluggy.PluginManager | None = None, **kwargs: object
) -> list[tuple[str, Any]]:
    """Call a hook that is not *firstresult* (``pm.hook.<hook_name>(**kwargs)``: every
    implementation, in pluggy's order, inside the plugins' own wrappers).

    :returns: ``[(plugin_name, result), ...]`` for the results that are not ``None``, in
        registration order (the reverse of pluggy's calling order). Failures are handled
        as in :func:`call_hook`.
    """
    call = _call(hook_name, pm, kwargs, _raise_policy)
    if call.firstresult:
        raise UsageError(f"{hook_name} is a firstresult hook: use call_hook_answered")
    for impl in call.impls:
        missing = [arg for arg in impl.argnames if arg not in kwargs]
        if missing and not _is_wrapper(impl):
            raise UsageError(f"{hook_name}: the call must give argument(s) {missing}")
    call.run()
    return call.answers[::-1]
