"""ETDumpGen: the event tracer that writes an ETDump (and a debug buffer).

It records what the executor and the delegates log, with the reference runtime's layout
(``docs/etdump-format.md``):

* a ``Default`` block (opened by the first event when no block is open) holding
  ``Method::init`` and ``Program::load_method``, ``chain_index`` -1 and ``instruction_id`` 0;
* one ``Execute`` block per ``Method.execute``: for every operator instruction
  ``native_call_<op>.out`` then ``OPERATOR_CALL`` (chain 0, the instruction id), for every
  delegate call the delegate's own events then ``DELEGATE_CALL``; ``Method::execute``
  (chain -1, instruction 0) last; events are written in the order they *end*.
* with a debug buffer (``debug_buffer_size > 0``): the outputs of every operator instruction
  and all arguments of every delegate call as debug events (before the instruction's profile
  events, as the reference), the delegates' logged intermediate outputs, and after
  ``Method::execute`` the method's final outputs flagged with ``Value.output`` = true
  (chain_index uint64 max, instruction_id 0). Tensor bytes go to the debug buffer, each at an
  offset aligned to 64 bytes; ``Tensor.offset`` holds it.

**Debug buffer full.** When a tensor does not fit, ETDumpGen stops storing tensors for the
rest of its life (so the stored data is a clean prefix, never a hole), drops the debug events
of the tensors it could not store, counts them in :attr:`ETDumpGen.dropped_debug_values`,
sets :attr:`ETDumpGen.debug_buffer_full` and issues one :class:`DebugBufferFullWarning`.
Every profile event is still recorded and the files written stay valid.

Events are kept as tuples in Python lists while the model runs; the ETDump codec's numpy
columns are built once, when :meth:`ETDumpGen.get_etdump_data` or :meth:`ETDumpGen.write`
is called. Importing this module does not import torch.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.errors import (
    DelegateLensError,
    DelegateLensWarning,
    EventTracerError,
    PluginWarning,
)
from delegate_lens.fileio import write_bytes_atomic
from delegate_lens.runtime._event_tracer import EventTracer, EventTracerEntry, encode_metadata
from delegate_lens.runtime._records import (
    REC_BOOL,
    REC_DOUBLE,
    REC_INT,
    REC_LIST,
    REC_TENSOR,
    record_to_value,
    tensor_bytes,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from delegate_lens.etdump import ETDump, EventColumns


DEBUG_BUFFER_ALIGNMENT = 64
"""Every tensor stored in the debug buffer starts at a multiple of this (as the reference)."""

_PROFILE = 1
_DEBUG = 3
_U64_MAX = (1 << 64) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _encode_deferred(backend_id: str | None, value: object, cache: dict[Hashable, bytes]) -> bytes:
    """Encode a structured metadata value, once per distinct (hashable) value."""
    frozen = tuple(value.items()) if isinstance(value, dict) else value
    try:
        key: Hashable | None = (backend_id, type(value), frozen)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in cache:
        return cache[key]
    data = encode_metadata(backend_id, value)
    if key is not None:
        cache[key] = data
    return data


class DebugBufferFullWarning(DelegateLensWarning):
    """The debug buffer of an ETDumpGen is full: later tensors are not stored."""


class ETDumpGen(EventTracer):
    """Record runtime events and write them as an ETDump (plus a debug buffer).

    :param debug_buffer_size: bytes available for intermediate tensors; 0 (the default)
        records no debug events at all.
    :param clock: a callable returning the current time in ticks (an ``int``); defaults to
        :func:`time.monotonic_ns`. Inject one for deterministic files.
    """

    def __init__(self, debug_buffer_size: int = 0, clock: Callable[[], int] | None = None) -> None:
        super().__init__(clock)
        if isinstance(debug_buffer_size, bool) or not isinstance(debug_buffer_size, int):
            raise EventTracerError(
                f"debug_buffer_size must be an int, not {type(debug_buffer_size).__name__}"
            )
        if debug_buffer_size < 0:
            raise EventTracerError(f"debug_buffer_size must be >= 0, got {debug_buffer_size}")
        self.debug_buffer_size = debug_buffer_size
        # grows as tensors are stored, up to debug_buffer_size (a large limit costs nothing)
        self._debug_buffer = bytearray()
        self._debug_used = 0
        self.log_intermediate_outputs = debug_buffer_size > 0
        """Whether the executor logs operator outputs and delegate arguments."""
        self.debug_buffer_full = False
        """True once a tensor did not fit the debug buffer (later tensors are not stored)."""
        self.dropped_debug_values = 0
        """Debug events dropped because their tensor did not fit the debug buffer."""
        self.unencoded_metadata = 0
        """Delegate events of the last build whose structured metadata could not be encoded
        (stored with empty metadata; see :meth:`get_etdump_data`)."""
        self._blocks: list[tuple[str, list[tuple[Any, ...]]]] = []
        self._block_bundled_index: list[int] = []
        self._events: list[tuple[Any, ...]] | None = None
        self._encoders_checked: set[str | None] = set()

    # ------------------------------------------------------------------ executor side

    def create_event_block(self, name: str) -> None:
        events: list[tuple[Any, ...]] = []
        self._blocks.append((name, events))
        self._block_bundled_index.append(self.bundled_input_index)
        self._events = events

    def _current(self) -> list[tuple[Any, ...]]:
        if self._events is None:
            self.create_event_block("Default")
        assert self._events is not None
        return self._events

    def add_profile_event(
        self, name: str, chain_index: int, instruction_id: int, start_time: int, end_time: int
    ) -> None:
        events = self._events if self._events is not None else self._current()
        events.append(
            (_PROFILE, name, chain_index, instruction_id, -1, None, start_time, end_time, None)
        )

    def log_evalue(self, value: object, output: bool = False) -> None:
        if not self.log_intermediate_outputs:
            return
        entry = self._make_value(value, output)
        if entry is not None:
            self._current().append(
                (_DEBUG, None, self.chain_index, self.instruction_id, -1, None, 0, 0, entry)
            )

    # ------------------------------------------------------------------ delegate side

    def _metadata(self, metadata: object) -> bytes | tuple[str | None, object]:
        """Bytes to store, or ``(backend_id, snapshot)`` of a structured value.

        Structured values are encoded when the ETDump is built (once per distinct value);
        the first one of each backend is encoded right away so a missing encoder fails
        at the first log, not at write time.
        """
        backend_id = self.delegate_backend_id
        if type(metadata) is dict and backend_id in self._encoders_checked:
            return (backend_id, metadata.copy())  # a snapshot: later edits do not leak in
        if metadata is None:
            return b""
        if isinstance(metadata, bytes | bytearray | memoryview):
            return bytes(metadata)
        if backend_id not in self._encoders_checked:
            encode_metadata(backend_id, metadata)
            self._encoders_checked.add(backend_id)
        if isinstance(metadata, dict):
            metadata = dict(metadata)
        elif isinstance(metadata, list):
            metadata = list(metadata)
        return (backend_id, metadata)

    # start_profiling_delegate is EventTracer's: it only stamps the start time

    def end_profiling_delegate(self, entry: EventTracerEntry, metadata: object) -> None:
        self._record_delegate(
            entry.chain_index,
            entry.instruction_id,
            entry.delegate_debug_id,
            entry.name,
            entry.start_time,
            self.clock(),
            metadata,
        )

    def log_profiling_delegate(
        self,
        name: str | None,
        delegate_debug_id: int,
        start_time: int,
        end_time: int,
        metadata: object,
    ) -> None:
        self._record_delegate(
            self.chain_index,
            self.instruction_id,
            delegate_debug_id,
            name,
            start_time,
            end_time,
            metadata,
        )

    def _record_delegate(
        self,
        chain_index: int,
        instruction_id: int,
        delegate_debug_id: int,
        name: str | None,
        start_time: int,
        end_time: int,
        metadata: object,
    ) -> None:
        """Append one delegate profile event (real-time and post-time logging end here)."""
        if type(metadata) is not bytes:
            metadata = self._metadata(metadata)
        events = self._events if self._events is not None else self._current()
        events.append(
            (
                _PROFILE,
                None,
                chain_index,
                instruction_id,
                delegate_debug_id,
                name,
                start_time,
                end_time,
                metadata,
            )
        )

    def log_intermediate_output_delegate(
        self, name: str | None, delegate_debug_id: int, output: object
    ) -> None:
        if not self.log_intermediate_outputs:
            return
        entry = self._make_value(output, False)
        if entry is not None:
            self._current().append(
                (
                    _DEBUG,
                    None,
                    self.chain_index,
                    self.instruction_id,
                    delegate_debug_id,
                    name,
                    0,
                    0,
                    entry,
                )
            )

    # ------------------------------------------------------------------ debug values

    def _store(self, data: npt.NDArray[np.uint8]) -> int | None:
        if self.debug_buffer_full:
            return None
        offset = self._debug_used + (-self._debug_used % DEBUG_BUFFER_ALIGNMENT)
        if offset + len(data) > self.debug_buffer_size:
            self.debug_buffer_full = True
            warnings.warn(
                f"ETDumpGen debug buffer full ({self.debug_buffer_size} bytes, "
                f"{self._debug_used} used; a value needs {len(data)}): later tensors are not "
                "stored; profiling continues",
                DebugBufferFullWarning,
                stacklevel=4,
            )
            return None
        buffer = self._debug_buffer
        if offset > len(buffer):
            buffer.extend(bytes(offset - len(buffer)))  # alignment padding
        buffer += data.data  # the array's memoryview
        self._debug_used = offset + len(data)
        return offset

    def _stored(
        self, info: tuple[int, list[int], npt.NDArray[np.uint8]]
    ) -> tuple[int, list[int], int] | None:
        offset = self._store(info[2])
        if offset is None:
            return None
        return info[0], info[1], offset

    def _make_value(self, value: object, output: bool) -> tuple[Any, ...] | None:
        """A debug record for a logged value (None: not loggable, or not stored).

        Not loggable (skipped, not counted): values other than tensors, arrays, lists of
        them, bools, ints in int64 range and floats; tensors of a dtype the ETDump has no
        ``ScalarType`` for. Not stored (counted in :attr:`dropped_debug_values`): tensors
        that do not fit the debug buffer.
        """
        if isinstance(value, bool):
            return (REC_BOOL, value, output)
        if isinstance(value, int):
            if not _I64_MIN <= value <= _I64_MAX:
                return None
            return (REC_INT, value, output)
        if isinstance(value, float):
            return (REC_DOUBLE, value, output)
        if isinstance(value, list | tuple):
            if not value:
                return None
            infos: list[tuple[int, list[int], Any]] = []
            for item in value:
                info = tensor_bytes(item)
                if info is None:  # not all tensors/arrays, or a dtype without a code
                    return None
                infos.append(info)
            parts = [self._stored(info) for info in infos]
            if any(p is None for p in parts):
                self.dropped_debug_values += 1
                return None
            return (REC_LIST, parts, output)
        info = tensor_bytes(value)
        if info is None:
            return None
        part = self._stored(info)
        if part is None:
            self.dropped_debug_values += 1
            return None
        return (REC_TENSOR, part, output)

    # ------------------------------------------------------------------ output

    @property
    def debug_buffer(self) -> bytes:
        """The used part of the debug buffer (what :meth:`write` stores)."""
        return bytes(self._debug_buffer[: self._debug_used])

    def _build(self) -> ETDump:
        from delegate_lens.etdump import ETDump, EventColumns, RunData

        failures: list[str] = []
        runs = [
            RunData.from_columns(name, bundled, [], _columns(events, EventColumns, failures))
            for (name, events), bundled in zip(self._blocks, self._block_bundled_index)
        ]
        self.unencoded_metadata = len(failures)
        if failures:
            warnings.warn(
                f"ETDumpGen: {len(failures)} delegate event(s) stored with empty metadata "
                f"because their structured metadata could not be encoded (first: {failures[0]}); "
                "the events themselves are kept",
                PluginWarning,
                stacklevel=3,
            )
        return ETDump(version=0, run_data=runs)

    def get_etdump_data(self) -> bytes:
        """The ETDump of everything recorded so far (size-prefixed FlatBuffer bytes).

        Structured metadata is encoded here (once per distinct value; the first value of
        each backend was checked when it was logged). A value its backend's encoder
        rejects does not lose the trace: that event is stored with empty metadata, a
        :class:`~delegate_lens.errors.PluginWarning` names the backend, the event and the
        error, and :attr:`unencoded_metadata` counts such events.
        """
        from delegate_lens.etdump import dumps

        return bytes(dumps(self._build()))

    def write(
        self,
        etdump_path: str | os.PathLike[str],
        debug_buffer_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Write the ETDump (and the used part of the debug buffer) atomically."""
        write_bytes_atomic(etdump_path, self.get_etdump_data())
        if debug_buffer_path is not None:
            write_bytes_atomic(debug_buffer_path, self.debug_buffer)


def _columns(
    events: list[tuple[Any, ...]], columns_cls: type[EventColumns], failures: list[str]
) -> Any:
    n = len(events)
    if n == 0:
        return columns_cls.empty()
    kind, names, chain, iid, dint, dstr, start, end, extra = zip(*events, strict=True)
    strings: dict[str, int] = {}

    def codes(values: tuple[str | None, ...]) -> npt.NDArray[np.int32]:
        out = np.full(n, -1, dtype=np.int32)
        for i, s in enumerate(values):
            if s is not None:
                code = strings.get(s)
                if code is None:
                    code = strings[s] = len(strings)
                out[i] = code
        return out

    name_codes = codes(names)
    dstr_codes = codes(dstr)
    kind_arr = np.array(kind, dtype=np.uint8)
    is_profile = kind_arr == _PROFILE
    # metadata: profile events logged by a delegate carry bytes (maybe empty); others none
    lengths = np.full(n, -1, dtype=np.int64)
    chunks: list[bytes] = []
    debug_entries: dict[int, Any] = {}
    cache: dict[Hashable, bytes] = {}
    for i in range(n):
        value = extra[i]
        if value is None:
            continue
        if is_profile[i]:
            if type(value) is tuple:
                try:
                    value = _encode_deferred(value[0], value[1], cache)
                except DelegateLensError as exc:
                    ident = dstr[i] if dstr[i] is not None else dint[i]
                    failures.append(
                        f"backend {value[0]!r}, instruction {iid[i]}, identifier {ident!r}: {exc}"
                    )
                    value = b""
            lengths[i] = len(value)
            chunks.append(value)
        else:
            debug_entries[i] = record_to_value(value)
    blob = b"".join(chunks)
    offsets = np.zeros(n, dtype=np.int64)
    present = lengths >= 0
    if present.any():
        sizes = lengths[present]
        offsets[present] = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    chain_arr = np.array(chain, dtype=np.int64)
    for name, values in (("start_time", start), ("end_time", end)):
        if min(values) < 0 or max(values) > _U64_MAX:
            raise EventTracerError(f"a {name} does not fit uint64 ticks")
    return columns_cls.build(
        kind_arr,
        strings=list(strings),
        blob=blob,
        debug_entries=debug_entries,
        name=name_codes,
        chain_index=chain_arr,
        instruction_id=np.array(iid, dtype=np.int32),
        delegate_debug_id_int=np.array(dint, dtype=np.int32),
        delegate_debug_id_str=dstr_codes,
        start_time=np.array(start, dtype=np.uint64),
        end_time=np.array(end, dtype=np.uint64),
        metadata_offset=offsets,
        metadata_length=lengths,
    )
