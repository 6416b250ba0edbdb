"""Faces that load their names on first use (PEP 562), each name declared once: in the stub
beside the face, which type checkers read instead of the module. A package's face is its
``__init__.py`` with ``__init__.pyi`` beside it; a package's internal face (what its
sibling packages share and users do not, docs/architecture.md) is ``_internal.py`` with
``_internal.pyi``. The face's code is one line::

    __getattr__, __dir__ = attach_stub(__name__, __file__)

and it reads its stub only when first asked for a name (a package's ``__all__`` too, made
from the stub): importing a face reads nothing. In the stub,

* ``from delegate_lens.inspector._api import Inspector as Inspector`` (the re-export form,
  absolute or relative) names an export: ``Inspector`` is imported from its module when
  first asked for, and then kept in the face;
* a ``def``, a ``class`` or an annotated name (``__version__: str``) is an export the face
  defines itself;
* anything else (``from typing import Any``, an import not in the re-export form) only
  serves the stub's annotations.

The stub is read by a scanner of those three forms, made of string methods: no module is
imported and nothing is compiled to read it (Python's parser would take several times the
import of ``delegate_lens``; so would ``lazy_loader.attach_stub``, which also imports
``ast``). ``tests/test_lazy_faces.py`` checks the scanner against Python's parser on every
stub. The lists a face once kept by hand (``__all__``, name -> module) are made from it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

_COLON_KEYWORDS = frozenset({"else", "try", "finally"})  # "else:" is no annotated name


def stub_exports(source: str, module: str, *, is_package: bool) -> dict[str, str | None]:
    """The exports a face's stub declares, in order: name -> the module it is imported
    from, or None for a name the face defines itself. ``module`` is the face's module name
    (relative imports are resolved against it); ``is_package`` when it is an
    ``__init__``. Statements start a line; an import may go on over lines in brackets."""
    package = module if is_package else module.rpartition(".")[0]
    out: dict[str, str | None] = {}
    lines = iter(source.split("\n"))
    for line in lines:
        if line.startswith("from "):
            statement = line.partition("#")[0]
            while "(" in statement and ")" not in statement:
                statement += " " + next(lines, ")").partition("#")[0]
            where, _, names = statement[5:].partition(" import ")
            home = _resolve(where.strip(), package)
            for item in names.replace("(", " ").replace(")", " ").split(","):
                words = item.split()
                if len(words) == 3 and words[1] == "as" and words[0] == words[2]:
                    out.setdefault(words[0], home)
        elif line.startswith(("def ", "async def ", "class ")):
            name = line.split()[2 if line.startswith("async") else 1]
            out.setdefault(name.partition("(")[0].partition(":")[0], None)
        else:
            head, colon, _ = line.partition(":")
            if colon and head.isidentifier() and head not in _COLON_KEYWORDS:
                out.setdefault(head, None)
    return {name: home for name, home in out.items() if not _is_private(name)}


def _resolve(where: str, package: str) -> str:
    """The module ``from where import ...`` names, in ``package``."""
    level = len(where) - len(where.lstrip("."))
    if not level:
        return where
    base = package.split(".")[: len(package.split(".")) - level + 1]
    rest = where[level:]
    return ".".join([*base, rest] if rest else base)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def attach_stub(module: str, file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the face ``module`` (its ``__name__``), whose
    names are declared in the stub beside ``file`` (its ``__file__``). The stub is read when
    the face is first asked for a name it has not loaded yet (importing the face reads
    nothing); name ``n`` then comes from the module the stub imports it from, and is kept in
    the face. A package's face answers ``__all__`` the same way: every export, in the
    stub's order (an internal face has none)."""
    is_package = os.path.basename(file).startswith("__init__.")
    exports: dict[str, str | None] = {}

    def declared() -> dict[str, str | None]:
        if not exports:
            stub = file.rpartition(".")[0] + ".pyi"
            try:
                with open(stub, encoding="utf-8") as handle:
                    source = handle.read()
            except OSError as exc:
                raise ImportError(f"{module}: its stub {stub} cannot be read ({exc})") from exc
            exports.update(stub_exports(source, module, is_package=is_package))
        return exports

    def __getattr__(name: str) -> Any:
        where = declared().get(name)
        if name == "__all__" and is_package:
            value: Any = list(exports)
        elif where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        elif where == module:  # a module of the package: ``from . import x as x``
            value = importlib.import_module(f"{module}.{name}")
        else:
            value = getattr(importlib.import_module(where), name)
        setattr(sys.modules[module], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[module])) | set(declared()))

    return __getattr__, __dir__
