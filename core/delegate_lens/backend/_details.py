"""What a delegate backend gives and gets at preprocess time (torch-free).

A backend plugs into lowering through the ``dl_preprocess`` hook (see
:mod:`delegate_lens.hookspecs`). Authors coming from ExecuTorch can instead write a
:class:`BackendDetails` subclass with a static ``preprocess`` and turn it into a plugin
with :func:`backend_plugin`::

    class MyBackend(BackendDetails):
        @staticmethod
        def preprocess(edge_program, compile_specs):
            builder = DelegateMappingBuilder(generated_identifiers=True)
            ...
            return PreprocessResult(b"blob", builder.get_delegate_mapping())

    get_plugin_manager().register(backend_plugin(MyBackend))  # backend id "MyBackend"
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from delegate_lens.errors import PluginError
from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from typing_extensions import Buffer


def _as_bytes(value: object, field: str) -> bytes:
    """Bytes-like values only: ``bytes(5)`` would silently make five zero bytes of an int,
    and a str has no one right encoding."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        raise TypeError(f"{field} must be bytes, not str (encode it first)")
    try:
        return memoryview(cast("Buffer", value)).tobytes()  # TypeError unless it is one
    except TypeError:
        raise TypeError(f"{field} must be bytes, not {type(value).__name__}") from None


def _spec_value(value: object) -> bytes:
    return _as_bytes(value, "CompileSpec.value")


def _processed_bytes(value: object) -> bytes:
    return _as_bytes(value, "PreprocessResult.processed_bytes")


@attrs.frozen
class CompileSpec:
    """One backend option: a ``key`` and an opaque ``value`` (bytes)."""

    key: str = attrs.field(validator=attrs.validators.instance_of(str))
    value: bytes = attrs.field(converter=_spec_value)


def _check_map(
    instance: object, attribute: object, value: Mapping[Any, Any] | None
) -> None:  # attrs validator signature
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(
            "PreprocessResult.debug_handle_map must be a mapping {identifier: handles} or "
            f"None, not {type(value).__name__}"
        )


@attrs.frozen
class PreprocessResult:
    """What a backend returns from preprocess.

    :param processed_bytes: the compiled blob the runtime side of the backend receives.
    :param debug_handle_map: ``{delegate debug identifier: handles}``, usually
        :meth:`delegate_lens.DelegateMappingBuilder.get_delegate_mapping`; ``None`` when
        the backend logs no delegate events of its own.
    """

    processed_bytes: bytes = attrs.field(default=b"", converter=_processed_bytes)
    debug_handle_map: Mapping[Any, Any] | None = attrs.field(default=None, validator=_check_map)


class BackendDetails(abc.ABC):
    """ExecuTorch-style backend: subclass and implement the static :meth:`preprocess`."""

    @staticmethod
    @abc.abstractmethod
    def preprocess(edge_program: object, compile_specs: Sequence[CompileSpec]) -> PreprocessResult:
        """Compile one partition (a ``torch.export.ExportedProgram``)."""


class BackendPlugin:
    """A ``dl_preprocess`` plugin answering for one backend id with a BackendDetails class.

    Made by :func:`backend_plugin`; register it with the plugin manager.
    """

    def __init__(self, backend_id: str, details_cls: type[BackendDetails]) -> None:
        if not isinstance(backend_id, str) or not backend_id:
            raise PluginError(f"backend id must be a non-empty str, not {backend_id!r}")
        if not (isinstance(details_cls, type) and issubclass(details_cls, BackendDetails)):
            raise PluginError(
                f"backend {backend_id!r}: {details_cls!r} is not a BackendDetails subclass"
            )
        if getattr(details_cls.preprocess, "__isabstractmethod__", False):
            raise PluginError(
                f"backend {backend_id!r}: {details_cls.__name__} does not implement preprocess"
            )
        self.backend_id = backend_id
        self.details_cls = details_cls
        self.__name__ = f"backend:{backend_id}"

    @hookimpl
    def dl_preprocess(
        self, backend_id: str, edge_program: ExportedProgram, compile_specs: Sequence[CompileSpec]
    ) -> PreprocessResult | None:
        if backend_id != self.backend_id:
            return None
        result = self.details_cls.preprocess(edge_program, list(compile_specs))
        if not isinstance(result, PreprocessResult):
            raise PluginError(
                f"backend {backend_id!r}: {self.details_cls.__name__}.preprocess returned "
                f"{type(result).__name__}, expected a PreprocessResult"
            )
        return result

    def __repr__(self) -> str:
        return f"<BackendPlugin {self.backend_id!r} -> {self.details_cls.__qualname__}>"


def backend_plugin(
    backend_id: str | type[BackendDetails], details_cls: type[BackendDetails] | None = None
) -> BackendPlugin:
    """Turn a :class:`BackendDetails` subclass into a ``dl_preprocess`` plugin object.

    ``backend_plugin(MyBackend)`` uses the class name as backend id (as ExecuTorch does);
    ``backend_plugin("my_id", MyBackend)`` names it explicitly.
    """
    if details_cls is None:
        if not isinstance(backend_id, type):
            raise PluginError(
                f"backend_plugin({backend_id!r}): give a BackendDetails subclass "
                "(backend_plugin(cls) or backend_plugin(backend_id, cls))"
            )
        return BackendPlugin(backend_id.__name__, backend_id)
    if not isinstance(backend_id, str):
        raise PluginError(f"backend id must be a str, not {backend_id!r}")
    return BackendPlugin(backend_id, details_cls)
