"""Diesel prime movers as Open Rails runs them (docs/physics.md §7.1; facts from Open
Rails' ``DieselEngine.Update`` and ``MSTSDieselLocomotive.UpdateTractiveForce``).

The RPM follows the demanded RPM with a rate limited twice: by ``ChangeUp/DownRPMpS``
and by ``sqrt(2·RateOfChange·|gap|)``, so it arrives without overshoot, like a body
braking at a constant deceleration. A rate of at most 1 RPM/s upwards counts as
arrived. The *apparent throttle* is the throttle that would demand the present RPM (the
inverse of the throttle→RPM table); the force is read at the smaller of it and the
handle's throttle.
"""

from __future__ import annotations

import math

import numpy as np

from ...formats.stock_orts import DieselEngineSpec

__all__ = [
    "apparent_throttle",
    "demanded_rpm",
    "output_power",
    "rpm_rate",
    "run_up_time",
    "step_rpm",
]

#: Below this rate (RPM/s) a rising engine counts as having reached its demanded RPM.
ARRIVED_RPM_PS = 1.0


def demanded_rpm(spec: DieselEngineSpec, throttle: float) -> float:
    """RPM demanded at a throttle fraction (0–1), from ``ThrottleRPMTab`` (in %), never
    below idle; without a table: linear from idle to max."""
    t = min(max(throttle, 0.0), 1.0) * 100.0
    if spec.throttle_rpm is None:
        return spec.idle_rpm + t / 100.0 * (spec.max_rpm - spec.idle_rpm)
    return max(spec.throttle_rpm(t), spec.idle_rpm)


def rpm_rate(spec: DieselEngineSpec, rpm: float, demanded: float) -> float:
    """dRPM/dt (RPM/s) of an engine at ``rpm`` asked for ``demanded``."""
    if rpm < demanded:
        up = min(math.sqrt(2.0 * spec.rate_up * (demanded - rpm)), spec.change_up)
        return up if up > ARRIVED_RPM_PS else 0.0
    if rpm > demanded:
        return max(-math.sqrt(2.0 * spec.rate_down * (rpm - demanded)), -spec.change_down)
    return 0.0


def step_rpm(spec: DieselEngineSpec, rpm: float, demanded: float, dt: float) -> float:
    """The RPM after ``dt`` seconds (explicit step, as Open Rails takes it), clamped to
    ≥ 0 and to the governor RPM when one is given."""
    r = max(rpm + rpm_rate(spec, rpm, demanded) * dt, 0.0)
    if spec.governor_rpm > 0:
        r = min(r, spec.governor_rpm)
    return r


def run_up_time(rpm0: float, rpm1: float, change: float, rate: float) -> float:
    """Closed form of the time the rate law takes from ``rpm0`` to ``rpm1``: at the
    constant limit ``change`` while the gap exceeds ``change²/(2·rate)``, then the square
    root law, which closes the last gap in ``change/rate``. Together
    ``gap/change + change/(2·rate)`` (a gap too small for the limit: ``sqrt(2·gap/rate)``)."""
    gap = abs(rpm1 - rpm0)
    knee = change * change / (2.0 * rate)
    if gap <= knee:
        return math.sqrt(2.0 * gap / rate)
    return gap / change + change / (2.0 * rate)


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
    """RPM at every step of ``dt`` over ``seconds`` (for tests and plots)."""
    n = int(round(seconds / dt))
    out = np.empty(n + 1)
    r = rpm0
    out[0] = r
    for i in range(1, n + 1):
        r = step_rpm(spec, r, demanded, dt)
        out[i] = r
    return out
