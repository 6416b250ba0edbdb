"""What writing the Inspector's tables and reading debug values may cost (see
``docs/trust.md``, "Limits on reading an ETDump"): the ``[inspector]`` settings.

- ``max_rows``: the Inspector keeps its events in numpy columns, but the table, TSV, CSV
  and ``json`` writers make Python objects per row (a row is one distinct event of a
  run): about 2 kB each. A real ETDump has as many rows as its model has operators (243
  for the GPT vector, whatever its runs); a crafted one packs an event in 8 to 12 bytes,
  so 5 MB hold 600,000 rows, which took 1.4 GB to write as JSON (442 MB now that JSON is
  made a chunk of rows at a time; a table 1.0 GB, a trace 842 MB). So the writers refuse
  more rows than ``max_rows`` (default :data:`DEFAULT_MAX_ROWS`) or one per
  :data:`BYTES_PER_ROW` bytes of the ETDump, whichever is more: a reference-made file
  (about 70 bytes an event) never has more.
- ``max_debug_ratio``: the tensors read (copied) from a debug buffer may add up to at most
  this many times the buffer's size plus :data:`DEBUG_SLACK` (a real writer gives each
  tensor bytes of its own; a crafted ETDump had 1,000 tensors name the whole buffer).

Raised, as every safety limit, only by the configuration the user chose
(``DELEGATE_LENS_CONFIG``, ``DELEGATE_LENS_OPTIONS``); a file in the current folder may
only lower them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens.errors import InspectorError

if TYPE_CHECKING:
    from delegate_lens.inspector._api import Inspector

DEFAULT_MAX_DEBUG_RATIO = 2
"""Times its size the tensors read from a debug buffer may add up to by default."""
DEBUG_SLACK = 1 << 20
"""Tensors may always add up to this many bytes beyond the ratio (1 MiB)."""
DEFAULT_MAX_ROWS = 100_000
"""Rows the writers may write whatever the file's size (about 250 MB as JSON)."""
BYTES_PER_ROW = 64
"""A file may have one row per this many of its bytes beyond :data:`DEFAULT_MAX_ROWS`."""


def _setting(key: str, default: int, *, whole: bool) -> int | float:
    """``[inspector] key`` of the configuration, else ``default``; raised above the
    default only by the configuration the user chose."""
    from delegate_lens.config import chosen_config, get_config

    found = get_config().section("inspector")
    found.check_keys({"max_rows", "max_debug_ratio"})
    chosen = chosen_config().section("inspector")
    section = chosen if key in chosen else found
    value = section.get_number(key, default, positive=True)
    if whole and not isinstance(value, int):
        raise section.error(key, f"expected a whole number, got {value!r}")
    return value if section is chosen else min(value, default)


def max_rows() -> int:
    """``[inspector] max_rows``: rows the table and ``json`` writers may write."""
    return int(_setting("max_rows", DEFAULT_MAX_ROWS, whole=True))


def debug_budget(buffer_size: int) -> tuple[float, float]:
    """``[inspector] max_debug_ratio`` and the bytes of tensors it lets a debug buffer of
    ``buffer_size`` bytes give."""
    ratio = _setting("max_debug_ratio", DEFAULT_MAX_DEBUG_RATIO, whole=False)
    return ratio, ratio * buffer_size + DEBUG_SLACK


def how_to_raise(key: str, value: int | float) -> str:
    """The end of an error past ``[inspector] key``: how to raise it (to ``value``)."""
    return (
        f"if the file is trusted, raise [inspector] {key} "
        f"(DELEGATE_LENS_OPTIONS='inspector.{key} = {value:g}'; see docs/trust.md)"
    )


def _file_size(inspector: Inspector) -> int:
    """The ETDump's bytes (0 when it was not read from a file)."""
    path = inspector.etdump_path
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def check_rows(inspector: Inspector, what: str) -> None:
    """Raise an :class:`InspectorError` when the Inspector has more rows than ``what``
    (the format) may write: the limit above."""
    rows = sum(table.n_rows for table in inspector.tables)
    limit = max_rows()
    size = _file_size(inspector)
    allowed = max(limit, size // BYTES_PER_ROW)
    if rows <= allowed:
        return
    origin = "the ETDump" if inspector.etdump_path is None else str(inspector.etdump_path)
    raise InspectorError(
        f"{origin}: {rows:,} rows (distinct events of a run) to write as {what}, more than "
        f"[inspector] max_rows = {limit:,} (or one per {BYTES_PER_ROW} bytes of the file, "
        f"{size // BYTES_PER_ROW:,}): each row costs about 2 kB of memory, and a real "
        f"ETDump has one per operator of its model; {how_to_raise('max_rows', rows)}"
    )
