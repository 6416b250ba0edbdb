"""Compiled code chosen once (issue 31, item 4): each compiled extension has a Python twin
with the same names and parameters, one selection module per extension chooses between
them at import (``DELEGATE_LENS_NO_COMPILED``, read by the one switch parser of
``delegate_lens.config``), both give the same output, and what the compiled code raises
reaches the caller."""

from __future__ import annotations

import importlib
import inspect
import io
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import conftest
import numpy as np
import pytest
from conftest import VECTORS, choose, compiled_extension
from test_etdump_compiled import assert_same
from test_etdump_robustness import RICH, SMALL

from delegate_lens.config import (
    NO_COMPILED_ENV,
    SWITCH_OFF_WORDS,
    SWITCH_ON_WORDS,
    compiled_code_off,
    env_switch,
)
from delegate_lens.errors import DelegateLensWarning, ETDumpFormatError
from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, decode_columns, dumps
from delegate_lens.etdump import _fastwalk as fastwalk
from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._reader import _root_position
from delegate_lens.exporters import _compiled, write_chrome_trace
from delegate_lens.inspector import Inspector, trace_input
from delegate_lens.pluginmanager import AUTOLOAD_ENV, _autoload_enabled

SELECTIONS = [fastwalk, _compiled]
"""The selection modules, one per extension."""
ETDUMPS = sorted(VECTORS.glob("*/etdump.etdp"))
TRACED = ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"]  # vectors with an ETRecord


def _ids(module: ModuleType) -> str:
    return module.__name__.rpartition(".")[2]


# --------------------------------------------------------------------------- the switch


@pytest.mark.parametrize(
    ("word", "on"),
    [
        *((word, True) for word in ("1", "true", "yes", "on", "TRUE", " Yes ", "On")),
        *((word, False) for word in ("0", "false", "no", "off", "", "  ", "FALSE", " off ")),
    ],
)
def test_switch_words(word: str, on: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known word never warns
        assert env_switch("SOME_SWITCH", {"SOME_SWITCH": word}) is on


def test_an_unset_switch_is_off() -> None:
    assert env_switch("SOME_SWITCH", {}) is False


def test_the_words_are_the_project_s() -> None:
    assert {"1", "true", "yes", "on"} == SWITCH_ON_WORDS
    assert {"", "0", "false", "no", "off"} == SWITCH_OFF_WORDS


@pytest.mark.parametrize("word", ["2", "maybe", "enabled", "y", "-1"])
def test_an_unknown_word_warns_and_counts_as_on(word: str) -> None:
    """As being set always did; the warning names the variable, the word and the words."""
    with pytest.warns(DelegateLensWarning, match=r"SOME_SWITCH=.* is not a switch word.*false"):
        assert env_switch("SOME_SWITCH", {"SOME_SWITCH": word}) is True


@pytest.mark.parametrize(("word", "enabled"), [("false", True), ("0", True), ("on", False)])
def test_the_plugin_autoload_switch_reads_the_same_words(
    word: str, enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(AUTOLOAD_ENV, word)
    assert _autoload_enabled() is enabled


def _chosen(value: str | None, *, unbuilt: bool = False) -> tuple[dict[str, tuple[bool, str]], str]:
    """What a fresh process chooses with ``DELEGATE_LENS_NO_COMPILED`` set to ``value``
    (None: unset): per selection module, ``COMPILED`` and the module of its functions; and
    the process's stderr. ``unbuilt``: as where the extensions are not built."""
    env = {k: v for k, v in os.environ.items() if k != NO_COMPILED_ENV}
    if value is not None:
        env[NO_COMPILED_ENV] = value
    block = "".join(f"sys.modules[{s.EXTENSION!r}] = None\n" for s in SELECTIONS)
    code = (
        "import importlib, json, sys\n"
        + (block if unbuilt else "")
        + "out = {}\n"
        + f"for name in {[s.__name__ for s in SELECTIONS]!r}:\n"
        + "    m = importlib.import_module(name)\n"
        + "    out[name] = [m.COMPILED, {getattr(m, n).__module__ for n in m.NAMES}.pop()]\n"
        + "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return {k: (v[0], v[1]) for k, v in json.loads(done.stdout).items()}, done.stderr


@pytest.mark.parametrize(
    ("value", "compiled"),
    [(None, True), ("false", True), ("0", True), ("off", True), ("1", False), ("yes", False)],
)
def test_the_switch_chooses_at_import(value: str | None, compiled: bool) -> None:
    """``DELEGATE_LENS_NO_COMPILED=false`` keeps the compiled code (it used to switch it off)."""
    for selection in SELECTIONS:
        compiled_extension(selection.EXTENSION)
    chosen, stderr = _chosen(value)
    for selection in SELECTIONS:
        home = selection.EXTENSION if compiled else selection.TWIN
        assert chosen[selection.__name__] == (compiled, home)
    assert "switch word" not in stderr


def test_an_unknown_word_switches_off_and_warns_once() -> None:
    chosen, stderr = _chosen("please")
    for selection in SELECTIONS:
        assert chosen[selection.__name__] == (False, selection.TWIN)
    assert stderr.count(f"{NO_COMPILED_ENV}='please' is not a switch word") == 1


def test_without_the_extensions_the_twins_are_chosen() -> None:
    """As installed where there is no C compiler."""
    chosen, _ = _chosen(None, unbuilt=True)
    for selection in SELECTIONS:
        assert chosen[selection.__name__] == (False, selection.TWIN)


def test_this_process_chose_as_its_switch_says() -> None:
    for selection in SELECTIONS:
        twin = importlib.import_module(selection.TWIN)
        chosen = [getattr(selection, name) for name in selection.NAMES]
        if selection.COMPILED:
            assert not compiled_code_off()
            extension = compiled_extension(selection.EXTENSION)
            assert chosen == [getattr(extension, name) for name in selection.NAMES]
        else:
            assert chosen == [getattr(twin, name) for name in selection.NAMES]


# --------------------------------------------------------------------------- the twins


def _functions(module: ModuleType) -> dict[str, Callable[..., Any]]:
    """The public functions ``module`` defines (not those it imports)."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == module.__name__
    }


def _parameters(function: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("selection", SELECTIONS, ids=_ids)
def test_each_twin_has_its_extension_s_names_and_signatures(selection: ModuleType) -> None:
    extension = compiled_extension(selection.EXTENSION)
    twin = importlib.import_module(selection.TWIN)
    compiled, python = _functions(extension), _functions(twin)
    assert sorted(compiled) == sorted(python) == sorted(selection.NAMES)
    for name in selection.NAMES:
        assert _parameters(python[name]) == _parameters(compiled[name]), name


def test_the_signature_check_can_fail() -> None:
    def run_lines(heads: list[bytes], mids: list[bytes]) -> None: ...

    extension = compiled_extension(_compiled.EXTENSION)
    assert _parameters(run_lines) != _parameters(extension.run_lines)


def test_a_missing_extension_skips_but_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = "delegate_lens.etdump._not_built"
    monkeypatch.setattr(conftest, "_IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="not built"):
        compiled_extension(missing)
    monkeypatch.setattr(conftest, "_IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI builds every extension"):
        compiled_extension(missing)


# --------------------------------------------------------------------------- both ways


@pytest.mark.parametrize("path", ETDUMPS, ids=[p.parent.name for p in ETDUMPS])
def test_decoding_is_the_same_both_ways_on_the_vectors(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = path.read_bytes()
    choose(fastwalk, compiled_extension(fastwalk.EXTENSION), monkeypatch)
    compiled = decode_columns(data)
    choose(fastwalk, importlib.import_module(fastwalk.TWIN), monkeypatch)
    assert_same(compiled, decode_columns(data))


def _trace(inspector: Inspector) -> str:
    out = io.StringIO()
    write_chrome_trace(trace_input(inspector), out)
    return out.getvalue()


@pytest.mark.parametrize("name", TRACED)
def test_the_trace_is_the_same_both_ways_on_the_vectors(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = VECTORS / name
    inspector = Inspector(etdump_path=folder / "etdump.etdp", etrecord=folder / "etrecord.bin")
    choose(_compiled, compiled_extension(_compiled.EXTENSION), monkeypatch)
    compiled = _trace(inspector)
    choose(_compiled, importlib.import_module(_compiled.TWIN), monkeypatch)
    assert _trace(inspector) == compiled
    assert compiled.count('"ph": "X"') > 10


@pytest.mark.parametrize("name", TRACED)
def test_the_lines_functions_agree_on_the_vectors(name: str) -> None:
    """Function by function, on each block's slices: the same order, nesting and lines."""
    from delegate_lens.exporters._chrome_trace import _ChromeBlock, _Microseconds

    extension = compiled_extension(_compiled.EXTENSION)
    twin = importlib.import_module(_compiled.TWIN)
    folder = VECTORS / name
    trace = trace_input(
        Inspector(etdump_path=folder / "etdump.etdp", etrecord=folder / "etrecord.bin")
    )
    us = _Microseconds(trace.units_per_second)
    for block in trace.blocks:
        sl = block.slices.runs(0, block.slices.n_runs)
        if not sl.rows:
            continue
        lines = _ChromeBlock(block)
        runs = list(range(sl.start.shape[0]))
        positions = np.arange(len(runs), dtype=np.intp)
        head = (lines.heads, lines.mids)
        args = (sl.start, sl.end, sl.clipped.view(np.uint8), sl.order, positions, runs, 0)
        made = [f.block_lines(*head, *args, *us.compiled_args) for f in (extension, twin)]
        assert made[0] is not None and made[1] is not None
        assert made[0][0][: made[0][1][-1]] == made[1][0][: made[1][1][-1]]
        assert made[0][1] == made[1][1]
        order = np.take_along_axis(sl.start, sl.order, axis=1)
        ends = np.take_along_axis(sl.end, sl.order, axis=1)
        for a, b in zip(extension.nest_runs(order, ends), twin.nest_runs(order, ends)):
            assert a.dtype == b.dtype and np.array_equal(a, b)


# --------------------------------------------------------------------------- errors


def _raise(*_args: object, **_kwargs: object) -> NoReturn:
    raise RuntimeError("a bug in the compiled code")


def test_an_error_in_the_compiled_walk_reaches_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not swallowed into a silent, slower numpy decode."""
    monkeypatch.setattr(fastwalk, "walk", _raise)
    with pytest.raises(RuntimeError, match="a bug in the compiled code"):
        decode_columns(SMALL)


def _bad_debug_values() -> list[bytes]:
    """Copies of RICH with one byte changed that the compiled walk accepts but a debug
    ``Value`` (left to numpy's code after the walk) makes malformed."""
    extension = compiled_extension(fastwalk.EXTENSION)
    found = []
    for at in range(len(RICH)):
        data = bytearray(RICH)
        data[at] ^= 0xFF
        buf = Buffer(bytes(data))
        try:
            root = np.array([_root_position(buf)], np.int64)
        except ETDumpFormatError:
            continue
        lo, hi = buf.files()
        if extension.walk(buf.u8, root, lo, hi) is None:
            continue
        try:
            decode_columns(bytes(data))
        except ETDumpFormatError:
            found.append(bytes(data))
    return found


def test_a_bad_debug_value_after_the_walk_is_numpy_s_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk leaves debug values to numpy's code: a bad one raises what the numpy
    decoder alone raises (once through an ``except Exception``, now directly)."""
    choose(fastwalk, compiled_extension(fastwalk.EXTENSION), monkeypatch)
    bad = _bad_debug_values()
    assert bad
    twin = importlib.import_module(fastwalk.TWIN)
    for data in bad:
        with pytest.raises(ETDumpFormatError) as compiled:
            decode_columns(data)
        with monkeypatch.context() as numpy_only:
            choose(fastwalk, twin, numpy_only)
            with pytest.raises(ETDumpFormatError) as python:
                decode_columns(data)
        assert str(compiled.value) == str(python.value)


def _traced(metadata: bool) -> Inspector:
    events = [
        Event(profile_event=ProfileEvent(name="OPERATOR_CALL", start_time=0, end_time=100)),
        Event(
            profile_event=ProfileEvent(
                name="conv",
                delegate_debug_id_int=3,
                delegate_debug_metadata=b"\x07" if metadata else None,
                start_time=10,
                end_time=20,
            )
        ),
    ]
    return Inspector(etdump_data=dumps(ETDump(run_data=[RunData(name="Execute", events=events)])))


@pytest.mark.parametrize(
    ("name", "metadata"),
    [("block_lines", False), ("run_lines", True), ("nest_runs", True), ("track_order", False)],
)
def test_an_error_in_the_compiled_lines_reaches_the_caller(
    name: str, metadata: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the writer's threads too (``track_order`` runs when the slices are made)."""
    choose(_compiled, compiled_extension(_compiled.EXTENSION), monkeypatch)
    inspector = _traced(metadata)
    assert '"ph": "X"' in _trace(inspector)
    monkeypatch.setattr(_compiled, name, _raise)
    with pytest.raises(RuntimeError, match="a bug in the compiled code"):
        _trace(inspector)
