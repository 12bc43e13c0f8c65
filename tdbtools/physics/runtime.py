"""Running-time allowances (docs/running-time.md §4).

A timetable adds an allowance to the technical minimum running time: a percentage of
it and/or minutes per 100 km. It is spread over the whole run, in one of two ways:

* ``"linear"``: every limit is lowered by the same factor (the automatic driver's
  ``speed_factor``), so the train runs proportionally slower everywhere;
* ``"eco"`` (energy saving): the train coasts before each braking point, from the
  moment the braking point is ``coast_before`` seconds ahead at the current speed.

The factor (or the coasting time) that meets the allowance is found by bisection on a
quick single-mass run of the same driver over the same line (:func:`plan`), with the
train's summed forces and a 0.5 s step.
"""

from __future__ import annotations

import bisect
import copy
import math
from typing import Any

import numpy as np

from . import forces
from .driver import AutoDriver, DriveState

__all__ = ["PlanResult", "allowance_target", "fit_allowance", "plan"]

#: The planner's step (s).
PLAN_STEP = 0.5
#: Bisection iterations (the bracket shrinks 2^-n).
ITERATIONS = 14


class PlanResult:
    __slots__ = ("time", "distance", "traction_j", "finished")

    def __init__(self, time: float, distance: float, traction_j: float, finished: bool) -> None:
        self.time = time
        self.distance = distance
        self.traction_j = traction_j
        self.finished = finished


def plan(
    driver: AutoDriver,
    model: forces.CarModel,
    line,
    front0: float,
    *,  # noqa: ANN001
    adhesion: str | None = "dry",
    dt: float = PLAN_STEP,
    limit_s: float = 36000.0,
) -> PlanResult:
    """Run a copy of ``driver`` on ``line`` with the train as one mass (front starting
    at ``front0``, standing); returns the time to the driver's final stop."""
    d = copy.deepcopy(driver)
    M = float(model.inertial_mass.sum())
    mass = float(model.mass.sum())
    length = float(model.length.sum())
    maxbrake = max(float(model.max_brake.sum()), 1.0)
    vmax = (
        float(np.nanmin(np.where(model.is_engine, model.max_velocity, np.nan)))
        if (model.is_engine & np.isfinite(model.max_velocity)).any()
        else math.nan
    )
    adh = (model.adhesive_mass if model.adhesive_mass is not None else np.zeros(len(model))) * forces.G
    # The line's pieces as Python lists: bisect_left on them finds the piece that
    # line.grade_at / curvature_at find with searchsorted (side="left", clipped).
    piece_s1 = line.pieces.s1.tolist()
    grades, curvatures = line.pieces.grade.tolist(), line.pieces.curvature.tolist()
    last = len(piece_s1) - 1
    s, v, t, work = front0, 0.0, 0.0, 0.0
    while t < limit_s:
        c = d(DriveState(t, s - front0, v, s, s - length, dt))
        if d.finished:
            return PlanResult(t, s - front0, work, True)
        mid = min(max(s - 0.5 * length, 0.0), line.length)
        piece = min(bisect.bisect_left(piece_s1, mid), last)
        grade = grades[piece]
        curv = curvatures[piece]
        res = float(
            forces.running_resistance(model, v).sum()
        ) + mass * forces.G * forces.OSRD_CURVE_FACTOR * abs(curv)
        other = -mass * forces.G * math.sin(math.atan(grade)) - (res if v > 0 else 0.0)
        F = 0.0
        if c.speed_target is not None:
            full = forces.traction(model, 1.0, v, taper=False)
            if adhesion is not None:
                full = np.minimum(full, forces.adhesion_coefficient(v, adhesion) * adh)
            Ff = float(full.sum())
            q = min(max((M * (c.speed_target - v) / dt - other) / Ff, 0.0), 1.0) if Ff > 0 else 0.0
            F = Ff * q * forces.taper_factor(Ff * q, other, M, v, vmax, dt)
            if q == 0.0 and other - M * (c.speed_target - v) / dt > 0:
                F = -min(other - M * (c.speed_target - v) / dt, maxbrake)  # hold on a falling grade
        elif c.deceleration > 0:
            F = -max(M * c.deceleration + other, 0.0)
        elif c.brake > 0:
            F = -c.brake * maxbrake
        a = (F + other) / M
        if v <= 0.0 and a < 0.0:
            a = 0.0
        v1 = max(v + a * dt, 0.0)
        ds = 0.5 * (v + v1) * dt
        if F > 0:
            work += F * ds
        s += ds
        v = v1
        t += dt
    return PlanResult(t, s - front0, work, False)


def allowance_target(minimum_s: float, distance_m: float, percent: float, min_per_100km: float) -> float:
    """The running time with the allowance: ``T_min·(1 + p/100) + m·60·D/100 km``."""
    return minimum_s * (1.0 + percent / 100.0) + min_per_100km * 60.0 * distance_m / 100_000.0


def fit_allowance(
    d: AutoDriver,
    model: forces.CarModel,
    line: Any,
    front0: float,
    *,
    adhesion: str | None,
    percent: float,
    min_per_100km: float,
    mode: str,
) -> tuple[dict[str, Any] | None, list[str]]:
    """Set ``d`` (the train's automatic driver) so that its planned running time meets
    the allowance; returns the figures (``None`` when none could be applied) and warnings."""
    base = plan(d, model, line, front0, adhesion=adhesion)
    if not base.finished or base.time <= 0:
        return None, ["allowance: the train does not reach its stop in the plan; no allowance applied"]
    target = allowance_target(base.time, base.distance, percent, min_per_100km)
    knob = "coast_before" if mode == "eco" else "speed_factor"
    lo, hi = (0.0, 3600.0) if knob == "coast_before" else (0.2, 1.0)

    def time_with(x: float) -> PlanResult:
        trial = copy.deepcopy(d)
        setattr(trial, knob, x)
        return plan(trial, model, line, front0, adhesion=adhesion)

    # Slower with more coasting / a lower factor: bisect on the planned time.
    for _ in range(ITERATIONS):
        mid = 0.5 * (lo + hi)
        r = time_with(mid)
        slower = (r.time > target) if r.finished else True
        if knob == "coast_before":
            lo, hi = (lo, mid) if slower else (mid, hi)
        else:
            lo, hi = (mid, hi) if slower else (lo, mid)
    x = 0.5 * (lo + hi)
    setattr(d, knob, x)
    got = time_with(x)
    figures = {
        "minimum_s": round(base.time, 3),
        "target_s": round(target, 3),
        "mode": mode,
        knob: round(x, 4),
        "planned_s": round(got.time, 3),
        "planned_traction_kwh": round(got.traction_j / 3.6e6, 4),
        "minimum_traction_kwh": round(base.traction_j / 3.6e6, 4),
    }
    warnings = []
    if got.time < target * 0.99:
        warnings.append(f"allowance: coasting alone gives {got.time:.0f} s of the {target:.0f} s asked for")
    return figures, warnings
