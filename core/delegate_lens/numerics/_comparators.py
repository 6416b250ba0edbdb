"""Numerical comparators: named distances between an AOT and a runtime intermediate output.

Plugins contribute them on ``dl_numerical_comparators``::

    from delegate_lens import hookimpl
    from delegate_lens.numerics import Comparator

    @hookimpl
    def dl_numerical_comparators():
        return [Comparator("max-abs", "largest absolute difference",
                           lambda a, b: float(abs(a - b).max()), default_threshold=1e-3)]

The built-ins (``MSE``, ``L1``, ``SNR``, ``cosine``) are such a plugin
(``delegate_lens.builtins.comparators``). Names are looked up case-insensitively; two
plugins giving one name are a :class:`~delegate_lens.errors.PluginError` naming both.
No torch (but within :func:`torch_reductions`, for the reference's frame); numpy only when
comparing.
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from delegate_lens.errors import NumericGapUsageError, PluginError, UsageError

if TYPE_CHECKING:  # importing this module (a plugin does) stays free of numpy
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    # {(aot handles, aot value): (runtime handles, runtime value)}, as the reference's
    # ``preprocessing(mapping)`` takes it (values are torch tensors, or lists of them)
    GapMapping = dict[tuple[tuple[int, ...], object], tuple[tuple[int, ...], object]]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


def _check_name(instance: object, attribute: object, value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"comparator name {value!r}: use letters, digits and '_.+-'")


def _check_threshold(instance: object, attribute: object, value: float) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        raise ValueError(f"default_threshold must be a number, not {value!r}")


@attrs.frozen
class Comparator:
    """A named distance between two outputs of one shape.

    :param name: what ``distance=`` / ``--distance`` takes (case-insensitive), e.g. ``"MSE"``.
    :param description: one line for help texts.
    :param compare: ``compare(aot, runtime) -> float``; both float64 numpy arrays of one
        shape (NaNs already replaced by 0, as the reference does).
    :param higher_is_better: ``True`` for similarities (SNR, cosine): a row diverges when
        its gap falls *below* the threshold; otherwise when it rises above it.
    :param default_threshold: the threshold ``first_divergence`` uses by default.
    """

    name: str = attrs.field(validator=_check_name)
    description: str = attrs.field(validator=attrs.validators.instance_of(str))
    compare: Callable[[FloatArray, FloatArray], float] = attrs.field(
        validator=attrs.validators.is_callable(), repr=False
    )
    higher_is_better: bool = attrs.field(
        default=False, validator=attrs.validators.instance_of(bool)
    )
    default_threshold: float = attrs.field(default=0.0, validator=_check_threshold)
    preprocess: Callable[[GapMapping], object] | None = attrs.field(default=None, repr=False)
    """The reference's ``preprocessing(mapping)`` of a :class:`NumericalComparatorBase`
    subclass that overrides it: ``{(aot handles, aot value): (runtime handles, runtime
    value)}`` in, the same shape out, before the gaps are computed."""

    def diverged(self, gap: float, threshold: float) -> bool:
        """Whether ``gap`` crosses ``threshold`` (NaN gaps count as diverged)."""
        if math.isnan(gap):
            return True
        return gap < threshold if self.higher_is_better else gap > threshold


def get_comparators(pm: pluggy.PluginManager | None = None) -> dict[str, Comparator]:
    """Every comparator the plugins of ``pm`` (default: the process's) offer, keyed by
    lower-case name."""
    from delegate_lens import hooks
    from delegate_lens.pluginmanager import describe_plugin

    found: dict[str, Comparator] = {}
    owner: dict[str, str] = {}
    for plugin_name, result in hooks.numerical_comparators(pm):
        items = [result] if isinstance(result, Comparator) else result
        if not isinstance(items, Iterable) or isinstance(items, (str, bytes)):
            raise PluginError(
                f"plugin {describe_plugin(plugin_name, pm)} returned {type(result).__name__} "
                "from dl_numerical_comparators; expected a sequence of Comparator values"
            )
        for comparator in items:
            if not isinstance(comparator, Comparator):
                raise PluginError(
                    f"plugin {describe_plugin(plugin_name, pm)} returned "
                    f"{type(comparator).__name__} from dl_numerical_comparators; expected "
                    "delegate_lens.numerics.Comparator values"
                )
            key = comparator.name.lower()
            if key in found:
                raise PluginError(
                    f"comparator name {comparator.name!r} is given by two plugins: "
                    f"{describe_plugin(owner[key], pm)} and {describe_plugin(plugin_name, pm)}"
                )
            found[key] = comparator
            owner[key] = plugin_name
    return found


def resolve_comparator(distance: object) -> Comparator:
    """A :class:`Comparator` for ``distance``: a name, a Comparator, an object with the
    reference's ``element_compare(a, b)`` method, or a callable ``f(aot, runtime)``."""
    if isinstance(distance, Comparator):
        return distance
    if isinstance(distance, str):
        comparators = get_comparators()
        found = comparators.get(distance.strip().lower())
        if found is None:
            names = ", ".join(sorted(c.name for c in comparators.values()))
            raise NumericGapUsageError(
                f"unknown distance {distance!r} (available: {names}; or a "
                "NumericalComparatorBase instance)"
            )
        return found
    if isinstance(distance, NumericalComparatorBase):
        return distance.as_comparator()
    element_compare = getattr(distance, "element_compare", None)
    if callable(element_compare):
        return Comparator(
            _name_of(distance), "user comparator", lambda a, b: float(element_compare(a, b))
        )
    if callable(distance):
        return Comparator(_name_of(distance), "user comparator", distance)
    raise UsageError(
        "distance must be a comparator name (e.g. 'MSE'), a Comparator, an object with "
        f"element_compare(a, b) or a callable, not {type(distance).__name__}"
    )


def _name_of(obj: object) -> str:
    name = getattr(obj, "__name__", None) or type(obj).__name__
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", str(name)).lstrip("_.+-")
    return name or "custom"


# --------------------------------------------------------------------------- the reference's classes


def _as_float_input(value: object) -> Any:
    """``value`` as the reference hands it to ``element_compare``: a float64 torch tensor
    (NaN as 0) when torch is installed, else a float64 numpy array."""
    import numpy as np

    array = np.nan_to_num(
        np.asarray(value, dtype=np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf
    )
    try:
        import torch
    except ImportError:  # pragma: no cover - numerics with an ETRecord has torch
        return array
    return torch.from_numpy(np.ascontiguousarray(array))


class NumericalComparatorBase(abc.ABC):
    """The reference's comparator base class: subclass it, implement
    ``element_compare(a, b) -> float`` and optionally ``preprocessing(mapping)``; an
    instance is accepted by ``Inspector.calculate_numeric_gap``.

    ``element_compare`` is given float64 torch tensors (NaN as 0), as in the reference, one
    pair per output (per element of a list output). Set the class attribute
    ``higher_is_better`` (a similarity, as SNR) and ``default_threshold`` to control our
    ``diverged`` column (defaults: lower is better, 0.0).
    """

    higher_is_better: bool = False
    default_threshold: float = 0.0

    def __init__(self, inspector: object = None) -> None:
        self._inspector = inspector

    @property
    def inspector(self) -> Any:
        """The Inspector this comparator runs for (set by ``calculate_numeric_gap``)."""
        return self._inspector

    @inspector.setter
    def inspector(self, value: object) -> None:
        self._inspector = value

    def preprocessing(self, mapping: GapMapping) -> GapMapping:
        """Transform ``{(aot handles, aot value): (runtime handles, runtime value)}`` before
        comparing (dequantize, change layout, ...); by default unchanged."""
        return mapping

    @abc.abstractmethod
    def element_compare(self, a: object, b: object) -> float:
        """The distance between one AOT value and one runtime value."""

    def _name(self) -> str:
        return _name_of(type(self))

    def as_comparator(self) -> Comparator:
        """This comparator as our :class:`Comparator` (what the numerics code runs)."""
        preprocess = None
        if type(self).preprocessing is not NumericalComparatorBase.preprocessing:
            preprocess = self.preprocessing

        def compare(a: FloatArray, b: FloatArray) -> float:
            return float(self.element_compare(_as_float_input(a), _as_float_input(b)))

        return Comparator(
            self._name(),
            (type(self).__doc__ or "user comparator").strip().splitlines()[0],
            compare,
            higher_is_better=bool(self.higher_is_better),
            default_threshold=float(self.default_threshold),
            preprocess=preprocess,
        )


class _BuiltinComparator(NumericalComparatorBase):
    _builtin = ""

    def _found(self) -> Comparator:
        return next(c for c in BUILTIN_COMPARATORS if c.name == self._builtin)

    def element_compare(self, a: object, b: object) -> float:
        import numpy as np

        x = np.nan_to_num(np.asarray(a, dtype=np.float64))
        y = np.nan_to_num(np.asarray(b, dtype=np.float64))
        return self._found().compare(x, y)

    def as_comparator(self) -> Comparator:
        if type(self).preprocessing is not NumericalComparatorBase.preprocessing or (
            type(self).element_compare is not _BuiltinComparator.element_compare
        ):
            return super().as_comparator()  # a subclass changed it: run its methods
        return self._found()


class MSEComparator(_BuiltinComparator):
    """Mean squared error (the ``"MSE"`` distance)."""

    _builtin = "MSE"


class L1Comparator(_BuiltinComparator):
    """Sum of absolute differences (the ``"L1"`` distance)."""

    _builtin = "L1"


class SNRComparator(_BuiltinComparator):
    """Signal-to-noise ratio in dB (the ``"SNR"`` distance; higher is better)."""

    _builtin = "SNR"
    higher_is_better = True
    default_threshold = 100.0


# --------------------------------------------------------------------------- built-ins
# Same formulas as the reference Inspector's, in float64. The reductions (mean, sum, log10)
# are numpy's, or torch's within ``torch_reductions()``: the reference's frame, which holds
# torch tensors anyway, then has the reference's gaps to the last bit (numpy sums in
# another order, and torch's log10 is not the C library's).

_TORCH: contextvars.ContextVar[Any] = contextvars.ContextVar("dl_torch_reductions", default=None)


@contextlib.contextmanager
def torch_reductions(enabled: bool = True) -> Iterator[None]:
    """Within it (when ``enabled``) the built-in comparators reduce with torch, as the
    reference's do; torch is imported here. Elementwise steps stay numpy's (the same bits)."""
    if not enabled:
        yield
        return
    import torch

    token = _TORCH.set(torch)
    try:
        yield
    finally:
        _TORCH.reset(token)


def _tensor(torch: Any, x: FloatArray) -> Any:
    import numpy as np

    if not x.flags.writeable or any(s < 0 for s in x.strides):
        x = np.array(x)  # torch.from_numpy takes neither read-only nor reversed arrays
    return torch.from_numpy(x)


def _mean(x: FloatArray) -> float:
    import numpy as np

    torch = _TORCH.get()
    return float(np.mean(x)) if torch is None else float(torch.mean(_tensor(torch, x)))


def _sum(x: FloatArray) -> float:
    torch = _TORCH.get()
    return float(x.sum()) if torch is None else float(_tensor(torch, x).sum())


def _log10(x: float) -> float:
    import numpy as np

    torch = _TORCH.get()
    if torch is None:
        return float(np.log10(np.float64(x)))
    return float(torch.log10(torch.tensor(x, dtype=torch.float64)))


def mse(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    return _mean(np.square(a - b)) if a.size else 0.0


def l1(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    return _sum(np.abs(a - b))


def snr(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    signal = _mean(np.square(a)) if a.size else 0.0
    noise = _mean(np.square(a - b)) if a.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return 10.0 * _log10(float(np.float64(signal) / np.float64(noise)))


def cosine(a: FloatArray, b: FloatArray) -> float:
    import numpy as np

    norm = float(np.sqrt(np.sum(np.square(a))) * np.sqrt(np.sum(np.square(b))))
    if norm == 0.0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(np.sum(a * b) / norm)


BUILTIN_COMPARATORS: tuple[Comparator, ...] = (
    Comparator("MSE", "mean squared error", mse, default_threshold=1e-10),
    Comparator("L1", "sum of absolute differences", l1, default_threshold=1e-3),
    Comparator(
        "SNR", "signal-to-noise ratio in dB", snr, higher_is_better=True, default_threshold=100.0
    ),
    Comparator(
        "cosine",
        "cosine similarity",
        cosine,
        higher_is_better=True,
        default_threshold=1.0 - 1e-9,
    ),
)
