"""The force laws and the speed-post values, case by case, with values worked out by
hand (docs/running-time.md): what the mutation run showed the other tests leave open."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import CONSISTS
from test_running_time import SHOE_CURVE, install_with_shoe_curve

from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.formats.stock import Stock
from tdbtools.formats.tdb import SpeedPostItem
from tdbtools.physics import forces as F
from tdbtools.physics.driver import DriveState, ScheduleDriver
from tdbtools.physics.engine import Bodies
from tdbtools.physics.scenario import Command
from tdbtools.track.speedposts import SpeedPost, _values, limit_after

G = 9.80665


@pytest.fixture(scope="module")
def model():
    return F.CarModel.from_stock([Stock.generic("engine", "electric"), Stock.generic("wagon", "passenger")])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m: F.gravity(m, [1.0, 2.0, 3.0], 0.0), "elev_front_bogie"),
        (lambda m: F.gravity(m, 0.0, [1.0, 2.0, 3.0]), "elev_rear_bogie"),
        (lambda m: F.gravity_from_grade(m, [0.1, 0.2, 0.3]), "grade"),
        (lambda m: F.davis(m, [1.0, 2.0, 3.0]), "v"),
        (lambda m: F.running_resistance(m, [1.0, 2.0, 3.0]), "v"),
        (lambda m: F.adhesion_limit(m, [1.0, 2.0, 3.0]), "v"),
        (lambda m: F.brake(m, [0.1, 0.2, 0.3]), "fraction"),
        (lambda m: F.brake_for_deceleration(m, [0.1, 0.2, 0.3]), "deceleration"),
        (lambda m: F.brake_for_deceleration(m, 0.5, [1.0, 2.0, 3.0]), "resistance"),
        (lambda m: F.traction(m, [0.1, 0.2, 0.3], 0.0), "throttle"),
        (lambda m: F.traction(m, 1.0, [1.0, 2.0, 3.0]), "v"),
        (lambda m: F.curve_resistance(m, [0.1, 0.2, 0.3]), "curvature"),
        (lambda m: F.braking(m, "deceleration", fraction=[0.1, 0.2, 0.3]), "fraction"),
    ],
)
def test_a_wrong_shape_names_the_argument(model, call, name):
    with pytest.raises(ValueError, match=rf"^{name}: expected one value or 2"):
        call(model)


def test_gravity_of_a_car_standing_on_its_end(model):
    b = model.bogie_spacing
    assert F.gravity(model, b * 3.0, 0.0) == pytest.approx(-model.mass * G)
    assert F.gravity(model, 0.0, b * 3.0) == pytest.approx(model.mass * G)
    assert F.gravity_from_grade(model, -0.02) == pytest.approx(model.mass * G * math.sin(math.atan(0.02)))


def test_adhesion_limit_without_driven_axle_data():
    el = Stock.generic("engine", "electric")
    m = F.CarModel.from_stock([el, Stock.generic("wagon", "freight")])
    bare = F.CarModel(
        **{
            f: getattr(m, f)
            for f in (
                "mass",
                "length",
                "bogie_spacing",
                "davis_a",
                "davis_b",
                "davis_c",
                "max_force",
                "max_power",
                "max_velocity",
                "max_brake",
                "is_engine",
                "flipped",
                "is_passenger",
                "curves",
            )
        }
    )
    mu = 0.161 + 7.5 / (3.6 * 10.0 + 44.0)
    assert F.adhesion_limit(bare, 10.0) == pytest.approx([mu * el.mass_kg * G, 0.0])
    assert F.adhesion_limit(bare, 10.0, "wet") == pytest.approx([0.7 * mu * el.mass_kg * G, 0.0])
    assert list(bare.rho) == [1.0, 1.0]
    six = Stock.generic("engine", "diesel")
    part = F.CarModel.from_stock(
        [type(six)(**{**{s: getattr(six, s) for s in six.__slots__}, "num_axles": 6, "num_drive_axles": 4})]
    )
    assert part.adhesive_mass == pytest.approx([six.mass_kg * 4 / 6])


def test_implicit_taper_for_many_trains_agrees_with_the_scalar_form():
    force = np.array([300e3, 300e3, 0.0, 300e3, 300e3, 300e3, 200e3])
    other = np.array([-5e3, -5e3, -5e3, 50e3, -5e3, -200e3, 0.0])
    inertia = np.full(7, 90e3)
    v = np.array([10.0, 19.99, 19.99, 19.96, 20.5, 19.99, 19.97])
    vmax = np.array([20.0, 20.0, 20.0, 20.0, 20.0, math.nan, 20.0])
    for dt in (0.1, 1.0):
        k = F.implicit_taper(force, other, inertia, v, vmax, dt)
        want = [F.taper_factor(*a, dt) for a in zip(force, other, inertia, v, vmax)]
        assert k == pytest.approx(want, abs=1e-12)
        assert k[0] == 1.0 and k[2] == 1.0 and k[4] == 0.0 and k[5] == 1.0
        assert 0.0 < k[1] < 1.0
    # inside the taper, by hand: inertia·dv/dt = 20·F·(vmax − v − dv) + other
    dv = (-5e3 + 20 * 300e3 * 0.01) / (90e3 / 0.1 + 20 * 300e3)
    assert F.taper_factor(300e3, -5e3, 90e3, 19.99, 20.0, 0.1) == pytest.approx(20 * (0.01 - dv))


def test_braking_modes(model):
    mb = model.max_brake
    assert F.braking(model, "force", fraction=0.4) == pytest.approx(0.4 * mb)
    assert F.brake(model, 1.7) == pytest.approx(mb)
    assert F.brake(model, -1.0) == pytest.approx([0.0, 0.0])
    res = np.array([1000.0, 2000.0])
    got = F.braking(model, "deceleration", fraction=0.5, deceleration=0.8, resistance=res)
    assert got == pytest.approx(model.mass * 0.4 - res)
    assert F.braking(model, "deceleration", fraction=0.0, deceleration=0.8) == pytest.approx([0.0, 0.0])
    assert F.brake_for_deceleration(model, 0.5, 1e9) == pytest.approx([0.0, 0.0])
    assert F.brake_for_deceleration(model, -0.5) == pytest.approx([0.0, 0.0])
    with pytest.raises(ValueError):
        F.braking(model, "sand")
    # what the other forces already do: Davis + curve − gravity along the motion
    opp = F.opposing_resistance(np.array([2.0, -2.0]), [10.0, 10.0], [1.0, 1.0], [5.0, 5.0])
    assert opp == pytest.approx([6.0, 16.0])
    assert F.opposing_resistance(0.0, 10.0, 0.0, -3.0) == pytest.approx(13.0)


def test_running_resistance_without_a_starting_value(model):
    assert F.running_resistance(model, 1.0) == pytest.approx(F.davis(model, 1.0))
    diesel = Stock.generic("engine", "diesel")
    with_f0 = type(diesel)(**{**{s: getattr(diesel, s) for s in diesel.__slots__}, "friction0_n": 4000.0})
    m = F.CarModel.from_stock([with_f0, Stock.generic("wagon", "freight")])
    r = F.running_resistance(m, np.array([0.5, 0.5]))
    vm = with_f0.merge_speed_ms
    dm = with_f0.davis_a + vm * with_f0.davis_b + vm * vm * with_f0.davis_c
    assert r[0] == pytest.approx(4000.0 + (dm - 4000.0) * 0.5 / vm)
    assert r[1] == pytest.approx(F.davis(m, 0.5)[1])  # the wagon has no F0
    assert F.running_resistance(m, -0.5)[0] == pytest.approx(r[0])


def test_openrails_curve_formula_by_hand(model):
    R, e, v = 500.0, 0.1, 15.0
    veq = math.sqrt(G * R * e / 1.435)
    wb = np.array([1.6764, 2.4384])  # the coach is a passenger car
    want = model.mass * 0.5 * (1.435 + wb) / (2 * R) * abs((veq - v) / veq) * 2.0 * 0.5 * G
    got = F.curve_resistance(model, -1 / R, formula="openrails", v=v, superelevation=e)
    assert got == pytest.approx(want)
    flat = F.curve_resistance(model, 1 / R, formula="openrails", v=v)  # no cant: factor 1
    assert flat == pytest.approx(model.mass * 0.5 * (1.435 + wb) / (2 * R) * G)
    wide = F.curve_resistance(model, 1 / R, formula="openrails", wheelbase=3.0, gauge=1.0, mu=0.2)
    assert wide == pytest.approx(model.mass * 0.2 * 4.0 / (2 * R) * G)
    assert F.curve_resistance(model, 0.0, formula="openrails") == pytest.approx([0.0, 0.0])
    assert F.curve_resistance(model, np.nan) == pytest.approx([0.0, 0.0])
    with pytest.raises(ValueError):
        F.curve_resistance(model, 0.01, formula="uic")


def test_speed_post_values_per_category():
    def item(flags, value=80.0):
        return SpeedPostItem(index=0, flags=flags, value=value, angle=0.0)

    assert _values(item(2 | 1 << 7)) == pytest.approx((80 / 3.6, 80 / 3.6))
    assert _values(item(2 | 1 << 5)) == (pytest.approx(80 / 3.6), None)
    assert _values(item(2 | 1 << 6)) == (None, pytest.approx(80 / 3.6))
    assert _values(item(2)) == (None, None)
    assert _values(item(2 | 1 << 5 | 1 << 8, 50.0)) == (pytest.approx(50 * 0.44704), None)
    assert _values(item(3, None)) == (None, None)

    def post(kind, p, f):
        return SpeedPost(1, 10.0, 1, kind, p, f, 0)

    assert post("limit", 10.0, 20.0).value("passenger") == 10.0
    assert post("limit", 10.0, 20.0).value("freight") == 20.0
    assert limit_after(post("limit", 10.0, None), "passenger", 30.0, 50.0) == 10.0
    assert limit_after(post("limit", 10.0, None), "freight", 30.0, 50.0) == 30.0
    assert limit_after(post("resume", None, None), "freight", 30.0, 50.0) == 50.0
    assert limit_after(post("warning", 10.0, 10.0), "passenger", 30.0, 50.0) == 30.0
    assert post("limit", 1.0, 1.0).applies_to(1) and not post("limit", 1.0, 1.0).applies_to(0)


def test_schedule_driver_by_time_and_by_distance():
    cmds = (Command(10.0, 0.5, 0.0), Command(20.0, 0.0, 0.7))
    by_time = ScheduleDriver(cmds, "time")
    by_dist = ScheduleDriver(cmds, "distance")

    def st(t, d):
        return DriveState(t, d, 1.0, d, d - 10.0)

    assert by_time(st(5.0, 15.0)).throttle == 0.0 and by_time(st(5.0, 15.0)).brake == 0.0
    assert by_dist(st(5.0, 15.0)).throttle == 0.5
    c = by_time(st(25.0, 0.0))
    assert (c.throttle, c.brake, c.deceleration, c.speed_target) == (0.0, 0.7, 0.0, None)
    assert by_dist(st(25.0, 0.0)).throttle == 0.0 and by_dist(st(25.0, 0.0)).brake == 0.0


def test_running_resistance_with_its_constants_made_once_is_the_formula():
    """running_resistance keeps a model's starting-resistance constants (F0 with NaN as
    0, davis(v_m) − F0) from its first call: every later call gives the formula's bits."""
    import dataclasses

    diesel = dataclasses.replace(Stock.generic("engine", "diesel"), friction0_n=5000.0, merge_speed_ms=2.0)
    m = F.CarModel.from_stock([diesel, Stock.generic("wagon", "freight"), diesel])
    f0, vm = m.starting_resistance, m.merge_speed
    assert f0 is not None and vm is not None and np.isnan(f0).any() and np.isfinite(f0).any()
    at_merge = m.davis_a + vm * (m.davis_b + vm * m.davis_c)
    rng = np.random.default_rng(3)
    for v in [0.0, 1.0, 1.999, 2.0, -0.5, 30.0, *rng.uniform(-3.0, 3.0, 40)]:
        speed = np.abs(np.full(len(m), v))
        davis = m.davis_a + speed * (m.davis_b + speed * m.davis_c)
        want = np.where(
            np.isfinite(f0) & (speed < vm),
            np.nan_to_num(f0) + (at_merge - np.nan_to_num(f0)) * speed / vm,
            davis,
        )
        assert F.running_resistance(m, v).tobytes() == want.tobytes(), v
    assert (F.running_resistance(m, 0.5) > F.davis(m, 0.5))[0]  # the starting resistance applies


def test_the_planners_piece_lookup_is_the_lines():
    """runtime.plan finds a line's piece with bisect_left on a list: the piece
    TrackLine.grade_at / curvature_at find (searchsorted, side left, clipped)."""
    import bisect

    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route
    from tdbtools.physics.trackline import TrackLine

    line = TrackLine.from_path(load_route(SAMPLE_ROUTE, cache=False), SAMPLE_ROUTE / "PATHS" / "MainEW.pat")
    s1 = line.pieces.s1.tolist()
    assert len(s1) > 5 and len(set(line.pieces.grade.tolist())) > 1
    rng = np.random.default_rng(4)
    L = line.length
    for s in [0.0, *s1, *(np.array(s1) + 1e-9).tolist(), L, L + 50.0, *rng.uniform(0.0, L, 200)]:
        k = min(bisect.bisect_left(s1, s), len(s1) - 1)
        assert line.pieces.grade[k] == line.grade_at(np.array([s]))[0], s
        assert line.pieces.curvature[k] == line.curvature_at(np.array([s]))[0], s


KMH = 1 / 3.6


def test_the_taper_holds_back_any_positive_force_near_the_top_speed():
    """A force of half a newton on one kilogram, 0.01 m/s under the top speed: the taper
    applies to it as to any traction force (the scalar form agrees)."""
    k = F.implicit_taper(
        np.array([0.5]), np.array([0.0]), np.array([1.0]), np.array([19.99]), np.array([20.0]), 0.1
    )
    want = F.taper_factor(0.5, 0.0, 1.0, 19.99, 20.0, 0.1)
    assert 0.0 < want < 1.0
    assert k.tolist() == pytest.approx([want], abs=1e-12)


def test_brake_force_floors_sample_the_brake_shoe_curve_at_its_own_speeds(tmp_path):
    """The floors are exact at the shoe curve's kinks: each table speed below the top is
    one of the speeds returned, with the floor the single-speed function gives there."""
    inst = install_with_shoe_curve(tmp_path)
    cars = resolve_stock(read_consist(inst / "TRAINS" / "CONSISTS" / "sample_passenger.con"), inst)
    m = F.CarModel.from_stock(cars)
    vs, floors = F.brake_force_floors(m, 97 * KMH)  # a grid that misses the kinks
    for kmh, _mu in SHOE_CURVE:
        if kmh < 97:
            i = int(np.argmin(np.abs(vs - kmh * KMH)))
            assert vs[i] == pytest.approx(kmh * KMH, abs=1e-12)
            assert floors[i] == pytest.approx(F.brake_force_floor(m, kmh * KMH), rel=1e-12)


def test_coupler_slack_in_whole_metres_is_stored_as_float():
    b = Bodies(mass=[1000.0, 1000.0], length=[10.0, 10.0], line=[0, 0], coupled=[True, False], slack=[1, 0])
    assert b.slack.dtype == np.float64 and b.slack.tolist() == [1.0, 0.0]


def test_brake_force_floors_without_shoe_curves_are_the_plain_brake_force():
    """Stock without brake-shoe curves: the floor is the MaxBrakeForce sum at every speed."""
    from helpers import SAMPLE_INSTALL

    plain = F.CarModel.from_stock(
        resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)
    )
    assert plain.brake_shoe == ()
    vs, floors = F.brake_force_floors(plain, 30.0)
    assert vs[0] == 0.0 and vs[-1] == 30.0
    assert floors == pytest.approx([float(plain.max_brake.sum())] * len(vs), rel=1e-12)


def test_the_taper_is_worked_out_in_double_precision_from_single_precision_input():
    """Masses given as float32 (as read from a single-precision table) give the factor
    the scalar form gives for the same values, not one rounded to single precision."""
    inertia32 = np.array([12345.678], dtype=np.float32)
    k = F.implicit_taper(
        np.array([3000.0]), np.array([0.0]), inertia32, np.array([19.99]), np.array([20.0]), 0.1
    )
    want = F.taper_factor(3000.0, 0.0, float(inertia32[0]), 19.99, 20.0, 0.1)
    assert 0.0 < want < 1.0
    assert k[0] == pytest.approx(want, rel=1e-13, abs=0.0)


def test_only_a_tender_behind_another_engine_gets_the_trailing_loco_factor():
    """Steam: the lead engine's own tender keeps its air resistance; a tender behind a
    second engine is trailing and gets its factor, as that engine does."""
    import dataclasses

    from helpers import SAMPLE_INSTALL

    eng, coach = resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)[:2]
    tender = dataclasses.replace(coach, wagon_type="Tender", trail_loco_resistance_factor=0.5)
    eng2 = dataclasses.replace(eng, trail_loco_resistance_factor=0.5)
    m = F.CarModel.from_stock([eng, tender, eng2, tender], trailing_loco_factor=True)
    c = tender.davis_c
    assert m.davis_c.tolist() == pytest.approx([eng.davis_c, c, 0.5 * eng.davis_c, 0.5 * c], rel=1e-12)


def test_a_small_standstill_friction_is_used_as_given():
    import dataclasses

    from helpers import SAMPLE_INSTALL

    eng, coach = resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)[:2]
    light = dataclasses.replace(coach, standstill_friction_n=0.5, friction0_n=None)
    m = F.CarModel.from_stock([eng, light])
    assert m.starting_resistance is not None and m.starting_resistance[1] == 0.5


def test_gravity_on_a_car_is_at_most_its_weight():
    """Bogie heights further apart than the bogie spacing (a car on its end): the
    prepared gravity is clipped to ±m·g, as the module function is."""
    from helpers import SAMPLE_INSTALL

    m = F.CarModel.from_stock(resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL))
    n = len(m)
    up = 3.0 * m.bogie_spacing
    want = F.gravity(m, up, np.zeros(n))
    assert want == pytest.approx(-9.80665 * m.mass, rel=1e-3)
    assert F.Prepared(m).gravity(up, np.zeros(n)) == pytest.approx(want, rel=1e-12)
    assert F.Prepared(m).gravity(-up, np.zeros(n)) == pytest.approx(-want, rel=1e-12)
