"""Tractive and dynamic-brake force as Open Rails computes them (docs/physics.md §7.2;
facts from ``MSTSLocomotive.GetAvailableTractionForceN``/``UpdateTractionForce``/
``UpdateForceWithRamp`` and ``MSTSDieselLocomotive.GetAvailableTractionForceN``).

Signs: every force here is a magnitude (≥ 0); the reverser gives the direction.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...formats.stock_orts import TractionRamps

__all__ = [
    "ContinuousForce",
    "basic_diesel_force",
    "basic_electric_force",
    "curve_force",
    "dynamic_brake_force",
    "effective_throttle",
    "max_speed_factor",
    "ramp_force",
]

#: Below ``MaxVelocity`` by this much (m/s) the legacy force starts to fade (docs/physics.md §7.2).
FADE_BAND_MS = 0.05


def max_speed_factor(speed: float, max_speed: float) -> float:
    """The factor on ``MaxForce`` of the electric (MSTS) legacy law near ``MaxVelocity``: 1
    up to ``max_speed − 0.05`` m/s, then ``20·(max_speed − |v|)``, 0 above ``max_speed``;
    always 1 when the file gives no maximum speed (``max_speed ≤ 0``)."""
    v = abs(speed)
    if max_speed <= 0 or v <= max_speed - FADE_BAND_MS:
        return 1.0
    if v > max_speed:
        return 0.0
    return 20.0 * (max_speed - v)


def effective_throttle(throttle: float, apparent: float | None, power_limited: bool = False) -> float:
    """The throttle the force is read at (``MSTSLocomotive.UpdateTractionForce``): the
    handle's, but for a diesel not limited by its power (``ORTSTractiveForceIsPowerLimited``)
    never above the engines' apparent throttle; clamped to 0–1. ``apparent`` None: no
    diesel engines (electric, steam)."""
    t = throttle
    if apparent is not None and not power_limited:
        t = min(t, apparent)
    return min(max(t, 0.0), 1.0)


def curve_force(curve, throttle: float, speed: float) -> float:
    """``ORTSMaxTractiveForceCurves`` read at (throttle fraction, |speed|), never negative
    (a diesel reads it at its effective throttle)."""
    if throttle <= 0:
        return 0.0
    return max(curve(throttle, abs(speed)), 0.0)


def basic_diesel_force(
    throttle: float,
    speed: float,
    max_force: float,
    rail_power: float,
    unloading_speed: float = 0.0,
    max_speed: float = 0.0,
) -> float:
    """A diesel without force curves at the (effective) throttle ``t``
    (``MSTSDieselLocomotive.GetAvailableTractionForceN``): ``t·MaxForce``, capped by the
    power ``t·RailPower`` over the speed; above ``ORTSUnloadingSpeed`` (and below
    ``MaxVelocity``) that power falls linearly to 0 at twice that speed. No fade at
    ``MaxVelocity`` (the diesel law has none)."""
    if throttle <= 0:
        return 0.0
    v = abs(speed)
    force = throttle * max_force
    power = throttle * rail_power
    if unloading_speed > 0 and unloading_speed < v < max_speed:
        power *= min(max(1.0 - (v - unloading_speed) / unloading_speed, 0.0), 1.0)
    if force * v > power:
        force = power / v
    return force


def basic_electric_force(
    throttle: float, speed: float, max_force: float, max_power: float, max_speed: float = 0.0
) -> float:
    """An electric (or any MSTS) locomotive without curves
    (``MSTSLocomotive.GetAvailableTractionForceN``): ``t·MaxForce`` times the fade factor
    near ``MaxVelocity`` (:func:`max_speed_factor`), capped by the power ``MaxPower·t²`` over
    the speed (docs/physics.md §3.4)."""
    if throttle <= 0:
        return 0.0
    v = abs(speed)
    force = throttle * max_force * max_speed_factor(v, max_speed)
    power = max_power * throttle * throttle
    if force * v > power:
        force = power / v
    return force


def ramp_force(
    force: float,
    dt: float,
    target: float,
    max_force: float,
    speed: float,
    prev_speed: float,
    ramps: TractionRamps,
) -> float:
    """The force after ``dt`` s moving toward ``target`` (``MSTSLocomotive.UpdateForceWithRamp``):
    both capped at ``max_force``; while moving, the power ``force·prev_speed`` may rise by at
    most ``power_up·dt`` and fall by at most ``power_down·dt`` (``power_to_zero`` when the
    target is 0) toward ``target·speed``; then the force rises by at most ``force_up·dt`` or
    falls by at most ``force_down·dt`` (``force_to_zero``). A rate of 0 is no limit."""
    target = min(target, max_force)
    force = min(force, max_force)
    to_zero = target == 0.0
    v = abs(speed)
    if v > 0:
        power = force * abs(prev_speed)
        target_power = target * v
        if target_power > power and ramps.power_up > 0:
            step = ramps.power_up * dt
            if power + step < target_power:
                target = min(target, (power + step) / v)
        down_w = ramps.power_to_zero if to_zero else ramps.power_down
        if target_power < power and down_w > 0:
            step = down_w * dt
            if power - step > target_power:
                target = max(target, min(force, (power - step) / v))
    if target > force:
        return min(force + ramps.force_up * dt, target) if ramps.force_up > 0 else target
    if target < force:
        down = ramps.force_to_zero if to_zero else ramps.force_down
        return max(force - down * dt, target) if down > 0 else target
    return force


@dataclass(frozen=True, slots=True)
class ContinuousForce:
    """``MaxContinuousForce`` derating: the force is multiplied by
    ``1 − (Fmax − Fcont)/(Fmax·Fcont)·Favg``, where ``Favg`` is the force's running mean
    with the time constant ``tau`` (s); so a locomotive that has pulled ``Fcont`` for a
    long time gives ``Fcont``·(its demand / Fmax)… and at full demand exactly ``Fcont``
    in the steady state of ``F = Fmax·(1 − k·F)``."""

    max_force: float
    continuous_force: float
    tau: float = 1800.0

    def step(self, force: float, average: float, dt: float) -> tuple[float, float]:
        """(derated force, new running mean) for a step of ``dt`` seconds."""
        fm, fc = self.max_force, self.continuous_force
        if fm <= 0 or fc <= 0:
            return force, average
        out = force * (1.0 - (fm - fc) / (fm * fc) * average)
        w = max((self.tau - dt) / self.tau, 0.0)
        return out, w * average + (1.0 - w) * out

    def steady_force(self, demand: float) -> float:
        """The fixed point of :meth:`step` for a constant demand ``demand`` (N)."""
        fm, fc = self.max_force, self.continuous_force
        k = (fm - fc) / (fm * fc)
        return demand / (1.0 + k * demand)


def dynamic_brake_force(
    setting: float, speed: float, max_force: float, curve=None, min_speed: float = 0.0
) -> float:
    """Dynamic-brake force at a setting (0–1): ``ORTSDynamicBrakeForceCurves`` if given,
    else ``setting·MaxDynamicBrakeForce``; nothing below ``DynamicBrakesMinUsableSpeed``
    (simplified: Open Rails fades it, tdbtools cuts it)."""
    v = abs(speed)
    if setting <= 0 or v <= 0 or v < min_speed:  # none at rest (UpdateDynamicBrakeForce)
        return 0.0
    if curve is not None:
        return max(curve(setting, v), 0.0)
    return setting * max_force
