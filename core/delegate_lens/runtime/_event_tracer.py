"""The EventTracer: the interface the runtime and delegate backends log events through.

Backends use the C++ API's names, as functions taking the tracer (which is ``None`` when
nobody traces; every function is then a no-op that returns at once):

* :func:`event_tracer_start_profiling_delegate` / :func:`event_tracer_end_profiling_delegate`
  — real-time logging around a backend operation;
* :func:`event_tracer_log_profiling_delegate` — post-time logging with timestamps the
  backend kept itself (e.g. read from the device after the run);
* :func:`event_tracer_log_output_delegate` — an intermediate output of the delegate.

A delegate event is identified by exactly one of ``name`` (a non-empty ``str``) and
``delegate_debug_id`` (an ``int`` from 0 to 2**31 - 1, the ETDump's int32 field; ``None`` or
``-1`` mean "not given"). The identifier must be one the backend put in its Debug Handle
Map at preprocess time, so the Inspector can link the event back to the operators it covers.

``metadata`` is ``None`` (stored as empty bytes, as the reference runtime does), bytes, or a
structured value (e.g. a dict) that the backend's ``dl_encode_delegate_metadata`` hook turns
into bytes.

This module does not import torch.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import SupportsIndex

import attrs

from delegate_lens.backend import INT_IDENTIFIER_MAX
from delegate_lens.errors import EventTracerError

UNSET_DELEGATE_DEBUG_ID = -1
"""``delegate_debug_id`` value meaning "no int identifier" (the C++ ``kUnsetDebugHandle``)."""
_U64_MAX = (1 << 64) - 1
_I32_MAX = INT_IDENTIFIER_MAX  # ETDump stores delegate_debug_id_int as an int32


@attrs.define(slots=True)
class EventTracerEntry:
    """What :func:`event_tracer_start_profiling_delegate` returns: hand it back to end it."""

    name: str | None
    delegate_debug_id: int
    chain_index: int
    instruction_id: int
    start_time: int


def check_clock_value(value: object) -> None:
    """Raise :class:`EventTracerError` unless ``value`` (what a clock returned) is uint64 ticks."""
    try:
        ticks = operator.index(value) if isinstance(value, SupportsIndex) else -1
    except TypeError:
        ticks = -1
    if not 0 <= ticks <= _U64_MAX:
        raise EventTracerError(
            f"the event tracer's clock returned {type(value).__name__} {value!r}; it must "
            "return int ticks from 0 to 2**64 - 1 (e.g. time.monotonic_ns, or a counter)"
        )


class EventTracer:
    """Base class of event tracers: receives everything, records nothing.

    The executor calls :meth:`create_event_block`, :meth:`set_chain_debug_handle`,
    :meth:`add_profile_event` and :meth:`log_evalue`; the backend-facing functions of this
    module call the ``*_delegate`` methods. Subclasses (:class:`~delegate_lens.runtime.ETDumpGen`)
    override what they record.
    """

    def __init__(self, clock: Callable[[], int] | None = None) -> None:
        self.clock: Callable[[], int] = clock if clock is not None else time.monotonic_ns
        self.chain_index = 0
        self.instruction_id = -1
        self.delegate_backend_id: str | None = None
        """Backend id of the delegate call running now (set by the runtime)."""
        self.bundled_input_index = -1
        """Index of the bundled test case whose inputs the next runs use (-1: none)."""

    # -- executor side
    def create_event_block(self, name: str) -> None:
        """Start a new block (``RunData``) of events."""

    def set_bundled_input_index(self, bundled_input_index: int) -> None:
        """Blocks created from now on ran the inputs of this bundled test case (-1: none)."""
        self.bundled_input_index = int(bundled_input_index)

    def set_chain_debug_handle(self, chain_index: int, instruction_id: int) -> None:
        """Tell the tracer which instruction runs now; delegate events get these ids."""
        self.chain_index = chain_index
        self.instruction_id = instruction_id

    def add_profile_event(
        self, name: str, chain_index: int, instruction_id: int, start_time: int, end_time: int
    ) -> None:
        """Record a framework or operator profile event (already timed by the caller)."""

    def log_evalue(self, value: object, output: bool = False) -> None:
        """Record a value (intermediate output, or a final output when ``output``)."""

    # -- delegate side (called through the module-level functions)
    def start_profiling_delegate(
        self, name: str | None, delegate_debug_id: int
    ) -> EventTracerEntry:
        return EventTracerEntry(
            name, delegate_debug_id, self.chain_index, self.instruction_id, self.clock()
        )

    def end_profiling_delegate(self, entry: EventTracerEntry, metadata: object) -> None:
        self.log_profiling_delegate(
            entry.name, entry.delegate_debug_id, entry.start_time, self.clock(), metadata
        )

    def log_profiling_delegate(
        self,
        name: str | None,
        delegate_debug_id: int,
        start_time: int,
        end_time: int,
        metadata: object,
    ) -> None:
        """Record one delegate profile event.

        ``metadata`` is what the backend passed (``None``, bytes or a structured value);
        :meth:`encode_metadata` turns it into the bytes to store.
        """

    def log_intermediate_output_delegate(
        self, name: str | None, delegate_debug_id: int, output: object
    ) -> None:
        """Record one delegate intermediate output."""

    def encode_metadata(self, metadata: object) -> bytes:
        """Bytes for ``metadata`` logged by the delegate running now (see :func:`encode_metadata`)."""
        return encode_metadata(self.delegate_backend_id, metadata)


def encode_metadata(backend_id: str | None, metadata: object) -> bytes:
    """Bytes for ``metadata``: as is, empty for ``None``, else the backend's encoder.

    A structured value goes through the ``dl_encode_delegate_metadata`` hook for
    ``backend_id``; no plugin answering is an :class:`EventTracerError` naming the backend.
    """
    if metadata is None:
        return b""
    if isinstance(metadata, bytes | bytearray | memoryview):
        return bytes(metadata)
    from delegate_lens import hooks

    encoded = hooks.encode_delegate_metadata(backend_id, metadata)
    if encoded is None:
        raise EventTracerError(
            f"backend {backend_id!r} logged metadata of type {type(metadata).__name__} but "
            "no plugin's dl_encode_delegate_metadata encodes it (log bytes, or implement "
            "the hook)"
        )
    if not isinstance(encoded, bytes | bytearray):
        raise EventTracerError(
            f"dl_encode_delegate_metadata for backend {backend_id!r} returned "
            f"{type(encoded).__name__}, expected bytes"
        )
    return bytes(encoded)


def _check_ids(name: object, delegate_debug_id: object) -> int:
    """Exactly one identifier; returns the int id (``-1`` when ``name`` is used)."""
    if (
        (delegate_debug_id is None or delegate_debug_id == UNSET_DELEGATE_DEBUG_ID)
        and type(name) is str
        and name
    ):
        return UNSET_DELEGATE_DEBUG_ID  # the common case, decided fast
    has_id = delegate_debug_id is not None and delegate_debug_id != UNSET_DELEGATE_DEBUG_ID
    if name is not None:
        if has_id:
            raise EventTracerError(
                f"delegate event with both name={name!r} and delegate_debug_id="
                f"{delegate_debug_id!r}: give exactly one identifier"
            )
        if not isinstance(name, str):
            raise EventTracerError(
                f"delegate event name must be a str identifier, not {type(name).__name__} "
                f"({name!r}); pass int identifiers as delegate_debug_id"
            )
        if not name:
            raise EventTracerError(
                "delegate event name is empty: an identifier must be non-empty (as in the "
                "Debug Handle Map)"
            )
        return UNSET_DELEGATE_DEBUG_ID
    if not has_id:
        raise EventTracerError(
            "delegate event without an identifier: give name (str) or delegate_debug_id (int)"
        )
    try:  # ints and numpy integers, not bools
        if isinstance(delegate_debug_id, bool) or not isinstance(delegate_debug_id, SupportsIndex):
            raise TypeError
        delegate_debug_id = operator.index(delegate_debug_id)
    except TypeError:
        raise EventTracerError(
            f"delegate_debug_id must be an int, not {type(delegate_debug_id).__name__} "
            f"({delegate_debug_id!r}); pass str identifiers as name"
        ) from None
    if delegate_debug_id < 0:
        raise EventTracerError(f"delegate_debug_id must be >= 0, got {delegate_debug_id}")
    if delegate_debug_id > _I32_MAX:
        raise EventTracerError(
            f"delegate_debug_id {delegate_debug_id} does not fit the ETDump's int32 field "
            f"(max {_I32_MAX})"
        )
    return int(delegate_debug_id)


def event_tracer_start_profiling_delegate(
    tracer: EventTracer | None, name: str | None, delegate_debug_id: int | None
) -> EventTracerEntry | None:
    """Start timing a delegate operation now; returns the entry to end it with.

    Returns ``None`` when ``tracer`` is ``None``.
    """
    if tracer is None:
        return None
    if name is None and type(delegate_debug_id) is int and 0 <= delegate_debug_id <= _I32_MAX:
        return tracer.start_profiling_delegate(None, delegate_debug_id)
    return tracer.start_profiling_delegate(name, _check_ids(name, delegate_debug_id))


def event_tracer_end_profiling_delegate(
    tracer: EventTracer | None, entry: EventTracerEntry | None, metadata: object = None
) -> None:
    """End the operation started with ``entry`` now, attaching ``metadata``."""
    if tracer is None:
        return
    if type(entry) is not EventTracerEntry and not isinstance(entry, EventTracerEntry):
        raise EventTracerError(
            f"end_profiling_delegate needs the entry start_profiling_delegate returned, "
            f"got {type(entry).__name__}"
        )
    tracer.end_profiling_delegate(entry, metadata)


def event_tracer_log_profiling_delegate(
    tracer: EventTracer | None,
    name: str | None,
    delegate_debug_id: int | None,
    start_time: int,
    end_time: int,
    metadata: object = None,
) -> None:
    """Log a delegate operation after the fact, with the backend's own timestamps."""
    if tracer is None:
        return
    if name is None and type(delegate_debug_id) is int and 0 <= delegate_debug_id <= _I32_MAX:
        ddi = delegate_debug_id
    else:
        ddi = _check_ids(name, delegate_debug_id)
    if type(start_time) is not int or type(end_time) is not int:
        try:  # ints and numpy integers; a float would silently lose its fraction
            start_time, end_time = operator.index(start_time), operator.index(end_time)
        except TypeError:
            raise EventTracerError(
                f"start_time/end_time must be ints (clock ticks), got {start_time!r}, {end_time!r}"
            ) from None
    if start_time < 0 or end_time < 0 or start_time > _U64_MAX or end_time > _U64_MAX:
        raise EventTracerError(
            f"start_time/end_time must fit uint64 ticks, got {start_time}, {end_time}"
        )
    tracer.log_profiling_delegate(name, ddi, start_time, end_time, metadata)


def event_tracer_log_output_delegate(
    tracer: EventTracer | None, name: str | None, delegate_debug_id: int | None, output: object
) -> None:
    """Log an intermediate output of the delegate (a tensor, list of tensors, int, float, bool)."""
    if tracer is None:
        return
    ddi = _check_ids(name, delegate_debug_id)
    tracer.log_intermediate_output_delegate(name, ddi, output)
