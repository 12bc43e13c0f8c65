"""Tractive and dynamic-brake force as Open Rails computes them (docs/physics.md §7.2;
facts from ``MSTSLocomotive.UpdateTractiveForce``, ``MSTSDieselLocomotive`` and
``MSTSElectricLocomotive``).

Signs: every force here is a magnitude (≥ 0); the reverser gives the direction.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ContinuousForce",
    "basic_diesel_force",
    "basic_electric_force",
    "curve_force",
    "dynamic_brake_force",
    "max_speed_fade",
]

#: Below ``MaxVelocity`` by this much (m/s) the legacy force starts to fade (docs/physics.md §7.2).
FADE_BAND_MS = 0.05


def max_speed_fade(force: float, speed: float, max_speed: float) -> float:
    """The legacy (no curves) force near ``MaxVelocity``: from ``max_speed − 0.05`` m/s it
    is multiplied by ``20·(max_speed − |v|)`` and it is 0 above ``max_speed``; nothing
    changes when the file gives no maximum speed (``max_speed ≤ 0``)."""
    v = abs(speed)
    if max_speed <= 0 or v <= max_speed - FADE_BAND_MS:
        return force
    if v > max_speed:
        return 0.0
    return 20.0 * (max_speed - v) * force


def curve_force(curve, throttle: float, speed: float) -> float:
    """``ORTSMaxTractiveForceCurves`` read at (throttle fraction, |speed|), never negative
    (a diesel reads it at its apparent throttle)."""
    return max(curve(throttle, abs(speed)), 0.0)


def basic_diesel_force(
    throttle: float,
    apparent: float,
    speed: float,
    max_force: float,
    rail_power: float,
    unloading_speed: float = 0.0,
    max_speed: float = 0.0,
) -> float:
    """A diesel without force curves: ``t·MaxForce``, limited by the rail power times
    the *apparent* throttle divided by the speed; above ``ORTSUnloadingSpeed`` the power
    falls linearly to 0 at twice that speed."""
    v = abs(speed)
    force = throttle * max_force
    if v > 0:
        force = min(force, throttle * rail_power / v)
    power = rail_power * apparent
    if unloading_speed > 0 and unloading_speed < v < max_speed:
        power *= min(max(1.0 - (v - unloading_speed) / unloading_speed, 0.0), 1.0)
    if force * v > power:
        force = power / v
    return max_speed_fade(force, v, max_speed)


def basic_electric_force(
    throttle: float, speed: float, max_force: float, max_power: float, max_speed: float = 0.0
) -> float:
    """An electric (or any MSTS) locomotive without curves: ``t·MaxForce`` capped by the
    power ``MaxPower·t²`` over the speed (docs/physics.md §3.4), faded to 0 at
    ``MaxVelocity`` (:func:`max_speed_fade`)."""
    v = abs(speed)
    force = throttle * max_force
    if v > 0:
        force = min(force, max_power * throttle * throttle / v)
    return max_speed_fade(force, v, max_speed)


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
    if setting <= 0 or v < min_speed:
        return 0.0
    if curve is not None:
        return max(curve(setting, v), 0.0)
    return setting * max_force
