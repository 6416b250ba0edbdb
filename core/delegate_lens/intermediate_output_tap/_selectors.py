"""Node selectors: predicates ``fx.Node -> bool`` choosing what to tap, and ways to combine
them. Any callable taking a node works as a selector (a lambda too)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable

import torch.fx as fx

NodeSelector = Callable[[fx.Node], bool]
"""A predicate on FX nodes."""


def select_all_call_function(exclude: tuple[str, ...] = ("getitem",)) -> NodeSelector:
    """Every ``call_function`` node except those whose target's name (``__name__``, e.g.
    ``"getitem"``) or full name (``"aten.view.default"``) is in ``exclude``."""
    names = frozenset(exclude)

    def selector(node: fx.Node) -> bool:
        if node.op != "call_function":
            return False
        short = getattr(node.target, "__name__", None)
        return short not in names and str(node.target) not in names

    return selector


def select_by_op_type(*op_targets: str) -> NodeSelector:
    """``call_function`` nodes whose ``str(target)`` ends with one of ``op_targets`` (so
    ``"linear.default"`` and ``"aten.linear.default"`` both match ``aten.linear.default``).

    :raises ValueError: no target given.
    """
    if not op_targets:
        raise ValueError("select_by_op_type: give at least one operator name")
    wanted = tuple(op_targets)

    def selector(node: fx.Node) -> bool:
        return node.op == "call_function" and str(node.target).endswith(wanted)

    return selector


def class_name(module_type: object) -> str:
    """The bare class name of an ``nn_module_stack`` type entry (a class or its dotted name,
    possibly written as ``"<class 'pkg.Mod'>"``)."""
    name = getattr(module_type, "__name__", None)
    if isinstance(name, str):
        return name
    text = str(module_type)
    if text.startswith("<class '") and text.endswith("'>"):
        text = text[len("<class '") : -2]
    return text.rsplit(".", 1)[-1]


def module_entries(node: fx.Node) -> list[tuple[str, str | None, str | None]]:
    """``(instance key, module path, class name)`` of each module the node ran in,
    outermost first (from ``node.meta["nn_module_stack"]``)."""
    stack = node.meta.get("nn_module_stack") or {}
    out: list[tuple[str, str | None, str | None]] = []
    for key, entry in stack.items():
        if isinstance(entry, tuple | list):
            path = str(entry[0]) if entry else None
            cls = class_name(entry[1]) if len(entry) > 1 else None
        else:
            path, cls = (None if entry is None else str(entry)), None
        out.append((str(key), path, cls))
    return out


def _by_module(accept: Callable[[str | None, str | None], bool], output_only: bool) -> NodeSelector:
    def instances(node: fx.Node) -> set[str]:
        return {key for key, path, cls in module_entries(node) if accept(path, cls)}

    def selector(node: fx.Node) -> bool:
        if node.op != "call_function":
            return False
        mine = instances(node)
        if not mine:
            return False
        if not output_only:
            return True
        # the value leaves the module: no user runs inside one of the same instances
        return not any(mine & {key for key, _, _ in module_entries(user)} for user in node.users)

    return selector


def select_by_module_path(*patterns: str, output_only: bool = True) -> NodeSelector:
    """Nodes that ran inside a module whose path (``"layers.0.attention"``) matches one of
    the shell patterns (``fnmatch``: ``"layers.*"``, ``"*.wo"``).

    :param output_only: only the module's output values: nodes none of whose users run in
        the same matching module instance (default). ``False``: every node inside.
    :raises ValueError: no pattern given.
    """
    if not patterns:
        raise ValueError("select_by_module_path: give at least one pattern")
    wanted = tuple(patterns)

    def accept(path: str | None, _cls: str | None) -> bool:
        return path is not None and any(fnmatch.fnmatchcase(path, p) for p in wanted)

    return _by_module(accept, output_only)


def select_by_module_class(*class_names: str, output_only: bool = True) -> NodeSelector:
    """Nodes that ran inside a module of one of these classes, by bare class name
    (``"Linear"``, ``"RMSNorm"``); ``output_only`` as in :func:`select_by_module_path`.

    :raises ValueError: no class name given.
    """
    if not class_names:
        raise ValueError("select_by_module_class: give at least one class name")
    wanted = frozenset(class_names)

    def accept(_path: str | None, cls: str | None) -> bool:
        return cls in wanted

    return _by_module(accept, output_only)


def _all(selectors: Iterable[NodeSelector], node: fx.Node) -> bool:
    return all(s(node) for s in selectors)


def select_any(*selectors: NodeSelector) -> NodeSelector:
    """True when one of ``selectors`` is (never, without selectors)."""
    chosen = tuple(selectors)
    return lambda node: any(s(node) for s in chosen)


def select_all(*selectors: NodeSelector) -> NodeSelector:
    """True when every one of ``selectors`` is (always, without selectors)."""
    chosen = tuple(selectors)
    return lambda node: _all(chosen, node)


def select_not(selector: NodeSelector) -> NodeSelector:
    """True when ``selector`` is not."""
    return lambda node: not selector(node)
