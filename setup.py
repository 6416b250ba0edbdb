"""The compiled part of delegate-lens: the ETDump decoder's walk (Cython).

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be
built (no C compiler, or a build without Cython), delegate-lens installs without it and
decodes with numpy alone, a few times slower (docs/etdump.md, "The compiled walk").
"""

import sys

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # e.g. pip install --no-build-isolation without Cython
    print("delegate-lens: Cython not found, building without the compiled walk", file=sys.stderr)
    ext_modules = []
else:
    ext_modules = cythonize(
        [
            Extension(
                "delegate_lens.etdump._walk",
                ["core/delegate_lens/etdump/_walk.pyx"],
                extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
                optional=True,  # no compiler: install anyway, without it
            )
        ],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=ext_modules)
