"""The allowance planner (``physics/runtime.py``) against the independent minimum-time
reference of ``test_running_time`` and against closed forms: written for the mutation
run of issue 11 (docs/mutation.md), which found the planner covered by slow tests only."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL
from test_running_time import CONSISTS, KMH, reference_min_time

from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.physics.driver import AutoDriver
from tdbtools.physics.forces import CarModel
from tdbtools.physics.runtime import PLAN_STEP, allowance_target, fit_allowance, plan
from tdbtools.physics.trackline import TrackLine

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


def test_allowance_target_is_percent_plus_minutes_per_100_km():
    assert allowance_target(1000.0, 0.0, 0.0, 0.0) == 1000.0
    assert allowance_target(1000.0, 50_000.0, 5.0, 0.0) == pytest.approx(1050.0)
    # 3 min per 100 km over 50 km: 90 s
    assert allowance_target(1000.0, 50_000.0, 0.0, 3.0) == pytest.approx(1090.0, rel=1e-12)
    assert allowance_target(1000.0, 50_000.0, 5.0, 3.0) == pytest.approx(1140.0)


CASES = {
    # name: length (m), grade, curvature, limits (m, km/h), route limit (km/h)
    "flat": (4000.0, 0.0, 0.0, [], 80.0),
    "uphill": (3000.0, 0.01, 0.0, [], 80.0),
    "downhill": (3000.0, -0.01, 0.0, [], 80.0),
    "curve": (3000.0, 0.0, 1 / 300, [], 80.0),
    "limits": (5000.0, 0.0, 0.0, [(1500.0, 40.0), (2500.0, 90.0)], 100.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_plan_matches_the_minimum_time_reference(freight, name):
    length, grade, curv, limits, route = CASES[name]
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
