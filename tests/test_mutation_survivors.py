"""Fast tests for survivors that docs/mutation.md §5 listed as real gaps: each test
here fails with the mutant it names and passes on the code as it is."""

from __future__ import annotations

import copy

import numpy as np
from helpers import SAMPLE_INSTALL, SAMPLE_ROUTE
from test_running_time import CONSISTS, KMH

from tdbtools.formats.activity import StopItem
from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.physics.activity import Platform, ServiceDriver, Stop
from tdbtools.physics.driver import AutoDriver, DriveState
from tdbtools.physics.events import EndOfLine
from tdbtools.physics.forces import CarModel
from tdbtools.physics.replay import Replay
from tdbtools.physics.runtime import ITERATIONS, PLAN_STEP, fit_allowance, plan
from tdbtools.physics.scenario import scenario_from_text
from tdbtools.physics.trackline import TrackLine


def _main_line_location(s: float):  # noqa: ANN202
    rp = Replay(
        scenario_from_text(
            f'route = "{SAMPLE_ROUTE}"\n[[train]]\nname = "x"\nconsist = "sample_freight"\npath = "MainWE.pat"\n',
            "s.toml",
        )
    )
    return rp.trains[0].line.location(s)


def _start(s: float, backward: bool) -> str:
    loc = _main_line_location(s)
    back = "true" if backward else "false"
    return (
        f"start = {{ tile = [{loc.tile_x}, {loc.tile_z}], pos = [{loc.x!r}, {loc.z!r}], backward = {back} }}"
    )


def test_only_the_train_that_runs_off_its_line_reaches_its_end():
    """Kills `Replay.step`'s `over | ~far_end`: two trains on lines that stop short of a
    track end; when one runs off its line the other, still running, is not at its end."""
    sc = scenario_from_text(
        f'route = "{SAMPLE_ROUTE}"\nstep = 0.1\nduration = 20\n'
        # a long freight creeping east on 600 m of track, far from its end
        '[[train]]\nname = "creeping"\nconsist = "sample_freight"\n'
        f'{_start(300.0, True)}\ndistance = 600\ndriver = "auto"\nmax_speed = "10km/h"\n'
        # an engine at full throttle on 150 m of track further east: off its line in 10 s
        '[[train]]\nname = "runner"\nconsist = "sample_double"\n'
        f"{_start(1100.0, False)}\ndistance = 150\n"
        'driver = "schedule"\nschedule = [ { at = 0, throttle = 1.0, brake = 0.0 } ]\n',
        "s.toml",
    )
    rp = Replay(sc)
    assert [t.line.ends_at_track_end for t in rp.trains] == [False, False]
    res = rp.run()
    ends = [e for e in res.events if isinstance(e, EndOfLine)]
    assert [e.train for e in ends] == ["runner"]
    assert 5.0 < ends[0].time < 20.0
    creeping = rp.trains[0]
    assert creeping.done_at is None and not creeping.derailed


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


def _run_service(d: ServiceDriver, front0: float, length: float, seconds: float, dt: float = 0.5) -> None:
    """A point-mass run of ``d``: ±0.5 m/s² towards the speed it asks for, its
    deceleration when it brakes (enough for the driver's own stopping curve)."""
    s, v, t = front0, 0.0, 0.0
    while t < seconds and not d.finished:
        c = d(DriveState(t, s - front0, v, s, s - length, dt))
        if c.speed_target is not None:
            v = min(c.speed_target, v + 0.5 * dt) if c.speed_target > v else max(c.speed_target, v - 0.5 * dt)
        elif c.deceleration > 0:
            v = max(v - c.deceleration * dt, 0.0)
        else:
            v = max(v - 0.5 * dt, 0.0)
        s += v * dt
        t += dt


def test_a_service_stops_at_each_of_its_stations():
    """Kills `ServiceDriver`'s `next_stop += 2`: three booked stops on one line are all
    called at, in order, and the service then runs on to its path's end."""
    platform = Platform((1, 2), "P", "Station", 1, 0.0, 100.0, 20, 0)
    stops = [Stop(platform, StopItem(1), s) for s in (400.0, 800.0, 1200.0)]
    line_s, line_v = np.array([0.0]), np.array([15.0])
    auto = AutoDriver(line_s, line_v, 2000.0, max_speed=15.0, deceleration=0.5, train_length=50.0)
    d = ServiceDriver("svc", auto, 0.0, 0.0, stops, 1600.0, 1, True, None, None)
    d.state = "running"  # the dispatcher's part: put it on the track with authority
    _run_service(d, 50.0, 50.0, 3600.0)
    assert d.finished and d.state == "done"
    arrivals = [st.arrival for st in stops]
    assert all(a is not None for a in arrivals), arrivals
    departs = [st.depart for st in stops]
    assert all(p is not None for p in departs), departs
    assert arrivals[0] < departs[0] < arrivals[1] < departs[1] < arrivals[2] < departs[2]
    assert all(p - a >= 20.0 for a, p in zip(arrivals, departs, strict=True))  # the platform's wait
