"""What collect's workers take from this process (issue 31): one plain value,
:class:`~delegate_lens.dataset._keeping.WorkerSettings`, built from the public functions of
the configuration and the plugin host (no private global read through ``sys.modules``),
pickled for a worker that is not forked, and compared to tell whether kept workers can
serve a run."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from delegate_lens import config, pluginmanager
from delegate_lens.dataset._keeping import WorkerSettings


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv(config.CONFIG_ENV, raising=False)
    monkeypatch.delenv(config.OPTIONS_ENV, raising=False)
    monkeypatch.setenv(pluginmanager.AUTOLOAD_ENV, "1")  # built-ins only
    monkeypatch.chdir(tmp_path)
    config.reset_config()
    pluginmanager.reset_plugin_manager()
    yield tmp_path
    config.reset_config()
    pluginmanager.reset_plugin_manager()


def test_cached_config_is_what_get_config_keeps(tmp_path: Path) -> None:
    assert config.cached_config() is None  # nothing read yet: nothing read by asking
    assert config.cached_config() is None
    (tmp_path / "delegate-lens.toml").write_text("[x]\na = 1\n")
    read = config.get_config()
    assert config.cached_config() is read and read.data == {"x": {"a": 1}}
    config.reset_config()
    assert config.cached_config() is None
    again = config.get_config()
    assert config.cached_config() is again and again is not read and again == read


def test_the_plugin_host_says_what_it_has_without_building_it() -> None:
    assert pluginmanager.built_plugin_manager() is None
    assert pluginmanager.plugin_options() == ()
    assert pluginmanager.built_plugin_manager() is None  # (asking built nothing)
    pm = pluginmanager.get_plugin_manager()
    assert pluginmanager.built_plugin_manager() is pm
    other = pluginmanager.apply_plugin_options(["no:demo_backend"])
    assert pluginmanager.built_plugin_manager() is other is not pm
    assert pluginmanager.plugin_options() == ("no:demo_backend",)
    assert isinstance(pm, pluginmanager.DelegateLensPluginManager)
    assert isinstance(other, pluginmanager.DelegateLensPluginManager)
    assert other.serial != pm.serial
    pluginmanager.reset_plugin_manager()
    assert pluginmanager.built_plugin_manager() is None
    assert pluginmanager.plugin_options() == ()


def test_settings_name_what_this_process_has(tmp_path: Path) -> None:
    nothing = WorkerSettings.now(2)
    assert (nothing.config, nothing.manager, nothing.options, nothing.plugins) == (
        None,
        None,
        None,
        None,
    )
    assert nothing.workers == 2 and nothing.environment == dict(os.environ)
    (tmp_path / "delegate-lens.toml").write_text("[x]\na = 1\n")
    read = config.get_config()
    pm = pluginmanager.apply_plugin_options(["no:demo_backend"])
    assert isinstance(pm, pluginmanager.DelegateLensPluginManager)
    settings = WorkerSettings.now(3)
    assert settings.config is read
    assert settings.manager == pm.serial
    assert settings.options == ("no:demo_backend",)
    assert settings.plugins is not None and "demo_backend" in settings.plugins  # (blocked)
    assert "delegate_lens.builtins.exporters" in settings.plugins


def test_settings_are_the_same_only_when_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pluginmanager.get_plugin_manager()
    config.get_config()
    settings = WorkerSettings.now(2)
    assert settings.same(WorkerSettings.now(2))
    assert not settings.same(WorkerSettings.now(3))
    monkeypatch.setenv("DELEGATE_LENS_TEST_SETTING", "changed")
    assert not settings.same(WorkerSettings.now(2))
    monkeypatch.delenv("DELEGATE_LENS_TEST_SETTING")
    config.reset_config()
    config.get_config()  # the same (empty) configuration, read again
    assert not settings.same(WorkerSettings.now(2))
    settings = WorkerSettings.now(2)
    pluginmanager.reset_plugin_manager()
    pluginmanager.get_plugin_manager()  # another manager, the same options and plugins
    assert not settings.same(WorkerSettings.now(2))
    settings = WorkerSettings.now(2)
    pluginmanager.apply_plugin_options(["no:demo_backend"])
    assert not settings.same(WorkerSettings.now(2))
    settings = WorkerSettings.now(2)
    pm = pluginmanager.get_plugin_manager()
    pm.register(object(), name="registered_later")  # the same manager, another plugin
    assert not settings.same(WorkerSettings.now(2))


_WORKER = """
import pickle, sys
from delegate_lens import pluginmanager
settings = pickle.loads(sys.stdin.buffer.read())
assert pluginmanager.built_plugin_manager() is None
settings.apply()
pm = pluginmanager.built_plugin_manager()
print(pluginmanager.plugin_options(), pm is not None and pm.is_blocked("demo_backend"))
"""


def test_a_worker_not_forked_loads_the_plugins_from_the_settings() -> None:
    """Pickled and applied in a fresh interpreter (as from a fork server, or spawned): the
    plugins with this process's -p options; none loaded when this process had none."""

    def worker(settings: WorkerSettings) -> str:
        done = subprocess.run(
            [sys.executable, "-c", _WORKER],
            input=pickle.dumps(settings, pickle.HIGHEST_PROTOCOL),
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode().strip()

    assert worker(WorkerSettings.now(2)) == "() False"
    pluginmanager.apply_plugin_options(["no:demo_backend"])
    assert worker(WorkerSettings.now(2)) == "('no:demo_backend',) True"


def test_building_the_settings_loads_neither_the_plugin_host_nor_the_configuration() -> None:
    code = (
        "import sys\n"
        "from delegate_lens.dataset._keeping import WorkerSettings\n"
        "settings = WorkerSettings.now(2)\n"
        "assert settings.config is settings.options is settings.plugins is None\n"
        "loaded = {'delegate_lens.pluginmanager', 'delegate_lens.config', 'pluggy'}\n"
        "assert not loaded & set(sys.modules), sorted(loaded & set(sys.modules))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
