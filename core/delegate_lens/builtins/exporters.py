"""Built-in Inspector exporters on ``dl_exporters``: ``table``, ``json``, ``tsv``, ``csv``,
``chrome-trace`` and ``perfetto``.

Each writes an :class:`~delegate_lens.inspector.Inspector`'s data to a text stream
(``perfetto``: a binary one); the heavy modules are imported only when an exporter runs.
No torch.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from delegate_lens.exporters import Exporter
from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector

__all__ = ["BUILTIN_EXPORTERS", "dl_exporters"]


def _table(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.memory import write_memory_table
    from delegate_lens.inspector.tabular import terminal_width, write_table

    # the command's view, the same rows on a terminal and in a pipe (fitted on a terminal)
    write_table(inspector, stream, width=terminal_width(stream), view=True)
    usage = inspector.get_memory_usage()
    if usage:  # allocation events: memory per allocator per run, under the table
        stream.write("\nmemory allocated per run and allocator:\n")
        write_memory_table(usage, stream)


def _json(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.jsonout import write_json

    write_json(inspector, stream)


def _tsv(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.tabular import write_tsv

    write_tsv(inspector, stream)


def _csv(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.tabular import write_csv

    write_csv(inspector, stream)


def _chrome_trace(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.trace import write_chrome_trace

    write_chrome_trace(inspector, stream)


def _perfetto(inspector: Inspector, stream: IO[bytes]) -> None:
    from delegate_lens.inspector.perfetto import write_perfetto

    write_perfetto(inspector, stream)


BUILTIN_EXPORTERS: tuple[Exporter, ...] = (
    Exporter("table", "aligned text table, one line per event (the default)", _table),
    Exporter("json", "every block and event with samples, links and debug data (JSON)", _json),
    Exporter("tsv", "the printed table as tab-separated values (as the reference)", _tsv),
    Exporter("csv", "every event with ids, handles, module paths and statistics", _csv),
    Exporter(
        "chrome-trace",
        "Trace Event JSON timeline for Perfetto UI / chrome://tracing, one track per run",
        _chrome_trace,
    ),
    Exporter(
        "perfetto",
        "native Perfetto trace (protobuf), one track per run; needs the 'perfetto' extra",
        _perfetto,
        binary=True,
    ),
)


@hookimpl
def dl_exporters() -> list[Exporter]:
    """The built-in exporters."""
    return list(BUILTIN_EXPORTERS)
