"""The typed hook callers (delegate_lens.hooks): one per hook, each with its error policy,
and hook specs whose annotations name real classes."""

from __future__ import annotations

import ast
import inspect
import types
import typing
import warnings
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pluggy
import pytest

from delegate_lens import _hookanswers, hookcalls, hookimpl, hooks, hookspecs
from delegate_lens.errors import PluginError, PluginWarning
from delegate_lens.hookcalls import call_hook
from delegate_lens.pluginmanager import build_plugin_manager

SPECS = sorted(name for name in dir(hookspecs) if name.startswith("dl_"))
PACKAGE = Path(hookspecs.__file__).resolve().parent


def _pm(*plugins: object) -> pluggy.PluginManager:
    pm = build_plugin_manager([], autoload=False)
    for i, plugin in enumerate(plugins):
        pm.register(plugin, name=f"p{i}")
    return pm


def test_the_specs_docstring_lists_every_hook_once() -> None:
    """hookspecs' module docstring is the hook list a plugin author reads first: it names
    every spec, and nothing else."""
    import re

    doc = hookspecs.__doc__ or ""
    groups = doc[doc.index("Hooks are grouped") : doc.index("Implementations may")]
    listed = re.findall(r":func:`(dl_\w+)`", groups)
    assert sorted(listed) == SPECS
    assert len(listed) == len(set(listed))


def test_one_typed_caller_per_hook_taking_the_specs_arguments() -> None:
    assert sorted(f"dl_{name}" for name in hooks.__all__) == SPECS
    for spec in SPECS:
        caller = getattr(hooks, spec.removeprefix("dl_"))
        wanted = list(inspect.signature(getattr(hookspecs, spec)).parameters)
        given = list(inspect.signature(caller).parameters)
        assert given[: len(wanted)] == wanted, spec
        assert "pm" in given, spec
        assert caller.__doc__ and f"``{spec}``" in caller.__doc__


def _type_checking_names() -> dict[str, object]:
    """The specs' module namespace with what it imports for type checkers only."""
    tree = ast.parse(Path(hookspecs.__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
    )
    namespace = dict(vars(hookspecs))
    exec(compile(ast.Module(body=block.body, type_ignores=[]), "specs", "exec"), namespace)
    return namespace


def test_hook_spec_annotations_name_real_classes() -> None:
    """What the specs import for type checkers exists: every annotation evaluates."""
    namespace = _type_checking_names()
    for spec in SPECS:
        hints = typing.get_type_hints(getattr(hookspecs, spec), globalns=namespace)
        assert "return" in hints, spec
        assert all(hint is not typing.Any for hint in hints.values()), spec


def test_answers_are_checked_against_the_specs_evaluated_return_types() -> None:
    """hookcalls evaluates the specs' annotations (typing.get_type_hints): numpy's modules
    for real, the classes of the layers above it as classes it does not check (a plugin
    may answer with a duck-typed object); those are all the specs import for type
    checkers."""
    namespace = _type_checking_names()
    numpy_names = {
        name
        for name, value in namespace.items()
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "numpy"
    }
    assert numpy_names == set(_hookanswers._LIBRARIES)
    for spec in SPECS:
        hints = typing.get_type_hints(
            getattr(hookspecs, spec), globalns=vars(hookspecs), localns=_hookanswers._SPEC_NAMES
        )
        assert "return" in hints, spec
    stand_ins = {name for name in _hookanswers._SPEC_NAMES if name not in numpy_names}
    assert stand_ins <= {name for name in namespace if name not in vars(hookspecs)}


def _answering(hook: str, value: object) -> object:
    """A plugin answering ``hook`` with ``value``."""

    def answer(self: object) -> object:
        return value

    return type("Answers", (), {hook: hookimpl(answer)})()


def _ask(hook: str, plugin: object) -> object:
    arguments = {name: None for name in inspect.signature(getattr(hookspecs, hook)).parameters}
    return call_hook(hook, pm=_pm(plugin), **arguments)


@pytest.mark.parametrize(
    ("hook", "answer", "says"),
    [
        (
            "dl_encode_delegate_metadata",
            "text",
            "returned str 'text', but the hook returns bytes | None",
        ),
        ("dl_delegate_time_scale", True, "returned bool True, but the hook returns float | None"),
        (
            "dl_delegate_time_scale_array",
            [0.5],
            "returned list [0.5], but the hook returns npt.NDArray[np.float64] | None",
        ),
        (
            "dl_parse_delegate_metadata",
            "gemm",
            "returned str 'gemm', but the hook returns list[str] | dict[str, object] | None",
        ),
        ("dl_html_display", b"<b>", "returned bytes b'<b>', but the hook returns str | None"),
    ],
)
def test_a_firstresult_answer_of_another_type_is_the_plugins_failure(
    hook: str, answer: object, says: str
) -> None:
    with pytest.raises(PluginError) as info:
        _ask(hook, _answering(hook, answer))
    assert str(info.value) == f"plugin 'p0' (registered) failed in {hook}: PluginError: {says}"


@pytest.mark.parametrize(
    ("hook", "answer"),
    [
        ("dl_encode_delegate_metadata", bytearray(b"x")),  # bytes-like
        ("dl_delegate_time_scale", 3),  # an int is a float
        ("dl_delegate_time_scale_array", np.zeros(2)),
        ("dl_parse_delegate_metadata", {"kernel": ["gemm"]}),
        ("dl_partitioner", object()),  # a class of a layer above: duck typing, not checked
        ("dl_runtime_backend", "anything"),  # a protocol: not checked
        ("dl_intermediate_output", [[1, 2]]),  # array-like: protocols, not checked
        ("dl_executorch_bridge", 42),  # object
    ],
)
def test_a_firstresult_answer_the_spec_allows_is_given_back(hook: str, answer: object) -> None:
    assert _ask(hook, _answering(hook, answer)) is answer


def test_hooks_run_through_the_plugin_managers_own_hook_calls() -> None:
    """pluggy's call loop, as ``pm.hook.<name>(...)`` runs it: monitoring sees each call,
    a plugin's own wrapper runs around the implementations, and a wrapper that fails is
    named too."""
    order: list[str] = []

    class Wraps:
        @hookimpl(wrapper=True)
        def dl_partitioner(self, backend_id: str) -> typing.Generator[None, object, object]:
            order.append("wrapper before")
            result = yield
            order.append(f"wrapper after {result!r}")
            if backend_id == "broken":
                raise RuntimeError("wrapper broke")
            return result

    class Answers:
        @hookimpl
        def dl_partitioner(self) -> str:
            order.append("plain")
            return "partitioner"

    pm = _pm(Answers(), Wraps())
    seen: list[str] = []
    undo = pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: seen.append(name), lambda *args: None
    )
    assert hooks.partitioner("B", (), pm=pm) == "partitioner"
    undo()
    assert seen == ["dl_partitioner"]
    assert order == ["wrapper before", "plain", "wrapper after 'partitioner'"]
    with pytest.raises(PluginError) as info:
        hooks.partitioner("broken", (), pm=pm)
    assert str(info.value) == (
        "plugin 'p1' (registered) failed in dl_partitioner: RuntimeError: wrapper broke"
    )


def test_no_module_calls_hooks_untyped() -> None:
    """Every call of a hook in the package goes through delegate_lens.hooks."""
    untyped = ("call_hook(", "call_hook_or_warn(", "call_hook_or_skip(", "call_each(")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("hookcalls.py", "hooks.py")
        and any(name in path.read_text(encoding="utf-8") for name in untyped)
    ]
    assert offenders == []


class _Raises:
    @hookimpl
    def dl_partitioner(self, backend_id: str) -> None:
        raise RuntimeError("no partitioner today")

    @hookimpl
    def dl_delegate_time_scale(self, ticks: int) -> float:
        raise ValueError("bad clock")

    @hookimpl
    def dl_parse_delegate_metadata(self, metadatas: list[bytes]) -> list[str]:
        raise ValueError("bad bytes")


class _Answers:
    @hookimpl
    def dl_delegate_time_scale(self, ticks: int) -> float:
        return ticks * 2.0

    @hookimpl
    def dl_parse_delegate_metadata(self, metadatas: list[bytes]) -> list[str]:
        return [m.decode() for m in metadatas]


def test_raise_policy_names_the_plugin() -> None:
    with pytest.raises(PluginError, match=r"plugin 'p0' .*dl_partitioner: RuntimeError"):
        hooks.partitioner("B", (), pm=_pm(_Raises()))


def test_warn_policy_falls_back_and_points_at_the_caller() -> None:
    with pytest.warns(PluginWarning, match=r"plugin 'p1' .*dl_delegate_time_scale") as caught:
        assert hooks.delegate_time_scale("B", "e", 3, pm=_pm(_Answers(), _Raises())) is None
    # the warning is attributed to who called the typed caller, not to delegate_lens.hooks
    assert [Path(w.filename).name for w in caught] == ["test_hooks.py"]


def test_skip_policy_lets_the_next_plugin_answer_strict_raises() -> None:
    pm = _pm(_Answers(), _Raises())
    with pytest.warns(PluginWarning, match=r"'p1' .* on row 7: ValueError") as caught:
        got = hooks.parse_delegate_metadata("B", [b"x"], where="row 7", pm=pm)
    assert got == ["x"]
    assert [Path(w.filename).name for w in caught] == ["test_hooks.py"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(PluginError, match=r"plugin 'p1' .*dl_parse_delegate_metadata"):
            hooks.parse_delegate_metadata("B", [b"x"], strict=True, pm=pm)


def test_array_and_each_callers() -> None:
    class Array:
        @hookimpl
        def dl_delegate_time_scale_array(
            self, ticks: npt.NDArray[np.uint64]
        ) -> npt.NDArray[np.float64]:
            return ticks.astype(np.float64) * 0.5

    ticks = np.array([2, 4], dtype=np.uint64)
    got = hooks.delegate_time_scale_array("B", "e", ticks, pm=_pm(Array()))
    assert got is not None and got.tolist() == [1.0, 2.0]
    [(owner, exporters)] = hooks.exporters(_pm())  # each: the built-in plugin's, by name
    assert owner == "delegate_lens.builtins.exporters" and isinstance(exporters, list)
    [(owner, _)] = hooks.numerical_comparators(_pm())
    assert owner == "delegate_lens.builtins.comparators"


def test_the_policy_is_a_wrapper_outside_every_plugins_own() -> None:
    """The error policy is one plugin's wrapper, kept outermost: a plugin's own ``tryfirst``
    wrapper registered after it still runs inside it (its failure is named); the policy
    plugin is not listed, and it implements no hook for ``has_implementations``."""
    from delegate_lens.pluginmanager import HOOK_POLICY_PLUGIN, has_implementations, list_plugins

    class Answers:
        @hookimpl
        def dl_partitioner(self) -> str:
            return "partitioner"

    pm = _pm(Answers())
    assert hooks.partitioner("B", (), pm=pm) == "partitioner"
    assert pm.has_plugin(HOOK_POLICY_PLUGIN)
    assert HOOK_POLICY_PLUGIN not in [info.name for info in list_plugins(pm)]
    policy_only = [
        name
        for name in SPECS
        if {impl.plugin_name for impl in getattr(pm.hook, name).get_hookimpls()}
        == {HOOK_POLICY_PLUGIN}
    ]
    assert policy_only and not any(has_implementations(name, pm) for name in policy_only)

    class LateWrapper:
        @hookimpl(wrapper=True, tryfirst=True)
        def dl_partitioner(self) -> typing.Generator[None, object, object]:
            yield
            raise RuntimeError("late wrapper broke")

    pm.register(LateWrapper(), name="late")
    with pytest.raises(PluginError, match=r"plugin 'late' \(registered\) failed .*late wrapper"):
        hooks.partitioner("B", (), pm=pm)
    impls = pm.hook.dl_partitioner.get_hookimpls()
    assert impls[-1].plugin_name == HOOK_POLICY_PLUGIN  # pluggy calls it first: outermost
    # called directly, the hook passes through the policy: the plugin's own exception
    with pytest.raises(RuntimeError, match="late wrapper broke"):
        pm.hook.dl_partitioner(backend_id="B", compile_specs=())


def test_hooks_are_called_through_pluggy_not_by_hand() -> None:
    """No module calls a hook implementation itself, or pluggy's private call loop."""
    import re

    private = re.compile(r"_hookexec|\.function\(|_multicall|\._hookimpls|_inner_hookexec")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if private.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_answering_plugin_is_named() -> None:
    """``call_hook_answered`` gives the plugin whose answer won (the first asked: the last
    registered); a time-scale answer that is not one number per tick names its plugin."""

    class Recovers:
        def __init__(self, tag: str) -> None:
            self.tag = tag

        @hookimpl
        def dl_recover_delegate_map(self, backend_id: str) -> object:
            return None if self.tag == "none" else self.tag

    pm = _pm(Recovers("first"), Recovers("second"), Recovers("none"))
    args = {"backend_id": "B", "processed": memoryview(b""), "identifiers": []}
    assert hookcalls.call_hook_answered(
        "dl_recover_delegate_map",
        pm=pm,
        **args,
        handles=None,
        graph=None,
        compile_specs=(),
        named_data={},
    ) == ("p1", "second")
    assert hooks.recover_delegate_map("B", memoryview(b""), [], pm=pm) == ("p1", "second")

    class TwoForThree:
        @hookimpl
        def dl_delegate_time_scale_array(
            self, ticks: npt.NDArray[np.uint64]
        ) -> npt.NDArray[np.float64]:
            return np.zeros(2)

    ticks = np.array([1, 2, 3], dtype=np.uint64)
    with pytest.raises(PluginError) as info:
        hooks.delegate_time_scale_array(
            "B", "e", ticks, where="row 'e' of block 0", pm=_pm(Nothing(), TwoForThree())
        )
    assert str(info.value) == (
        "plugin 'p1' (registered) returned 2 value(s) in dl_delegate_time_scale_array for the "
        "3 ticks of row 'e' of block 0 (backend 'B'); one number per tick expected"
    )


class Nothing:
    """A plugin with no hook."""
