"""Diesel prime movers as Open Rails runs them (docs/physics.md §7.1; facts from the
present ``DieselEngine.GetTargetRPM``/``UpdateRPM`` and ``MSTSDieselLocomotive``).

The RPM follows the demanded RPM with a rate ``dRPM`` that is itself state: each step it
moves toward ``clamp(sqrt(2·J·|gap|), 0.01·Change, Change)`` (J = ``RateOfChange…RPMpSS``,
Change = ``Change…RPMpS``) by at most ``J·dt`` away from zero and ``1.25·J·dt`` toward it,
and a step that would pass the demanded RPM lands on it. So from rest the engine
accelerates at J up to the rate limit, runs at it, and brakes at J onto the target. The
*apparent throttle* is the throttle that would demand the present RPM (the inverse of the
throttle→RPM table); the force is read at the smaller of it and the handle's throttle.
"""

from __future__ import annotations

import math

import numpy as np

from ...formats.stock import Stock
from ...formats.stock_orts import DieselEngineSpec, Table

__all__ = [
    "apparent_throttle",
    "demanded_rpm",
    "establish",
    "output_power",
    "run_up_time",
    "step_engine",
]

#: The slowest rate (share of the rate limit) the RPM moves at while it has not arrived.
MIN_RATE_SHARE = 0.01
#: How much faster than J the rate may fall back toward 0 (UpdateRPM).
EASE_FACTOR = 1.25


#: Open Rails' default torque shape (share of the largest torque) from 0 RPM, idle, nine
#: even steps to MaxRPM, and 1.35·MaxRPM (DieselEngine.EstablishParameters).
TORQUE_SHAPE = (0.0, 0.2, 0.4, 0.7, 0.95, 1.0, 1.0, 0.98, 0.95, 0.9, 0.86, 0.81, 0.3)


def _rad_s(rpm: float) -> float:
    return rpm * 2.0 * math.pi / 60.0


def default_tables(idle: float, max_rpm: float, max_power_w: float) -> tuple[Table, Table]:
    """(power, torque) tables Open Rails builds when a file gives neither: the torque
    shape :data:`TORQUE_SHAPE` scaled so that the power at MaxRPM is ``max_power_w``."""
    n = len(TORQUE_SHAPE)
    rpm = [0.0, idle] + [idle + k * (max_rpm - idle) / (n - 3) for k in range(1, n - 2)] + [1.35 * max_rpm]
    top = max_power_w / _rad_s(max_rpm) / 0.81
    torque = [f * top for f in TORQUE_SHAPE]
    power = [t * _rad_s(r) for t, r in zip(torque, rpm)]
    return Table(tuple(rpm), tuple(power)), Table(tuple(rpm), tuple(torque))


def establish(stock: Stock) -> tuple[DieselEngineSpec, ...]:
    """The prime movers Open Rails runs for a diesel (``DieselEngine.EstablishParameters``):
    each ``ORTSDieselEngines`` engine with its missing values filled, or, without that block,
    one engine from the MSTS tokens (``DieselEngineIdleRPM`` 300, ``DieselEngineMaxRPM`` 600
    — at least 1.5·idle —, ``DieselEngineMaxRPMChangeRate`` 40 RPM/s for both rate limits,
    ``ORTSDieselEngineMaxPower`` or ``MaxPower`` or 2.5 MW); the rate-of-change limits
    default to the rate limits, the governor to 1.309·MaxRPM, the starting RPM to 2/3 of
    idle; without power and torque tables the default shape, with one of them the other
    derived from it (P = T·ω)."""
    o = stock.orts
    if o is None:
        return ()
    m = o.msts_diesel
    configured = bool(o.diesel_engines)
    out = []
    for e in o.diesel_engines or (DieselEngineSpec(),):
        idle = e.idle_rpm or m.idle_rpm or 300.0
        top = e.max_rpm or m.max_rpm or 600.0
        if not configured and top / idle < 1.5:
            top = 1.5 * idle
        up = e.change_up or m.change_rate or 40.0
        down = e.change_down or m.change_rate or 40.0
        power_w = e.max_power_w or m.max_power_w or stock.max_power_w or (o.max_rail_power_w or 2.5e6)
        ptab, ttab = e.power, e.torque
        if ptab is None and ttab is None:
            ptab, ttab = default_tables(idle, top, power_w)
        elif ttab is None and ptab is not None:
            ttab = Table(ptab.xs, tuple(p / _rad_s(r) if r > 0 else 0.0 for r, p in zip(ptab.xs, ptab.ys)))
        elif ptab is None and ttab is not None:
            ptab = Table(ttab.xs, tuple(t * _rad_s(r) for r, t in zip(ttab.xs, ttab.ys)))
        out.append(
            DieselEngineSpec(
                idle_rpm=idle,
                max_rpm=top,
                governor_rpm=e.governor_rpm or m.governor_rpm or 1.309 * top,
                change_up=up,
                change_down=down,
                rate_up=e.rate_up or up,
                rate_down=e.rate_down or down,
                max_power_w=power_w,
                starting_rpm=e.starting_rpm or idle * 2.0 / 3.0,
                throttle_rpm=e.throttle_rpm,
                power=ptab,
                torque=ttab,
            )
        )
    return tuple(out)


def demanded_rpm(spec: DieselEngineSpec, throttle: float) -> float:
    """RPM demanded at a throttle fraction (0–1), from ``ThrottleRPMTab`` (in %), clamped
    to idle..max; without a table: linear from idle to max."""
    t = min(max(throttle, 0.0), 1.0) * 100.0
    if spec.throttle_rpm is None:
        return spec.idle_rpm + t / 100.0 * (spec.max_rpm - spec.idle_rpm)
    return min(max(spec.throttle_rpm(t), spec.idle_rpm), spec.max_rpm)


def step_engine(
    spec: DieselEngineSpec, rpm: float, drpm: float, demanded: float, dt: float, factor: float = 1.0
) -> tuple[float, float]:
    """(RPM, dRPM/dt) after ``dt`` seconds (``DieselEngine.UpdateRPM``); ``factor`` scales
    J (Open Rails' throttle acceleration factor, 1 but for a slipping clutch)."""
    if rpm < demanded:
        jerk = spec.rate_up * factor
        want = min(
            max(math.sqrt(2.0 * jerk * (demanded - rpm)), MIN_RATE_SHARE * spec.change_up), spec.change_up
        )
        drpm = min(max(want, drpm - EASE_FACTOR * jerk * dt), drpm + jerk * dt)
        if rpm + drpm * dt > demanded:
            return demanded, (demanded - rpm) / dt
    elif rpm > demanded:
        jerk = spec.rate_down * factor
        want = -min(
            max(math.sqrt(2.0 * jerk * (rpm - demanded)), MIN_RATE_SHARE * spec.change_down), spec.change_down
        )
        drpm = min(max(want, drpm - jerk * dt), drpm + EASE_FACTOR * jerk * dt)
        if rpm + drpm * dt < demanded:
            return demanded, (demanded - rpm) / dt
    else:
        return demanded, 0.0
    return max(rpm + drpm * dt, 0.0), drpm


def run_up_time(rpm0: float, rpm1: float, change: float, rate: float) -> float:
    """Closed form of the time the law takes from ``rpm0`` to ``rpm1`` starting at rest
    (dRPM = 0): it accelerates at ``rate`` to ``change`` (covering ``change²/(2·rate)``),
    runs at ``change``, and brakes at ``rate`` (the square-root law) onto the target:
    ``gap/change + change/rate`` when the gap exceeds ``change²/rate``, else the triangle
    ``2·sqrt(gap/rate)``."""
    gap = abs(rpm1 - rpm0)
    if gap <= change * change / rate:
        return 2.0 * math.sqrt(gap / rate)
    return gap / change + change / rate


def apparent_throttle(spec: DieselEngineSpec, rpm: float) -> float:
    """The throttle fraction (0–1) whose demanded RPM is ``rpm`` (the inverse table,
    clamped to 0–100 %)."""
    if spec.throttle_rpm is None:
        span = spec.max_rpm - spec.idle_rpm
        pct = (rpm - spec.idle_rpm) / span * 100.0 if span > 0 else 0.0
    else:
        pct = spec.throttle_rpm.inverse()(rpm)
    return min(max(pct, 0.0), 100.0) / 100.0


def output_power(spec: DieselEngineSpec, rpm: float, supply_w: float = 0.0) -> float:
    """Power (W) the engine can give at ``rpm``: ``DieselPowerTab`` capped at
    ``MaximalPower`` (linear from idle to max RPM without a table), less the train supply
    power it carries, never negative."""
    if spec.power is not None:
        p = min(spec.power(rpm), spec.max_power_w) if spec.max_power_w > 0 else spec.power(rpm)
    else:
        span = spec.max_rpm - spec.idle_rpm
        p = (rpm - spec.idle_rpm) / span * spec.max_power_w if span > 0 else 0.0
    return max(p - supply_w, 0.0)


def run_up_trace(
    spec: DieselEngineSpec, rpm0: float, demanded: float, dt: float, seconds: float
) -> np.ndarray:
    """RPM at every step of ``dt`` over ``seconds``, from rest (for tests and plots)."""
    n = int(round(seconds / dt))
    out = np.empty(n + 1)
    r, d = rpm0, 0.0
    out[0] = r
    for i in range(1, n + 1):
        r, d = step_engine(spec, r, d, demanded, dt)
        out[i] = r
    return out
