"""The automatic driver's rules, one by one, without the replay (docs/running-time.md §2).

Each test drives :class:`AutoDriver` directly, or with a point mass integrated here (the
traction reaches the speed target at up to ``A_MAX``, the brakes give what the driver
asks at once), so that a wrong look-ahead, tolerance or formula fails in milliseconds.
The numbers are worked out by hand from the formulas of docs/running-time.md §2–§4.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import CONSISTS, sample_scenario
from test_running_time import install_with_shoe_curve

from tdbtools.physics import forces as F
from tdbtools.physics.driver import (
    EMERGENCY_OVER,
    RELEASE_OVER_BUILD_UP,
    AutoDriver,
    Controls,
    DriveState,
    ScheduleDriver,
    Stop,
    Target,
)
from tdbtools.physics.events import DepartedPoint, WaitingAtPoint
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import Command, TrainSpec
from tdbtools.physics.trackline import TrackLine

A_MAX = 0.4  # m/s²: what full traction gives the point mass


def state(front: float, v: float, *, length: float = 100.0, t: float = 0.0, dt: float = 0.1) -> DriveState:
    return DriveState(t, front, v, front, front - length, dt)


def driver(limits=((0.0, 20.0),), stop_at: float | None = 2000.0, decel: float = 0.5, **kw) -> AutoDriver:
    s, v = zip(*limits, strict=True)
    return AutoDriver(
        list(s), list(v), stop_at, max_speed=kw.pop("max_speed", None), deceleration=decel, **kw
    )


def simulate(drv: AutoDriver, *, length: float = 100.0, front: float = 100.0, dt: float = 0.1, t_max=600.0):
    """Run the point mass until the driver finishes; returns rows (t, front, v, controls)."""
    v, t = 0.0, 0.0
    rows = []
    while not drv.finished and t < t_max:
        c = drv(DriveState(t, front - 100.0, v, front, front - length, dt))
        if c.speed_target is not None:
            v1 = min(c.speed_target, v + A_MAX * dt)
        elif c.deceleration > 0.0:
            v1 = max(v - c.deceleration * dt, 0.0)
        else:
            v1 = v  # coasting: no resistance in this model
        rows.append((t, front, v, c))
        front += 0.5 * (v + v1) * dt
        v, t = v1, t + dt
    return rows


# -- records and the schedule driver -------------------------------------------------------


def test_defaults_of_the_records():
    c = Controls()
    assert (c.throttle, c.brake, c.deceleration, c.speed_target, c.emergency) == (0.0, 0.0, 0.0, None, False)
    assert DriveState(1.0, 2.0, 3.0, 4.0, 5.0).dt == 0.1
    assert Target(5.0, 6.0).kind == "limit"
    st = Stop(7.0)
    assert (st.wait, st.kind, st.arrived_at) == (math.inf, "stop", None)
    assert (AutoDriver.STOP_SHORT, AutoDriver.ARRIVED_WITHIN, AutoDriver.STANDING) == (2.0, 0.5, 0.05)
    assert (AutoDriver.ON_CURVE, AutoDriver.CREEP, RELEASE_OVER_BUILD_UP, EMERGENCY_OVER) == (
        0.02,
        0.3,
        1.5,
        2.0,
    )


def test_schedule_driver_takes_a_command_from_its_own_time_on():
    drv = ScheduleDriver((Command(10.0, 0.5, 0.0), Command(20.0, 0.0, 0.7)), "time")
    assert drv(DriveState(9.99, 0.0, 0.0, 0.0, 0.0)) == Controls()
    assert drv(DriveState(10.0, 0.0, 0.0, 0.0, 0.0)) == Controls(0.5, 0.0, 0.0)
    assert drv(DriveState(20.0, 0.0, 0.0, 0.0, 0.0)) == Controls(0.0, 0.7, 0.0)
    assert ScheduleDriver((Command(0.0, 1.0, 0.0),)).by == "time"


# -- construction, stops and targets ---------------------------------------------------------


def test_construction_and_the_end_stop():
    drv = AutoDriver(
        [0, 100],
        [30, 10],
        1000.0,
        max_speed=None,
        deceleration=0.5,
        stops=[Stop(500.0, 5.0), Stop(300.0, 5.0)],
    )
    assert drv.limit_s == [0.0, 100.0] and all(type(x) is float for x in drv.limit_s + drv.limit_v)
    assert drv.max_speed == math.inf and drv.decel == 0.5 and drv.train_length == 0.0
    assert (drv.speed_factor, drv.coast_before, drv.brake_delay, drv.brake_level) == (1.0, 0.0, 0.0, None)
    assert not drv.finished and drv.events == [] and drv.targets == []
    assert [(p.s, p.kind) for p in drv.stops] == [(300.0, "stop"), (500.0, "stop"), (998.0, "end")]
    assert drv.stops[-1].wait == math.inf
    end = drv.stops[-1]
    end.arrived_at = 12.0
    drv.stop_at = 1000.0  # unchanged: the same stop object stays (with its arrival)
    assert drv.stops[-1] is end and drv.stop_at == 1000.0
    drv.stop_at = 400.0  # moved: the end stop goes in order
    assert [(p.s, p.kind) for p in drv.stops] == [(300.0, "stop"), (398.0, "end"), (500.0, "stop")]
    assert drv.stops[1].arrived_at is None
    drv.stop_at = None
    assert [p.kind for p in drv.stops] == ["stop", "stop"] and drv.stop_at is None
    drv.stop_at = None  # None twice: still no end stop
    assert len(drv.stops) == 2
    assert driver(max_speed=25.0).max_speed == 25.0
    assert driver(train_length=80).train_length == 80.0


def test_targets_are_kept_in_order():
    drv = driver()
    drv.add_target(Target(500.0, 5.0))
    drv.add_target(Target(300.0, 8.0))
    drv.add_target(Target(400.0, 6.0))
    assert [t.s for t in drv.targets] == [300.0, 400.0, 500.0]


def test_the_limit_holds_over_the_whole_train():
    drv = driver(limits=((0.0, 30.0), (100.0, 10.0), (200.0, 20.0)))
    assert drv._limit_over(20.0, 99.9) == 30.0
    assert drv._limit_over(20.0, 100.0) == 10.0  # the front at the post
    assert drv._limit_over(150.0, 250.0) == 10.0  # the rear not past the 20 km/h post
    assert drv._limit_over(200.0, 250.0) == 20.0
    assert drv._limit_over(-50.0, -10.0) == 30.0  # before the first post: the first limit
    drv.speed_factor = 0.5
    assert drv._limit_over(200.0, 250.0) == 10.0


# -- what the driver must respect ------------------------------------------------------------


def test_constraints_reach_and_selection():
    drv = driver(limits=((0.0, 20.0), (600.0, 10.0), (700.0, 25.0), (800.0, 20.0)), stop_at=5000.0)
    # v = cap = 20, a = 0.5: reach = 400 + 50 + 20·0.1 = 452 m ahead of the front
    cons = drv.constraints(state(150.0, 20.0))
    assert cons == [(20.0, 0.0), (10.0, 450.0), (0.0, 4848.0)]
    cons = drv.constraints(state(149.0, 20.0))  # the 10 post 451 m ahead: in reach
    assert cons[1] == (10.0, 451.0)
    cons = drv.constraints(state(147.0, 20.0))  # 453 m ahead: beyond reach
    assert [c for c in cons if c[1] > 0.0 and c[0] > 0.0] == []
    # reach grows with the speed over the cap, the brake delay and the coasting time
    drv.brake_delay, drv.coast_before = 2.0, 3.0
    assert drv.constraints(state(0.0, 22.0))[1] == (10.0, 600.0)  # 484 + 50 + 22·5.1 = 646.2
    assert len(drv.constraints(state(-60.0, 22.0))) == 2  # 660 m ahead: out of reach
    # A limit ahead equal to or above the cap is no constraint; a stop behind is at 0 m.
    drv = driver(limits=((0.0, 20.0), (300.0, 20.0)), stop_at=150.0)
    assert drv.constraints(state(200.0, 5.0)) == [(20.0, 0.0), (0.0, 0.0)]


def test_constraints_of_targets_and_the_cap():
    drv = driver(stop_at=None, max_speed=15.0)
    drv.add_target(Target(90.0, 3.0))  # behind the front
    drv.add_target(Target(300.0, 5.0))
    drv.add_target(Target(700.0, 4.0))  # beyond the reach of 225 + 50 + 1.5 m
    assert drv.constraints(state(100.0, 15.0)) == [(15.0, 0.0), (5.0, 200.0)]
    assert drv.constraints(state(100.0, 15.0, dt=1.0))[1] == (5.0, 200.0)
    assert drv.constraints(state(400.0, 15.0)) == [(15.0, 0.0)]
    drv.add_target(Target(500.0, 20.0))  # above the cap, still a constraint of its own
    assert (20.0, 100.0) in drv.constraints(state(400.0, 15.0))


# -- the brake model the driver keeps ---------------------------------------------------------


def test_brake_delay_and_build_up_rate():
    drv = driver(decel=0.5)
    assert drv._delay_left() == 0.0  # no build-up
    drv.brake_delay = 2.0
    # rate = a / (2·delay) = 0.125 m/s³; lag (a − b)²/(2·a·r) = 2 s from nothing
    assert drv._build_rate() == pytest.approx(0.125)
    assert drv._delay_left() == pytest.approx(2.0)
    drv.brake_level = 1.0  # the full application: rate = 1 / 4
    assert drv._build_rate() == pytest.approx(0.25)
    assert drv._delay_left() == pytest.approx(1.0)
    drv._applied = 0.3
    assert drv._delay_left() == pytest.approx(0.2 * 0.2 / (2 * 0.5 * 0.25))
    drv._applied = 0.7
    assert drv._delay_left() == 0.0
    drv.brake_level = 0.2  # below the planned deceleration: the planned one sets the rate
    assert drv._build_rate() == pytest.approx(0.125)
    drv.decel = 0.0
    assert drv._delay_left() == 0.0


def test_follow_brakes_builds_up_and_releases_at_its_rates():
    drv = driver(decel=0.5)
    drv._follow_brakes(0.4, 0.1)
    assert drv._applied == 0.4  # no build-up: at once
    drv.brake_delay, drv.brake_level, drv._applied = 2.0, 1.0, 0.0
    drv._follow_brakes(0.8, 0.5)  # up at 0.25 m/s³
    assert drv._applied == pytest.approx(0.125)
    drv._follow_brakes(0.13, 0.5)
    assert drv._applied == pytest.approx(0.13)
    drv._follow_brakes(0.0, 0.3)  # down 1.5 times slower
    assert drv._applied == pytest.approx(0.13 - 0.3 * 0.25 / 1.5)


# -- one step of driving ----------------------------------------------------------------------


def test_below_every_curve_it_asks_for_the_lowest_permitted_speed():
    drv = driver(limits=((0.0, 20.0), (700.0, 10.0)), stop_at=3000.0)
    c = drv(state(100.0, 15.0))
    assert c == Controls(speed_target=20.0)
    # permitted by the 10 m/s post 300 m ahead, checked at the end of the step:
    # √(10² + 2·0.5·(300 − 12·0.1)) = √398.8
    c = drv(state(400.0, 12.0))
    assert c.speed_target == pytest.approx(math.sqrt(398.8))
    assert drv._applied == 0.0


def test_on_the_braking_curve_it_brakes_with_what_the_target_needs():
    drv = driver(limits=((0.0, 20.0), (700.0, 10.0)), stop_at=3000.0)
    # 20 m/s, 300 m before the 10 m/s post: the curve allows √(100 + 298) < 20
    c = drv(state(400.0, 20.0))
    assert c.speed_target is None and not c.emergency
    assert c.deceleration == pytest.approx((400.0 - 100.0) / (2 * 300.0))
    assert drv._applied == pytest.approx(c.deceleration)
    # just under the curve by less than ON_CURVE (0.02 m/s) still counts as on it
    v = math.sqrt(100.0 + 2 * 0.5 * (300.0 - 0.1 * 19.99)) - 0.015
    assert drv(state(400.0, v)).speed_target is None
    v = math.sqrt(100.0 + 2 * 0.5 * (300.0 - 0.1 * 19.99)) - 0.03
    assert drv(state(400.0, v)).speed_target is not None


def test_with_a_brake_delay_it_brakes_earlier_and_harder():
    drv = driver(limits=((0.0, 20.0), (700.0, 10.0)), stop_at=3000.0)
    drv.brake_delay, drv.brake_level = 4.0, 1.0  # lag 2·0.5/1·... = a·T/(2·a_full) = 2 s
    assert drv._delay_left() == pytest.approx(2.0)
    # at 19 m/s, 340 m before the post: √(100 + 340 − 19·2.1) = 20.0 > 19: no braking
    assert drv(state(360.0, 19.0)).speed_target == 20.0
    # 300 m before: √(100 + 300 − 39.9) = 18.98: braking (without the lag, √398.1 = 19.95
    # would still allow 19 m/s)
    c = drv(state(400.0, 19.0))
    assert c.speed_target is None
    # it asks for the deceleration that meets the target once the brakes are up
    room = 300.0 - 19.0 * 2.0
    assert c.deceleration == pytest.approx((19.0**2 - 100.0) / (2 * room))
    drv.brake_delay = 0.0
    assert drv(state(400.0, 19.0)).speed_target == pytest.approx(math.sqrt(398.1))


def test_a_late_target_gets_the_emergency_brake():
    drv = driver(stop_at=None)
    drv.add_target(Target(150.0, 0.0))
    c = drv(state(100.0, 20.0))  # 50 m to stop from 20 m/s: 4 m/s² needed
    assert c.emergency and c.deceleration == pytest.approx(1.5)  # capped at 3·a
    drv = driver(stop_at=None)
    drv.add_target(Target(300.0, 0.0))
    c = drv(state(100.0, 20.0))  # 200 m: 1.0 m/s² = 2·a, not more
    assert not c.emergency and c.deceleration == pytest.approx(1.0)
    drv = driver(stop_at=None)
    drv.add_target(Target(290.0, 0.0))
    c = drv(state(100.0, 20.0))  # 190 m: 1.05 m/s² > 2·a
    assert c.emergency and c.deceleration == pytest.approx(400.0 / 380.0)
    drv = driver(stop_at=None)
    drv.add_target(Target(100.0005, 0.0))  # at the front (< 1 mm): brake hard, no emergency
    c = drv(state(100.0, 5.0))
    assert not c.emergency and c.deceleration == pytest.approx(1.5)


def test_over_the_limit_that_holds_now_it_brakes_down_to_it():
    drv = driver(limits=((0.0, 20.0), (300.0, 10.0)), stop_at=None)
    c = drv(state(350.0, 10.03))  # the front past the post: 0.03 m/s over in one step
    assert c.deceleration == pytest.approx(0.3) and c.speed_target is None and not c.emergency
    c = drv(state(350.0, 12.0))
    assert c.deceleration == pytest.approx(1.5)  # at most 3·a
    c = drv(state(350.0, 10.0000005))  # within 1e-6: held by traction, no braking
    assert c.speed_target == 10.0
    c = drv(state(350.0, 10.5, dt=0.0))  # a zero step counts as 1 ms
    assert c.deceleration == pytest.approx(1.5)


def test_passed_targets_are_dropped():
    drv = driver(stop_at=None)
    drv.add_target(Target(100.0, 5.0))
    drv.add_target(Target(200.0, 5.0))
    drv(state(100.0 + 1e-7, 4.0))  # within 1e-6 of the front: kept
    assert len(drv.targets) == 2
    drv(state(100.1, 4.0))
    assert [t.s for t in drv.targets] == [200.0]


def test_coasting_starts_at_its_time_before_the_braking_point():
    drv = driver(stop_at=None, coast_before=10.0)
    drv.add_target(Target(100.0 + 599.0, 0.0))
    # 20 m/s, a = 0.5: braking point 400 m before the target; coast when it is < 200 m away
    assert drv(state(100.0, 20.0)) == Controls()
    drv = driver(stop_at=None, coast_before=10.0)
    drv.add_target(Target(100.0 + 601.0, 0.0))
    assert drv(state(100.0, 20.0)).speed_target == 20.0
    drv = driver(stop_at=None, coast_before=10.0)
    drv.add_target(Target(100.0 + 599.0, 25.0))  # a higher target: nothing to coast for
    assert drv(state(100.0, 20.0)).speed_target == 20.0
    drv = driver(stop_at=None)  # no coasting time: never
    drv.add_target(Target(100.0 + 450.0, 0.0))
    assert drv(state(100.0, 20.0)).speed_target == 20.0


# -- stops --------------------------------------------------------------------------------------


def test_arrival_needs_standing_within_half_a_metre():
    for front, v, arrived in [
        (997.6, 0.0, True),
        (997.5, 0.0, False),  # exactly 0.5 m short: not yet
        (997.6, 0.049, True),
        (997.6, -0.049, True),
        (997.6, 0.05, False),  # moving at the standing threshold: not yet
        (998.3, 0.0, True),  # past the stop point counts too
    ]:
        drv = driver(stop_at=1000.0)
        c = drv(state(front, v))
        assert drv.finished is arrived, (front, v)
        if arrived:
            assert c == Controls(0.0, 1.0, 0.5) and drv.stops[0].arrived_at == 0.0


def test_a_waiting_point_waits_then_departs():
    drv = driver(stop_at=1000.0, stops=[Stop(500.0, 30.0)])
    c = drv(state(499.8, 0.0, t=10.0))
    assert c == Controls(0.0, 1.0, 0.5) and not drv.finished
    assert drv.events == [WaitingAtPoint(time=10.0, at=500.0, wait=30.0, train="")]
    drv._applied = 0.0
    c = drv(state(499.8, 0.0, t=39.9))  # waiting: the brakes stay on
    assert c == Controls(0.0, 1.0, 0.5) and drv._applied == 0.5 and len(drv.events) == 1
    c = drv(state(499.8, 0.0, t=40.0 - 1e-10))  # the wait is over (to 1e-9 s)
    assert drv.events[-1] == DepartedPoint(time=40.0 - 1e-10, at=500.0, train="")
    assert [p.kind for p in drv.stops] == ["end"] and c.speed_target is not None
    assert not drv.finished


def test_standing_at_the_end_keeps_it_finished():
    drv = driver(stop_at=1000.0)
    drv(state(997.9, 0.0))
    drv.finished = False  # a caller resets it
    drv._applied = 0.0
    c = drv(state(997.9, 0.0, t=100.0))
    assert drv.finished and c == Controls(0.0, 1.0, 0.5) and drv._applied == 0.5
    assert len(drv.stops) == 1 and drv.events == []


# -- whole runs of the point mass ---------------------------------------------------------------


def test_a_run_stops_at_the_end_keeping_every_limit_over_the_train():
    limits = ((0.0, 20.0), (1200.0, 10.0), (1400.0, 18.0))
    drv = driver(limits=limits, stop_at=2600.0, train_length=150.0)
    rows = simulate(drv, length=150.0)
    assert drv.finished
    t_end, front, v, _ = rows[-1]
    assert abs(front - 2598.0) < AutoDriver.ARRIVED_WITHIN and v < AutoDriver.STANDING
    for t, f, v, _c in rows:
        rear = f - 150.0
        lim = 10.0 if (f >= 1200.0 and rear < 1400.0) else (20.0 if f < 1200.0 else 18.0)
        assert v <= lim + 1e-9, (t, f, v)
    # it does run at the limits: 20 m/s before the slow section, 18 after it
    assert max(v for _t, f, v, _c in rows if f < 1000.0) == pytest.approx(20.0)
    assert max(v for _t, f, v, _c in rows if f - 150.0 > 1400.0) == pytest.approx(18.0)
    # the higher limit only once the rear has passed its post
    assert max(v for _t, f, v, _c in rows if 1400.0 < f < 1549.0) <= 10.0 + 1e-9
    # and it brakes just in time: the speed at the 10 m/s post is 10 m/s within a step
    at_post = min(rows, key=lambda r: abs(r[1] - 1200.0))
    assert at_post[2] == pytest.approx(10.0, abs=0.06)


def test_a_run_takes_the_minimum_time():
    """20 m/s limit, 2 km: accelerate at A_MAX, hold, brake at a to 2 m short of the end."""
    drv = driver(stop_at=2100.0)
    rows = simulate(drv)
    v, a = 20.0, 0.5
    dist = 2098.0 - 100.0
    t_min = v / A_MAX + v / a + (dist - v * v / (2 * A_MAX) - v * v / (2 * a)) / v
    assert rows[-1][0] == pytest.approx(t_min, rel=0.005)
    # on the braking curve the driver never asks for more than the planned deceleration
    # (it checks the curve at the end of the step: braking starts neither late nor early)
    asked = [c.deceleration for _t, _f, _v, c in rows if c.speed_target is None and c.deceleration > 0]
    assert len(asked) > 300 and max(asked) < 0.5 * 1.001 and min(asked) > 0.5 * 0.98


def test_a_run_with_a_brake_build_up_stops_at_the_end():
    drv = driver(stop_at=2100.0)
    drv.brake_delay, drv.brake_level = 5.0, 0.6

    v, t, front, dt, applied = 0.0, 0.0, 100.0, 0.1, 0.0
    rate = 0.6 / 10.0  # the brakes build up over 10 s to the full 0.6 m/s²
    while not drv.finished and t < 600.0:
        c = drv(DriveState(t, front - 100.0, v, front, front - 100.0, dt))
        want = c.deceleration if c.speed_target is None else 0.0
        applied += min(max(want - applied, -dt * rate / 1.5), dt * rate)
        if c.speed_target is not None and applied <= 0.0:
            v1 = min(c.speed_target, v + A_MAX * dt)
        else:
            v1 = max(v - applied * dt, 0.0)
        front += 0.5 * (v + v1) * dt
        v, t = v1, t + dt
    assert drv.finished and abs(front - 2098.0) < AutoDriver.ARRIVED_WITHIN
    assert t < 2098.0 / 20.0 + 20.0 / A_MAX + 20.0 / 0.5 + 5.0


# -- boundaries: each of these pins one comparison or constant of the rules above ---------------


def test_schedule_driver_by_distance():
    drv = ScheduleDriver((Command(10.0, 0.5, 0.0), Command(20.0, 0.0, 0.7)), "distance")
    assert drv(DriveState(100.0, 15.0, 0.0, 0.0, 0.0)) == Controls(0.5, 0.0, 0.0)
    assert drv(DriveState(15.0, 9.0, 0.0, 0.0, 0.0)) == Controls()


def test_reach_boundary_and_its_deceleration():
    drv = driver(limits=((0.0, 20.0), (560.0, 10.0)), stop_at=None, decel=0.25)
    drv.add_target(Target(1000.0, 5.0))
    # reach = 20²/(2·0.25) + 50 + 20·0.5 = 860 m: a post or target exactly that far counts
    assert drv.constraints(state(-300.0, 20.0, dt=0.5)) == [(20.0, 0.0), (10.0, 860.0)]
    assert drv.constraints(state(140.0, 20.0, dt=0.5)) == [(20.0, 0.0), (10.0, 420.0), (5.0, 860.0)]
    assert drv.constraints(state(139.0, 20.0, dt=0.5)) == [(20.0, 0.0), (10.0, 421.0)]


def test_limits_ahead_scale_with_the_speed_factor():
    drv = driver(limits=((0.0, 20.0), (300.0, 16.0)), stop_at=None, speed_factor=0.5)
    assert drv.constraints(state(200.0, 10.0)) == [(10.0, 0.0), (8.0, 100.0)]
    drv.speed_factor = 0.9  # 16·0.9 = 14.4 < 18; 16/0.9 would not be
    assert drv.constraints(state(200.0, 10.0)) == [(18.0, 0.0), (pytest.approx(14.4), 100.0)]


def test_a_target_at_the_front_is_a_constraint():
    drv = driver(stop_at=None)
    drv.add_target(Target(100.0, 5.0))
    assert drv.constraints(state(100.0, 4.0)) == [(20.0, 0.0), (5.0, 0.0)]
    drv = driver(stop_at=None)
    drv.add_target(Target(0.0, 5.0))
    drv(state(1e-6, 4.0))  # front − 1e-6 == the target: not passed yet
    assert len(drv.targets) == 1


def test_short_brake_delays_count():
    drv = driver(decel=0.5)
    drv.brake_delay = 0.5  # rate 0.5 m/s³, lag from nothing 0.5 s
    assert drv._delay_left() == pytest.approx(0.5)
    drv._follow_brakes(0.4, 0.1)
    assert drv._applied == pytest.approx(0.05)


def test_the_wait_ends_exactly_on_time():
    drv = driver(stop_at=1000.0, stops=[Stop(500.0, 1.0)])
    drv(state(499.8, 0.0, t=0.0))
    drv(state(499.8, 0.0, t=1.0 - 1e-9))
    assert drv.events[-1].kind == "departed"


def test_departing_from_a_stop_checks_the_next_one_at_once():
    drv = driver(stop_at=500.2, stops=[Stop(498.0, 5.0)])  # the end 0.2 m further on
    drv(state(497.8, 0.0, t=0.0))
    c = drv(state(497.8, 0.0, t=5.0))
    assert drv.finished and c == Controls(0.0, 1.0, 0.5)


def test_permitted_speed_at_low_speed_and_close_range():
    drv = driver(stop_at=None)
    drv.add_target(Target(110.0, 0.2))
    c = drv(state(100.0, 0.5))  # look-ahead 0.05 m, not 0.1
    assert c.speed_target == pytest.approx(math.sqrt(0.04 + 9.95))
    drv = driver(stop_at=None)
    drv.add_target(Target(100.8, 1.0))  # 0.8 m ahead still gives room to brake
    c = drv(state(100.0, 0.2))
    assert c.speed_target == pytest.approx(math.sqrt(1.0 + 0.78))


def test_at_the_cap_a_lower_target_ahead_does_not_brake_yet():
    drv = driver(stop_at=100.0 + 440.0 + 2.0)  # the stop 440 m ahead, in reach, not yet due
    assert drv(state(100.0, 20.0)) == Controls(speed_target=20.0)


def test_a_tie_between_the_cap_and_a_braking_curve_keeps_the_cap():
    drv = driver(limits=((0.0, 20.0), (410.0, 10.0)), stop_at=None)
    # √(10² + 2·0.5·(310 − 20·0.5)) = 20 exactly: no braking yet
    assert drv(state(100.0, 20.0, dt=0.5)) == Controls(speed_target=20.0)


def test_the_on_curve_margin_is_strict():
    drv = driver(limits=((0.0, 30.0), (400.0, 10.0)), stop_at=None)
    # dt = 0: no look-ahead; √(100 + 300) = 20 exactly; 20 − 0.02 is not on the curve
    assert drv(state(100.0, 20.0 - AutoDriver.ON_CURVE, dt=0.0)).speed_target == 20.0


def test_at_a_target_of_its_own_speed_it_holds_it():
    drv = driver(stop_at=None)
    drv.add_target(Target(100.5, 10.0))
    assert drv(state(100.0, 10.0)) == Controls(speed_target=10.0)


def test_braking_room_with_the_lag_at_low_speed():
    def asked(front_gap: float, v: float, decel: float = 0.5, delay: float = 2.0) -> Controls:
        drv = driver(stop_at=None, decel=decel)
        drv.brake_delay = delay
        drv.add_target(Target(front_gap, 0.0))
        return drv(state(0.0, v))

    # lag 2 s; room = 1.2 − 0.5·2 = 0.2 m: 0.25/(2·0.2)
    assert asked(1.2, 0.5).deceleration == pytest.approx(0.625)
    # no room left (0.9 − 1.0 < 0): the most the driver asks, 3·a
    assert asked(0.9, 0.5).deceleration == pytest.approx(1.5)
    # exactly 1 mm left (no lag): too little to divide by; no emergency that close
    c = asked(0.001, 0.01, delay=0.0)
    assert c.deceleration == pytest.approx(1.5) and not c.emergency
    # a planned 1.2 m/s²: 3·a = 3.6 when there is no room
    assert asked(0.0005, 5.0, decel=1.2, delay=0.0).deceleration == pytest.approx(3.6)
    # half a metre to stop from 2 m/s: 4 m/s² needed, emergency
    c = asked(0.5, 2.0, delay=0.0)
    assert c.emergency and c.deceleration == pytest.approx(1.5)


def test_the_over_limit_margin_and_the_brakes_it_follows():
    drv = driver(limits=((0.0, 20.0), (300.0, 10.0)), stop_at=None)
    assert drv(state(350.0, 10.0 + 1e-6)) == Controls(speed_target=10.0)
    drv.brake_delay = 2.0
    c = drv(state(350.0, 10.5))
    assert c.deceleration == pytest.approx(1.5)
    assert drv._applied == pytest.approx(0.1 * 0.125)  # built up for one step at 0.125 m/s³


def test_coasting_boundaries():
    def ctl(gap: float, vk: float, v: float = 20.0, decel: float = 0.5, coast: float = 10.0, **kw):
        drv = driver(stop_at=kw.pop("stop_at", None), coast_before=coast, decel=decel)
        drv.add_target(Target(100.0 + gap, vk))
        return drv(state(100.0, v))

    assert ctl(600.0, 0.0).speed_target == 20.0  # 600 − 400 = 200 m: not less than 20·10
    assert ctl(599.0, 0.0, stop_at=5000.0) == Controls()  # a far stop does not undo it
    assert ctl(600.0, 10.0).speed_target == 20.0  # (400 − 100)/1 = 300: 300 m to spare
    assert ctl(499.0, 10.0) == Controls()
    assert ctl(699.0, 0.0, decel=0.4) == Controls()  # 400/0.8 = 500 m; 199 < 200
    assert ctl(701.0, 0.0, decel=0.4).speed_target == 20.0
    assert ctl(50.0, 10.0, v=10.0).speed_target is not None  # nothing to slow down for
    assert ctl(0.9, 0.9, v=1.0, coast=0.8) == Controls()  # 0.71 m to spare < 0.8 m
    assert ctl(599.0, 0.0, coast=0.8).speed_target == 20.0


def test_the_brake_law_follows_the_speed_when_the_replay_gives_one():
    drv = driver(decel=0.5)
    drv.brake_delay = 2.0
    drv.brakes_at = lambda v: (0.5 - 0.01 * v, 1.0 + 0.1 * v)
    drv(state(100.0, 10.0))
    assert (drv.decel, drv.brake_level) == pytest.approx((0.4, 2.0))
    assert drv._build_rate() == pytest.approx(2.0 / 4.0)
    drv.brakes_at = None
    drv(state(100.0, 5.0))
    assert (drv.decel, drv.brake_level) == pytest.approx((0.4, 2.0))  # kept as last set


@pytest.mark.parametrize("mode", ["force", "deceleration"])
def test_the_driver_holds_its_limit_down_a_falling_grade(mode):
    """Down 2.5 % the freight would run away on its own: the brakes hold it at the limit
    (in force mode they build up over 20 s, so they must be applied before the limit)."""
    from test_running_time import KMH, run_replay

    from tdbtools.physics.trackline import TrackLine

    line = TrackLine.synthetic(2500.0, grade=-0.025, route_limit=40 * KMH)
    s, rep = run_replay("sample_freight", line, mode=mode)
    assert s["finished"] and not s["derailed"]
    # measured: 41.4 km/h at most in force mode (the build-up lags), 40.1 in deceleration
    over = 2.0 if mode == "force" else 0.5
    assert float(np.max(rep.trace["speed"])) < (40 + over) * KMH


def test_force_mode_driver_plans_with_at_most_nine_tenths_of_the_brakes():
    """Asked to plan 1.2 m/s² with brakes that give less on the level, the driver of a
    force-mode freight plans with 90 % of what they give."""
    line = TrackLine.synthetic(3000.0, route_limit=20.0)
    spec = TrainSpec(
        "f", CONSISTS / "sample_freight.con", path=Path("x"), brake_mode="force", deceleration=1.2
    )
    rp = Replay(sample_scenario(spec, duration=1.0), lines={"f": line})
    d = rp.trains[0].driver
    assert 0.0 < 0.9 * d.brake_level < 1.2
    assert d.decel == pytest.approx(0.9 * d.brake_level, rel=1e-12)


def test_force_mode_driver_knows_the_full_braking_with_shoe_curves(tmp_path):
    """With brake-shoe curves the force-mode driver is told, per speed, what full brakes
    give: the brake force at that speed plus the rolling resistance, over the inertia."""
    inst = install_with_shoe_curve(tmp_path)
    line = TrackLine.synthetic(3000.0, route_limit=40.0)
    spec = TrainSpec(
        "p", inst / "TRAINS" / "CONSISTS" / "sample_passenger.con", path=Path("x"), brake_mode="force"
    )
    rp = Replay(sample_scenario(spec, duration=1.0), lines={"p": line})
    m, d = rp.trains[0].model, rp.trains[0].driver
    davis0, inertia = float(F.davis(m, 0.0).sum()), float(m.inertial_mass.sum())
    for v in (0.0, 10.0, 30.0):
        _planned, full = d.brakes_at(v)
        assert full == pytest.approx((float(F.brake(m, 1.0, v).sum()) + davis0) / inertia, rel=1e-12)
