"""Every hook of delegate-lens, declared in one place.

Plugins implement these with :data:`delegate_lens.hookimpl`; the host
(:func:`delegate_lens.get_plugin_manager`) calls them. Hooks marked *firstresult* stop at
the first implementation that returns something other than ``None`` (plugins registered
later are asked first, as in pluggy); the others collect every non-``None`` result in a
list.

Hooks are grouped by the stage of the pipeline that calls them:

* ahead of time: :func:`dl_partitioner`, :func:`dl_preprocess`, :func:`dl_delegate_mapping`;
* runtime: :func:`dl_runtime_backend`, :func:`dl_encode_delegate_metadata`;
* Inspector: :func:`dl_parse_delegate_metadata`, :func:`dl_delegate_time_scale`,
  :func:`dl_delegate_time_scale_array`, :func:`dl_exporters`,
  :func:`dl_recover_delegate_map`;
* numerics: :func:`dl_numerical_comparators`, :func:`dl_intermediate_output`;
* the test kit: :func:`dl_testing_profile`, :func:`dl_testing_rules`;
* real ExecuTorch: :func:`dl_executorch_bridge`;
* notebooks: :func:`dl_html_display`.

Implementations may accept fewer arguments than a spec lists (pluggy passes only the ones
they name), never more.

delegate-lens calls each hook through its typed caller in :mod:`delegate_lens.hooks`
(``hooks.partitioner(backend_id, compile_specs)`` for ``dl_partitioner``, ...), which
applies the hook's error policy (built on :mod:`delegate_lens.hookcalls`): an exception
escaping an implementation becomes a :class:`delegate_lens.PluginError` naming the plugin
and its distribution (or, where a fallback exists, a :class:`delegate_lens.PluginWarning`
naming it), while errors of delegate-lens's own types (e.g. ``MappingError``) pass
unchanged. A guide with an example for every hook: ``docs/plugins.md``.

The annotations name the real classes (imported for type checkers only, so this module
imports nothing above the plugin host); what a plugin returns by duck typing is a
:class:`typing.Protocol` declared here (:class:`RuntimeBackend`) or named here
(:class:`ExecuTorchBridge`, from :mod:`delegate_lens._bridge_protocol`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from delegate_lens._bridge_protocol import ExecuTorchBridge

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from torch.export import ExportedProgram

    from delegate_lens.backend import (
        CompileSpec,
        Partitioner,
        PreprocessResult,
        RecoveredDelegateMap,
    )
    from delegate_lens.etrecord import GraphInfo
    from delegate_lens.exporters import Exporter
    from delegate_lens.numerics import Comparator
    from delegate_lens.runtime import BackendExecutionContext
    from delegate_lens.testing import BackendProfile, Rule

__all__ = [
    "PROJECT_NAME",
    "DebugHandleMap",
    "ExecuTorchBridge",
    "RuntimeBackend",
    "hookimpl",
    "hookspec",
]

PROJECT_NAME = "delegate_lens"
"""The pluggy project name; also the entry-point group plugins register under."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

DebugHandleMap = Mapping[int | str, Sequence[int]]
"""A Debug Handle Map: delegate debug identifier -> the AOT debug handles it covers."""


class RuntimeBackend(Protocol):
    """The runtime side of a backend, as :func:`dl_runtime_backend` returns it."""

    def init(self, processed_bytes: bytes, compile_specs: Sequence[CompileSpec], /) -> object:
        """Load a delegate's blob once, when its method is loaded; returns its handle."""
        ...

    def execute(
        self, context: BackendExecutionContext, handle: Any, args: list[object], /
    ) -> object:
        """Run one delegate call: the handle ``init`` gave (opaque to the runtime, of the
        backend's own type), the call's arguments; returns its outputs (a sequence, or one
        value)."""
        ...


# --------------------------------------------------------------------------- ahead of time


@hookspec(firstresult=True)
def dl_partitioner(backend_id: str, compile_specs: Sequence[CompileSpec]) -> Partitioner | None:
    """Return a partitioner for ``backend_id``, or ``None`` when this plugin has none.

    Called when a user asks for a backend's partitioner by name (for example
    ``delegate-lens demo`` or ``to_edge_transform_and_lower(..., partitioner=[...])`` given
    a backend id instead of an object).

    :param backend_id: the backend's identifier, e.g. ``"DemoBackend"``.
    :param compile_specs: a sequence of :class:`delegate_lens.CompileSpec` configuring it.
    :returns: a :class:`delegate_lens.Partitioner`, or ``None``.

    firstresult: the first non-``None`` result wins.
    """


@hookspec(firstresult=True)
def dl_preprocess(
    backend_id: str, edge_program: ExportedProgram, compile_specs: Sequence[CompileSpec]
) -> PreprocessResult | None:
    """Compile one partition for a backend, returning its blob and Debug Handle Map.

    Called by ``EdgeProgramManager.to_backend`` once per tagged partition, with the
    partition as its own ``torch.export.ExportedProgram`` whose nodes keep their
    ``node.meta["debug_handle"]``.

    :param backend_id: the backend the partition was tagged for.
    :param edge_program: the partition's ``ExportedProgram``.
    :param compile_specs: the :class:`delegate_lens.CompileSpec` sequence of the partition.
    :returns: a :class:`delegate_lens.PreprocessResult` holding ``processed_bytes`` and a
        ``debug_handle_map`` built with :class:`delegate_lens.DelegateMappingBuilder`, or
        ``None`` when ``backend_id`` is not this plugin's backend.

    firstresult: the first non-``None`` result wins. No result at all is a
    :class:`delegate_lens.PluginError` naming the backend.
    """


@hookspec
def dl_delegate_mapping(
    backend_id: str, edge_program: ExportedProgram, debug_handle_map: DebugHandleMap | None
) -> None:
    """See (and possibly reject) every Debug Handle Map built at preprocess time.

    Called by ``EdgeProgramManager.to_backend`` right after :func:`dl_preprocess`
    returned, for every plugin. The built-in validator checks that every handle of the map
    belongs to a node of the partition.

    :param backend_id: the backend that built the map.
    :param edge_program: the partition's ``ExportedProgram``, as given to preprocess.
    :param debug_handle_map: ``{identifier: tuple of handles}`` (may be ``None`` when the
        backend gave no map).
    :returns: ``None``. To reject the map, raise :class:`delegate_lens.MappingError`
        naming the backend, the identifier and the handle.

    Not firstresult: every implementation is called.
    """


# --------------------------------------------------------------------------- runtime


@hookspec(firstresult=True)
def dl_runtime_backend(backend_id: str) -> RuntimeBackend | None:
    """Return the runtime side of a backend, or ``None`` when it is not this plugin's.

    Called by the simulated runtime (``delegate_lens.runtime``) when a method containing a
    delegate call for ``backend_id`` is loaded.

    :param backend_id: the backend id stored in the program's delegate call.
    :returns: an object with ``init(processed_bytes, compile_specs) -> handle`` (called
        once when the method is loaded) and ``execute(context, handle, args) -> outputs``
        (called for every execution of the delegate call; ``context`` carries the event
        tracer and the instruction id), or ``None``.

    firstresult: the first non-``None`` result wins. No result is a clear runtime error
    naming the backend.
    """


@hookspec(firstresult=True)
def dl_encode_delegate_metadata(backend_id: str, metadata: object) -> bytes | None:
    """Turn a structured metadata value logged by a backend into bytes.

    Called by the event tracer when a backend logs a delegate event whose ``metadata`` is
    not already ``bytes`` (for example a dict of flops, bytes moved and kernel name).

    :param backend_id: the backend that logged the event.
    :param metadata: the structured value the backend passed.
    :returns: the bytes stored in the event's ``delegate_debug_metadata``, or ``None``
        when this plugin does not encode metadata for ``backend_id``.

    firstresult: the first non-``None`` result wins. No result is an error naming the
    backend.
    """


# --------------------------------------------------------------------------- inspector


@hookspec(firstresult=True)
def dl_parse_delegate_metadata(
    backend_id: str, metadatas: Sequence[bytes]
) -> list[str] | dict[str, object] | None:
    """Parse the raw metadata of one Inspector row (one bytes value per sample).

    Called by the Inspector for each row logged by a delegate whose backend name is known,
    when no ``delegate_metadata_parser`` callable was given to it.

    :param backend_id: the row's ``delegate_backend_name``.
    :param metadatas: the row's raw ``delegate_debug_metadata`` values, one per sample.
    :returns: a ``list[str]`` or ``dict`` shown as the row's
        ``delegate_debug_metadatas``, or ``None`` when this plugin does not parse
        ``backend_id``'s metadata.

    firstresult: the first non-``None`` result wins. The built-in plugin
    ``metadata_fallback`` answers last (``trylast``) with ``metadatas`` itself (the raw
    bytes kept), so a result that ``is metadatas`` means no plugin parsed them; with it
    blocked, an unparsed row's ``delegate_debug_metadatas`` is ``None``. A plugin that
    raises is reported in a warning naming it and the row, and the next plugin answers.
    """


@hookspec(firstresult=True)
def dl_delegate_time_scale(backend_id: str, event_name: str, ticks: int) -> float | None:
    """Convert a delegate clock value into the Inspector's source time scale.

    Called for the start and end time of every sample of a delegate-logged Inspector row,
    tick by tick, by the built-in plugin ``tick_clock`` (which answers
    :func:`dl_delegate_time_scale_array` for the Inspector when no plugin of that array
    hook did; blocking ``tick_clock`` turns this hook off). Prefer the array hook in a new
    plugin: it is called once per row.

    :param backend_id: the backend that logged the event.
    :param event_name: the event's name (its delegate debug identifier as text).
    :param ticks: the raw start or end time as logged (e.g. cycles).
    :returns: the same instant in the Inspector's ``source_time_scale``, or ``None`` when
        this plugin does not know the clock of ``backend_id``.

    firstresult: the first non-``None`` result wins; when a tick gets none, the next
    :func:`dl_delegate_time_scale_array` plugin converts the row (in the end the built-in
    ``time_scale_fallback``: the source/target time-scale factor, as for any event).
    """


@hookspec
def dl_exporters() -> Sequence[Exporter]:
    """Return the exporters this plugin adds to ``delegate-lens inspect --format``.

    Called once when the exporter registry is built.

    :returns: a sequence of exporters, each with a ``name``, a ``description`` and a
        callable writing an Inspector's data to a text file.

    Not firstresult: the results of all plugins are combined; two exporters with the same
    name are a :class:`delegate_lens.PluginError` naming both plugins.
    """


@hookspec(firstresult=True)
def dl_recover_delegate_map(
    backend_id: str,
    processed: memoryview,
    identifiers: Sequence[int | str],
    handles: Sequence[int] | None,
    graph: GraphInfo | None,
    compile_specs: Sequence[tuple[str, bytes]],
    named_data: Mapping[str, memoryview],
) -> RecoveredDelegateMap | DebugHandleMap | None:
    """Recover a delegate's Debug Handle Map from its processed bytes, after the fact.

    Called by the Inspector given a program (``Inspector(..., program=...)``,
    ``--program MODEL.pte``) once per delegate call whose map the ETRecord leaves empty
    or does not have (a non-empty ETRecord map always wins), with what the run logged for
    it. The recovered map then links that delegate's rows in every view, as an ETRecord
    map would.

    :param backend_id: the delegate's backend id (``"XnnpackBackend"``).
    :param processed: the delegate's processed bytes as the program stores them (a
        read-only view; ``bytes(processed)`` copies it).
    :param identifiers: the delegate debug identifiers the run logged for this call, in the
        order they were first logged.
    :param handles: the debug handles of the call's graph nodes (the ETRecord's
        ``debug_handle_map`` at its instruction), or ``None`` without an ETRecord.
    :param graph: the ETRecord's graph of the call's method
        (:class:`delegate_lens.etrecord.GraphInfo`: nodes with handles, op types, graph
        order), or ``None``.
    :param compile_specs: the delegate's compile specs as ``(key, value)`` pairs.
    :param named_data: the program's named data, key -> bytes (read on lookup).
    :returns: a :class:`delegate_lens.backend.RecoveredDelegateMap` (identifier ->
        handles, and identifier -> why it is left unlinked), a plain ``{identifier:
        handles}`` mapping, or ``None`` when ``backend_id`` is not this plugin's.
        Identifiers neither linked nor explained are reported as not placed.

    firstresult: the first non-``None`` result wins. A plugin that raises or returns a
    malformed map is reported in a :class:`delegate_lens.PluginWarning` naming it, and
    the delegate's rows stay unlinked.
    """


# --------------------------------------------------------------------------- numerics


@hookspec
def dl_numerical_comparators() -> Sequence[Comparator]:
    """Return the comparators this plugin adds to ``Inspector.calculate_numeric_gap``.

    Called once when the comparator registry is built (the first time a distance is looked
    up by name, e.g. ``calculate_numeric_gap(distance="MSE")`` or ``delegate-lens numerics
    --distance MSE``). The built-in ``MSE``, ``L1``, ``SNR`` and ``cosine`` comparators come
    from the built-in plugin ``delegate_lens.builtins.comparators`` through this hook.

    :returns: a sequence of :class:`delegate_lens.numerics.Comparator` (or any
        object with the same attributes): a ``name`` (looked up case-insensitively), a
        ``description``, ``compare(aot, runtime) -> float`` taking two float64 numpy arrays
        of one shape, ``higher_is_better`` (``True`` for similarities such as SNR) and a
        ``default_threshold`` beyond which a row counts as diverged.

    Not firstresult: the results of all plugins are combined; two comparators with the
    same name are a :class:`delegate_lens.PluginError` naming both plugins.
    """


@hookspec(firstresult=True)
def dl_intermediate_output(
    backend_id: str, identifier: int | str, value: object
) -> npt.ArrayLike | None:
    """Turn an intermediate output a backend logged into what the AOT graph computed.

    Called by ``Inspector.calculate_numeric_gap`` for every runtime intermediate output
    logged by a delegate of ``backend_id`` (one call per identifier of the first run),
    before it is compared with the reference output: the place to undo a backend's own
    representation (dequantize int8 values, change a layout, drop padding).

    :param backend_id: the backend that logged the value (the row's
        ``delegate_backend_name``).
    :param identifier: the delegate debug identifier the value was logged under.
    :param value: the logged value as the Inspector inflated it: a numpy array, a list of
        arrays (a logged tensor list), or a Python scalar.
    :returns: the value to compare (a numpy array, or a list of arrays for several
        outputs), or ``None`` when this plugin does not convert ``backend_id``'s values
        (the value is then compared as logged).

    firstresult: the first non-``None`` result wins. A plugin that raises is reported in a
    warning naming it, and the value is compared as logged.
    """


# --------------------------------------------------------------------------- testing


@hookspec(firstresult=True)
def dl_testing_profile(backend_id: str) -> BackendProfile | None:
    """Declare what the conformance suite (``delegate_lens.testing``) may test a backend with.

    Called by :func:`delegate_lens.testing.check_backend`, ``delegate-lens check-backend``
    and the pytest plugin, once per run, before any model is generated.

    :param backend_id: the backend under test.
    :returns: a :class:`delegate_lens.testing.BackendProfile` (supported ops, compile-spec
        sets, whether delegate calls are opaque, a metadata strategy), or ``None`` when
        ``backend_id`` is not this plugin's (the defaults then apply).

    firstresult: the first non-``None`` result wins.
    """


@hookspec
def dl_testing_rules() -> Sequence[Rule]:
    """Return the rules this plugin adds to the test kit (``delegate_lens.testing``).

    Called once per :func:`delegate_lens.testing.check_backend` run (and by
    ``delegate-lens check-backend``, the pytest plugin and the mutation score), before any
    model is checked. The built-in rules (``lowers`` ... ``numeric-gaps``) come from the
    built-in plugin ``delegate_lens.builtins.testing_rules`` through this hook; a backend
    author's plugin adds its own the same way.

    :returns: a sequence of :class:`delegate_lens.testing.Rule`: a ``name``, what it
        ``catches``, the mutant kinds that prove it (``proven_by``), and its ``check(case,
        subject)``, which adds findings to ``case`` from what ``subject`` (a
        :class:`delegate_lens.testing.RuleInput`) holds of one lowered and traced model.

    Not firstresult: the results of all plugins are combined (the built-in rules first);
    two rules with the same name are a :class:`delegate_lens.PluginError` naming both
    plugins.
    """


# --------------------------------------------------------------------------- inspector (arrays)


@hookspec(firstresult=True)
def dl_delegate_time_scale_array(
    backend_id: str, event_name: str, ticks: npt.NDArray[np.uint64]
) -> npt.NDArray[np.float64] | None:
    """Convert all the logged clock values of one delegate row at once (vectorized).

    Called by the Inspector once per delegate-logged row whose backend is known (from the
    ETRecord's delegate map), when no ``delegate_time_scale_converter`` callable was given
    to it. The array form of :func:`dl_delegate_time_scale`: implement this one for speed
    (one call per row instead of one per tick).

    :param backend_id: the backend that logged the row (its ``delegate_backend_name``).
    :param event_name: the row's name (its delegate debug identifier as text).
    :param ticks: a 1-D ``numpy.uint64`` array of the raw start and end values as logged
        (the starts of every sample, then the ends); do not modify it.
    :returns: a float array of the same length, the same instants in the Inspector's
        ``source_time_scale`` (the Inspector then divides by the source/target factor),
        or ``None`` when this plugin does not know the clock of ``backend_id``.

    firstresult: the first non-``None`` result wins. Built-in plugins answer last
    (``trylast``): ``tick_clock`` asks the per-tick :func:`dl_delegate_time_scale`
    plugins tick by tick, then ``time_scale_fallback`` keeps the ticks as they are (the
    source/target factor alone applies). With ``time_scale_fallback`` blocked, a row no
    plugin converts is an :class:`delegate_lens.errors.InspectorError` naming it. A plugin
    that raises is reported in a warning naming it and the row, and the next plugin
    answers.
    """


# --------------------------------------------------------------------------- notebooks


@hookspec(firstresult=True)
def dl_html_display(obj: object) -> str | None:
    """Return the HTML that shows ``obj`` in a notebook, or ``None`` to leave it to others.

    Called by the ``_repr_html_`` of an :class:`~delegate_lens.inspector.Inspector`, a
    numeric-gap table (``calculate_numeric_gap(as_dataframe=False)``) and a
    :func:`~delegate_lens.compare` result, when Jupyter displays one of them. The built-in
    ``notebook`` plugin answers for all three with the report's pages
    (:mod:`delegate_lens.report._notebook`); a plugin registered later is asked first.

    :param obj: the object being displayed.
    :returns: an HTML fragment (self-contained, nothing loaded from the network), or
        ``None``.

    firstresult: the first non-``None`` result wins. No result: Jupyter shows the
    object's ``repr``.
    """


# --------------------------------------------------------------------------- real ExecuTorch


@hookspec(firstresult=True)
def dl_executorch_bridge() -> ExecuTorchBridge | None:
    """Return the bridge to real ExecuTorch (the ``executorch`` package), or ``None``.

    Called by what runs real ExecuTorch programs or lowers with real partitioners:
    :func:`delegate_lens.profile` and ``delegate-lens profile``, ``check_backend`` given a
    partitioner object and ``delegate-lens check-backend --executorch-partitioner``, the
    pytest plugin's ``--delegate-lens-executorch-partitioner``, and ``delegate-lens verify``
    of a bundled program whose program is not ours. The core never imports ``executorch``
    itself: the plugin distribution ``delegate-lens-executorch`` (the ``executorch`` extra)
    answers this hook.

    :returns: an :class:`ExecuTorchBridge`: an object with ``profile(...)``,
        ``check_backend(partitioner, ...)``, ``verify(...)`` and ``generate_etrecord(...)``
        and the names ``rules`` and ``profile_files`` (see ``plugins/executorch-bridge``,
        class ``Bridge``), or ``None`` when this plugin cannot bridge (for example ``executorch`` is not
        importable). ``delegate_lens.generate_etrecord`` given ExecuTorch's own program
        managers calls it too.

    firstresult: the first non-``None`` result wins. No result is a
    :class:`delegate_lens.errors.MissingExtraError` naming the ``executorch`` extra.
    """
