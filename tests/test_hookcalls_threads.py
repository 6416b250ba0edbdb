"""Hook calls in two threads at once (``compare`` reads its two sides in two threads and
each asks the plugins about its delegate rows), and hook calls inside hook calls.

Hook calls never touch ``sys.stdout``: the command line sends it to stderr once, at its
start (:func:`delegate_lens.fileio.plugin_prints_to_stderr`), and writes its own output
through :func:`~delegate_lens.fileio.standard_output`. (It used to be swapped for stderr
during each hook call, in every thread, counted so that the last call to end gave it back;
before the count, a call that began while another was running saved *stderr* as "the
stdout to give back" and, ending last, left ``sys.stdout`` on stderr:
``delegate-lens compare -f markdown`` then wrote its report to stderr, seen once in CI as
a compare-demo test not finding a row.) So here: ``sys.stdout`` is the same object before,
during and after overlapping calls in two threads; under the command line's redirect both
threads' plugins print to stderr and the command's output reaches stdout; a library user's
stdout is left as it is."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from delegate_lens import hookimpl
from delegate_lens.fileio import plugin_prints_to_stderr, standard_output
from delegate_lens.hookcalls import call_each, call_hook
from delegate_lens.pluginmanager import build_plugin_manager

WAIT = 30.0  # seconds; only reached when the other thread never comes (a failure)


class Crossing:
    """A plugin whose hook, called from two threads, makes the calls overlap in the order
    that lost stdout: A begins, B begins, A ends, B ends. It notes the ``sys.stdout`` each
    call saw at its start and at its end."""

    def __init__(self) -> None:
        self.a_in = threading.Event()
        self.b_in = threading.Event()
        self.a_done = threading.Event()
        self.seen: list[object] = []

    @hookimpl
    def dl_runtime_backend(self, backend_id: str) -> None:
        self.seen.append(sys.stdout)
        print(f"plugin output for {backend_id}")
        if backend_id == "A":
            self.a_in.set()
            if not self.b_in.wait(WAIT):
                raise TimeoutError("B never called the hook")
        else:
            self.b_in.set()
            if not self.a_done.wait(WAIT):
                raise TimeoutError("A never ended its call")
        self.seen.append(sys.stdout)

    @hookimpl
    def dl_delegate_mapping(self, backend_id: str) -> None:
        """The same, on a hook every plugin answers (what ``call_each`` calls)."""
        self.dl_runtime_backend(backend_id)


def _each(hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """``call_each`` of ``dl_delegate_mapping`` (call_each takes hooks that are not
    firstresult) where the test calls ``dl_runtime_backend``."""
    return call_each("dl_delegate_mapping", edge_program=None, debug_handle_map=None, **kwargs)


def _overlap(plugin: Crossing, call: Callable[..., Any]) -> None:
    """Call the hook in two threads, A and B, overlapping as :class:`Crossing` orders."""
    pm = build_plugin_manager([], autoload=False)
    pm.register(plugin, name="crossing")
    errors: list[BaseException] = []

    def run_a() -> None:
        try:
            call("dl_runtime_backend", pm=pm, backend_id="A")
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
        finally:
            plugin.a_done.set()

    def run_b() -> None:
        try:
            if not plugin.a_in.wait(WAIT):
                raise TimeoutError("A never called the hook")
            call("dl_runtime_backend", pm=pm, backend_id="B")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * WAIT)
    assert errors == []


@pytest.mark.parametrize("call", [call_hook, _each], ids=["call_hook", "call_each"])
def test_overlapping_hook_calls_under_the_command_line_print_to_stderr(
    call: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = Crossing()
    stdout, stderr = sys.stdout, sys.stderr
    with plugin_prints_to_stderr() as own:
        assert own is stdout and standard_output() is stdout
        _overlap(plugin, call)
        assert sys.stdout is stderr  # not given back by a hook call ending
        print("the command's output", file=standard_output())
    assert sys.stdout is stdout  # given back once, by the command line
    assert plugin.seen == [stderr] * 4  # both threads, at the start and the end of each call
    captured = capsys.readouterr()
    assert captured.out == "the command's output\n"
    assert sorted(captured.err.splitlines()) == ["plugin output for A", "plugin output for B"]


@pytest.mark.parametrize("call", [call_hook, _each], ids=["call_hook", "call_each"])
def test_overlapping_hook_calls_leave_a_library_users_stdout_alone(
    call: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = Crossing()
    stdout = sys.stdout
    _overlap(plugin, call)
    assert sys.stdout is stdout
    assert plugin.seen == [stdout] * 4
    assert standard_output() is stdout
    captured = capsys.readouterr()  # the plugin printed where the caller's stdout goes
    assert sorted(captured.out.splitlines()) == ["plugin output for A", "plugin output for B"]
    assert captured.err == ""


def test_nested_hook_calls_print_where_the_command_line_sends_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A hook called from inside another hook (the built-in tick_clock asks the per-tick
    plugins): both plugins' output to stderr under the command line, in order; stdout is
    the command's again after it, never changed by a hook call."""

    class Inner:
        @hookimpl
        def dl_runtime_backend(self, backend_id: str) -> None:
            print(f"inner {backend_id}")

    class Outer:
        @hookimpl
        def dl_partitioner(self, backend_id: str) -> None:
            print("outer before")
            call_hook("dl_runtime_backend", pm=pm, backend_id=backend_id)
            print("outer after")

    pm = build_plugin_manager([], autoload=False)
    pm.register(Inner(), name="inner")
    pm.register(Outer(), name="outer")
    stdout = sys.stdout
    with plugin_prints_to_stderr():
        assert call_hook("dl_partitioner", pm=pm, backend_id="X", compile_specs=[]) is None
        print("mine", file=standard_output())
    assert sys.stdout is stdout
    captured = capsys.readouterr()
    assert captured.out == "mine\n"
    assert captured.err.splitlines() == ["outer before", "inner X", "outer after"]
    # a library user's call: the same prints, to its own stdout
    assert call_hook("dl_partitioner", pm=pm, backend_id="Y", compile_specs=[]) is None
    assert sys.stdout is stdout
    assert capsys.readouterr().out.splitlines() == ["outer before", "inner Y", "outer after"]
