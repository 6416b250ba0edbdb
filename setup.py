"""Package layout: the source folders are mapped onto one import package.

    core/          -> delegate_lens
    runtime_stub/  -> delegate_lens.runtime
    backends_demo/ -> delegate_lens.backends_demo

Every sub-package below them is found automatically, so adding a folder with an
``__init__.py`` needs no change here.
"""

from setuptools import find_packages, setup

_ROOTS = {
    "delegate_lens": "core",
    "delegate_lens.runtime": "runtime_stub",
    "delegate_lens.backends_demo": "backends_demo",
}


def _packages() -> list[str]:
    found: list[str] = []
    for prefix, folder in _ROOTS.items():
        found.append(prefix)
        found.extend(f"{prefix}.{sub}" for sub in find_packages(folder))
    return found


setup(packages=_packages(), package_dir=dict(_ROOTS))
