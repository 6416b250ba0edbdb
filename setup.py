"""The compiled parts of delegate-lens: the ETDump decoder's walk and chrome-trace's slice
lines and nesting (Cython).

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
built (no C compiler, or a build without Cython), delegate-lens installs without them and
decodes with numpy alone, a few times slower (docs/etdump.md, "The compiled walk"), and
writes the timelines' lines and nesting with numpy and Python (about twice the time).
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
                depends=[  # included by _walk.pyx
                    "core/delegate_lens/etdump/_walk_reads.pxi",
                    "core/delegate_lens/etdump/_walk_strings.pxi",
                    "core/delegate_lens/etdump/_walk_runs.pxi",
                ],
                extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
                optional=True,  # no compiler: install anyway, without it
            ),
            Extension(
                "delegate_lens.exporters._trace_lines",
                ["core/delegate_lens/exporters/_trace_lines.pyx"],
                extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
                optional=True,  # no compiler: chrome-trace's lines are made in Python
            ),
        ],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=ext_modules)
