"""Whether a plugin's answer has a type its hook spec allows, and which plugin raised
(split from the hook calls).

:mod:`delegate_lens.hookcalls` checks every *firstresult* answer against the spec's return
annotation, evaluated (:func:`typing.get_type_hints`): by outer type (``int``, ``str``,
``list``, ``dict``, a numpy array, ...) and, for containers, item by item (``list[str]``:
a list of strings; ``dict[str, object]``: a dict with string keys), so that
``[1, None, b"x"]`` where strings are due is the plugin's failure, never data written into
an output. A part of a hint that names a class, a protocol or ``Any`` is not checked.
"""

from __future__ import annotations

import builtins
import collections.abc
import functools
import importlib
import inspect
import sys
import types
import typing
from collections.abc import Callable, Sequence
from types import CodeType, TracebackType
from typing import Any

import pluggy

from delegate_lens import hookspecs

Test = Callable[[object], bool]
"""Whether a value has a type."""

_TESTS: dict[object, Test] = {
    type(None): lambda v: v is None,
    bytes: lambda v: isinstance(v, (bytes, bytearray, memoryview)),
    str: lambda v: isinstance(v, str),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    bool: lambda v: isinstance(v, bool),
    list: lambda v: isinstance(v, list),
    dict: lambda v: isinstance(v, dict),
    tuple: lambda v: isinstance(v, tuple),
    collections.abc.Sequence: lambda v: isinstance(v, (list, tuple)),
}
"""The outer types a *firstresult* answer is checked against (numbers as in typing: an
``int`` is a ``float``, a ``bool`` neither; ``bytes`` takes any bytes-like)."""

_LIBRARIES = {"np": "numpy", "npt": "numpy.typing"}
"""The modules :mod:`delegate_lens.hookspecs` imports for type checkers only."""


class _SpecNames(dict[str, object]):
    """The names the specs' annotations use that :mod:`~delegate_lens.hookspecs` imports
    for type checkers only, as :func:`typing.get_type_hints` looks them up: numpy's
    modules (imported now), any other (a class of a layer above the plugin host, which a
    plugin may stand in for by duck typing: not checked here) a class of that name."""

    def __missing__(self, name: str) -> object:
        if name in vars(hookspecs) or name in vars(builtins):
            raise KeyError(name)  # found as usual
        module = _LIBRARIES.get(name)
        value = importlib.import_module(module) if module else types.new_class(name)
        self[name] = value
        return value


_SPEC_NAMES = _SpecNames()


def _test_of(hint: object) -> Test | None:
    """Whether a value has a type ``hint`` allows, by outer type and, for a container, by
    its items (``list[str]``: a list of strings); ``None`` when any part of ``hint`` is
    not checked (a class, a protocol, ``Any``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        tests = [_test_of(arg) for arg in typing.get_args(hint)]
        if any(test is None for test in tests):
            return None
        return lambda v: any(test(v) for test in tests if test is not None)
    origin = typing.get_origin(hint) or hint
    numpy = sys.modules.get("numpy")
    if numpy is not None and origin is numpy.ndarray:
        return lambda v: isinstance(v, numpy.ndarray)
    outer = _TESTS.get(origin)
    args = typing.get_args(hint)
    if outer is None or not args or (origin is tuple and args[-1] is not Ellipsis):
        return outer  # not a container (or a tuple of fixed length): its outer type only
    return _with_items(outer, _test_of(args[0]) if origin is dict else None, _test_of(args[-1]))


def _with_items(outer: Test, key: Test | None, item: Test | None) -> Test:
    """``outer``, then every key of a dict passes ``key`` and every item (a dict's values)
    ``item`` (``None``: not checked)."""
    if key is None and item is None:
        return outer

    def test(value: object) -> bool:
        if not outer(value):
            return False
        if isinstance(value, dict):
            keys_ok = key is None or all(map(key, value))
            return keys_ok and (item is None or all(map(item, value.values())))
        return item is None or (isinstance(value, (list, tuple)) and all(map(item, value)))

    return test


@functools.cache
def _answer_check_of(spec: Callable[..., object]) -> tuple[Test | None, str]:
    annotation = inspect.get_annotations(spec).get("return")
    declared = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    try:
        hint = typing.get_type_hints(spec, globalns=vars(hookspecs), localns=_SPEC_NAMES)
    except Exception:  # a spec of another project's making: its answers are not checked
        return None, declared
    return _test_of(hint.get("return", Any)), declared


def answer_check(caller: pluggy.HookCaller) -> tuple[Test | None, str]:
    """The test of a *firstresult* answer of ``caller`` (``None``: not checked) and the
    return type its spec declares, as written."""
    spec = caller.spec
    return (None, "") if spec is None else _answer_check_of(spec.function)


def shown(value: object) -> str:
    """A value as a message shows it: its type and the start of its ``repr``."""
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _code_of(function: Callable[..., object]) -> CodeType | None:
    target: object = inspect.unwrap(function)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    if code is None:
        call = type(target).__dict__.get("__call__")
        code = getattr(call, "__code__", None)
    return code if isinstance(code, CodeType) else None


def culprit(impls: Sequence[pluggy.HookImpl], exc: BaseException) -> str | None:
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
