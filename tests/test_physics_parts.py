"""The physics building blocks: the sampled track line, per-car forces, and the safety
checks (derailments, collisions, side collisions) — closed forms on the sample route,
the real DK24 route when it is present."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24

from tdbtools.formats import load_route
from tdbtools.formats.stock import Stock, TractiveForceCurve, read_stock
from tdbtools.physics.collisions import Occupancy, TrainPosition, collisions, side_collisions
from tdbtools.physics.forces import (
    BrakeMode,
    CarModel,
    G,
    brake,
    brake_for_deceleration,
    braking,
    curve_resistance,
    davis,
    gravity,
    gravity_from_grade,
    opposing_resistance,
    traction,
)
from tdbtools.physics.safety import BogieSet, derailments, throw_switch
from tdbtools.physics.trackline import LineJunction, TrackLine, TrackLineError
from tdbtools.track import Switches, Traveller, resolve_path
from tdbtools.track.paths import Leg, Place, ResolvedPath, Traversal

PATHS = SAMPLE_ROUTE / "PATHS"
STOCK = SAMPLE_INSTALL / "TRAINS" / "TRAINSET"
V_A, J1, V_MAIN, E_EAST = 2, 3, 4, 5
#: E_east (sample_routes/README.md): the end of V_main.
E_EAST_XYZ = (-5630, 15116, -737.632466, 43.467883, 1.366876)
J1_XYZ = (-5631, 15116, 200.0, 42.0, -310.0)


@pytest.fixture(scope="module")
def sample():
    return load_route(SAMPLE_ROUTE, cache=False)


@pytest.fixture(scope="module")
def main_we(sample):
    return resolve_path(sample, PATHS / "MainWE.pat")


@pytest.fixture(scope="module")
def line_we(sample, main_we):
    return TrackLine.from_path(sample, main_we)


@pytest.fixture(scope="module")
def line_ew(sample):
    return TrackLine.from_path(sample, PATHS / "MainEW.pat")


def interior(line: TrackLine) -> np.ndarray:
    """Sample indices that are not on a section boundary (where the pose of a freshly
    placed traveller belongs to the next section)."""
    bounds = np.concatenate([line.pieces.s0, line.pieces.s1])
    d = np.abs(line.s[:, None] - bounds[None, :]).min(axis=1)
    return np.flatnonzero(d > 1e-6)


def check_against_traveller(route, line: TrackLine) -> None:
    idx = interior(line)
    assert len(idx) > 10
    for i in idx:
        t = Traveller(route, int(line.node[i]), float(line.offset[i]), int(line.direction[i]))
        p = t.pose()
        X, _y, Z = p.xyz
        assert abs(p.y - line.y[i]) < 1e-3
        assert abs(X - line.X[i]) < 1e-3 and abs(Z - line.Z[i]) < 1e-3
        assert abs(p.grade - line.grade[i]) < 1e-6
        assert abs(p.curvature - line.curvature[i]) < 1e-9
        assert abs(math.remainder(p.heading - line.heading[i], 2 * math.pi)) < 1e-6


# -- TrackLine --------------------------------------------------------------------------


def test_line_length_and_track_end(sample, main_we, line_we):
    node_len = sample.node_length(V_MAIN)
    last = main_we.legs[-1].traversals[-1]
    assert last.node == V_MAIN
    extension = node_len - last.end  # the path ends 23.6 m before E_east
    assert extension == pytest.approx(23.633, abs=1e-3)
    assert line_we.path_length == pytest.approx(main_we.length, abs=1e-6)
    assert line_we.length == pytest.approx(main_we.length + extension, abs=1e-6)
    assert line_we.ends_at_track_end and not line_we.starts_at_track_end
    node, off, d = line_we.node_offset([line_we.length])
    assert (node[0], d[0]) == (V_MAIN, 1) and off[0] == pytest.approx(node_len, abs=1e-6)
    assert line_we.location(line_we.length).as_tuple() == pytest.approx(E_EAST_XYZ, abs=1e-3)
    # Without the track end the extension would run the full 2000 m.
    short = TrackLine.from_path(sample, main_we, extend=10.0)
    assert short.length == pytest.approx(main_we.length + 10.0, abs=1e-6)
    assert not short.ends_at_track_end
    assert list(line_we.seg_node) == [V_A, V_MAIN]
    assert line_we.junctions == [LineJunction(pytest.approx(main_we.legs[0].length), J1, 0, True)]


def test_line_matches_traveller(sample, line_we, line_ew):
    for line in (line_we, line_ew):
        check_against_traveller(sample, line)
        assert line.s[0] == 0 and line.s[-1] == line.length
        assert np.all(np.diff(line.s) > 0) and np.diff(line.s).max() <= line.step + 1e-9
    # A traveller walking the path: elevation (interpolated) within 1 mm, grade exact.
    sw = Switches(sample, {J1: 0})
    t = Traveller(sample, V_A, float(line_we.offset[0]), 0, switches=sw)
    prev = 0.0
    for s in np.arange(0.7, line_we.length, 3.3):
        assert abs(t.move(s - prev)) < 1e-3
        prev = s
        p = t.pose()
        assert abs(line_we.elevation(s) - p.y) < 1e-3
        assert abs(line_we.at([s], exact=True)["y"][0] - p.y) < 1e-6
        assert abs(line_we.grade_at(s) - p.grade) < 1e-9
        assert abs(line_we.curvature_at(s) - p.curvature) < 1e-12
        X, Z = line_we.world_xz(s)
        assert math.hypot(X - p.xyz[0], Z - p.xyz[2]) < 2e-3


def test_line_speed_limit(line_we, line_ew):
    j = line_we.junctions[0].s
    post = j + 10.0  # the 80 km/h post: V_main at 10 m
    assert line_we.limit(post - 0.01) == pytest.approx(120 / 3.6, rel=1e-6)
    assert line_we.limit(post + 0.01) == pytest.approx(80 / 3.6, rel=1e-9)
    assert list(line_we.limit_s) == pytest.approx([0.0, post])
    assert line_we.speed_limit[0] == pytest.approx(120 / 3.6, rel=1e-6)
    assert line_we.speed_limit[-1] == pytest.approx(80 / 3.6)
    # The post governs eastbound trains only (its angle, Open Rails' rule): westbound
    # trains keep the route limit past it, and meet no limit change at all.
    assert line_ew.limit(line_ew.junctions[0].s - 9.0) == pytest.approx(120 / 3.6, rel=1e-6)
    assert list(line_ew.limit_s) == [0.0]
    # Freight: the post carries a value for both categories (flags bit 7).
    assert line_we.limit(post + 0.01, "freight") == pytest.approx(80 / 3.6, rel=1e-9)


def test_post_direction_follows_the_angle(sample):
    from tdbtools.track.speedposts import post_direction, speed_posts

    posts = [p for ps in speed_posts(sample).values() for p in ps]
    limit = next(p for p in posts if p.kind == "limit")
    assert limit.governs == 1 and limit.passenger == limit.freight == pytest.approx(80 / 3.6)
    it = sample.tdb.items[limit.item_index]
    # Turning the sign round (angle + π) makes it govern the other direction.
    assert post_direction(sample, limit.node, limit.offset, it.angle + math.pi) == 0
    assert post_direction(sample, limit.node, limit.offset, it.angle + 0.4) == 1
    assert post_direction(sample, limit.node, limit.offset, it.angle + math.pi - 0.4) == 0


def test_line_occupancy_across_junction(line_we):
    j = line_we.junctions[0].s
    occ = line_we.occupancy(j - 40.0, j + 60.0)  # a 100 m train over J1
    assert [o[0] for o in occ] == [V_A, V_MAIN]
    assert occ[0][1:] == pytest.approx((40.0, 0.0), abs=1e-5)
    assert occ[1][1:] == pytest.approx((0.0, 60.0), abs=1e-5)
    assert line_we.occupancy(j + 100, j + 200) == [(V_MAIN, pytest.approx(100.0), pytest.approx(200.0))]
    assert line_we.locate(V_MAIN, 50.0) == pytest.approx([j + 50.0])
    assert len(line_we.locate(6, 10.0)) == 0


def test_line_from_point_and_parts(sample, line_we):
    s = 700.0
    loc = line_we.location(s)
    fwd = TrackLine.from_point(sample, loc.tile_x, loc.tile_z, loc.x, loc.z, length=5000.0)
    assert fwd.ends_at_track_end
    assert fwd.length == pytest.approx(line_we.length - s, abs=1e-3)
    back = TrackLine.from_point(sample, loc.tile_x, loc.tile_z, loc.x, loc.z, backward=True, length=100.0)
    assert back.length == pytest.approx(100.0) and not back.ends_at_track_end
    assert back.at([50.0])["y"][0] == pytest.approx(line_we.elevation(s - 50.0), abs=1e-3)
    with pytest.raises(TrackLineError):
        TrackLine.from_point(sample, loc.tile_x, loc.tile_z, loc.x, loc.z, step=0)
    # A path with a reversal is split into parts.
    legs = (
        Leg(0, 1, (Traversal(V_A, 0, 420.0, 100.0),), (), 320.0),
        Leg(1, 2, (Traversal(V_A, 1, 100.0, 300.0),), (), 200.0),
    )
    res = ResolvedPath(
        "synthetic", "rev", (Place(V_A, 420.0), Place(V_A, 100.0), Place(V_A, 300.0)), legs, (1,), 0
    )
    parts = TrackLine.path_parts(sample, res, extend=50.0)
    assert [p.part for p in parts] == [0, 1] and parts[0].parts == 2
    assert [p.path_length for p in parts] == pytest.approx([320.0, 200.0])
    assert parts[1].seg_dir[0] == 1 and parts[1].seg_off0[0] == pytest.approx(100.0)
    assert TrackLine.from_path(sample, res, part=1, extend=50.0).length == pytest.approx(250.0)


# -- forces -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def el64():
    return read_stock(STOCK / "SAMPLE_EL" / "SAMPLE_EL64.eng")


@pytest.fixture(scope="module")
def coach():
    return read_stock(STOCK / "SAMPLE_COACH" / "SAMPLE_BPMZ.wag")


def test_traction_simple(el64, coach):
    m = CarModel.from_stock([el64, coach])
    t = 0.5
    fmax, pmax, vmax = el64.max_force_n, el64.max_power_w, el64.max_velocity_ms
    v_power = pmax * t * t / (fmax * t)  # where the power limit starts
    below = traction(m, t, 0.9 * v_power)
    assert below[0] == fmax * t and below[1] == 0.0
    assert traction(m, t, 0.0)[0] == fmax * t
    for v in (1.1 * v_power, 20.0, 40.0):
        f = traction(m, t, v)[0]
        assert f * v == pytest.approx(pmax * t * t, rel=1e-9)
    assert traction(m, 1.0, vmax + 0.01)[0] == 0.0
    v = vmax - 0.02  # inside the 0.05 m/s taper
    assert traction(m, 1.0, v)[0] == pytest.approx(pmax / v * 20 * 0.02, rel=1e-9)
    assert traction(m, 1.0, -20.0)[0] == traction(m, 1.0, 20.0)[0]
    assert traction(m, 1.0, 20.0, reverser=-1)[0] == -traction(m, 1.0, 20.0)[0]
    assert np.all(traction(m, [1.0, 1.0], [5.0, 5.0])[1:] == 0.0)  # the coach has no motor


def test_traction_effort_curve(el64):
    curve = TractiveForceCurve((0.0, 1.0), (0.0, 10.0, 20.0), ((0.0, 0.0, 0.0), (200e3, 200e3, 100e3)))
    eng = dataclasses.replace(el64, tractive_force_curve=curve)
    m = CarModel.from_stock([eng, Stock.generic("wagon")])
    assert traction(m, 1.0, 15.0)[0] == pytest.approx(150e3, rel=1e-12)
    assert traction(m, 0.5, 15.0)[0] == pytest.approx(75e3, rel=1e-12)
    assert traction(m, 1.0, 5.0)[0] == pytest.approx(200e3, rel=1e-12)
    assert traction(m, 1.0, 50.0)[0] == 0.0  # extrapolated below 0 → clamped
    assert traction(m, 1.0, 15.0)[1] == 0.0


def test_davis_and_defaults(el64, coach):
    diesel = Stock.generic("engine", "diesel")
    m = CarModel.from_stock([el64, coach, diesel])
    # Values worked out by hand, not by the code under test: SAMPLE_EL64.eng gives
    # ORTSDavis A 940 N, B 18.4 N/(m/s), C 5.6 N/(m/s)²; the coach has roller bearings
    # and no Davis values, so (docs/physics.md §3.2) with T = 45 t = 49.6040 short tons and 4
    # axles: A = (1.5·T + 18·4) lbf, B = 0.02·T lbf/mph.
    T = 45000.0 / 907.18474
    a_coach = (1.5 * T + 18 * 4) * 4.4482216152605
    b_coach = 0.02 * T * 4.4482216152605 / 0.44704
    assert a_coach == pytest.approx(651.2464, rel=1e-6) and b_coach == pytest.approx(9.87158, rel=1e-5)
    for v in (0.0, 3.0, -12.5, 40.0):
        f = davis(m, v)
        assert f[0] == pytest.approx(940.0 + 18.4 * abs(v) + 5.6 * v * v, rel=1e-9)
        assert f[1] == pytest.approx(a_coach + b_coach * abs(v) + coach.davis_c * v * v, rel=1e-6)
    assert 0.5 < coach.davis_c < 2.0  # drag × frontal area, a coach-sized value
    assert m.bogie_spacing == pytest.approx([9.9, 19.0, 0.65 * diesel.length_m])
    trail = CarModel.from_stock([el64, coach, diesel], trailing_loco_factor=True)
    assert trail.davis_c == pytest.approx(
        [5.6, coach.davis_c, diesel.davis_c * diesel.trail_loco_resistance_factor]
    )
    assert diesel.trail_loco_resistance_factor != 1.0 or trail.davis_c[2] == m.davis_c[2]


def test_starting_resistance_blends_into_davis():
    from tdbtools.physics.forces import running_resistance

    diesel = dataclasses.replace(Stock.generic("engine", "diesel"), friction0_n=5000.0, merge_speed_ms=2.0)
    m = CarModel.from_stock([diesel])
    at2 = diesel.davis_a + 2.0 * diesel.davis_b + 4.0 * diesel.davis_c
    assert running_resistance(m, 0.0)[0] == pytest.approx(5000.0)
    assert running_resistance(m, 1.0)[0] == pytest.approx(5000.0 + (at2 - 5000.0) / 2)
    assert running_resistance(m, 3.0)[0] == pytest.approx(davis(m, 3.0)[0])
    from tdbtools.physics.forces import Prepared

    for v in (0.0, 0.7, 1.9, 2.5):
        assert Prepared(m).davis(np.array([v]))[0] == pytest.approx(running_resistance(m, v)[0])


def test_adhesion_rotating_mass_and_taper():
    from tdbtools.physics import forces as F

    assert F.adhesion_coefficient(0.0) == pytest.approx(0.161 + 7.5 / 44)
    assert F.adhesion_coefficient(100 / 3.6) == pytest.approx(0.161 + 7.5 / 144)
    assert F.adhesion_coefficient(10.0, "wet") == pytest.approx(0.7 * (0.161 + 7.5 / 80))
    with pytest.raises(ValueError):
        F.adhesion_coefficient(1.0, "icy")
    el = Stock.generic("engine", "electric")
    coach = Stock.generic("wagon", "passenger")
    m = CarModel.from_stock([el, coach], rotating_mass=True)
    assert list(m.rho) == [1.15, 1.05]
    assert m.inertial_mass == pytest.approx([1.15 * el.mass_kg, 1.05 * coach.mass_kg])
    assert list(CarModel.from_stock([el, coach]).rho) == [1.0, 1.0]
    lim = F.adhesion_limit(m, 0.0)
    assert lim[1] == 0.0 and lim[0] == pytest.approx((0.161 + 7.5 / 44) * el.mass_kg * G)
    # The implicit taper never lets a train pass its top speed, whatever the step.
    for dt in (0.01, 0.1, 0.4, 1.0, 5.0):
        for v in (10.0, 19.9, 19.97, 19.999, 20.0):
            k = F.taper_factor(300e3, -5e3, 90e3, v, 20.0, dt)
            assert 0.0 <= k <= 1.0
            assert v + dt * (k * 300e3 - 5e3) / 90e3 <= 20.0 + 1e-9
            assert F.implicit_taper(
                np.array([300e3]), np.array([-5e3]), np.array([90e3]), np.array([v]), np.array([20.0]), dt
            )[0] == pytest.approx(k)
    assert F.taper_factor(300e3, -5e3, 90e3, 5.0, 20.0, 0.1) == 1.0  # far below: no taper
    assert F.taper_factor(300e3, -5e3, 90e3, 19.99, math.nan, 0.1) == 1.0  # no top speed


def test_gravity_and_curves(el64, coach):
    m = CarModel.from_stock([el64, coach])
    b = m.bogie_spacing
    sin1 = math.sin(math.atan(0.01))  # a 1 % grade (rise per horizontal metre)
    assert sin1 == pytest.approx(0.01 / math.sqrt(1.0001), rel=1e-15)
    assert sin1 == pytest.approx(0.0099995000375, abs=1e-14)
    f = gravity(m, 100.0 + b * sin1, [100.0, 100.0])  # uphill towards the car front
    assert f == pytest.approx(-m.mass * G * 0.0099995000375, rel=1e-11)
    assert gravity(m, 100.0, 100.0 + b * sin1) == pytest.approx(-f, rel=1e-12)
    assert gravity_from_grade(m, 0.01) == pytest.approx(f, rel=1e-12)
    # Seed 004: R = 800 m adds 800/800 = 1 ‰ = 0.1 % to the grade.
    c = curve_resistance(m, 1 / 800)
    assert c == pytest.approx(m.mass * G * 0.001, rel=1e-12)
    assert curve_resistance(m, -1 / 800) == pytest.approx(c)
    assert np.all(curve_resistance(m, 0.0) == 0.0)
    orc = curve_resistance(m, 1 / 800, formula="openrails")
    wb = np.array([1.6764, 2.4384])  # engine, passenger coach
    assert orc == pytest.approx(m.mass * 0.5 * (1.435 + wb) / 1600 * 2.0 * 0.5 * G, rel=1e-12)
    veq = math.sqrt(G * 800 * 0.1 / 1.435)
    fast = curve_resistance(m, 1 / 800, formula="openrails", v=veq, superelevation=0.1)
    assert fast == pytest.approx([0.0, 0.0], abs=1e-6)
    with pytest.raises(ValueError):
        curve_resistance(m, 1 / 800, formula="other")


def test_braking_modes(el64, coach):
    m = CarModel.from_stock([el64, coach])
    assert brake(m, 0.3) == pytest.approx(0.3 * m.max_brake)
    assert np.all(brake(m, 2.0) == m.max_brake) and np.all(brake(m, -1.0) == 0.0)
    assert braking(m, "force", fraction=0.5) == pytest.approx(0.5 * m.max_brake)
    # Constant deceleration: brake + other resistances = m·a_b.
    v = 20.0
    grav = gravity_from_grade(m, -0.005)  # downhill: gravity pushes forward
    res = opposing_resistance(v, davis(m, v), curve_resistance(m, 1 / 500), grav)
    assert res == pytest.approx(davis(m, v) + curve_resistance(m, 1 / 500) - grav)
    fb = braking(m, BrakeMode.DECELERATION, deceleration=0.6, resistance=res)
    assert (fb + res) / m.mass == pytest.approx([0.6, 0.6], rel=1e-12)
    assert brake_for_deceleration(m, 0.001, resistance=1e9) == pytest.approx([0.0, 0.0])
    assert np.all(braking(m, "deceleration", fraction=0.0, resistance=res) == 0.0)
    with pytest.raises(ValueError):
        braking(m, "hourly")


# -- safety ------------------------------------------------------------------------------


def test_derailment_at_track_end(sample, line_we, main_we):
    lengths, spacing = np.array([20.0, 20.0]), np.array([13.0, 13.0])
    front = line_we.length - 5.0
    bs = BogieSet("A", line_we, [front, front - 20.5], lengths, spacing)
    assert bs.bogies[0] == pytest.approx([front - 3.5, front - 16.5])
    assert bs.move(3.0, 1.0) == []  # front bogie 0.5 m short of the end
    ev = bs.move(7.0, 2.0)  # 6.5 m beyond it now
    assert len(ev) == 1
    e = ev[0]
    assert (e.kind, e.time, e.train, e.cars, e.node) == ("derailment", 2.0, "A", (0,), V_MAIN)
    assert e.location.as_tuple() == pytest.approx(E_EAST_XYZ, abs=1e-3)
    assert derailments([bs], 3.0) == []  # reported once
    # The same on a line that just stops sampling there is not a derailment.
    short = TrackLine.from_path(sample, main_we, extend=10.0)
    bs2 = BogieSet("B", short, short.length, 20.0, 13.0)
    assert bs2.move(10.0, 1.0) == [] and list(bs2.beyond_line()) == [0]


def test_switch_thrown_under_car(line_we, el64, coach):
    j = line_we.junctions[0].s
    model = CarModel.from_stock([el64, coach])
    straddle = BogieSet.from_model("A", line_we, [j + 40.0, j + 40.0 - 19.0], model)
    # Car 1 (26.4 m coach, bogies 19 m apart) has its front bogie at j + 18.3 and the rear
    # bogie at j − 0.7: it straddles J1; the locomotive is past it.
    assert list(straddle.straddling(j)) == [1]
    ahead = BogieSet("B", line_we, [j - 200.0], [20.0], [13.0])
    past = BogieSet("C", line_we, [j + 300.0], [20.0], [13.0])
    assert throw_switch([straddle, ahead, past], J1, 0, 5.0) == []  # no change
    ev = throw_switch([straddle, ahead, past], J1, 1, 5.0)
    kinds = {(e.train, e.kind) for e in ev}
    assert kinds == {("A", "derailment"), ("B", "path_changed")}
    d = next(e for e in ev if e.kind == "derailment")
    assert d.cars == (1,) and d.node == J1 and d.time == 5.0
    assert d.location.as_tuple() == pytest.approx(J1_XYZ, abs=1e-3)
    # Re-synchronising only when all bogies are on one node.
    assert not straddle.on_one_node()
    assert straddle.resync([j + 40.0, j + 21.0]) is False
    assert past.on_one_node() and past.resync([j + 300.5]) is True
    assert past.front[0] == pytest.approx(j + 300.5 - 3.5)


def test_collision_between_lines(line_we, line_ew):
    j_we, j_ew = line_we.junctions[0].s, line_ew.junctions[0].s
    # A eastbound on V_main [380, 480]; B westbound on V_main [450, 550].
    a = TrainPosition("A", line_we, [j_we + 480.0, j_we + 430.0], [50.0, 50.0], speed=10.0)
    b = TrainPosition("B", line_ew, [j_ew - 450.0], [100.0], speed=5.0)
    assert a.intervals() == [(V_MAIN, pytest.approx(380.0), pytest.approx(480.0))]
    assert b.intervals() == [(V_MAIN, pytest.approx(550.0), pytest.approx(450.0))]
    ev = collisions([a, b], 7.0)
    assert len(ev) == 1
    e = ev[0]
    assert (e.kind, e.train, e.other_train, e.cars, e.other_cars, e.node) == (
        "collision",
        "A",
        "B",
        (0,),
        (0,),
        V_MAIN,
    )
    assert e.closing_speed == pytest.approx(15.0)
    assert e.location.as_tuple() == pytest.approx(line_we.location(j_we + 465.0).as_tuple(), abs=1e-6)
    apart = TrainPosition("B", line_ew, [j_ew - 500.0], [100.0], speed=5.0)
    assert collisions([a, apart], 7.0) == []
    same = TrainPosition("B", line_we, [j_we + 560.0], [100.0], speed=5.0)
    assert collisions([a, same], 7.0) == []  # one line: the 1-D engine's job
    occ = Occupancy([a, b])
    assert len(occ.collisions(7.0)) == 1 and occ.collisions(7.1) == []  # new contacts only
    assert set(occ.by_node()) == {V_MAIN}


def _parallel(line: TrackLine, lateral: float) -> TrackLine:
    """The same line moved ``lateral`` metres to the right (a parallel track)."""
    h = line._heading_u
    return dataclasses.replace(line, X=line.X + lateral * np.cos(h), Z=line.Z - lateral * np.sin(h))


def test_side_collisions(line_we):
    s = 300.0  # on V_a's long straight
    a = TrainPosition("A", line_we, [s, s - 20.5], [20.0, 20.0], speed=10.0)
    near = _parallel(line_we, 3.0)
    b = TrainPosition("B", near, [s + 10.0], [20.0], speed=0.0)
    ev = side_collisions([a, b], 4.0)
    assert len(ev) == 1
    e = ev[0]
    assert (e.kind, e.train, e.other_train, e.cars, e.other_cars) == ("side_collision", "A", "B", (0,), (0,))
    assert e.node == V_A and e.closing_speed == pytest.approx(10.0)
    far = TrainPosition("B", _parallel(line_we, 5.0), [s + 10.0], [20.0])
    assert side_collisions([a, far], 4.0) == []
    # Its rear 1 m ahead of A's front: the ends are 3.16 m apart, but no longitudinal overlap.
    behind = TrainPosition("B", near, [s + 21.0], [20.0])
    assert side_collisions([a, behind], 4.0) == []
    same = TrainPosition("B", near, [s + 10.0], [20.0], line_key=("line", id(line_we)))
    assert side_collisions([a, same], 4.0) == []
    # Many far-away trains do not matter; the pair is still found through the grid.
    others = [TrainPosition(f"T{k}", _parallel(line_we, 40.0 + 10 * k), [s], [20.0]) for k in range(5)]
    assert [(x.train, x.other_train) for x in side_collisions([a, b, *others], 4.0)] == [("A", "B")]


def test_side_collisions_of_trains_sharing_a_line_object(line_we):
    # Trains on one line object are looked up together: the events are exactly those of
    # the same trains each on its own copy of the line (same keys: only the objects differ).
    near = _parallel(line_we, 3.0)
    cars = ([300.0, 279.5], [20.0, 20.0])

    def trains(copies: bool) -> list[TrainPosition]:
        out = []
        for k, (line, off) in enumerate([(line_we, 0.0), (near, 10.0), (line_we, 400.0), (near, 405.0)]):
            ln = dataclasses.replace(line) if copies else line
            key = ("line", id(line))
            out.append(
                TrainPosition(f"T{k}", ln, np.array(cars[0]) + off, cars[1], speed=k - 1.5, line_key=key)
            )
        return out

    ev = side_collisions(trains(False), 4.0)
    assert [(e.train, e.other_train) for e in ev] == [("T0", "T1"), ("T2", "T3")]
    assert ev == side_collisions(trains(True), 4.0)


# -- DK24 -----------------------------------------------------------------------------------


@needs_dk24
def test_dk24_line_matches_traveller(dk24):
    route = dk24  # parsed once per run (conftest), not again here
    res = resolve_path(route, DK24_ROUTE / "PATHS" / "10.pat")
    assert res.ok
    line = TrackLine.from_path(route, res, extend=3000.0)
    assert line.path_length == pytest.approx(res.length, abs=1e-6)
    if line.ends_at_track_end:
        assert res.length < line.length < res.length + 3000.0
    else:
        assert line.length == pytest.approx(res.length + 3000.0, abs=1e-6)
    assert [n for n, _d in res.node_sequence()] == list(line.seg_node[: len(res.node_sequence())])
    check_against_traveller(route, line)
    rng = np.random.default_rng(24)
    for s in rng.uniform(0.0, line.length, 40):
        node, off, d = line.node_offset([s])
        t = Traveller(route, int(node[0]), float(off[0]), int(d[0]))
        p = t.pose()
        ex = line.at([s], exact=True)
        assert abs(ex["y"][0] - p.y) < 1e-6
        assert math.hypot(ex["X"][0] - p.xyz[0], ex["Z"][0] - p.xyz[2]) < 1e-6
        ip = line.at([s])
        assert abs(ip["y"][0] - p.y) < 1e-3
        assert math.hypot(ip["X"][0] - p.xyz[0], ip["Z"][0] - p.xyz[2]) < 0.02


def test_prepared_forces_equal_the_reference_functions():
    import numpy as np

    from tdbtools.formats.stock import Stock
    from tdbtools.physics import forces

    stocks = [
        Stock.generic("engine", "electric"),
        Stock.generic("wagon", "freight"),
        Stock.generic("wagon", "passenger"),
    ]
    m = forces.CarModel.from_stock(stocks, [False, True, False])
    pre = forces.Prepared(m)
    rng = np.random.default_rng(7)
    for _ in range(20):
        v = rng.normal(0, 20, 3)
        yf, yr = rng.normal(10, 2, 3), rng.normal(10, 2, 3)
        k = rng.normal(0, 0.002, 3)
        f = rng.uniform(-0.2, 1.2, 3)
        assert np.allclose(pre.gravity(yf, yr), forces.gravity(m, yf, yr), rtol=1e-12, atol=0)
        assert np.allclose(pre.davis(v), forces.davis(m, v), rtol=1e-12, atol=0)
        assert np.allclose(pre.curve(k), forces.curve_resistance(m, k), rtol=1e-12, atol=0)
        assert np.allclose(pre.brake(f), forces.brake(m, f), rtol=1e-12, atol=0)
