"""Start-up: what a command or an import brings in (issue 25 item 3).

numpy, pandas, pyarrow, rich and torch are imported only where they are used, each check in
a fresh interpreter; an installed package carries its bytecode, so no start compiles our
modules (benchmarks/bench_startup.py measures the time).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import delegate_lens

REPO = Path(__file__).resolve().parent.parent
EXTRAS = ("pandas", "pyarrow", "rich", "torch", "scipy", "dask", "duckdb")


def imported_after(code: str) -> set[str]:
    """Top-level names of the modules loaded by a fresh interpreter running ``code``."""
    script = (
        f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_importing_the_package_imports_no_numpy_and_no_plugin_host() -> None:
    loaded = imported_after("import delegate_lens")
    assert not loaded & {"numpy", "pluggy", *EXTRAS}


def test_the_plugin_markers_load_the_plugin_host_when_asked_for() -> None:
    loaded = imported_after("from delegate_lens import hookimpl, hookspec")
    assert "pluggy" in loaded
    assert "numpy" not in loaded


def test_time_scales_import_no_numpy() -> None:
    loaded = imported_after(
        "from delegate_lens.inspector import TimeScale\n"
        "import delegate_lens.inspector._timescale as t\n"
        "assert TimeScale.coerce('US') is TimeScale.US and t.scale_factor(TimeScale.NS, "
        "TimeScale.MS) == 1e6"
    )
    assert "numpy" not in loaded


def test_the_inspector_face_loads_what_is_asked_for() -> None:
    code = (
        "import sys, delegate_lens.inspector as face\n"
        "assert 'delegate_lens.inspector._api' not in sys.modules\n"
        "from delegate_lens.inspector import Inspector\n"
        "assert Inspector.__module__ == 'delegate_lens.inspector._api'\n"
        "assert 'delegate_lens.inspector._writer_input' not in sys.modules\n"
        "assert 'delegate_lens.inspector._reference_utils' not in sys.modules\n"
        "assert face.table_rows.__module__ == 'delegate_lens.inspector._writer_input'\n"
        "assert set(face.__all__) <= set(dir(face))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_plugin_host_loads_what_its_built_ins_use() -> None:
    """Every command builds the plugin manager: its built-ins bring the mapping helpers, not
    the backend classes, and no error's suggestions (difflib) are prepared."""
    code = (
        "import sys\n"
        "from delegate_lens.pluginmanager import get_plugin_manager\n"
        "assert get_plugin_manager().get_plugin('delegate_lens.builtins.mapping_validator')\n"
        "assert 'delegate_lens.backend._mapping' in sys.modules\n"
        "for name in ('delegate_lens.backend._details', 'delegate_lens.backend._partitioner',"
        " 'difflib'):\n"
        "    assert name not in sys.modules, name\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "chrome-trace"])
def test_inspect_imports_no_optional_extra(vectors_dir: Path, fmt: str, tmp_path: Path) -> None:
    v = vectors_dir / "mlp_xnnpack"
    out = tmp_path / "out"
    argv = ["inspect", str(v / "etdump.etdp"), "--etrecord", str(v / "etrecord.bin")]
    argv += ["--format", fmt, "-o", str(out)]
    loaded = imported_after(f"from delegate_lens.cli import main\nassert main({argv!r}) == 0")
    assert out.stat().st_size > 0
    assert not loaded & set(EXTRAS)


def test_the_inspector_imports_pandas_only_for_a_dataframe(vectors_dir: Path) -> None:
    v = vectors_dir / "mlp_xnnpack"
    code = (
        "import sys\n"
        "from delegate_lens.inspector import Inspector\n"
        f"i = Inspector({str(v / 'etdump.etdp')!r}, etrecord={str(v / 'etrecord.bin')!r})\n"
        "assert i.event_blocks[1].events[1].name\n"
        "assert not {'pandas', 'pyarrow', 'rich', 'torch'} & set(sys.modules), sorted(sys.modules)\n"
        "frame = i.to_dataframe()\n"
        "assert 'pandas' in sys.modules and len(frame) > 0\n"
    )
    pytest.importorskip("pandas")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_installed_package_carries_its_bytecode() -> None:
    """A wheel install (not the editable one of a checkout) has a current ``.pyc`` for
    every module, written at install time: a start reads them, it compiles nothing (CI's
    non-editable run sets PYTHONDONTWRITEBYTECODE, so none can have been written since)."""
    package = Path(delegate_lens.__file__).resolve().parent
    if package.is_relative_to(REPO):
        pytest.skip("an editable install: the checkout's sources, compiled as they are used")
    stale = []
    for source in sorted(package.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists() or not _current(cached, source):
            stale.append(str(source.relative_to(package)))
    assert not stale, f"modules without current bytecode: {stale[:10]}"


def _current(cached: Path, source: Path) -> bool:
    """Whether ``cached`` is the bytecode of ``source`` as it is now (its header's source
    mtime and size, or a hash-based pyc)."""
    header = cached.read_bytes()[:16]
    if header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") & 1:  # hash-based: checked by its own rule
        return True
    info = os.stat(source)
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime == int(info.st_mtime) & 0xFFFFFFFF and size == info.st_size & 0xFFFFFFFF


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["inspect", "a.etdp"], "inspect"),
        (["-p", "no:json_metadata", "inspect", "a.etdp"], "inspect"),
        (["-p", "inspect", "report", "a.etdp"], "report"),  # -p's value is not the command
        (["-pmy_plugin", "check-backend", "x"], "check-backend"),
        (["etdump", "summary", "a.etdp"], "etdump"),
        (["--version"], None),
        (["-h", "inspect"], None),
        (["inspct", "a.etdp"], None),  # a typo: the full parser names the choices
        (["check_backend"], None),
        ([], None),
    ],
)
def test_the_command_is_told_from_the_words_before_parsing(
    argv: list[str], command: str | None
) -> None:
    from delegate_lens.cli import command_named

    assert command_named(argv) == command


def _parsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, str]:
    """Help text of ``parser``'s sub-commands, nested ones too, by command line."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[prefix + name] = sub.format_help()
                found.update(_parsers(sub, f"{prefix}{name} "))
    return found


def test_a_command_alone_is_parsed_as_among_all() -> None:
    """Running a command builds its parser only: the same parser, help and options, as
    the full one has for it."""
    from delegate_lens.cli import _COMMAND_MODULES, build_parser

    full = _parsers(build_parser())
    assert len(full) > len(_COMMAND_MODULES)
    for module in _COMMAND_MODULES:
        command = module.replace("_", "-")
        alone = _parsers(build_parser(command))
        assert alone, command
        assert alone == {k: v for k, v in full.items() if k.split()[0] == command}
        assert build_parser(command).format_usage() == build_parser().format_usage()


def test_running_a_command_imports_no_other_command(vectors_dir: Path) -> None:
    etdump = vectors_dir / "mlp_xnnpack" / "etdump.etdp"
    code = (
        "import sys\n"
        "from delegate_lens.cli import main\n"
        f"assert main(['etdump', 'summary', {str(etdump)!r}]) == 0\n"
        "loaded = sorted(m for m in sys.modules if m.endswith('_cmd'))\n"
        "assert loaded == ['delegate_lens.cli._etdump_cmd'], loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
