"""Running times a running-time engineer can trust: the replay against an independent
minimum-time computation (RK4 on a single mass with a braking envelope), braking
distances against closed forms, and the physics behaviours the replay must show.

The reference below shares no code with tdbtools.physics: it reads the stock values
and restates the force laws of docs/running-time.md.
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL, SAMPLE_ROUTE

from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.physics.driver import AutoDriver
from tdbtools.physics.events import DepartedPoint, WaitingAtPoint
from tdbtools.physics.forces import CarModel
from tdbtools.physics.replay import Replay
from tdbtools.physics.runtime import ITERATIONS, PLAN_STEP, allowance_target, fit_allowance, plan
from tdbtools.physics.scenario import Command, Scenario, TrainSpec
from tdbtools.physics.trackline import TrackLine

CONSISTS = SAMPLE_INSTALL / "TRAINS" / "CONSISTS"
g = 9.80665
KMH = 1 / 3.6


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


# -- the independent reference ------------------------------------------------------------


@dataclass
class Train:
    """Whole-train sums of the stock values, worked out here from the stock files."""

    mass: float
    inertia: float
    length: float
    davis: tuple[float, float, float]
    engines: list[tuple[float, float, float, float]]  # max force, power, vmax, adhesive mass
    max_brake: float

    @classmethod
    def of(cls, consist: str) -> Train:
        con = read_consist(CONSISTS / f"{consist}.con")
        cars = resolve_stock(con, SAMPLE_INSTALL)
        engines = [
            (
                c.max_force_n,
                c.max_power_w,
                c.max_velocity_ms,
                c.mass_kg * (c.num_drive_axles / c.num_axles if c.num_drive_axles else 1.0),
            )
            for c in cars
            if c.kind == "engine"
        ]
        # documented rotating-mass factors: 1.15 engines, 1.05 other cars
        inertia = sum(c.mass_kg * (1.15 if c.kind == "engine" else 1.05) for c in cars)
        davis_at = [(c.davis_a, c.davis_b, c.davis_c) for c in cars]
        return cls(
            sum(c.mass_kg for c in cars),
            inertia,
            sum(c.length_m for c in cars),
            tuple(sum(d[i] for d in davis_at) for i in range(3)),
            engines,
            sum(c.max_brake_force_n for c in cars),
        )

    def traction(self, v: float) -> float:
        total = 0.0
        for fmax, power, vmax, m_adh in self.engines:
            f = fmax if v <= 0 else min(fmax, power / v)
            mu = 0.161 + 7.5 / (v * 3.6 + 44.0)
            f = min(f, mu * m_adh * g)
            if v > vmax - 0.05:
                f *= max(20 * (vmax - v), 0.0)
            total += f
        return total


_CARS: dict[str, list] = {}


def resistance(consist: str, v: float) -> float:
    """Davis summed over the cars, each car's replaced below its merge speed by the
    line from its standstill force F0 to its Davis value at the merge speed."""
    if consist not in _CARS:
        cars = resolve_stock(read_consist(CONSISTS / f"{consist}.con"), SAMPLE_INSTALL)
        _CARS[consist] = [(c.davis_a, c.davis_b, c.davis_c, c.friction0_n, c.merge_speed_ms) for c in cars]
    tot = 0.0
    for a, b, c, f0, vm in _CARS[consist]:
        d = a + b * v + c * v * v
        if f0 and v < vm:
            dm = a + b * vm + c * vm * vm
            d = f0 + (dm - f0) * v / vm
        tot += d
    return tot


def limit_window(limits, route_limit: float, train_length: float):  # noqa: ANN001, ANN201
    """The lowest limit over a train whose front is at ``front`` (the rear's limit
    holds until the rear has passed the post)."""
    steps = sorted(limits)

    def line_limit(s: float) -> float:
        v = route_limit
        for a, lim in steps:
            if s >= a:
                v = min(lim, route_limit)
        return v

    def window(front: float) -> float:
        rear = front - train_length
        pts = [rear, front] + [a for a, _ in steps if rear < a <= front]
        return min(line_limit(p) for p in pts)

    return window


def reference_min_time(
    consist: str,
    length: float,
    grade: float,
    curvature: float,
    limits: list[tuple[float, float]],
    route_limit: float,
    decel: float,
    vcap: float,
    ds: float = 0.25,
) -> tuple[float, float]:
    """Minimum running time (s) and traction energy (kWh) of ``consist`` from standing
    with its rear at 0 to standing with its front 2 m short of ``length``: full
    traction up to the permitted speed (limits over the whole train length, ``vcap``),
    held there, braking at ``decel`` along the braking envelope of every lower limit
    ahead and of the stop. RK4 in distance on w = v²."""
    tr = Train.of(consist)

    def resist(v: float) -> float:
        return resistance(consist, v)

    sin = math.sin(math.atan(grade))
    fixed = tr.mass * g * sin + tr.mass * g * 0.8 * abs(curvature)  # gravity + curve (OSRD)
    steps = sorted(limits)
    window = limit_window(limits, route_limit, tr.length)

    stop = length - 2.0
    targets = [(a, min(v, route_limit)) for a, v in steps] + [(stop, 0.0)]

    def cap(front: float) -> float:
        c = min(window(front), vcap)
        for a, v in targets:
            if a >= front:
                c = min(c, math.sqrt(v * v + 2 * decel * (a - front)))
        return c

    def accel(v: float) -> float:
        return (tr.traction(v) - resist(v) - fixed) / tr.inertia

    s = tr.length
    w = 0.0
    t = 0.0
    energy = 0.0
    while s < stop - 1e-9:
        h = min(ds, stop - s)
        v0 = math.sqrt(max(w, 0.0))
        c_next = cap(s + h)

        def f(w_: float) -> float:
            return 2.0 * accel(math.sqrt(max(w_, 0.0)))

        k1 = f(w)
        k2 = f(w + h / 2 * k1)
        k3 = f(w + h / 2 * k2)
        k4 = f(w + h * k3)
        w1 = w + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        v1 = min(math.sqrt(max(w1, 0.0)), c_next)
        # traction work: what full traction did, or what holding the cap took
        if v1 < math.sqrt(max(w1, 0.0)) - 1e-12:
            need = tr.inertia * (v1 * v1 - v0 * v0) / (2 * h) + resist(0.5 * (v0 + v1)) + fixed
            energy += max(min(need, tr.traction(0.5 * (v0 + v1))), 0.0) * h
        else:
            energy += tr.traction(0.5 * (v0 + v1)) * h
        if v0 + v1 > 0:
            t += 2 * h / (v0 + v1)
        w = v1 * v1
        s += h
    return t, energy / 3.6e6


def run_replay(
    consist: str, line: TrackLine, *, dt: float = 0.1, mode: str = "deceleration", decel: float = 0.5, **spec
) -> tuple[dict, Replay]:
    sc = Scenario(
        SAMPLE_ROUTE,
        (
            TrainSpec(
                name="t",
                consist=CONSISTS / f"{consist}.con",
                path=Path("x"),
                brake_mode=mode,
                deceleration=decel,
                **spec,
            ),
        ),
        step=dt,
        duration=3000,
    )
    rep = Replay(sc, lines={"t": line}, trace_every=1.0)
    res = rep.run()
    rep.trace = res.traces["t"]  # type: ignore[attr-defined]
    return res.summary["trains"]["t"], rep


CASES = {
    # name: consist, length, grade, curvature, limits (m, km/h), route limit km/h, cap km/h
    "flat": ("sample_freight", 6000.0, 0.0, 0.0, [], 100.0, 120.0),
    "uphill 1 %": ("sample_freight", 5000.0, 0.01, 0.0, [], 80.0, 120.0),
    "downhill 1 %": ("sample_freight", 5000.0, -0.01, 0.0, [], 80.0, 120.0),
    "curve R 600": ("sample_freight", 5000.0, 0.0, 1 / 600, [], 100.0, 120.0),
    "multi-limit": (
        "sample_freight",
        7000.0,
        0.0,
        0.0,
        [(2000.0, 60.0), (3000.0, 100.0), (5200.0, 40.0), (5600.0, 90.0)],
        110.0,
        120.0,
    ),
    "passenger multi-limit": (
        "sample_passenger",
        8000.0,
        0.004,
        0.0,
        [(1500.0, 160.0), (4000.0, 80.0), (4600.0, 140.0)],
        120.0,
        200.0,
    ),
}


def min_time_case(name: str, dt: float = 0.1) -> tuple[float, float, dict]:
    consist, length, grade, curv, limits, route, cap = CASES[name]
    lim = [(a, v * KMH) for a, v in limits]
    line = TrackLine.synthetic(
        length, grade=grade, curvature=curv, route_limit=route * KMH, limits=tuple(lim)
    )
    s, rep = run_replay(consist, line, dt=dt)
    assert s["finished"] and not s["derailed"]
    vcap = float(np.nanmin(np.where(rep.model.is_engine, rep.model.max_velocity, np.nan)))
    ref, energy = reference_min_time(
        consist, length, grade, curv, lim, route * KMH, 0.5, min(vcap, cap * KMH)
    )
    return ref, s["running_time_s"], s


@pytest.mark.parametrize("name", list(CASES))
def test_minimum_running_time_matches_an_independent_computation(name):
    ref, got, s = min_time_case(name)
    assert abs(got - ref) / ref < 0.005, (name, ref, got)


def test_the_driver_holds_the_limit_not_below_it():
    line = TrackLine.synthetic(6000.0, route_limit=70 * KMH)
    s, rep = run_replay("sample_freight", line)
    tr = rep.trains[0]
    speed = rep.trace["speed"]
    dist = rep.trace["distance"] + tr.front0
    first = int(np.argmax(speed >= 70 * KMH - 0.01))
    assert 0 < first and dist[first] < 4500
    cruise = speed[first:][dist[first:] < 5400]  # braking for the end starts after 5600 m
    assert len(cruise) > 30
    assert cruise.min() > 70 * KMH - 0.05 and cruise.max() <= 70 * KMH + 1e-6
    assert s["max_speed_kmh"] <= 70.0 + 1e-6


def test_a_limit_holds_until_the_rear_has_passed():
    line = TrackLine.synthetic(
        5000.0, route_limit=100 * KMH, limits=((1000.0, 50 * KMH), (2000.0, 100 * KMH))
    )
    s, rep = run_replay("sample_freight", line)
    tr = rep.trains[0]
    rows = np.stack([rep.trace["distance"] + tr.front0, rep.trace["speed"]], axis=1)
    length = tr.length
    # Between the front passing 1000 m and the rear passing 2000 m: at most 50 km/h.
    inside = rows[(rows[:, 0] >= 1000.0) & (rows[:, 0] - length <= 2000.0)]
    assert len(inside) > 10 and inside[:, 1].max() <= 50 * KMH + 1e-6
    # and the train does get faster once the rear is past
    after = rows[rows[:, 0] - length > 2300.0]
    assert after[:, 1].max() > 60 * KMH


# -- braking --------------------------------------------------------------------------------


def brake_run(mode: str, v0: float, *, build_up: float | None = None, decel: float = 0.5, dt: float = 0.1):
    line = TrackLine.synthetic(8000.0, route_limit=200 * KMH)
    spec = dict(driver="schedule", schedule=(Command(0.0, 0.0, 1.0),), start_speed=v0)
    if build_up is not None:
        spec["brake_build_up"] = build_up
    s, rep = run_replay("sample_passenger", line, dt=dt, mode=mode, decel=decel, **spec)
    speed = rep.trace["speed"]
    dist = rep.trace["distance"]
    stop = int(np.argmax(speed <= 1e-9))
    return dist[stop], rep


def test_braking_distance_in_deceleration_mode_is_v2_over_2a():
    v0 = 100 * KMH
    d, _rep = brake_run("deceleration", v0, decel=0.7)
    assert d == pytest.approx(v0 * v0 / (2 * 0.7), rel=0.005)


def test_braking_distance_in_force_mode_with_build_up():
    """Force mode: brake force = fraction × MaxBrakeForce, built up linearly over T.
    Reference: RK4 in time of  M·dv/dt = −(B·min(t/T, 1) + R(v))."""
    v0, T = 100 * KMH, 4.0
    d, rep = brake_run("force", v0, build_up=T)
    tr = Train.of("sample_passenger")

    def acc(t, v):
        return -(tr.max_brake * min(t / T, 1.0) + resistance("sample_passenger", v)) / tr.inertia

    t, v, x, h = 0.0, v0, 0.0, 0.01
    while v > 0:
        k1 = acc(t, v)
        k2 = acc(t + h / 2, v + h / 2 * k1)
        k3 = acc(t + h / 2, v + h / 2 * k2)
        k4 = acc(t + h, v + h * k3)
        dv = h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if v + dv <= 0:
            x += v * v / (-2 * k1)
            break
        x += h * (v + 0.5 * dv)
        v += dv
        t += h
    assert d == pytest.approx(x, rel=0.01)
    # Closed form without resistance, as a bound: a build-up of T adds about v0·T/2.
    a = tr.max_brake / tr.inertia
    closed = v0 * T / 2 + v0 * v0 / (2 * a) - a * T * T / 24
    assert d < closed and d > 0.8 * closed


def test_brake_mode_changes_the_result():
    d_force, _ = brake_run("force", 80 * KMH, build_up=4.0)
    d_decel, _ = brake_run("deceleration", 80 * KMH)
    assert abs(d_force - d_decel) > 10.0


def test_brake_build_up_lengthens_the_stop():
    quick, _ = brake_run("force", 80 * KMH, build_up=0.0)
    slow, _ = brake_run("force", 80 * KMH, build_up=10.0)
    # a linear build-up over T loses about v0·T/2 of distance
    assert slow - quick == pytest.approx(80 * KMH * 10.0 / 2, rel=0.15)


# -- speed-dependent brake force (ORTSBrakeShoeFriction, docs/physics.md §3.5) -------------------

#: A cast-iron-like brake-shoe curve: km/h, μ (μ falls to 0.37 of its standstill value by 100 km/h).
SHOE_CURVE = ((0.0, 0.49), (8.0, 0.39), (20.0, 0.30), (40.0, 0.25), (80.0, 0.20), (160.0, 0.16))


def install_with_shoe_curve(root: Path) -> Path:
    """A copy of the sample install whose coaches' .wag gives ``SHOE_CURVE``."""
    import shutil

    shutil.copytree(SAMPLE_INSTALL / "TRAINS", root / "TRAINS")
    wag = root / "TRAINS" / "TRAINSET" / "SAMPLE_COACH" / "SAMPLE_BPMZ.wag"
    text = wag.read_text(encoding="utf-16")
    pairs = " ".join(f"{v:g} {mu:g}" for v, mu in SHOE_CURVE)
    text = text.replace(
        "\tMaxBrakeForce ( 50kN )", f"\tMaxBrakeForce ( 50kN )\n\tORTSBrakeShoeFriction ( {pairs} )"
    )
    assert "ORTSBrakeShoeFriction" in text
    wag.write_text(text, encoding="utf-16")
    return root


def shoe_factor(v: float) -> float:
    """μ(v)/μ(0) of SHOE_CURVE clamped to [0.01, 1]: linear between the points and
    beyond the last two (docs/physics.md §3.5)."""
    x = v * 3.6
    pts = SHOE_CURVE
    k = 0
    while k < len(pts) - 2 and x > pts[k + 1][0]:
        k += 1
    (x0, y0), (x1, y1) = pts[k], pts[k + 1]
    mu = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return min(max(mu / pts[0][1], 0.01), 1.0)


def test_brake_shoe_curve_is_read_into_the_replay(tmp_path):
    inst = install_with_shoe_curve(tmp_path)
    cars = resolve_stock(read_consist(inst / "TRAINS" / "CONSISTS" / "sample_passenger.con"), inst)
    coach = cars[1].brake_shoe_friction
    assert coach is not None and cars[0].brake_shoe_friction is None
    assert tuple(zip(coach.speed_kmh, coach.mu, strict=True)) == SHOE_CURVE
    for v in (0.0, 1.0, 5.0, 15.0, 30.0, 50.0, 70.0):
        assert coach.factor(v) == pytest.approx(shoe_factor(v), rel=1e-12)


def test_brake_force_with_a_brake_shoe_curve(tmp_path):
    from tdbtools.physics import forces

    inst = install_with_shoe_curve(tmp_path)
    cars = resolve_stock(read_consist(inst / "TRAINS" / "CONSISTS" / "sample_passenger.con"), inst)
    m = forces.CarModel.from_stock(cars)
    v = np.array([0.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0])
    for speed in v:
        f = forces.brake(m, 0.5, speed)
        want = [
            0.5 * c.max_brake_force_n * (shoe_factor(speed) if c.brake_shoe_friction else 1.0) for c in cars
        ]
        assert f == pytest.approx(want, rel=1e-12)
        assert forces.braking(m, "force", fraction=0.5, v=speed) == pytest.approx(want, rel=1e-12)
        per_car = np.full(len(m), speed)
        assert forces.Prepared(m).max_brake(per_car) == pytest.approx(
            forces.brake(m, 1.0, per_car), rel=1e-12
        )
    assert forces.brake(m, 1.0) == pytest.approx([c.max_brake_force_n for c in cars])  # no speed: standstill
    # the least total over 0…160 km/h is at 160 km/h, where μ is 0.16/0.49 of standstill
    b_eng = cars[0].max_brake_force_n
    b_coach = sum(c.max_brake_force_n for c in cars[1:])
    assert forces.brake_force_floor(m, 160 * KMH) == pytest.approx(b_eng + b_coach * 0.16 / 0.49)
    assert forces.brake_force_floor(m, 40 * KMH) == pytest.approx(b_eng + b_coach * 0.25 / 0.49)
    vs, floors = forces.brake_force_floors(m, 160 * KMH)
    assert vs[0] == 0.0 and vs[-1] == pytest.approx(160 * KMH) and np.all(np.diff(floors) <= 0.0)
    assert np.interp(40 * KMH, vs, floors) == pytest.approx(b_eng + b_coach * 0.25 / 0.49)
    assert floors[0] == pytest.approx(b_eng + b_coach)
    # without curves nothing changes
    plain = forces.CarModel.from_stock(
        resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)
    )
    assert plain.brake_shoe == () and forces.brake_shoe_factor(plain, 30.0) is None
    assert forces.Prepared(plain).max_brake(np.zeros(len(plain))) is None
    assert forces.brake_force_floor(plain, 50.0) == float(plain.max_brake.sum())
    both = forces.CarModel.concat([plain, m])
    assert len(both.brake_shoe) == 2 * len(m) and both.brake_shoe[: len(m)] == (None,) * len(m)
    assert forces.CarModel.concat([plain, plain]).brake_shoe == ()


def test_braking_distance_with_a_brake_shoe_curve_matches_rk4(tmp_path):
    """Full service brake from 120 km/h, no build-up: the coaches' brake force falls with
    the speed. Reference: RK4 in time of M·dv/dt = −(B_e + B_c·φ(v) + R(v))."""
    inst = install_with_shoe_curve(tmp_path)
    v0 = 120 * KMH
    line = TrackLine.synthetic(8000.0, route_limit=200 * KMH)
    spec = dict(driver="schedule", schedule=(Command(0.0, 0.0, 1.0),), start_speed=v0, brake_build_up=0.0)
    consist = inst / "TRAINS" / "CONSISTS" / "sample_passenger.con"
    sc = Scenario(
        SAMPLE_ROUTE,
        (TrainSpec(name="t", consist=consist, path=Path("x"), brake_mode="force", **spec),),
        step=0.05,
        duration=300,
    )
    rep = Replay(sc, lines={"t": line}, trace_every=0.05)
    res = rep.run()
    speed, dist = res.traces["t"]["speed"], res.traces["t"]["distance"]
    d = float(dist[int(np.argmax(speed <= 1e-9))])

    cars = resolve_stock(read_consist(consist), inst)
    b_plain = sum(c.max_brake_force_n for c in cars if c.brake_shoe_friction is None)
    b_shoe = sum(c.max_brake_force_n for c in cars if c.brake_shoe_friction is not None)
    tr = Train.of("sample_passenger")

    def acc(v):
        return -(b_plain + b_shoe * shoe_factor(v) + resistance("sample_passenger", v)) / tr.inertia

    v, x, h = v0, 0.0, 0.005
    while v > 0:
        k1 = acc(v)
        k2 = acc(v + h / 2 * k1)
        k3 = acc(v + h / 2 * k2)
        k4 = acc(v + h * k3)
        dv = h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if v + dv <= 0:
            x += v * v / (-2 * k1)
            break
        x += h * (v + 0.5 * dv)
        v += dv
    assert d == pytest.approx(x, rel=0.005)
    # and the curve matters: with constant force the stop is a third shorter
    const = tr.inertia * v0 * v0 / (2 * (b_plain + b_shoe))
    assert d > 1.3 * const


@pytest.mark.parametrize("dt", [0.1, 0.5])
def test_the_driver_stops_and_keeps_limits_with_a_brake_shoe_curve(tmp_path, dt):
    """Force braking with the coaches' friction falling with speed: the automatic driver
    plans each step with the least brake force from its speed down to standstill, so it
    still meets every lower limit and stops at the end; the reference minimum time
    (braking envelope of the same force law, no build-up) is a lower bound it stays
    within 5 % of (measured +2.3 %, docs/running-time.md §3)."""
    inst = install_with_shoe_curve(tmp_path)
    consist = inst / "TRAINS" / "CONSISTS" / "sample_passenger.con"
    limits = [(1500.0, 160 * KMH), (4000.0, 80 * KMH), (4600.0, 140 * KMH)]
    line = TrackLine.synthetic(8000.0, grade=0.004, route_limit=120 * KMH, limits=tuple(limits))
    spec = TrainSpec(name="t", consist=consist, path=Path("x"), brake_mode="force", deceleration=0.8)
    rep = Replay(Scenario(SAMPLE_ROUTE, (spec,), step=dt, duration=3000), lines={"t": line}, trace_every=dt)
    res = rep.run()
    s = res.summary["trains"]["t"]
    assert s["finished"] and not s["derailed"]
    tr = rep.trains[0]
    front = float(rep.engine.x[rep.train_start[0]])
    assert abs(front - (line.path_length - AutoDriver.STOP_SHORT)) < AutoDriver.ARRIVED_WITHIN
    rows = np.stack([res.traces["t"]["distance"] + tr.front0, res.traces["t"]["speed"]], axis=1)

    def line_limit(x: float) -> float:
        v = 120 * KMH
        for a, lim in limits:
            if x >= a:
                v = min(lim, 120 * KMH)
        return v

    def permitted(f: float) -> float:  # the lowest limit over the train
        pts = [f - tr.length, f] + [a for a, _ in limits if f - tr.length < a <= f]
        return min(line_limit(p) for p in pts)

    # The lead car's speed, within 0.5 km/h: when the driver switches from braking to
    # traction for a step, the engine surges against the braked coaches by a few tenths
    # of a km/h (as without a curve: 80.34 km/h past the 80 post, docs/running-time.md §3).
    excess = max(v - permitted(f) for f, v in rows)
    assert excess < 0.5 * KMH, excess * 3.6
    # against the true minimum with this brake force law (upper envelope, no build-up)
    b_eng = sum(c.max_brake_force_n for c in resolve_stock(read_consist(consist), inst) if c.kind == "engine")
    b_shoe = Train.of("sample_passenger").max_brake - b_eng
    ref = reference_min_time_force(line.path_length, 0.004, tuple(limits), 120 * KMH, b_eng, b_shoe)
    got = s["running_time_s"]
    assert ref < got < 1.05 * ref, (ref, got)


@functools.cache
def reference_min_time_force(length, grade, limits, route_limit, b_plain, b_shoe, ds=0.25) -> float:
    """Minimum running time of the sample passenger train when its braking deceleration
    is the force law's at each speed: the envelope of every target is integrated
    backwards from it (RK4 in distance on w = v²), then the run forwards as in
    :func:`reference_min_time`."""
    tr = Train.of("sample_passenger")
    sin = math.sin(math.atan(grade))

    def dec(v: float) -> float:  # braking deceleration with full service brakes
        return (
            b_plain + b_shoe * shoe_factor(v) + resistance("sample_passenger", v) + tr.mass * g * sin
        ) / tr.inertia

    stop = length - 2.0
    targets = [(a, min(v, route_limit)) for a, v in limits] + [(stop, 0.0)]
    n = int(stop / ds) + 2
    env = np.full(n, np.inf)
    for a, vt in targets:
        k = int(a / ds)
        w = vt * vt
        for i in range(k, -1, -1):
            env[i] = min(env[i], math.sqrt(w))
            h = ds

            def f(w_: float) -> float:
                return 2.0 * dec(math.sqrt(max(w_, 0.0)))

            k1 = f(w)
            k2 = f(w + h / 2 * k1)
            k3 = f(w + h / 2 * k2)
            k4 = f(w + h * k3)
            w = w + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if w > (route_limit + 1.0) ** 2:  # above every limit: no longer binding
                break

    window = limit_window(limits, route_limit, tr.length)

    vcap = min(tr.engines[0][2], route_limit)
    s, w, t = tr.length, 0.0, 0.0
    while s < stop - 1e-9:
        h = min(ds, stop - s)
        v0 = math.sqrt(max(w, 0.0))
        i = min(int((s + h) / ds), n - 1)
        c_next = min(window(s + h), vcap, float(env[i]))

        def fw(w_: float) -> float:
            v_ = math.sqrt(max(w_, 0.0))
            return (
                2.0 * (tr.traction(v_) - resistance("sample_passenger", v_) - tr.mass * g * sin) / tr.inertia
            )

        k1 = fw(w)
        k2 = fw(w + h / 2 * k1)
        k3 = fw(w + h / 2 * k2)
        k4 = fw(w + h * k3)
        v1 = min(math.sqrt(max(w + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), 0.0)), c_next)
        if v0 + v1 > 0:
            t += 2 * h / (v0 + v1)
        w = v1 * v1
        s += h
    return t


# -- allowances, waiting points ---------------------------------------------------------------


ALLOWANCE_LINE = dict(route_limit=110 * KMH, limits=((2000.0, 60 * KMH), (3000.0, 100 * KMH)))


@pytest.fixture(scope="module")
def allowance_base():
    """The run without allowance that both modes are measured against (made once)."""
    line = TrackLine.synthetic(5000.0, **ALLOWANCE_LINE)
    return line, run_replay("sample_freight", line)[0]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["linear", "eco"])
def test_allowance_is_met_and_eco_saves_energy(mode, allowance_base):
    line, base = allowance_base
    s, _ = run_replay("sample_freight", line, allowance=6.0, allowance_min_per_100km=3.0, allowance_mode=mode)
    target = base["running_time_s"] * 1.06 + 3.0 * 60 * (5000.0 - 2.0 - base["length_m"]) / 100_000
    assert s["running_time_s"] == pytest.approx(target, rel=0.01)
    assert s["allowance"]["mode"] == mode
    if mode == "eco":
        # coasting before the braking points: a fifth less traction energy at least
        assert s["traction_energy_kwh"] < 0.8 * base["traction_energy_kwh"]


def test_waiting_point_stops_the_train_and_waits(tmp_path):
    """A copy of MainWE.pat whose middle point is a waiting point of 30 s."""
    src = (SAMPLE_ROUTE / "PATHS" / "MainWE.pat").read_bytes().decode("utf-16")
    nodes = src.split("TrPathNode (")
    nodes[2] = nodes[2].replace("00000000", "001e0002", 1)  # wait 30 s (0x1e << 16 | 2)
    pat = tmp_path / "Wait.pat"
    pat.write_bytes("TrPathNode (".join(nodes).encode("utf-16"))
    sc = Scenario(
        SAMPLE_ROUTE,
        (
            TrainSpec(
                name="t",
                consist=CONSISTS / "sample_passenger.con",
                path=pat,
                driver="auto",
                max_speed=80 * KMH,
            ),
        ),
        step=0.1,
        duration=600,
    )
    rep = Replay(sc, trace_every=0.5)
    res = rep.run()
    waits = [e for e in res.events if isinstance(e, WaitingAtPoint)]
    departs = [e for e in res.events if isinstance(e, DepartedPoint)]
    assert len(waits) == 1 and len(departs) == 1
    assert departs[0].time - waits[0].time == pytest.approx(30.0, abs=0.11)
    tr = res.traces["t"]
    front = tr["distance"] + rep.trains[0].front0
    at = waits[0].at
    standing = (tr["time"] > waits[0].time + 0.5) & (tr["time"] < departs[0].time - 0.5)
    assert standing.sum() > 50 and np.all(tr["speed"][standing] == 0.0)
    assert np.all(np.abs(front[standing] - at) < 0.6)
    assert res.summary["trains"]["t"]["finished"]


def test_emergency_braking_is_stronger_than_full_service():
    from tdbtools.physics.driver import Controls

    def stop_distance(emergency: bool) -> float:
        line = TrackLine.synthetic(8000.0, route_limit=200 * KMH)
        sc = Scenario(
            SAMPLE_ROUTE,
            (
                TrainSpec(
                    name="t",
                    consist=CONSISTS / "sample_passenger.con",
                    path=Path("x"),
                    driver="schedule",
                    schedule=(Command(0.0, 0.0, 1.0),),
                    start_speed=30.0,
                    brake_build_up=2.0,
                ),
            ),
            step=0.1,
            duration=200,
        )
        rep = Replay(sc, lines={"t": line})
        rep.trains[0].replace_driver(lambda st: Controls(brake=1.0, emergency=emergency))
        x0 = float(rep.engine.x[0])
        while rep.engine.v[0] > 0 and rep.time < 150:
            rep.step()
        return float(rep.engine.x[0]) - x0

    service, emergency = stop_distance(False), stop_distance(True)
    # about 1/1.15 of the braking part of the distance (build-up and resistance aside)
    assert 0.80 * service < emergency < 0.95 * service


@pytest.mark.parametrize("dt", [0.4, 1.0])
def test_large_steps_keep_the_running_time_and_add_no_events(dt):
    ref, got, s = min_time_case("multi-limit", dt=dt)
    assert abs(got - ref) / ref < 0.01
    assert s["events"].get("coupler_taut", 0) <= 20 and "impact" not in s["events"]
    assert s["max_speed_kmh"] <= 110.0 + 1e-6


FREIGHT = "sample_freight"


@pytest.fixture(scope="module")
def freight() -> CarModel:
    cars = resolve_stock(read_consist(CONSISTS / f"{FREIGHT}.con"), SAMPLE_INSTALL)
    return CarModel.from_stock(cars, rotating_mass=True)


def _vmax(model: CarModel) -> float:
    return float(np.nanmin(np.where(model.is_engine, model.max_velocity, np.nan)))


def _driver(model: CarModel, line: TrackLine, *, decel: float = 0.5) -> AutoDriver:
    s, v = line.limits("freight")
    return AutoDriver(
        s,
        v,
        line.length,  # the driver stops the front 2 m short of it
        max_speed=_vmax(model),
        deceleration=decel,
        train_length=model.total_length,
    )


def _plan(model: CarModel, line: TrackLine, **kw):  # noqa: ANN003, ANN202
    return plan(_driver(model, line), model, line, model.total_length, **kw)


CASES_runtime = {
    # name: length (m), grade, curvature, limits (m, km/h), route limit (km/h)
    "flat": (4000.0, 0.0, 0.0, [], 80.0),
    "uphill": (3000.0, 0.01, 0.0, [], 80.0),
    "downhill": (3000.0, -0.01, 0.0, [], 80.0),
    "curve": (3000.0, 0.0, 1 / 300, [], 80.0),
    "limits": (5000.0, 0.0, 0.0, [(1500.0, 40.0), (2500.0, 90.0)], 100.0),
}


def test_allowance_target_is_percent_plus_minutes_per_100_km():
    assert allowance_target(1000.0, 0.0, 0.0, 0.0) == 1000.0
    assert allowance_target(1000.0, 50_000.0, 5.0, 0.0) == pytest.approx(1050.0)
    # 3 min per 100 km over 50 km: 90 s
    assert allowance_target(1000.0, 50_000.0, 0.0, 3.0) == pytest.approx(1090.0, rel=1e-12)
    assert allowance_target(1000.0, 50_000.0, 5.0, 3.0) == pytest.approx(1140.0)


@pytest.mark.parametrize("name", list(CASES_runtime))
def test_plan_matches_the_minimum_time_reference(freight, name):
    length, grade, curv, limits, route = CASES_runtime[name]
    lim = tuple((a, v * KMH) for a, v in limits)
    line = TrackLine.synthetic(length, grade=grade, curvature=curv, route_limit=route * KMH, limits=lim)
    r = _plan(freight, line)
    ref, energy = reference_min_time(
        FREIGHT, length, grade, curv, list(lim), route * KMH, 0.5, _vmax(freight)
    )
    assert r.finished
    # the front stops 2 m short of the end: the planned distance is the run of the front
    assert r.distance == pytest.approx(length - 2.0 - freight.total_length, abs=AutoDriver.ARRIVED_WITHIN)
    # a 0.5 s step on one mass: within 0.5 % of the RK4 minimum time and 1 % of its energy
    # (measured: 0.13 % and 0.25 % at most)
    assert r.time == pytest.approx(ref, rel=0.005), (name, r.time, ref)
    assert r.traction_j / 3.6e6 == pytest.approx(energy, rel=0.01), (name, r.traction_j / 3.6e6, energy)


def test_plan_stops_at_the_time_limit_unfinished(freight):
    line = TrackLine.synthetic(4000.0, route_limit=80 * KMH)
    r = _plan(freight, line, limit_s=30.0)
    assert not r.finished
    assert r.time == pytest.approx(30.0, abs=PLAN_STEP)
    # 30 s from standing: a freight covers well under 300 m (the plan gives the distance
    # run by the front, not where the front is)
    assert 0.0 < r.distance < 300.0


def test_plan_without_adhesion_is_not_slower(freight):
    line = TrackLine.synthetic(3000.0, grade=0.015, route_limit=80 * KMH)
    dry = _plan(freight, line, adhesion="dry")
    wet = _plan(freight, line, adhesion="wet")
    free = _plan(freight, line, adhesion=None)
    assert dry.finished and wet.finished and free.finished
    assert free.time <= dry.time <= wet.time


def test_plan_holds_the_speed_on_a_falling_grade(freight):
    """Downhill at 3 % the train would run away without braking to hold its limit."""
    line = TrackLine.synthetic(4000.0, grade=-0.03, route_limit=50 * KMH)
    r = _plan(freight, line)
    assert r.finished
    run = r.distance
    # never faster than the limit: no quicker than the whole run at 50 km/h
    assert r.time > run / (50 * KMH)


@pytest.mark.parametrize(("mode", "rail"), [("linear", "dry"), ("eco", "wet")])
def test_fit_allowance_meets_the_target(freight, mode, rail):
    line = TrackLine.synthetic(1500.0, route_limit=80 * KMH, limits=((750.0, 40 * KMH),))
    d = _driver(freight, line)
    base = plan(d, freight, line, freight.total_length, adhesion=rail)
    assert (
        base.time
        != plan(d, freight, line, freight.total_length, adhesion="dry" if rail == "wet" else "wet").time
    )
    figures, warnings = fit_allowance(
        d, freight, line, freight.total_length, adhesion=rail, percent=8.0, min_per_100km=3.0, mode=mode
    )
    assert figures is not None and warnings == []
    target = allowance_target(base.time, base.distance, 8.0, 3.0)
    assert figures["minimum_s"] == pytest.approx(base.time, abs=1e-3)
    assert figures["target_s"] == pytest.approx(target, abs=1e-3)
    assert figures["planned_s"] == pytest.approx(target, rel=0.01)
    assert figures["mode"] == mode
    # the driver itself now runs to the allowance
    again = plan(d, freight, line, freight.total_length, adhesion=rail)
    assert again.time == pytest.approx(target, rel=0.01)
    assert figures["planned_s"] == pytest.approx(again.time, abs=1e-3)
    assert figures["planned_traction_kwh"] == pytest.approx(again.traction_j / 3.6e6, abs=1e-4)
    assert figures["minimum_traction_kwh"] == pytest.approx(base.traction_j / 3.6e6, abs=1e-4)
    if mode == "eco":
        assert 0.0 < d.coast_before < 3600.0 and d.speed_factor == 1.0
        assert figures["planned_traction_kwh"] < figures["minimum_traction_kwh"]
    else:
        assert 0.2 < d.speed_factor < 1.0 and d.coast_before == 0.0
        assert math.isclose(figures["speed_factor"], d.speed_factor, abs_tol=1e-4)


def test_fit_allowance_reports_a_train_that_has_nowhere_to_go(freight):
    line = TrackLine.synthetic(1000.0, route_limit=80 * KMH)
    d = _driver(freight, line)
    # the front already at the stop: the plan takes no time, no allowance can be spread
    figures, warnings = fit_allowance(
        d, freight, line, line.length - 2.0, adhesion="dry", percent=5.0, min_per_100km=0.0, mode="linear"
    )
    assert figures is None
    assert warnings == ["allowance: the train does not reach its stop in the plan; no allowance applied"]
    assert d.speed_factor == 1.0


def test_fit_allowance_warns_when_coasting_cannot_meet_it(freight):
    # down 3 %: coasting keeps the train at its limit, the allowance cannot be met
    line = TrackLine.synthetic(1200.0, grade=-0.03, route_limit=60 * KMH)
    d = _driver(freight, line)
    figures, warnings = fit_allowance(
        d, freight, line, freight.total_length, adhesion="dry", percent=50.0, min_per_100km=0.0, mode="eco"
    )
    assert figures is not None
    assert figures["planned_s"] < 0.99 * figures["target_s"]
    assert figures["coast_before"] > 3500.0  # the bisection ran to the top of its bracket
    assert figures["planned_traction_kwh"] < 0.01 * figures["minimum_traction_kwh"]
    assert len(warnings) == 1 and warnings[0].startswith("allowance: coasting alone gives")


def test_eco_allowance_can_coast_for_less_than_a_second():
    """Kills `fit_allowance`'s coasting bracket starting at 1 s: with no allowance asked
    for, the bisection lands on the coasting at which the planned time first grows, which
    for this short passenger run is under a second."""
    cars = resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)
    model = CarModel.from_stock(cars, rotating_mass=True)
    line = TrackLine.synthetic(model.total_length + 300.0, route_limit=120 * KMH)
    s, v = line.limits("passenger")
    d = AutoDriver(s, v, line.length, max_speed=120 * KMH, deceleration=0.5, train_length=model.total_length)
    front0 = model.total_length
    base = plan(d, model, line, front0).time

    def coasting(x: float) -> float:
        trial = copy.deepcopy(d)
        trial.coast_before = x
        return plan(trial, model, line, front0).time

    assert coasting(0.95) > base  # coasting under a second already costs a plan step
    figures, warnings = fit_allowance(
        d, model, line, front0, adhesion="dry", percent=0.0, min_per_100km=0.0, mode="eco"
    )
    assert figures is not None and warnings == []
    x = figures["coast_before"]
    width = 3600.0 / 2**ITERATIONS  # the bracket left by the bisection
    assert 0.0 < x < 1.0
    assert coasting(x - width) == base < coasting(x + width)


def test_allowance_applies_to_a_planned_run_of_one_second():
    """Kills `fit_allowance`'s `base.time <= 1` for `<= 0`: a light engine 0.6 m short
    of its stop, braking at 1.5 m/s², plans a run of exactly one second (two plan
    steps); only a run of no time at all has no allowance."""
    cars = resolve_stock(read_consist(CONSISTS / "sample_double.con"), SAMPLE_INSTALL)
    model = CarModel.from_stock(cars, rotating_mass=True)
    line = TrackLine.synthetic(1000.0, route_limit=120 * KMH)
    s, v = line.limits("freight")
    d = AutoDriver(s, v, line.length, max_speed=120 * KMH, deceleration=1.5, train_length=model.total_length)
    front0 = line.length - AutoDriver.STOP_SHORT - 0.6
    base = plan(d, model, line, front0)
    assert base.finished and base.time == 2 * PLAN_STEP == 1.0
    figures, _ = fit_allowance(
        d, model, line, front0, adhesion="dry", percent=50.0, min_per_100km=0.0, mode="linear"
    )
    assert figures is not None
    assert figures["minimum_s"] == 1.0 and figures["target_s"] == 1.5
