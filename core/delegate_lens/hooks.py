"""One typed caller per hook, each with its hook's error policy (how delegate-lens calls hooks).

Every call of a hook in delegate-lens goes through the function here named after it
(``hooks.partitioner`` for ``dl_partitioner``, ...): the arguments and the result have
the types :mod:`delegate_lens.hookspecs` declares, and the policy for a failing plugin is
chosen once, per hook, on :mod:`delegate_lens.hookcalls`:

* **raise** (:func:`~delegate_lens.hookcalls.call_hook`): a plugin's exception becomes a
  :class:`~delegate_lens.errors.PluginError` naming it — the ahead-of-time hooks, the
  runtime's, metadata encoding, the testing profile, notebook display, the bridge;
* **warn** (:func:`~delegate_lens.hookcalls.call_hook_or_warn`): a
  :class:`~delegate_lens.errors.PluginWarning` names it and the caller falls back —
  :func:`delegate_time_scale` (per tick) and :func:`intermediate_output`;
* **skip** (:func:`~delegate_lens.hookcalls.call_hook_or_skip`): warned about, and the
  next plugin answers (in the end the built-in fallback) — the Inspector's
  :func:`parse_delegate_metadata` and :func:`delegate_time_scale_array`;
* **each** (:func:`~delegate_lens.hookcalls.call_each`): every plugin's answer with its
  name, for the registries (:func:`exporters`, :func:`numerical_comparators`), which check
  each answer and name the plugin that gave a wrong one.

Each takes the plugin manager as ``pm`` (default: the process's). The results are typed as
the hook declares; a *firstresult* answer of another outer type than declared is already a
named failure of the plugin (see :mod:`delegate_lens.hookcalls`), and the callers still
check what they use (a plugin is foreign code).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from delegate_lens import hookcalls

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pluggy
    from torch.export import ExportedProgram

    from delegate_lens.backend import CompileSpec, Partitioner, PreprocessResult
    from delegate_lens.etrecord import GraphInfo
    from delegate_lens.hookspecs import DebugHandleMap, ExecuTorchBridge, RuntimeBackend
    from delegate_lens.testing import BackendProfile

__all__ = [
    "delegate_mapping",
    "delegate_time_scale",
    "delegate_time_scale_array",
    "encode_delegate_metadata",
    "executorch_bridge",
    "exporters",
    "html_display",
    "intermediate_output",
    "numerical_comparators",
    "parse_delegate_metadata",
    "partitioner",
    "preprocess",
    "recover_delegate_map",
    "runtime_backend",
    "testing_profile",
    "testing_rules",
]


def _pm(pm: pluggy.PluginManager | None) -> dict[str, pluggy.PluginManager]:
    # passed on only when given (hookcalls's default otherwise): a test standing in for
    # hookcalls.call_hook sees the hook's own arguments
    return {} if pm is None else {"pm": pm}


# --------------------------------------------------------------------------- ahead of time


def partitioner(
    backend_id: str,
    compile_specs: Sequence[CompileSpec] = (),
    *,
    pm: pluggy.PluginManager | None = None,
) -> Partitioner | None:
    """``dl_partitioner`` (raise): the partitioner of ``backend_id``, or ``None``."""
    result: Partitioner | None = hookcalls.call_hook(
        "dl_partitioner", **_pm(pm), backend_id=backend_id, compile_specs=compile_specs
    )
    return result


def preprocess(
    backend_id: str,
    edge_program: ExportedProgram,
    compile_specs: Sequence[CompileSpec],
    *,
    pm: pluggy.PluginManager | None = None,
) -> PreprocessResult | None:
    """``dl_preprocess`` (raise): one partition compiled, or ``None`` when no plugin did."""
    result: PreprocessResult | None = hookcalls.call_hook(
        "dl_preprocess",
        **_pm(pm),
        backend_id=backend_id,
        edge_program=edge_program,
        compile_specs=compile_specs,
    )
    return result


def delegate_mapping(
    backend_id: str,
    edge_program: ExportedProgram,
    debug_handle_map: DebugHandleMap | None,
    *,
    pm: pluggy.PluginManager | None = None,
) -> None:
    """``dl_delegate_mapping`` (raise): every plugin sees the map; one may reject it."""
    hookcalls.call_hook(
        "dl_delegate_mapping",
        **_pm(pm),
        backend_id=backend_id,
        edge_program=edge_program,
        debug_handle_map=debug_handle_map,
    )


# --------------------------------------------------------------------------- runtime


def runtime_backend(
    backend_id: str, *, pm: pluggy.PluginManager | None = None
) -> RuntimeBackend | None:
    """``dl_runtime_backend`` (raise): the runtime side of ``backend_id``, or ``None``."""
    result: RuntimeBackend | None = hookcalls.call_hook(
        "dl_runtime_backend", **_pm(pm), backend_id=backend_id
    )
    return result


def encode_delegate_metadata(
    backend_id: str | None, metadata: object, *, pm: pluggy.PluginManager | None = None
) -> bytes | None:
    """``dl_encode_delegate_metadata`` (raise): ``metadata`` as bytes, or ``None``."""
    result: bytes | None = hookcalls.call_hook(
        "dl_encode_delegate_metadata", **_pm(pm), backend_id=backend_id, metadata=metadata
    )
    return result


# --------------------------------------------------------------------------- inspector


def parse_delegate_metadata(
    backend_id: str,
    metadatas: Sequence[bytes],
    *,
    where: str | None = None,
    strict: bool = False,
    pm: pluggy.PluginManager | None = None,
) -> list[str] | dict[str, object] | Sequence[bytes] | None:
    """``dl_parse_delegate_metadata`` (skip): the parsed metadata of one row.

    A plugin that raises is reported (naming it and ``where``) and the next one answers;
    ``metadatas`` itself back means nothing parsed them (the built-in fallback), ``None``
    that the fallback is blocked. ``strict=True`` (the conformance suite, which reports a
    parser's failure as a finding) raises the :class:`PluginError` instead.
    """
    result: list[str] | dict[str, object] | Sequence[bytes] | None
    if strict:
        result = hookcalls.call_hook(
            "dl_parse_delegate_metadata", **_pm(pm), backend_id=backend_id, metadatas=metadatas
        )
    else:
        result = hookcalls.call_hook_or_skip(
            "dl_parse_delegate_metadata",
            pm=pm,
            where=where,
            backend_id=backend_id,
            metadatas=metadatas,
        )
    return result


def delegate_time_scale(
    backend_id: str, event_name: str, ticks: int, *, pm: pluggy.PluginManager | None = None
) -> float | None:
    """``dl_delegate_time_scale`` (warn): one tick in the source time scale, or ``None``
    (no plugin knows the clock, or one failed: the warning names it)."""
    result: float | None = hookcalls.call_hook_or_warn(
        "dl_delegate_time_scale",
        **_pm(pm),
        backend_id=backend_id,
        event_name=event_name,
        ticks=ticks,
    )
    return result


def delegate_time_scale_array(
    backend_id: str,
    event_name: str,
    ticks: npt.NDArray[np.uint64],
    *,
    where: str | None = None,
    pm: pluggy.PluginManager | None = None,
) -> npt.NDArray[np.float64] | None:
    """``dl_delegate_time_scale_array`` (skip): a row's ticks in the source time scale, or
    ``None`` when no plugin (not even the built-in fallback) converts them. An answer that
    is not one number per tick is a :class:`~delegate_lens.errors.PluginError` naming the
    plugin that gave it."""

    def one_per_tick(values: object) -> str | None:
        import numpy as np

        try:
            converted = np.asarray(values, dtype=np.float64)
            if converted.shape == np.shape(ticks):
                return None
            got = f"{converted.size} value(s)"
        except (TypeError, ValueError):
            got = f"{type(values).__name__} {values!r:.60}"
        row = where or f"event {event_name!r}"
        return (
            f"returned {got} in dl_delegate_time_scale_array for the {len(ticks)} ticks of "
            f"{row} (backend {backend_id!r}); one number per tick expected"
        )

    result: npt.NDArray[np.float64] | None = hookcalls.call_hook_or_skip(
        "dl_delegate_time_scale_array",
        pm=pm,
        where=where,
        check=one_per_tick,
        backend_id=backend_id,
        event_name=event_name,
        ticks=ticks,
    )
    return result


def exporters(pm: pluggy.PluginManager | None = None) -> list[tuple[str, object]]:
    """``dl_exporters`` (each): ``[(plugin name, what it returned)]``, to be checked."""
    return hookcalls.call_each("dl_exporters", **_pm(pm))


# --------------------------------------------------------------------------- numerics


def numerical_comparators(pm: pluggy.PluginManager | None = None) -> list[tuple[str, object]]:
    """``dl_numerical_comparators`` (each): ``[(plugin name, what it returned)]``."""
    return hookcalls.call_each("dl_numerical_comparators", **_pm(pm))


def intermediate_output(
    backend_id: str,
    identifier: int | str,
    value: object,
    *,
    pm: pluggy.PluginManager | None = None,
) -> npt.ArrayLike | None:
    """``dl_intermediate_output`` (warn): ``value`` as the AOT graph computed it, or
    ``None`` (compare it as logged; a failing plugin is named in a warning)."""
    result: npt.ArrayLike | None = hookcalls.call_hook_or_warn(
        "dl_intermediate_output",
        **_pm(pm),
        backend_id=backend_id,
        identifier=identifier,
        value=value,
    )
    return result


def recover_delegate_map(
    backend_id: str,
    processed: memoryview,
    identifiers: Sequence[int | str],
    handles: Sequence[int] | None = None,
    graph: GraphInfo | None = None,
    compile_specs: Sequence[tuple[str, bytes]] = (),
    named_data: Mapping[str, memoryview] | None = None,
    *,
    where: str = "",
    pm: pluggy.PluginManager | None = None,
) -> tuple[str, object] | None:
    """``dl_recover_delegate_map`` (warn): ``(plugin name, its answer)`` of the plugin
    that recovered the delegate's map, or ``None`` (no plugin did, or one failed: the
    warning names it and ``where``). The first answer in the hook's call order wins."""
    import warnings

    from delegate_lens.errors import PluginError, PluginWarning

    try:
        return hookcalls.call_hook_answered(
            "dl_recover_delegate_map",
            **_pm(pm),
            backend_id=backend_id,
            processed=processed,
            identifiers=identifiers,
            handles=handles,
            graph=graph,
            compile_specs=compile_specs,
            named_data={} if named_data is None else named_data,
        )
    except PluginError as exc:
        warnings.warn(f"{where}: {exc}; its rows stay unlinked", PluginWarning, stacklevel=3)
        return None


# --------------------------------------------------------------------------- testing, display


def testing_profile(
    backend_id: str, *, pm: pluggy.PluginManager | None = None
) -> BackendProfile | None:
    """``dl_testing_profile`` (raise): what the conformance suite may test, or ``None``."""
    result: BackendProfile | None = hookcalls.call_hook(
        "dl_testing_profile", **_pm(pm), backend_id=backend_id
    )
    return result


def testing_rules(pm: pluggy.PluginManager | None = None) -> list[tuple[str, object]]:
    """``dl_testing_rules`` (each): ``[(plugin name, what it returned)]``, to be checked."""
    return hookcalls.call_each("dl_testing_rules", **_pm(pm))


def html_display(obj: object, *, pm: pluggy.PluginManager | None = None) -> str | None:
    """``dl_html_display`` (raise): the HTML showing ``obj`` in a notebook, or ``None``."""
    result: str | None = hookcalls.call_hook("dl_html_display", **_pm(pm), obj=obj)
    return result


def executorch_bridge(*, pm: pluggy.PluginManager | None = None) -> ExecuTorchBridge | None:
    """``dl_executorch_bridge`` (raise): the bridge to real ExecuTorch, or ``None``."""
    result: ExecuTorchBridge | None = hookcalls.call_hook("dl_executorch_bridge", **_pm(pm))
    return result
