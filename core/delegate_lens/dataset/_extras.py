"""Importing the optional dependencies of the dataset commands, with errors naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from delegate_lens.errors import MissingExtraError

_EXTRA_OF = {
    "pyarrow": "dataset",
    "pyarrow.parquet": "dataset",
    "pyarrow.fs": "dataset",
    "pyarrow.csv": "dataset",
    "duckdb": "dataset",
    "dask": "dask",
    "distributed": "dask",
}


def require(module: str, what: str) -> ModuleType:
    """Import ``module``; when missing, a :class:`MissingExtraError` saying that ``what``
    needs it and which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = _EXTRA_OF.get(module, module.split(".")[0])
        raise MissingExtraError(
            f"{what} needs {module.split('.')[0]}: install the {extra!r} extra "
            f"(pip install 'delegate-lens[{extra}]')"
        ) from exc
