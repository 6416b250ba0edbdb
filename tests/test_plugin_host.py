"""The plugin host: discovery through entry points, -p options, failures named by plugin.
The hook calls are tested in ``test_plugin_hook_calls.py``."""

from __future__ import annotations

import importlib.metadata
import itertools
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pluggy
import pytest
from conftest import VECTORS

from delegate_lens import hookspecs
from delegate_lens.errors import PluginError, UsageError
from delegate_lens.pluginmanager import (
    AUTOLOAD_ENV,
    BUILTIN_NAMES,
    BUILTIN_PLUGINS,
    apply_plugin_options,
    build_plugin_manager,
    describe_plugin,
    get_plugin_manager,
    has_implementations,
    list_plugins,
    reset_plugin_manager,
)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(AUTOLOAD_ENV, raising=False)
    reset_plugin_manager()
    yield
    reset_plugin_manager()


class FakeDist:
    """Writes plugin modules and ``*.dist-info`` folders into a directory on sys.path."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.tag = uuid.uuid4().hex[:8]
        monkeypatch.syspath_prepend(str(root))

    def module(self, stem: str, source: str) -> str:
        """Write a module; returns its (unique) import name."""
        name = f"{stem}_{self.tag}"
        (self.root / f"{name}.py").write_text(textwrap.dedent(source))
        return name

    def dist(self, dist: str, version: str, entry_points: dict[str, str]) -> None:
        folder = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        folder.mkdir()
        (folder / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
        )
        lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (folder / "entry_points.txt").write_text(f"[delegate_lens]\n{lines}")

    def plugin(self, dist: str, version: str, ep_name: str, source: str) -> str:
        module = self.module(ep_name, source)
        self.dist(dist, version, {ep_name: module})
        return module

    def env(self) -> dict[str, str]:
        path = os.pathsep.join([str(self.root), os.environ.get("PYTHONPATH", "")])
        return dict(os.environ, PYTHONPATH=path.rstrip(os.pathsep))


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDist:
    return FakeDist(tmp_path, monkeypatch)


GOOD = """
    from delegate_lens import hookimpl

    @hookimpl
    def dl_delegate_time_scale(backend_id, ticks):
        return float(ticks) * 2 if backend_id == "Fake" else None
"""


def _cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


# --------------------------------------------------------------------------- building


def test_builtins_and_specs_are_registered() -> None:
    pm = get_plugin_manager()
    assert isinstance(pm, pluggy.PluginManager)
    assert pm.project_name == "delegate_lens"
    for module in BUILTIN_PLUGINS:
        name = BUILTIN_NAMES.get(module, module)
        plugin = pm.get_plugin(name)
        if hasattr(sys.modules[module], "make_plugin"):  # an object made for this manager
            assert type(plugin).__module__ == module
        else:
            assert plugin is sys.modules[module]
        assert describe_plugin(name) == f"{name!r} (built-in)"
    specs = {name for name in dir(hookspecs) if name.startswith("dl_")}
    assert specs == {name for name in specs if getattr(pm.hook, name).has_spec()}
    # 8 + dl_numerical_comparators, dl_intermediate_output, dl_testing_profile,
    # dl_testing_rules, dl_delegate_time_scale_array, dl_executorch_bridge, dl_html_display
    assert len(specs) == 16


def test_singleton_and_reset() -> None:
    pm = get_plugin_manager()
    assert get_plugin_manager() is pm
    reset_plugin_manager()
    assert get_plugin_manager() is not pm


def test_dist_info_plugin_on_sys_path_is_loaded(fake: FakeDist) -> None:
    module = fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    pm = get_plugin_manager()
    assert pm.get_plugin("fake_clock") is sys.modules[module]
    assert describe_plugin("fake_clock") == "'fake_clock' (fake-clock 1.2.3)"
    assert pm.hook.dl_delegate_time_scale(backend_id="Fake", event_name="e", ticks=21) == 42.0
    row = next(r for r in list_plugins() if r.name == "fake_clock")
    assert (row.source.kind, row.source.distribution, row.source.version) == (
        "entry point",
        "fake-clock",
        "1.2.3",
    )
    assert row.hooks == ("dl_delegate_time_scale",)


def test_plugins_command_lists_dist_info_plugin(fake: FakeDist) -> None:
    fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    result = _cli(["plugins"], env=fake.env())
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "HOOKS"]
    row = next(line for line in lines if line.startswith("fake_clock "))
    assert row.split() == ["fake_clock", "fake-clock", "1.2.3", "dl_delegate_time_scale"]
    builtin = next(line for line in lines if line.startswith("mapping_validator "))
    assert builtin.split()[1:3] == ["built-in", "-"]


def test_autoload_can_be_disabled(fake: FakeDist, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    pm = get_plugin_manager()
    assert pm.get_plugin("fake_clock") is None
    assert all(
        pm.get_plugin(BUILTIN_NAMES.get(module, module)) is not None for module in BUILTIN_PLUGINS
    )
    # -p NAME still loads an entry point by name, with its distribution
    pm = apply_plugin_options(["fake_clock"])
    assert pm.get_plugin("fake_clock") is not None
    assert describe_plugin("fake_clock") == "'fake_clock' (fake-clock 1.2.3)"
    monkeypatch.setenv(AUTOLOAD_ENV, "0")
    assert build_plugin_manager().get_plugin("fake_clock") is not None


def test_autoload_disabled_in_cli(fake: FakeDist) -> None:
    fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    env = dict(fake.env(), **{AUTOLOAD_ENV: "1"})
    result = _cli(["plugins"], env=env)
    assert result.returncode == 0, result.stderr
    assert "fake_clock" not in result.stdout
    assert any(line.split()[:2] == ["exporters", "built-in"] for line in result.stdout.splitlines())


def test_block_entry_point_before_it_loads(fake: FakeDist) -> None:
    # importing this module would fail: blocking must keep it from being imported
    module = fake.plugin("broken-dist", "0.1", "broken", "raise ImportError('boom')\n")
    pm = apply_plugin_options(["no:broken"])
    assert pm.is_blocked("broken")
    assert module not in sys.modules
    result = _cli(["-p", "no:broken", "plugins"], env=fake.env())
    assert result.returncode == 0, result.stderr
    assert "blocked: broken" in result.stdout


def test_block_builtin() -> None:
    pm = apply_plugin_options(["no:delegate_lens.builtins.mapping_validator"])
    assert pm.get_plugin("delegate_lens.builtins.mapping_validator") is None
    assert pm.get_plugin("delegate_lens.builtins.exporters") is not None


def test_block_builtin_by_its_short_name() -> None:
    pm = apply_plugin_options(["no:mapping_validator"])
    assert pm.get_plugin("delegate_lens.builtins.mapping_validator") is None
    assert not has_implementations("dl_delegate_mapping", pm)
    assert pm.get_plugin("delegate_lens.builtins.exporters") is not None


def test_blocking_an_unknown_name_is_flagged(fake: FakeDist) -> None:
    fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    result = _cli(["-p", "no:fake_clokc", "-p", "no:exporters", "plugins"], env=fake.env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        "blocked: exporters, fake_clokc (no plugin of that name)"
    )
    assert any(line.startswith("fake_clock ") for line in result.stdout.splitlines())


def test_p_options_after_the_command(fake: FakeDist) -> None:
    """As in pytest, -p may come after the (sub-)command; all -p options add up."""
    fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    result = _cli(["-p", "no:cycle_clock", "plugins", "-p", "no:fake_clock"], env=fake.env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "blocked: cycle_clock, fake_clock"
    vector = VECTORS / "mlp_xnnpack" / "etdump.etdp"
    args = ["etdump", "summary", "-p", "no:fake_clock", "-p", "nonexistent_mod_x", str(vector)]
    result = _cli(args, env=fake.env())
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: plugin module 'nonexistent_mod_x' (-p nonexistent_mod_x) failed to load: "
        "ModuleNotFoundError: No module named 'nonexistent_mod_x'"
    ]


def test_plugins_table_wraps_long_hook_lists(fake: FakeDist) -> None:
    hooks = sorted(name for name in dir(hookspecs) if name.startswith("dl_"))
    source = "".join(f"def {hook}(*args):\n    return None\n" for hook in hooks)
    source = source.replace("(*args)", "()")
    fake.plugin("many-hooks", "2.0", "many_hooks", source)
    result = _cli(["plugins"], env=dict(fake.env(), COLUMNS="100"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("many_hooks "))
    column = lines[0].index("HOOKS")
    more = itertools.takewhile(lambda line: line[:column].isspace(), lines[start + 1 :])
    block = [lines[start], *more]
    assert len(block) > 1 and all(len(line) <= 100 for line in block)
    assert " ".join(line[column:] for line in block).split(", ") == sorted(hooks)


def test_p_module_registers_last_and_wins(fake: FakeDist) -> None:
    first = fake.plugin("fake-clock", "1.2.3", "fake_clock", GOOD)
    override = fake.module(
        "override",
        """
        def dl_delegate_time_scale(backend_id, ticks):  # no marker: dl_ names are hooks
            return -1.0
        """,
    )
    pm = apply_plugin_options([override])
    assert pm.get_plugin(override) is sys.modules[override]
    assert pm.hook.dl_delegate_time_scale(backend_id="Fake", event_name="e", ticks=1) == -1.0
    assert describe_plugin(override).startswith(f"{override!r} (-p {override}")
    assert pm.get_plugin("fake_clock") is sys.modules[first]
    # blocking a -p module by its name wins over loading it
    pm = apply_plugin_options([override, f"no:{override}"])
    assert pm.get_plugin(override) is None


def test_malformed_p_options() -> None:
    with pytest.raises(UsageError, match="no:"):
        apply_plugin_options(["no:"])
    with pytest.raises(UsageError):
        apply_plugin_options([" "])


# --------------------------------------------------------------------------- load failures


def test_import_error_names_plugin_and_distribution(fake: FakeDist) -> None:
    fake.plugin("broken-dist", "0.4.1", "broken", "import no_such_module_anywhere\n")
    with pytest.raises(PluginError) as info:
        get_plugin_manager()
    message = str(info.value)
    assert "'broken'" in message
    assert "broken-dist 0.4.1" in message
    assert "no_such_module_anywhere" in message
    assert isinstance(info.value.__cause__, ImportError)


def test_import_error_in_cli_is_one_line_exit_2(fake: FakeDist) -> None:
    fake.plugin("broken-dist", "0.4.1", "broken", "raise RuntimeError('bad plugin')\n")
    result = _cli(["plugins"], env=fake.env())
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: plugin 'broken' (broken-dist 0.4.1) failed to load")
    assert "RuntimeError: bad plugin" in lines[0]


def test_p_module_import_error(fake: FakeDist) -> None:
    module = fake.module("bad", "raise ImportError('nope')\n")
    with pytest.raises(PluginError, match=f"{module}.*ImportError: nope"):
        apply_plugin_options([module])


def test_wrong_argument_name(fake: FakeDist) -> None:
    fake.plugin(
        "wrong-args",
        "2.0",
        "wrong_args",
        """
        from delegate_lens import hookimpl

        @hookimpl
        def dl_parse_delegate_metadata(backend, metadatas):
            return None
        """,
    )
    with pytest.raises(PluginError) as info:
        get_plugin_manager()
    message = str(info.value)
    assert "'wrong_args' (wrong-args 2.0)" in message
    assert "dl_parse_delegate_metadata" in message
    assert "backend" in message
    assert "\n" not in message
    result = _cli(["plugins"], env=fake.env())
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1


def test_unknown_hook_name(fake: FakeDist) -> None:
    fake.plugin(
        "typo-dist",
        "1.0",
        "typo",
        """
        from delegate_lens import hookimpl

        @hookimpl
        def dl_parse_metadata(backend_id, metadatas):
            return None
        """,
    )
    with pytest.raises(PluginError) as info:
        get_plugin_manager()
    assert "'typo' (typo-dist 1.0) implements unknown hook 'dl_parse_metadata'" in str(info.value)
    assert "did you mean dl_parse_delegate_metadata" in str(info.value)


def test_wrapper_that_is_not_a_generator(fake: FakeDist) -> None:
    fake.plugin(
        "wrap-dist",
        "1.0",
        "wrap",
        """
        from delegate_lens import hookimpl

        @hookimpl(wrapper=True)
        def dl_exporters():
            return []
        """,
    )
    with pytest.raises(PluginError, match=r"'wrap' \(wrap-dist 1.0\).*generator"):
        get_plugin_manager()


def test_two_distributions_with_one_plugin_name(fake: FakeDist) -> None:
    module = fake.module("same", GOOD)
    fake.dist("first-dist", "1.0", {"same": module})
    fake.dist("second-dist", "2.0", {"same": module})
    with pytest.raises(PluginError, match="plugin name 'same' is registered by two") as info:
        get_plugin_manager()
    assert "first-dist 1.0" in str(info.value)
    assert "second-dist 2.0" in str(info.value)


def test_import_is_torch_free_and_cheap() -> None:
    code = (
        "import sys, delegate_lens.pluginmanager as m, delegate_lens.exporters, "
        "delegate_lens.config\n"
        "m.get_plugin_manager()\n"
        "bad = [n for n in ('torch', 'numpy') if n in sys.modules]\n"
        "print(bad)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]", (
        "importing the plugin host (and its plugins) pulled in " + (result.stdout)
    )


def test_real_plugins_are_found_through_entry_points() -> None:
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group="delegate_lens")}
    pm = get_plugin_manager()
    for name, dist in (
        ("json_metadata", "delegate-lens-json-metadata"),
        ("cycle_clock", "delegate-lens-cycle-clock"),
    ):
        assert name in eps, f"{dist} is not installed (scripts/install.sh installs it)"
        assert eps[name].dist is not None
        assert eps[name].dist.metadata["Name"] == dist
        version = importlib.metadata.version(dist)
        assert describe_plugin(name, pm) == f"{name!r} ({dist} {version})"
    assert REPO.joinpath("plugins", "json-metadata", "pyproject.toml").is_file()
