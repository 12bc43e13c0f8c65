"""A train run with the Open Rails profile's laws on a straight line of constant grade
(docs/physics.md §7.6): the driver's commands (throttle, brake handle, dynamic brake) at
given times, every car's traction, brakes and resistance, one mass.

This is the profile's reference integrator and what its tests drive; the route replay
(:mod:`tdbtools.physics.replay`) does not use it yet. numpy only (no compiled kernel).
No rotating-mass factor: Open Rails' diesel and electric models have none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...formats.stock import Stock
from ...formats.stock_orts import AirBrakeSpec, LocoBrakeSpec
from .adhesion import G
from .airbrake import AirBrakeTrain, Handle
from .brakes import brake_force_capacity, cylinder_fraction, shoe_factor
from .controllers import (
    brake_handle,
    dynamic_value,
    lead_controllers,
    lead_dynamic_controller,
    throttle_value,
)
from .mass import orts_mass
from .resistance import resistance, starting_terms
from .unit import PowerUnit
from .vacuumbrake import VacuumBrakeTrain

__all__ = ["Command", "RunTrace", "brake_notes", "run_train", "vacuum_braked"]


@dataclass(frozen=True, slots=True)
class Command:
    """From ``time`` on: the throttle handle (0–1, through the lead's throttle
    controller), the brake as a :class:`Handle` (``handle``) or as the train-brake handle's
    position (``brake``, 0–1, through the lead's brake controller; docs/physics.md §7.10)
    and the dynamic-brake handle (0–1, through the lead's ``Brake_Dynamic`` controller;
    it engages after Open Rails' delay and excludes the throttle, §7.2); None keeps the
    previous value."""

    time: float
    throttle: float | None = None
    handle: Handle | None = None
    dynamic: float | None = None
    brake: float | None = None


@dataclass(frozen=True)
class RunTrace:
    """Samples of a run, one row per step (SI units; pressures psi; a vacuum train's
    ``bp_last`` is the pipe's vacuum in inHg and its ``cyl_*`` the piston's pressure
    difference in psi)."""

    time: np.ndarray
    distance: np.ndarray
    speed: np.ndarray
    traction: np.ndarray
    brake: np.ndarray
    rpm: np.ndarray
    bp_last: np.ndarray
    cyl_first: np.ndarray
    cyl_last: np.ndarray
    notes: tuple[str, ...] = field(default=())

    def to_csv(self) -> str:
        """The trace as CSV (``time,distance,speed,traction,brake,rpm``; SI units), the
        columns ``tdbtools compare`` reads."""
        rows = ["time,distance,speed,traction,brake,rpm"]
        for r in zip(self.time, self.distance, self.speed, self.traction, self.brake, self.rpm):
            rows.append(",".join(f"{float(x):.6g}" for x in r))
        return "\n".join(rows) + "\n"

    def first_time(self, mask: np.ndarray) -> float:
        """The first sample time where ``mask`` holds (NaN if never)."""
        idx = np.flatnonzero(mask)
        return float(self.time[idx[0]]) if idx.size else float("nan")


#: One powered car's traction (kept under this name for the replay's forces).
_Unit = PowerUnit


def vacuum_braked(stocks: Sequence[Stock]) -> bool:
    """Whether every car has a vacuum brake (a train mixing air and vacuum cars runs
    the air law, as the run's notes say)."""
    return all(s.orts is not None and s.orts.brakes.vacuum for s in stocks)


def brake_notes(stocks: Sequence[Stock]) -> list[str]:
    """What the run says of its brakes' law (docs/physics.md §7.3)."""
    if vacuum_braked(stocks):
        return [
            "vacuum brakes: Open Rails' VacuumSinglePipe, simplified (no altitude, pipe leakage, "
            "small ejector, equalising reservoir or steam brake; default reservoir volume)"
        ]
    if any(s.orts is not None and s.orts.brakes.vacuum for s in stocks):
        return ["a train mixing vacuum and air brakes is run with the air-brake law throughout"]
    return []


def _brake_train(
    stocks: Sequence[Stock], compiled: bool = True
) -> tuple[AirBrakeTrain | VacuumBrakeTrain, np.ndarray, np.ndarray]:
    # ``compiled``: the air brakes stepped with the compiled kernels when numba is there
    # (the same numbers; AirBrakeTrain.compiled); the vacuum brakes have none
    specs = [(s.orts.brakes if s.orts is not None else AirBrakeSpec()) for s in stocks]
    lead = next((s.orts.loco_brakes for s in stocks if s.orts is not None and s.orts.loco_brakes), None)
    lb = lead or LocoBrakeSpec()
    if vacuum_braked(stocks):
        vac = VacuumBrakeTrain(
            [s.length_m for s in stocks],
            app_rate=[b.vac_application_rate for b in specs],
            rel_rate=[b.vac_release_rate for b in specs],
            cylinder_size_m=[b.vac_cylinder_size_m for b in specs],
            num_cylinders=[b.vac_num_cylinders for b in specs],
            direct_admission=[b.direct_admission for b in specs],
            max_vacuum_psi=lb.vac_max_psi,
            charging_rate=lb.vac_charging_rate,
            tau=lb.pipe_time_factor_s,
            service_tau=lb.service_time_factor_s,
            emergency_tau=lb.emergency_time_factor_s,
        )
        return vac, np.array([b.vac_max_force_psi for b in specs]), np.zeros(len(specs))
    train = AirBrakeTrain(
        [s.length_m for s in stocks],
        app_rate=[b.max_application_rate for b in specs],
        rel_rate=[b.max_release_rate for b in specs],
        aux_rate=[b.max_aux_charging_rate for b in specs],
        ratio=[b.aux_cyl_volume_ratio for b in specs],
        max_psi=lb.max_system_psi,
        full_service_drop=lb.full_service_drop_psi,
        charging_rate=lb.pipe_charging_rate,
        tau=lb.pipe_time_factor_s,
        service_tau=lb.service_time_factor_s,
        emergency_tau=lb.emergency_time_factor_s,
        compiled=compiled,
    )
    return (
        train,
        np.array([b.max_cylinder_psi for b in specs]),
        np.array([b.cylinder_spring_psi for b in specs]),
    )


def trailing_drag_factors(stocks: Sequence[Stock]) -> np.ndarray:
    """Per car, the factor on Davis C: ``ORTSTrailLocomotiveResistanceFactor`` for an
    engine that is not the lead (the first engine) and for a tender not right behind the
    lead, else 1 (Open Rails' ``MSTSWagon`` running resistance; docs/physics.md §7.5)."""
    lead = next((i for i, s in enumerate(stocks) if s.kind == "engine"), None)
    out = np.ones(len(stocks))
    if lead is None:
        return out
    for i, s in enumerate(stocks):
        if (s.kind == "engine" and i != lead) or (s.wagon_type == "Tender" and i != lead + 1):
            out[i] = s.trail_loco_resistance_factor
    return out


def run_train(
    stocks: Sequence[Stock],
    commands: Sequence[Command],
    *,
    seconds: float,
    dt: float = 0.1,
    grade: float = 0.0,
    speed0: float = 0.0,
    stop_at_rest_after: float | None = None,
    bearing_temp_c: float = 25.0,
) -> RunTrace:
    """Run the train ``seconds`` s (``grade`` rise/run, positive uphill). With
    ``stop_at_rest_after``, the run ends at the first standstill after that time.
    ``bearing_temp_c``: the wheel bearings' temperature for the starting resistance
    (Open Rails simulates it; warm unless given)."""
    stocks = list(stocks)
    mass = np.array([orts_mass(s) for s in stocks])
    total = float(mass.sum())
    units = [
        _Unit(s) for s in stocks if s.kind == "engine" and s.engine_type in ("Diesel", "Electric", "Steam")
    ]
    brakes, max_cyl, spring = _brake_train(stocks)
    capacity = np.array([brake_force_capacity(s) for s in stocks])
    drag = trailing_drag_factors(stocks)
    f0, vm = starting_terms(stocks, bearing_temp_c)
    sin_t = grade / np.hypot(1.0, grade)
    notes = []
    notes.extend(brake_notes(stocks))
    for u in units:
        notes.extend(n for n in u.notes if n not in notes)
    cmds = sorted(commands, key=lambda c: c.time)
    throttle_spec, brake_spec, min_drop = lead_controllers(stocks)
    dynamic_spec = lead_dynamic_controller(stocks)
    throttle, handle, dyn = 0.0, Handle("release"), 0.0
    n = int(round(seconds / dt))
    cols = {k: np.zeros(n + 1) for k in ("t", "x", "v", "f", "b", "rpm", "bp", "c0", "c1")}
    v, x, ci = speed0, 0.0, 0
    last = n
    for i in range(n + 1):
        t = i * dt
        while ci < len(cmds) and cmds[ci].time <= t + 1e-9:
            c = cmds[ci]
            throttle = throttle if c.throttle is None else throttle_value(throttle_spec, c.throttle)
            handle = handle if c.handle is None else c.handle
            if c.brake is not None:
                handle = brake_handle(brake_spec, c.brake, brakes.full_service_drop, min_drop)
            dyn = dyn if c.dynamic is None else dynamic_value(dynamic_spec, c.dynamic)
            ci += 1
        ft = fd = 0.0
        for u in units:
            fu, du = u.step(throttle, dyn, v, dt)
            ft += fu
            fd += du
        brakes.step(handle, dt)
        factor = np.array([float(shoe_factor(s, v)) for s in stocks])
        fb = float(np.sum(capacity * cylinder_fraction(brakes.cyl, max_cyl, spring) * factor))
        resist = resistance(stocks, f0, vm, drag, v)
        gravity = total * G * sin_t
        rpm = units[0].rpm[0] if units and units[0].rpm else 0.0
        for k, val in zip(cols, (t, x, v, ft, fb + fd, rpm, brakes.bp[-1], brakes.cyl[0], brakes.cyl[-1])):
            cols[k][i] = val
        if stop_at_rest_after is not None and t >= stop_at_rest_after and v <= 0.0:
            last = i
            break
        opposing = resist + fb + fd
        if v <= 0.0 and ft - gravity <= opposing:
            v = 0.0  # at rest: the opposing forces hold it (no rolling back in this model)
            continue
        a = (ft - gravity - opposing) / total
        nv = v + a * dt
        if nv < 0.0:
            # stops within the step: at constant deceleration, after v/|a| s
            x += v * v / (2.0 * -a)
            v = 0.0
            continue
        x += 0.5 * (v + nv) * dt
        v = nv
    sl = slice(0, last + 1)
    return RunTrace(
        cols["t"][sl], cols["x"][sl], cols["v"][sl], cols["f"][sl], cols["b"][sl],
        cols["rpm"][sl], cols["bp"][sl], cols["c0"][sl], cols["c1"][sl], tuple(notes),
    )  # fmt: skip
