"""Every error delegate-lens raises on purpose derives from :class:`DelegateLensError`.

Errors about bad input name what was wrong and where (a file, a field, a byte offset,
a plugin), so that the CLI can print them as one line. Where the reference
(``executorch.devtools``) raises ``RuntimeError``, ours is one too (``ETRecordFormatError``,
``BundledProgramError``, ``InspectorError``, ``ConflictingArgumentsError``,
``NumericGapUsageError``), so code written for the reference catches it; likewise a
``KeyError`` (``UnknownNameError``) and a ``TypeError`` (``ArgumentTypeError``).
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "BundledProgramError",
    "CollectError",
    "ConfigError",
    "ConflictingArgumentsError",
    "DatasetError",
    "DelegateLensError",
    "DelegateLensWarning",
    "ETDumpFormatError",
    "ETRecordFormatError",
    "EventTracerError",
    "InputFileError",
    "InspectorError",
    "InspectorWarning",
    "MappingError",
    "MissingExtraError",
    "MissingFileError",
    "NumericGapUsageError",
    "PluginError",
    "PluginWarning",
    "ProgramFormatError",
    "QueryLimitError",
    "RuntimeBackendError",
    "UnknownNameError",
    "UsageError",
]


class DelegateLensError(Exception):
    """Base class of every error raised by delegate-lens."""


class UsageError(DelegateLensError, ValueError):
    """A command-line argument or API argument is invalid."""


class ConflictingArgumentsError(UsageError, RuntimeError):
    """Arguments that cannot go together (a time scale in cycles with one in seconds); a
    ``RuntimeError`` too, as the reference raises."""


class NumericGapUsageError(UsageError, RuntimeError):
    """``calculate_numeric_gap`` cannot run as asked (an unknown distance, no method with
    intermediate outputs); a ``RuntimeError`` too, as the reference raises where its own
    checks come first (a ``ValueError`` where they do not)."""


class UnknownNameError(UsageError, KeyError):
    """A name that names nothing known (a time scale, a reference graph); a ``KeyError``
    too, as the reference raises where it looks the name up. Printed as its message (not
    quoted as a ``KeyError``'s key is)."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class ArgumentTypeError(UsageError, TypeError):
    """An argument of a type the call does not take (an ETRecord that is neither a record
    nor a path); a ``TypeError`` too, as the reference raises."""


class QueryLimitError(UsageError):
    """A ``query`` passed its time or memory limit (the message names the limit and how to
    raise it; see ``docs/trust.md``)."""


class ETDumpFormatError(DelegateLensError, ValueError):
    """An ETDump buffer is malformed (the message names the byte offset and the field)."""


class ETRecordFormatError(DelegateLensError, ValueError, RuntimeError):
    """An ETRecord archive is malformed (the message names the entry); a ``RuntimeError``
    too, as the reference's ``parse_etrecord`` raises."""


class ProgramFormatError(DelegateLensError, ValueError):
    """A serialized program buffer is malformed or of an unsupported version."""


class BundledProgramError(DelegateLensError, ValueError, RuntimeError):
    """A bundled program (``.bpte``) is malformed or does not match its program (the message
    names the field, the method or the test case); a ``RuntimeError`` too, as the
    reference's ``BundledProgram`` raises."""


class ConfigError(DelegateLensError, ValueError):
    """The user's configuration is malformed (the message names the file and the key)."""


class InputFileError(DelegateLensError, OSError):
    """An input file could not be read (``filename`` names it; still an ``OSError``)."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class MissingFileError(InputFileError, FileNotFoundError):
    """An input file does not exist (still a ``FileNotFoundError``)."""


class PluginError(DelegateLensError):
    """A plugin failed to load, does not match its hook specification, or failed in a hook."""


class MappingError(DelegateLensError, ValueError):
    """A Debug Handle Map entry is invalid (the message names the identifier)."""


class EventTracerError(DelegateLensError, ValueError):
    """An event tracer was used incorrectly (e.g. both or neither delegate identifier given)."""


class RuntimeBackendError(DelegateLensError, RuntimeError):
    """The simulated runtime could not load or run a program or a delegate backend."""


class InspectorError(DelegateLensError, RuntimeError):
    """The Inspector could not build its tables from the given inputs (or compute numeric
    gaps); a ``RuntimeError``, as the reference fails there."""


class CollectError(DelegateLensError, RuntimeError):
    """``collect`` could not finish its run (e.g. a worker process ended before its batches
    were done; the message names it and its exit code)."""


class DatasetError(DelegateLensError, ValueError):
    """A collected dataset is damaged (the message names the part or manifest entry and how
    to check and repair the dataset)."""


class MissingExtraError(DelegateLensError, ImportError):
    """An optional dependency is missing; the message names the extra that installs it."""


class DelegateLensWarning(UserWarning):
    """Base class of the warnings delegate-lens issues (where it worked around bad input)."""


class PluginWarning(DelegateLensWarning):
    """A plugin failed where delegate-lens could fall back (the message names the plugin)."""


class InspectorWarning(DelegateLensWarning):
    """A problem with the Inspector's inputs that it worked around (see the message)."""
