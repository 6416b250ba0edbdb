"""Build a backend's Debug Handle Map at preprocess time.

A backend that fuses or splits operators tells delegate-lens which original operators
(debug handles) each of its own runtime events covers. It does so with a
:class:`DelegateMappingBuilder`, whose result goes into
:attr:`delegate_lens.PreprocessResult.debug_handle_map`.

Rules (the reference's, made strict):

* a builder is either *manual* (every entry names its identifier, an ``int >= 0`` or a
  non-empty ``str``) or *generated* (identifiers ``0, 1, 2, ...`` are assigned; naming one is an
  error);
* every entry is given exactly one of ``nodes`` (graph nodes, whose
  ``node.meta["debug_handle"]`` is used) or ``handles`` (debug handles);
* ``None`` handles and nodes without a handle are skipped, but an entry left with no valid
  handle is an error;
* :meth:`~DelegateMappingBuilder.insert_delegate_mapping_entry` with an identifier already
  present is an error and leaves the map unchanged;
* :meth:`~DelegateMappingBuilder.upsert_delegate_mapping_entry` with an identifier already
  present adds the new handles to the entry (a union).

A failed call never changes the builder (a generated identifier is not used up either).
Every error is a :class:`delegate_lens.MappingError` naming the identifier.

This module does not import torch: nodes are duck-typed (anything with a ``meta`` mapping).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from delegate_lens.errors import MappingError

Identifier = int | str
"""A delegate debug identifier: an ``int >= 0`` or a ``str``."""

DelegateMap = dict[Identifier, tuple[int, ...]]
"""A Debug Handle Map: identifier -> sorted tuple of debug handles."""


INT_IDENTIFIER_MAX = 2**31 - 1
"""Largest int identifier: ETDump stores ``delegate_debug_id_int`` as an int32 (the
builder, the map validator and the runtime's event tracer all check against this)."""


def _check_identifier(identifier: object) -> Identifier:
    if isinstance(identifier, str):
        if not identifier:
            raise MappingError(
                "delegate debug identifier '': a str identifier must not be empty "
                "(runtime events could not name it)"
            )
        return identifier
    value = as_int(identifier)
    if value is not None:
        if value < 0:
            raise MappingError(
                f"delegate debug identifier {identifier!r}: an int identifier must be >= 0"
            )
        if value > INT_IDENTIFIER_MAX:
            raise MappingError(
                f"delegate debug identifier {identifier!r}: an int identifier must fit the "
                f"ETDump's int32 delegate_debug_id_int (<= {INT_IDENTIFIER_MAX})"
            )
        return value
    raise MappingError(
        f"delegate debug identifier {identifier!r}: must be an int or a str, "
        f"not {type(identifier).__name__}"
    )


def as_int(value: object) -> int | None:
    """``value`` as an int when it is an integer (numpy ones too) but not a bool."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _check_handle(handle: object, identifier: Identifier | None) -> int:
    value = as_int(handle)
    if value is None:
        raise MappingError(
            f"delegate debug identifier {identifier!r}: debug handle {handle!r} is not an int"
        )
    if value < 0:
        raise MappingError(
            f"delegate debug identifier {identifier!r}: debug handle {handle} is negative"
        )
    return value


def _node_handle(node: object, identifier: Identifier | None) -> object:
    meta = getattr(node, "meta", None)
    if meta is None:
        raise MappingError(
            f"delegate debug identifier {identifier!r}: {node!r} is not a graph node "
            "(it has no .meta)"
        )
    return meta.get("debug_handle")


def is_iterable(value: object) -> TypeGuard[Iterable[object]]:
    """Whether ``value`` can be a collection of handles: iterable, but not text, bytes or a
    mapping."""
    if isinstance(value, (str, bytes, bytearray, Mapping)):
        return False
    try:
        iter(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True


def _collect(
    nodes: object, handles: object, identifier: Identifier | None, shown: Identifier | None
) -> set[int]:
    """The valid handles of one entry (``shown`` is what errors call the identifier)."""
    if (nodes is None) == (handles is None):
        raise MappingError(
            f"delegate debug identifier {shown!r}: give exactly one of nodes or handles"
        )
    if nodes is not None:
        items: Iterable[object]
        raw: Sequence[object]
        if isinstance(nodes, (list, tuple)):
            items = nodes
        elif hasattr(nodes, "meta") or not is_iterable(nodes):
            items = [nodes]  # one node (or a non-node, reported below)
        else:  # graph.nodes, a generator, a set, ...
            items = list(nodes)
        raw = [_node_handle(node, shown) for node in items]
    elif isinstance(handles, (list, tuple)):  # first: the common case, and cheap
        raw = handles
    elif as_int(handles) is not None:
        raw = [handles]
    elif is_iterable(handles):  # a set, range, generator, numpy array, ...
        raw = list(handles)
    else:
        raise MappingError(
            f"delegate debug identifier {shown!r}: handles must be an int or an iterable "
            f"of ints, not {type(handles).__name__}"
        )
    found: set[int] = set()
    for handle in raw:
        if handle is None:
            continue
        if type(handle) is int and handle >= 0:  # fast path
            found.add(handle)
        else:
            found.add(_check_handle(handle, shown))
    if not found:
        raise MappingError(
            f"delegate debug identifier {shown!r}: no valid debug handle in the given "
            f"{'nodes' if nodes is not None else 'handles'}"
        )
    return found


class DelegateMappingBuilder:
    """Collects ``{delegate debug identifier: debug handles}`` for one partition.

    :param generated_identifiers: ``True`` to have identifiers ``0, 1, 2, ...`` assigned
        in insertion order instead of naming them.
    """

    __slots__ = ("_generated", "_map", "_next")

    def __init__(self, generated_identifiers: bool = False) -> None:
        self._generated = bool(generated_identifiers)
        self._map: dict[Identifier, tuple[int, ...]] = {}
        self._next = 0

    @property
    def generated_identifiers(self) -> bool:
        """Whether identifiers are assigned by the builder."""
        return self._generated

    def _resolve(self, identifier: object, call: str) -> tuple[Identifier | None, Identifier]:
        """Return (identifier to store, or None when generated; identifier for messages)."""
        if self._generated:
            if identifier is not None:
                raise MappingError(
                    f"delegate debug identifier {identifier!r}: this builder generates "
                    f"identifiers (generated_identifiers=True); {call} must not be given one"
                )
            return None, self._next
        if identifier is None:
            raise MappingError(
                f"delegate debug identifier None: this builder takes identifiers from the "
                f"caller (generated_identifiers=False); {call} needs one"
            )
        checked = _check_identifier(identifier)
        return checked, checked

    def insert_delegate_mapping_entry(
        self,
        nodes: object = None,
        handles: object = None,
        identifier: Identifier | None = None,
    ) -> Identifier:
        """Add a new entry and return its identifier.

        :param nodes: a graph node or an iterable of nodes (a list, ``graph.nodes``, a
            generator, ...); their ``meta["debug_handle"]`` are used (nodes without one are
            skipped).
        :param handles: a debug handle or an iterable of handles (``None`` values are
            skipped).
        :param identifier: the delegate debug identifier (manual builders only).
        :raises MappingError: the identifier already exists, both or neither of nodes and
            handles were given, no valid handle remains, or the identifier is missing /
            not allowed / of the wrong type.
        """
        key, shown = self._resolve(identifier, "insert_delegate_mapping_entry")
        if key is not None and key in self._map:
            raise MappingError(
                f"delegate debug identifier {key!r} was already inserted; use "
                "upsert_delegate_mapping_entry to add handles to it"
            )
        found = _collect(nodes, handles, key, shown)
        if key is None:
            key = self._next
            self._next += 1
        self._map[key] = tuple(sorted(found))
        return key

    def upsert_delegate_mapping_entry(
        self,
        nodes: object = None,
        identifier: Identifier | None = None,
        *,
        handles: object = None,
    ) -> Identifier:
        """Add an entry, or add handles to an existing one (a union); return the identifier.

        ``nodes`` (or, as an extension, keyword ``handles``) as in
        :meth:`insert_delegate_mapping_entry`. In a generated builder every call makes a
        new entry.
        """
        key, shown = self._resolve(identifier, "upsert_delegate_mapping_entry")
        found = _collect(nodes, handles, key, shown)
        if key is None:
            key = self._next
            self._next += 1
        else:
            old = self._map.get(key)
            if old is not None:
                found.update(old)
        self._map[key] = tuple(sorted(found))
        return key

    def get_delegate_mapping(self) -> DelegateMap:
        """The map so far: ``{identifier: sorted tuple of handles}`` (a new dict)."""
        return dict(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def __repr__(self) -> str:
        kind = "generated" if self._generated else "manual"
        return f"DelegateMappingBuilder({kind}, {len(self._map)} entries)"


def partition_handles(edge_program: object) -> set[int]:
    """The debug handles carried by the nodes of a partition's program (or graph module)."""
    graph_module = getattr(edge_program, "graph_module", edge_program)
    graph: Any = getattr(graph_module, "graph", graph_module)  # duck-typed: no torch here
    found: set[int] = set()
    for node in graph.nodes:
        handle = node.meta.get("debug_handle")
        if isinstance(handle, int) and not isinstance(handle, bool):
            found.add(handle)
        elif isinstance(handle, (tuple, list)):
            found.update(h for h in handle if isinstance(h, int))
    return found
