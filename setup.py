"""The compiled part of delegate-lens: the ETDump decoder's walk (Cython).

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be
built (no C compiler), delegate-lens installs without it and decodes with numpy alone, at
about a third of the speed (docs/etdump.md, "Speed").
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension(
                "delegate_lens.etdump._walk",
                ["core/delegate_lens/etdump/_walk.pyx"],
                extra_compile_args=["-O3"],
                optional=True,
            )
        ],
        compiler_directives={"language_level": "3"},
    )
)
