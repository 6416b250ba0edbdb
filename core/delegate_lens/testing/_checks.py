"""The run rules of the test kit that read outputs, ETDump events, metadata and the
ETRecord: ``outputs-match-eager``, ``no-orphan-events``, ``delegate-event-times``,
``metadata-round-trip``, ``etrecord-round-trip`` and ``events-link-to-operators``.

Each check takes the collector (a :class:`~delegate_lens.testing.ModelCheck`, or anything
with its ``add``) and the artefacts it reads, so a harness of its own (the ExecuTorch
bridge's) runs them on what it made.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import DelegateLensError
from delegate_lens.testing._rules import FindingSink

if TYPE_CHECKING:
    from delegate_lens.etdump import ETDump, ProfileEvent

_WRAP = (2**32, 2**64)  # counter widths whose wrap-around is not "backwards"


def check_outputs(
    case: FindingSink, got: Sequence[object], expected: Sequence[object], rtol: float, atol: float
) -> None:
    """Rule ``outputs-match-eager``: the run's outputs ``got`` against eager's ``expected``."""
    import torch

    if len(got) != len(expected):
        case.add(
            "outputs-match-eager", f"{len(got)} output(s), eager gives {len(expected)}", "outputs"
        )
        return
    for i, (a, b) in enumerate(zip(got, expected)):
        try:
            # NaN where eager also gives NaN (an overflowing generated model) is a match
            torch.testing.assert_close(torch.as_tensor(a), b, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as exc:
            detail = " ".join(str(exc).split())[:160]
            case.add(
                "outputs-match-eager", f"output {i} differs from eager: {detail}", f"output {i}"
            )


def _delegate_events(etdump: ETDump) -> Iterable[tuple[int, int, ProfileEvent, int | str]]:
    """``(run, position, profile event, identifier)`` of every delegate-logged event."""
    for r, run in enumerate(etdump.run_data):
        for k, event in enumerate(run.events or ()):
            pe = event.profile_event
            if pe is None:
                continue
            if pe.delegate_debug_id_int != -1:
                yield r, k, pe, pe.delegate_debug_id_int
            elif pe.delegate_debug_id_str:
                yield r, k, pe, pe.delegate_debug_id_str


def _wrapped_end(start: int, end: int) -> int | None:
    """``end`` unwrapped when the counter wrapped between start and end, else ``None``."""
    for width in _WRAP:
        if start < width and start - end > width // 2:  # start near the top, end near zero
            return end + width
    return None


def _nested(start: int, end: int, call_start: int, call_end: int) -> bool:
    """``[start, end]`` lies inside ``[call_start, call_end]``, on a counter that may wrap
    (32-bit when every value fits, else 64-bit): offsets are taken from the call's start."""
    width = _WRAP[0] if max(start, end, call_start, call_end) < _WRAP[0] else _WRAP[1]

    def offset(t: int) -> int:
        return (t - call_start) % width

    return offset(start) <= offset(end) <= offset(call_end)


def orphan_events(
    etdump: ETDump, dmap: Mapping[int, Mapping[str, object]]
) -> set[tuple[int, int | str]]:
    """``(instruction, identifier)`` of every delegate event whose identifier is not in its
    delegate call's map (``dmap``: the method's delegate map, by instruction)."""
    orphans: set[tuple[int, int | str]] = set()
    for _r, _k, pe, ident in _delegate_events(etdump):
        entry = dmap.get(pe.instruction_id)
        known = entry.get("delegate_map") if entry is not None else None
        if not isinstance(known, Mapping) or ident not in known:
            orphans.add((pe.instruction_id, ident))
    return orphans


def check_orphans(
    case: FindingSink, etdump: ETDump, dmap: Mapping[int, Mapping[str, object]]
) -> set[tuple[int, int | str]]:
    """Rule ``no-orphan-events``; returns the orphans, ``(instruction, identifier)``."""
    orphans = orphan_events(etdump, dmap)
    for r, k, pe, ident in _delegate_events(etdump):
        iid = pe.instruction_id
        if (iid, ident) in orphans:
            case.add(
                "no-orphan-events",
                f"identifier {ident!r} logged by instruction {iid} is not in its delegate map",
                f"event {k} of run {r}, instruction {iid}, identifier {ident!r}",
            )
    return orphans


def check_times(case: FindingSink, etdump: ETDump) -> None:
    """Rule ``delegate-event-times``: every delegate event ends after it starts (a counter
    may wrap) and lies inside the ``DELEGATE_CALL`` of its instruction that follows it."""
    for r, k, pe, ident in _delegate_events(etdump):
        iid = pe.instruction_id
        where = f"event {k} of run {r}, instruction {iid}, identifier {ident!r}"
        start, end = pe.start_time, pe.end_time
        if end < start and _wrapped_end(start, end) is None:
            case.add("delegate-event-times", f"ends ({end}) before it starts ({start})", where)
            continue
        run_events = etdump.run_data[r].events
        call = next(
            (
                e.profile_event
                for e in run_events[k + 1 :]
                if e.profile_event is not None
                and e.profile_event.name == "DELEGATE_CALL"
                and e.profile_event.instruction_id == iid
            ),
            None,
        )
        if call is None:
            case.add("delegate-event-times", "no DELEGATE_CALL of its instruction follows", where)
        elif not _nested(start, end, call.start_time, call.end_time):
            case.add(
                "delegate-event-times",
                f"[{start}, {end}] is not inside its DELEGATE_CALL "
                f"[{call.start_time}, {call.end_time}]",
                where,
            )


def check_events(
    case: FindingSink, etdump: ETDump, dmap: Mapping[int, Mapping[str, object]], backend_id: str
) -> set[tuple[int, int | str]]:
    """Rules ``no-orphan-events`` and ``delegate-event-times`` on the delegate events of
    ``etdump`` (``dmap``: the method's delegate map, by instruction); returns the orphans,
    ``(instruction, identifier)``."""
    orphans = check_orphans(case, etdump, dmap)
    check_times(case, etdump)
    return orphans


def check_metadata(case: FindingSink, recorder: Any, etdump: ETDump, backend_id: str) -> None:
    """Rule ``metadata-round-trip``: what the backend encoded (seen by ``recorder``) and
    logged in ``etdump`` is read back by a ``dl_parse_delegate_metadata`` plugin."""
    from delegate_lens import hooks

    def parse(raw: bytes) -> tuple[object, str | None]:
        given = [raw]
        try:
            parsed = hooks.parse_delegate_metadata(backend_id, given, strict=True)
            # the built-in metadata_fallback answers with the list given: nothing parsed it
            return (None if parsed is given else parsed), None
        except Exception as exc:
            return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    seen: set[bytes] = set()
    for metadata, raw in recorder.encoded:
        if raw in seen:
            continue
        seen.add(raw)
        parsed, error = parse(raw)
        subject = f"metadata {metadata!r}"
        if error is not None:
            case.add("metadata-round-trip", f"its parser cannot read {raw!r}: {error}", subject)
        elif parsed is None:
            case.add("metadata-round-trip", "no dl_parse_delegate_metadata reads it back", subject)
        elif isinstance(metadata, Mapping) and isinstance(parsed, Mapping):
            for key, value in metadata.items():
                back = parsed.get(key)
                back = back[0] if isinstance(back, list) and len(back) == 1 else back
                if key in parsed and back != value:
                    case.add(
                        "metadata-round-trip",
                        f"field {key!r} reads back as {back!r}, was logged as {value!r}",
                        subject,
                    )
    for _r, _k, pe, ident in _delegate_events(etdump):
        logged = pe.delegate_debug_metadata
        if logged and bytes(logged) not in seen:
            seen.add(bytes(logged))
            _parsed, error = parse(bytes(logged))
            if error is not None:
                case.add(
                    "metadata-round-trip",
                    f"its parser cannot read {bytes(logged)!r}: {error}",
                    f"identifier {ident!r}",
                )


def check_etrecord(case: FindingSink, path: Path, manager: Any) -> None:
    """Rule ``etrecord-round-trip``: the ETRecord at ``path`` reads back with the maps of
    ``manager``."""
    import delegate_lens as dl

    try:
        record = dl.parse_etrecord(str(path))
    except DelegateLensError as exc:
        case.add("etrecord-round-trip", f"cannot be read back: {exc}", str(path.name))
        return
    if record.debug_handle_map != manager.debug_handle_map:
        case.add(
            "etrecord-round-trip", "debug_handle_map differs after reading", "debug_handle_map"
        )
    for method, entries in manager.delegate_map.items():
        want = {
            i: {"name": e["name"], "delegate_map": e["delegate_map"]} for i, e in entries.items()
        }
        if (record.delegate_map or {}).get(method) != want:
            case.add(
                "etrecord-round-trip",
                f"delegate_map of {method} differs after reading",
                f"method {method}",
            )


def check_links(
    case: FindingSink,
    etdump_bytes: bytes,
    record_path: Path,
    orphans: set[tuple[int, int | str]],
    program: bytes | None = None,
) -> None:
    """Rule ``events-link-to-operators``: in the Inspector, every operator-level event links
    to an operator (the ``orphans`` of :func:`check_events` are reported there); with the
    ``program``, through the maps ``dl_recover_delegate_map`` plugins recover from it."""
    from delegate_lens.inspector import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # metadata the parser rejects is its own rule
        inspector = Inspector(etdump_data=etdump_bytes, etrecord=str(record_path), program=program)
        for block in inspector.event_blocks:
            if block.name != "Execute":
                continue
            for event in block.events:
                if event.instruction_id is None or str(event.name).startswith("Method::"):
                    continue  # method-level events link to no operator
                ident = event.delegate_debug_identifier
                if ident is not None and (event.instruction_id, ident) in orphans:
                    continue  # reported as no-orphan-events
                if ident is not None and any(
                    iid == event.instruction_id and str(o) == str(ident) for iid, o in orphans
                ):
                    continue
                if not event.debug_handles or not event.op_types:
                    case.add(
                        "events-link-to-operators",
                        f"event {event.name!r} (instruction {event.instruction_id}) links to no "
                        "operator in the Inspector",
                        f"event {event.name!r}",
                    )
