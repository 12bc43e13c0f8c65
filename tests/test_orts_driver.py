"""The automatic driver under the Open Rails profile's brakes (docs/physics.md §7.9): the
level it asks for against an independent integration of a linear build-up, the friction
gain against the integral it stands for, the pipe reduction from the reservoirs as they
are against the valve model, and stops of light and heavy trains, fast and slow, on the
sample route within the stated tolerance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats.stock import read_stock
from tdbtools.physics.driver import AutoDriver

D = Path(__file__).parent / "data" / "orts_stock"


def _driver(applied: float, lag: float, level: float, decel: float = 0.5) -> AutoDriver:
    d = AutoDriver([0.0], [100.0], None, max_speed=None, deceleration=decel)
    d.brake_delay, d.brake_level, d._applied = lag, level, applied
    d.lap_brakes = True
    return d


def _distance_with_build_up(v: float, b: float, x: float, r: float, vk: float, dt: float = 1e-3) -> float:
    """Metres to come down from v to vk with a deceleration rising from b at r (m/s³)
    up to x, then held (explicit midpoint steps: an integrator of its own)."""
    s, a = 0.0, b
    while v > vk:
        a_next = min(a + r * dt, x) if x > a else a
        am = 0.5 * (a + a_next)
        nv = v - am * dt
        if nv <= vk:
            s += (v * v - vk * vk) / (2.0 * am)
            break
        s += 0.5 * (v + nv) * dt
        v, a = nv, a_next
    return s


@pytest.mark.parametrize(
    ("v", "b", "d", "vk"), [(22.0, 0.0, 1500.0, 0.0), (20.0, 0.1, 900.0, 0.0), (15.0, 0.1, 500.0, 5.0)]
)
def test_build_to_stops_within_the_distance(v, b, d, vk):
    """The level asked for, built up linearly from b at r and then held, brings the train
    down to vk in d m (an independent integration of the build-up, not the closed form
    the driver uses); with brakes that already do it, the mean need (v² − vk²)/2d."""
    lag, level = 35.6, 0.93
    drv = _driver(b, lag, level)
    r = level / (2.0 * lag)
    x = drv._build_to(v, vk, d)
    assert x > b
    assert _distance_with_build_up(v, b, x, r, vk) == pytest.approx(d, rel=1e-3)
    strong = _driver(0.6, lag, level)
    assert strong._build_to(v, vk, d) == pytest.approx((v * v - vk * vk) / (2.0 * d))
    # no level makes it: 3× the planned deceleration
    assert _driver(0.0, lag, level)._build_to(30.0, 0.0, 50.0) == pytest.approx(1.5)


def test_lap_need_keeps_laps_and_releases():
    """Under its curve with the brakes applied, the driver keeps them while they would
    stop it no earlier than ARRIVED_WITHIN + v·b/(2r) before the target (asking for no
    more than they give: a lap), asks for more when they would not stop it in time, and
    releases (0) when they would stop it well short."""
    lag, level = 35.6, 0.93
    r = level / (2.0 * lag)
    v, b = 10.0, 0.3
    keep = AutoDriver.ARRIVED_WITHIN + v * b / (2.0 * r)
    stop_at = v * v / (2.0 * b)  # where the brakes as they are stop it
    drv = _driver(b, lag, level)
    lap = drv._lap_need([(v, 0.0), (0.0, stop_at + 1.0)], v)
    assert 0.0 < lap <= b
    assert drv._lap_need([(0.0, stop_at + keep - 1.0)], v) > 0.0
    assert drv._lap_need([(0.0, stop_at + keep + 1.0)], v) == 0.0
    assert drv._lap_need([(0.0, stop_at - 20.0)], v) > b  # behind: a further reduction
    assert drv._lap_need([(12.0, 50.0)], v) == 0.0  # a higher target needs nothing


def test_stop_gain_is_the_friction_integral():
    """gain(v, vk) = f(v)·∫_vk^v u/f(u) du / ((v² − vk²)/2) against a fine trapezoid of
    the plan's own full-service force; 1 where there is no speed range."""
    from tdbtools.physics.orts.auto_brakes import StopGain, brake_plan

    coach = read_stock(D / "wagons" / "COACH.wag")
    plan = brake_plan([coach, coach])
    m, davis0 = 84e3, 1500.0
    gain = StopGain(plan, davis0, m)
    for v, vk in ((30.0, 0.0), (20.0, 8.0), (5.0, 0.0)):
        u = np.linspace(vk, v, 20001)
        f = (plan.full_forces(u) + davis0) / m
        y = u / f
        integral = float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(u)))
        want = f[-1] * integral / (0.5 * (v * v - vk * vk))
        assert gain(v, vk) == pytest.approx(want, rel=2e-3)
        assert want < 1.0  # the shoes grip more as it slows
    assert gain(10.0, 10.0) == 1.0


def test_reduction_now_leaves_the_cylinder_at_the_wanted_pressure():
    """From reservoirs 7 psi short of the system pressure (a recent release), the
    reduction reduction_now asks for brings the cylinders to the share's pressure through
    the valve model; the reduction counted from a charged train (reduction_for) falls
    short of it by 7·ratio psi."""
    from tdbtools.physics.orts.airbrake import Handle
    from tdbtools.physics.orts.auto_brakes import brake_plan
    from tdbtools.physics.orts.run import _brake_train

    stocks = [read_stock(D / "wagons" / "FREIGHT.wag")] * 5
    plan = brake_plan(stocks)
    share = 0.5
    want = plan.spring + share * plan.full_fraction * (plan.max_cyl - plan.spring)
    for rule in ("now", "for"):
        air, _, _ = _brake_train(stocks)
        air.aux[:] = air.max_psi - 7.0
        air.bp[:] = air.max_psi - 7.0
        if rule == "now":
            red = plan.reduction_now(share, air.max_psi, air.aux, air.cyl)
            assert red == pytest.approx(plan.reduction_for(share) + 7.0)
        else:
            red = plan.reduction_for(share)
        for _ in range(1200):
            air.step(Handle("service", red), 0.1)
        got = air.cyl
        if rule == "now":
            assert got == pytest.approx(want, abs=0.1)
        else:
            assert got == pytest.approx(want - 7.0 * plan.ratio, abs=0.1)


def _consist(tmp_path: Path, engines: int, coaches: int) -> Path:
    lines = ["SIMISA@@@@@@@@@@JINX0D0t______", "", "Train (", '\tTrainCfg ( "t"', '\t\tName ( "t" )']
    uid = 0
    for _ in range(engines):
        lines.append(f"\t\tEngine ( UiD ( {uid} ) EngineData ( sample_el64 SAMPLE_EL ) )")
        uid += 1
    for _ in range(coaches):
        lines.append(f"\t\tWagon ( UiD ( {uid} ) WagonData ( SAMPLE_BPMZ SAMPLE_COACH ) )")
        uid += 1
    lines += ["\t)", ")", ""]
    path = tmp_path / f"t{engines}_{coaches}.con"
    path.write_text("\n".join(lines))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("engines", "coaches", "kmh"),
    [(1, 1, 100), (1, 6, 100), (3, 6, 100), (2, 18, 100), (3, 6, 40)],
    ids=["light-fast", "sample-fast", "heavy-fast", "long-fast", "heavy-slow"],
)
def test_orts_driver_stops_at_the_end(tmp_path, engines, coaches, kmh):
    """Under Open Rails' laws (AirSinglePipe's defaults: the brakes lag ~35 s), 0.5 s
    steps as a timetable runs: the front stands within ORTS_ARRIVED_WITHIN (5 m) before
    its stopping point and at most 0.5 m past it; no derailment."""
    from tdbtools.cli import bundled_sample_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import scenario_from_text
    from tdbtools.physics.stages.setup import ORTS_ARRIVED_WITHIN

    con = _consist(tmp_path, engines, coaches)
    text = (
        f'route = "{bundled_sample_route()}"\nstep = 0.5\nduration = 400\nphysics = "openrails"\n'
        f'[[train]]\nname = "t"\nconsist = "{con}"\npath = "MainWE.pat"\ndriver = "auto"\n'
        f'max_speed = "{kmh}km/h"\n'
    )
    rep = Replay(scenario_from_text(text))
    result = rep.run()
    (t,) = rep.layout.trains
    (stop,) = [p for p in t.auto.stops if p.kind == "end"]
    (s,) = result.summary["trains"].values()
    front = float(rep.layout.engine.x[t.cars.start])
    assert s["finished"] and stop.arrived_at is not None and not s["derailed"]
    assert stop.s - ORTS_ARRIVED_WITHIN <= front <= stop.s + 0.5
    assert s["max_speed_kmh"] > 0.6 * min(kmh, 65.0)


def _sample_forces(cars: int = 4):
    from tdbtools.physics.orts.replay_forces import OrtsTrainForces

    coach = read_stock(D / "wagons" / "COACH.wag")
    stocks = [coach] * cars
    mass = sum(s.mass_kg for s in stocks)
    return OrtsTrainForces([stocks], np.array([0]), [mass], [False]), mass


def test_less_braking_asked_laps_and_never_releases():
    """The automatic driver's handle only makes further reductions while it asks for
    braking: asking for less afterwards laps it (the cylinders keep their pressure; the
    triple valves would release fully if the pipe rose), asking for none releases."""
    from tdbtools.physics.driver import Controls

    f, _ = _sample_forces()
    n = 4
    v, z = np.full(n, 15.0), np.zeros(n)
    for _ in range(200):
        f.forces([Controls(deceleration=0.5)], v, z, z, 0.1)
    cyl = f.brakes[0].air.cyl.copy()
    assert float(cyl.min()) > 10.0
    for _ in range(100):
        f.forces([Controls(deceleration=0.1)], v, z, z, 0.1)
    assert np.all(f.brakes[0].air.cyl >= cyl - 1e-9)
    for _ in range(100):
        f.forces([Controls(speed_target=15.0)], v, z, z, 0.1)
    assert float(f.brakes[0].air.cyl.max()) < 0.5 * float(cyl.min())


def test_the_driver_reads_what_slows_the_train():
    """brakes_now: the brakes, running resistance and the grade per unit of mass (the
    deceleration but for traction), in either direction of travel."""
    from tdbtools.physics.driver import Controls

    f, mass = _sample_forces()
    n = 4
    resist, grav = np.full(n, 500.0), np.full(n, -300.0)  # uphill
    for sign in (1.0, -1.0):
        f.forces([Controls()], np.full(n, sign * 10.0), sign * grav, resist, 0.1)
        assert f.brake_decel_of(0) == pytest.approx((4 * 500.0 + 4 * 300.0) / mass)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGNALS/ACTIVITIES/Crossing.act", "SIGNALS/ACTIVITIES/Turnback.act"])
def test_signalled_sample_activities_under_open_rails_laws(name):
    """Every service reaches its end and makes its booked stops under Open Rails' laws.
    (Turnback stood for ever 0.5–5 m short of its reversal point: the service driver took
    a stop within ORTS_ARRIVED_WITHIN for a train held at a signal short of its target.)"""
    from tdbtools.physics.activity import replay_activity

    root = Path(__file__).resolve().parents[1] / "sample_routes" / "sample" / "ROUTES"
    res = replay_activity(root / name, physics="openrails")
    s = res.replay.summary
    assert s["physics"] == "openrails" and not res.failed
    assert all(t["reached_end"] and not t["derailed"] for t in s["trains"].values())
    assert all(row["actual_arr"] is not None for row in res.timetable)


def _on_line(drv: AutoDriver, v: float, front: float = 0.0):
    from tdbtools.physics.driver import DriveState

    return drv(DriveState(0.0, front, v, front, front - 100.0, 0.5))


def _stopping_driver(d_stop: float, applied: float, braking: bool) -> AutoDriver:
    lag, level = 35.6, 0.93
    drv = AutoDriver(
        [0.0], [40.0], d_stop + AutoDriver.STOP_SHORT, max_speed=None, deceleration=0.5, train_length=100.0
    )
    drv.brake_delay, drv.brake_level = lag, level
    drv.lap_brakes, drv._braking = True, braking
    drv.ARRIVED_WITHIN = 5.0
    drv.brakes_now = lambda: applied
    return drv


def test_the_driver_brakes_with_what_it_reads():
    """Each call the driver takes the brakes it has from brakes_now: with strong brakes
    applied far from the stop it releases (there is time to apply them again); with
    none yet at the same place it keeps braking."""
    v, d = 10.0, 600.0
    c = _on_line(_stopping_driver(d, 0.8, True), v)
    assert c.deceleration == 0.0 and c.speed_target is not None
    c = _on_line(_stopping_driver(d, 0.0, True), v)
    assert c.deceleration > 0.0


def test_under_the_curve_the_driver_laps_rather_than_release():
    """Under its braking curve, with the brakes applied and a stop they only just make,
    the driver keeps braking (a lap: no more than the brakes give); a driver that has
    not braked yet drives on there."""
    v, b = 10.0, 0.3
    stop = v * v / (2.0 * b) + 2.0
    c = _on_line(_stopping_driver(stop, b, True), v)
    assert 0.0 < c.deceleration <= b and c.speed_target is None
    c = _on_line(_stopping_driver(stop, b, False), v)
    assert c.deceleration == 0.0


def test_on_the_curve_it_asks_for_the_level_that_stops_it():
    """On (or over) its braking curve the driver asks for the level whose build-up from
    the brakes it has stops the train at its stopping point (the independent build-up
    integration), not the planned deceleration's need."""
    v, b, d = 20.0, 0.0, 786.0  # just on its curve (the plan's 0.5 m/s² after its lag)
    drv = _stopping_driver(d, b, False)
    c = _on_line(drv, v)
    assert c.deceleration > b
    r = drv.brake_level / (2.0 * drv.brake_delay)
    assert _distance_with_build_up(v, b, c.deceleration, r, 0.0) == pytest.approx(d, rel=1e-3)


@pytest.mark.parametrize(
    ("v", "vk", "b", "x", "r"),
    [
        (20.0, 0.0, 0.0, 0.5, 0.013),
        (5.0, 0.0, 0.0, 1.0, 0.013),
        (15.0, 5.0, 0.2, 0.6, 0.02),
        (10.0, 0.0, 0.4, 0.3, 0.01),
    ],
    ids=["build-then-hold", "stops-while-building", "to-a-lower-speed", "already-above"],
)
def test_ramp_distance_closed_form(v, vk, b, x, r):
    """ramp_distance against the independent integration, in each of its cases: the
    level reached and held, the speed reached during the build-up, a level at or below
    the brakes of the moment (held)."""
    from tdbtools.physics.driver import ramp_distance

    assert ramp_distance(v, vk, b, x, r) == pytest.approx(_distance_with_build_up(v, b, x, r, vk), rel=1e-4)
