"""Cab controllers as Open Rails applies them (docs/physics.md §7.10; facts from Open
Rails' ``MSTSNotchController`` and ``MSTSBrakeController``, its default train-brake
controller): a handle position becomes the throttle the engines see and the
equalising-reservoir pressure the brake pipe follows.

* **Setting a handle** (``SetValue``): the value is clamped to the controller's range;
  the notch is the last one whose value is at or below it; a notch that is not smooth
  gives its own value (the handle clicks into it), a smooth one the value itself.
* **Fraction within a notch** (``GetNotchFraction``): for a smooth notch, how far the
  value lies from this notch to the next one (to 1 after the last notch), reversed in a
  ``Release`` notch; 1 for a notch that is not smooth.
* **Train brake** (the default script): per notch type, the equalising reservoir goes to
  the system pressure (``Release``, ``FullQuickRelease``, ``Running``, ``Overcharge``
  — simplified: no overcharge), stays (``Lap``, ``HoldLapped``, ``Neutral``), drops by the
  full-service reduction (``FullService``), by ``min·(1 − x) + full·x`` (the graduated
  self-lapping notches ``GraduatedSelfLapLimited``, ``…Holding``, ``Suppression``,
  ``ContinuousService``, ``EPApply``), by the minimum reduction (``MinimalReduction``,
  ``SlowService``), to 0 (``Emergency``); a ``Dummy`` notch and a controller without
  notches reduce by ``full × value`` (× x for a smooth dummy notch). ``Apply`` lowers the
  pressure at a rate without a target in Open Rails; here it is taken as a full-service
  reduction (simplified, and said so).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...formats.stock import Stock
from ...formats.stock_orts import ControllerSpec
from .airbrake import Handle

__all__ = [
    "brake_handle",
    "dynamic_value",
    "lead_controllers",
    "lead_dynamic_controller",
    "notch_fraction",
    "set_value",
    "throttle_value",
]

_RELEASE = {"release", "fullquickrelease", "running", "overcharge"}
_LAP = {"lap", "holdlapped", "neutralhandleoff", "hold"}
_GRADUATED = {
    "graduatedselflaplimited",
    "graduatedselflaplimitedholding",
    "suppression",
    "continuousservice",
    "epapply",
}
_MINIMAL = {"minimalreduction", "slowservice"}


def set_value(spec: ControllerSpec, value: float) -> tuple[int, float]:
    """The notch (-1: none) and the controller value a handle set to ``value`` gives."""
    v = min(max(float(value), spec.minimum), spec.maximum)
    notches = spec.notches
    if not notches:
        return -1, v
    i = len(notches) - 1
    while i > 0 and notches[i].value > v:
        i -= 1
    return i, (v if notches[i].smooth else notches[i].value)


def notch_fraction(spec: ControllerSpec, notch: int, value: float) -> float:
    """How far ``value`` lies within smooth notch ``notch`` (1 in a notch that is not smooth)."""
    n = spec.notches[notch]
    if not n.smooth:
        return 1.0
    upper = spec.notches[notch + 1].value if notch + 1 < len(spec.notches) else 1.0
    x = (value - n.value) / (upper - n.value) if upper > n.value else 1.0
    return 1.0 - x if n.kind == "release" else x


def throttle_value(spec: ControllerSpec | None, handle: float) -> float:
    """The throttle (0–1) the engines see with the throttle handle at ``handle``
    (simplified: a controller whose maximum exceeds 1 is read as a fraction of it)."""
    if spec is None:
        return min(max(float(handle), 0.0), 1.0)
    _, v = set_value(spec, float(handle) * max(spec.maximum, 1.0) if spec.maximum > 1.0 else float(handle))
    return min(max(v / spec.maximum if spec.maximum > 1.0 else v, 0.0), 1.0)


def dynamic_value(spec: ControllerSpec | None, handle: float) -> float:
    """The dynamic-brake setting (0–1) with its handle at ``handle``: Open Rails' dynamic
    brake controller is a notch controller as the throttle is (``MSTSNotchController``;
    the setting is its value), so the same law as :func:`throttle_value`."""
    return throttle_value(spec, handle)


def brake_handle(
    spec: ControllerSpec | None, handle: float, full_drop: float, min_drop: float = 0.0
) -> Handle:
    """The train-brake :class:`~.airbrake.Handle` (pipe reduction, lap, emergency) of the
    handle at ``handle`` by the default train-brake controller (module docstring)."""
    if spec is None or not spec.notches:
        v = min(max(float(handle), 0.0), 1.0) if spec is None else set_value(spec, handle)[1]
        return Handle("service", full_drop * v) if v > 0 else Handle("release")
    i, v = set_value(spec, handle)
    n = spec.notches[i]
    x = notch_fraction(spec, i, v)
    kind = n.kind
    if kind in _RELEASE:
        return Handle("release")
    if kind in _LAP:
        return Handle("lap")
    if kind == "emergency":
        return Handle("emergency")
    if kind in ("fullservice", "apply"):
        return Handle("service", full_drop)
    if kind in _GRADUATED:
        return Handle("service", min_drop * (1.0 - x) + full_drop * x)
    if kind in _MINIMAL:
        return Handle("service", min_drop)
    reduction = full_drop * (x if n.smooth else v)
    return Handle("service", reduction) if reduction > 0 else Handle("release")


def lead_controllers(stocks: Sequence[Stock]) -> tuple[ControllerSpec | None, ControllerSpec | None, float]:
    """The throttle and train-brake controllers and the minimum reduction (psi) of a
    train's lead engine (the first engine whose file gives them); Open Rails' other
    engines follow the lead's throttle (multiple-unit control)."""
    throttle = brake = None
    min_drop = 0.0
    for s in stocks:
        o = s.orts
        if s.kind != "engine" or o is None:
            continue
        if throttle is None and o.throttle is not None:
            throttle = o.throttle
        if brake is None and o.train_brake is not None:
            brake, min_drop = o.train_brake, o.min_reduction_psi
    return throttle, brake, min_drop


def lead_dynamic_controller(stocks: Sequence[Stock]) -> ControllerSpec | None:
    """The dynamic-brake controller (``Brake_Dynamic``) of the train's lead engine, the
    first engine whose file gives one; None: the handle's position is the setting."""
    for s in stocks:
        if s.kind == "engine" and s.orts is not None and s.orts.dynamic_brake is not None:
            return s.orts.dynamic_brake
    return None
