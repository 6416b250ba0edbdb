"""Built-in Inspector exporters on ``dl_exporters``: ``table``, ``json``, ``tsv``, ``csv``,
``chrome-trace`` and ``perfetto``.

Each builds the Inspector's typed rows or columns (``delegate_lens.inspector``: ``table_input``, ``json_input``, ``trace_input``) and
hands them to a writer of :mod:`delegate_lens.exporters`, into a text stream (``perfetto``:
a binary one); the heavy modules are imported only when an exporter runs. No torch.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from delegate_lens.exporters import Exporter
from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector

__all__ = ["BUILTIN_EXPORTERS", "dl_exporters"]


def _table(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.exporters import terminal_width, write_table
    from delegate_lens.inspector import table_input
    from delegate_lens.inspector._internal import write_memory_table

    # the command's view, the same rows on a terminal and in a pipe (fitted on a terminal)
    write_table(table_input(inspector), stream, width=terminal_width(stream), view=True)
    usage = inspector.get_memory_usage()
    if usage:  # allocation events: memory per allocator per run, under the table
        stream.write("\nmemory allocated per run and allocator:\n")
        write_memory_table(usage, stream)


def _json(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.exporters import write_json
    from delegate_lens.inspector import json_input

    write_json(json_input(inspector), stream)


def _tsv(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.exporters import write_tsv
    from delegate_lens.inspector import table_input

    write_tsv(table_input(inspector, metadata=False), stream)


def _csv(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.exporters import write_csv
    from delegate_lens.inspector import table_input

    write_csv(table_input(inspector, metadata=False), stream)


def _chrome_trace(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.exporters import write_chrome_trace
    from delegate_lens.inspector import trace_input

    write_chrome_trace(trace_input(inspector), stream)


def _perfetto(inspector: Inspector, stream: IO[bytes]) -> None:
    from delegate_lens.exporters import load_protos, write_perfetto
    from delegate_lens.inspector import trace_input

    load_protos()  # a missing extra is said before any work
    write_perfetto(trace_input(inspector), stream)


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
