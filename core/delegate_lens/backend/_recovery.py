"""What a ``dl_recover_delegate_map`` plugin returns: a Debug Handle Map recovered from a
delegate's processed bytes after the fact, with the reason for every identifier it could not
place (:class:`RecoveredDelegateMap`), and what the Inspector keeps of it
(:class:`RecoveredMap`: the map, the reasons and the plugin that gave them).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from delegate_lens.backend._mapping import Identifier, as_int
from delegate_lens.errors import MappingError


def _identifier(value: object, where: str) -> Identifier:
    if isinstance(value, str) and value:
        return value
    number = as_int(value)
    if number is None or number < 0:
        raise MappingError(f"{where}: identifier {value!r} is neither a str nor an int >= 0")
    return number


def _handles_map(value: object) -> dict[Identifier, tuple[int, ...]]:
    if not isinstance(value, Mapping):
        raise MappingError(f"recovered map: handles must be a mapping, not {type(value).__name__}")
    out: dict[Identifier, tuple[int, ...]] = {}
    for key, handles in value.items():
        ident = _identifier(key, "recovered map")
        items = (handles,) if isinstance(handles, int) else handles
        if not isinstance(items, (list, tuple)) or not items:
            raise MappingError(
                f"recovered map: identifier {ident!r}: handles must be a non-empty sequence "
                f"of ints >= 0, not {handles!r}"
            )
        numbers = []
        for h in items:
            number = as_int(h)
            if number is None or number < 0:
                raise MappingError(
                    f"recovered map: identifier {ident!r}: handle {h!r} is not an int >= 0"
                )
            if number not in numbers:
                numbers.append(number)
        out[ident] = tuple(numbers)
    return out


def _reasons(value: object) -> dict[Identifier, str]:
    if not isinstance(value, Mapping):
        raise MappingError(f"recovered map: unlinked must be a mapping, not {type(value).__name__}")
    return {_identifier(k, "recovered map (unlinked)"): str(v) for k, v in value.items()}


@attrs.frozen
class RecoveredDelegateMap:
    """A delegate's Debug Handle Map recovered by a plugin from its processed bytes.

    :param handles: identifier -> the debug handles its event covers, main node first
        (the order is kept: it is the order of the row's op types).
    :param unlinked: identifier -> why the plugin left it without handles (shown to the
        user); identifiers in neither mapping are reported as "not placed by the plugin".
    """

    handles: Mapping[Identifier, tuple[int, ...]] = attrs.field(converter=_handles_map)
    unlinked: Mapping[Identifier, str] = attrs.field(factory=dict, converter=_reasons)

    def __attrs_post_init__(self) -> None:
        both = set(self.handles) & set(self.unlinked)
        if both:
            raise MappingError(
                f"recovered map: identifier(s) {sorted(map(str, both))} are both linked and "
                "unlinked"
            )


@attrs.frozen
class RecoveredMap:
    """A recovered map as the Inspector keeps it, for one delegate call.

    :param method: the method of the delegate call.
    :param instruction_id: its instruction id.
    :param backend_id: the delegate's backend.
    :param plugin: the plugin that recovered it (its name, as ``delegate-lens plugins``
        lists it).
    :param handles: identifier -> debug handles.
    :param unlinked: identifier -> why it has none (every identifier the run logged that
        the map does not link).
    """

    method: str
    instruction_id: int
    backend_id: str
    plugin: str
    handles: Mapping[Identifier, tuple[int, ...]]
    unlinked: Mapping[Identifier, str]
