"""Hook calls in two threads at once (``compare`` reads its two sides in two threads and
each asks the plugins about its delegate rows): the plugins' stdout goes to stderr while
any hook runs, and the caller's stdout comes back when the last call ends, whichever
thread ends first. (With one ``contextlib.redirect_stdout`` per call, a call that began
while another was running saved *stderr* as "the stdout to give back" and, ending last,
left ``sys.stdout`` pointing at stderr: ``delegate-lens compare -f markdown`` then wrote
its report to stderr, seen once in CI as a compare-demo test not finding a row.)"""

from __future__ import annotations

import sys
import threading

import pytest

from delegate_lens import hookimpl
from delegate_lens.hookcalls import call_each, call_hook
from delegate_lens.pluginmanager import build_plugin_manager

WAIT = 30.0  # seconds; only reached when the other thread never comes (a failure)


class Crossing:
    """A plugin whose hook, called from two threads, makes the calls overlap in the order
    that lost stdout: A begins, B begins, A ends, B ends."""

    def __init__(self) -> None:
        self.a_in = threading.Event()
        self.b_in = threading.Event()
        self.a_done = threading.Event()

    @hookimpl
    def dl_runtime_backend(self, backend_id: str) -> None:
        print(f"plugin output for {backend_id}")  # the plugin's stdout: to stderr
        if backend_id == "A":
            self.a_in.set()
            if not self.b_in.wait(WAIT):
                raise TimeoutError("B never called the hook")
        else:
            self.b_in.set()
            if not self.a_done.wait(WAIT):
                raise TimeoutError("A never ended its call")


@pytest.mark.parametrize("caller", [call_hook, call_each])
def test_overlapping_hook_calls_in_two_threads_give_stdout_back(
    caller: object, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = Crossing()
    pm = build_plugin_manager([], autoload=False)
    pm.register(plugin, name="crossing")
    call = call_hook if caller is call_hook else call_each
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

    stdout = sys.stdout
    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * WAIT)
    assert errors == []
    assert sys.stdout is stdout  # given back, not left pointing at stderr
    print("the command's output")
    captured = capsys.readouterr()
    assert captured.out == "the command's output\n"
    assert sorted(captured.err.splitlines()) == [
        "plugin output for A",
        "plugin output for B",
    ]


def test_nested_hook_calls_in_one_thread_still_send_plugin_output_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A hook called from inside another hook (the built-in tick_clock asks the per-tick
    plugins): both plugins' output to stderr, stdout given back after the outer call."""

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
    assert call_hook("dl_partitioner", pm=pm, backend_id="X", compile_specs=[]) is None
    assert sys.stdout is stdout
    print("mine")
    captured = capsys.readouterr()
    assert captured.out == "mine\n"
    assert captured.err.splitlines() == ["outer before", "inner X", "outer after"]
