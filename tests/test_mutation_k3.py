"""Fast tests written for the survivors of the final mutation sample (docs/mutation.md §8):
each pins a behaviour a user relies on that a surviving mutant changed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_mutation_k1 import CONSISTS, _sc
from test_running_time import SHOE_CURVE, install_with_shoe_curve

from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.physics import forces as F
from tdbtools.physics.engine import Bodies, Engine
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import Command, TrainSpec
from tdbtools.physics.trackline import TrackLine

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


def test_the_trace_gives_the_brake_as_a_fraction_of_the_trains_brake_force():
    """Half brake from the start (no build-up) on a 1 % rise: the trace's brake column
    reads 0.5 and its grade 10 ‰."""
    line = TrackLine.synthetic(3000.0, grade=0.01, route_limit=20.0)
    spec = TrainSpec(
        "b",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        start_offset=100.0,
        start_speed=10.0,
        driver="schedule",
        brake_build_up=0.0,
        schedule=(Command(0.0, 0.0, 0.5),),
    )
    res = Replay(_sc(spec, duration=3.0, step=0.1), lines={"b": line}, trace_every=1.0).run()
    tr = res.traces["b"]
    assert tr["brake"][1:] == pytest.approx([0.5] * 3, abs=1e-9)
    assert tr["grade_permille"] == pytest.approx([10.0] * 4, rel=1e-9)


def test_a_line_from_a_point_names_where_it_starts(line_we_point):
    route, loc = line_we_point
    line = TrackLine.from_point(route, loc.tile_x, loc.tile_z, loc.x, loc.z, length=100.0)
    assert line.source == f"tile ({loc.tile_x}, {loc.tile_z}) x {loc.x} z {loc.z}"


@pytest.fixture
def line_we_point():
    from test_mutation_k1 import _line, _route

    return _route(), _line().location(700.0)


def test_exact_positions_in_the_last_section_of_a_line():
    """A line that ends halfway into a curve: at its end the exact curvature, heading and
    position are the curve's, as on the longer line through the same track."""
    from test_mutation_k1 import _line, _route

    main = _line()
    k = int(np.nonzero(main.piece_curvature)[0][0])  # the first curve, after a straight
    s0 = float(main.piece_s0[k]) - 50.0
    loc = main.location(s0)
    half = 0.5 * float(main.piece_s1[k] - main.piece_s0[k])
    sub = TrackLine.from_point(
        _route(), loc.tile_x, loc.tile_z, loc.x, loc.z, backward=True, length=50.0 + half
    )
    assert len(sub.piece_s1) == 2 and sub.piece_curvature[0] == 0.0
    assert sub.curvature_at(sub.length - 1.0) == main.piece_curvature[k] != 0.0
    ex, want = sub.at([sub.length], exact=True), main.at([s0 + sub.length], exact=True)
    for col in ("X", "Z", "heading"):
        assert ex[col] == pytest.approx(want[col], abs=1e-6)


def test_many_single_car_trains_coasting_to_a_stop_in_one_step():
    """Twenty lone cars (each on its own line: no joints) rolling against resistance stop
    within one long step and stand still at its end."""
    n = 20
    b = Bodies(
        mass=[1000.0] * n, length=[10.0] * n, line=list(range(n)), coupled=[False] * n, slack=[0.0] * n
    )
    e = Engine(b, x=[0.0] * n, v=[1.0 + 0.1 * i for i in range(n)])
    e.step(10.0, 0.0, 1000.0)  # 1 m/s² of resistance: each stops after v seconds
    assert e.v.tolist() == [0.0] * n
    assert e.x.tolist() == pytest.approx([0.5 * (1.0 + 0.1 * i) ** 2 for i in range(n)], rel=1e-9)


def test_a_slow_pull_on_a_tight_coupler_is_a_coupler_event():
    """Two cars coupled without slack, the front one pulling away at 0.5 m/s: the coupler
    takes the jerk (not the buffers), and both then run at 0.25 m/s."""
    b = Bodies(
        mass=[1000.0, 1000.0], length=[10.0, 10.0], line=[0, 0], coupled=[True, False], slack=[0.0, 0.0]
    )
    e = Engine(b, x=[10.0, 0.0], v=[0.5, 0.0])
    (ev,) = e.step(0.1, 0.0, 0.0)
    assert (ev.kind, ev.cars, ev.relative_speed) == ("coupler_taut", (0, 1), pytest.approx(0.5))
    assert e.v.tolist() == pytest.approx([0.25, 0.25])


def test_no_traction_while_the_brakes_hold_the_limit_down_a_falling_grade():
    """Down 2.5 % in deceleration mode the brakes hold the freight at 40 km/h: at the
    limit the throttle stays shut (traction would only be braked away again)."""
    from test_running_time import run_replay

    line = TrackLine.synthetic(2500.0, grade=-0.025, route_limit=40 * KMH)
    s, rep = run_replay("sample_freight", line, mode="deceleration")
    tr = rep.trace
    at = tr["speed"] > 39.99 * KMH
    assert s["finished"] and at.sum() > 100
    assert float(tr["throttle"][at].max()) < 1e-9


def test_a_schedule_by_distance_is_done_once_stopped_past_its_last_command():
    """An engine pair starting at 15 m/s under full power, full brake from 400 m on: it
    stops, stands 10 s and is done within the two minutes (the schedule is by distance:
    the 400 is metres, not seconds)."""
    line = TrackLine.synthetic(3000.0, route_limit=40.0)
    spec = TrainSpec(
        "s",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        start_offset=100.0,
        start_speed=15.0,
        driver="schedule",
        schedule_by="distance",
        schedule=(Command(0.0, 1.0, 0.0), Command(400.0, 0.0, 1.0)),
    )
    res = Replay(_sc(spec, duration=120.0), lines={"s": line}).run()
    s = res.summary["trains"]["s"]
    assert s["finished"] and s["distance_m"] > 400.0
    assert s["running_time_s"] < 60.0


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


def test_bogies_just_past_the_start_of_a_line_are_on_its_first_node():
    """A car whose rear bogie is 0.5 m into a line stands on one node of it."""
    from tdbtools.physics.safety import BogieSet

    line = TrackLine.synthetic(500.0)
    car = BogieSet("A", line, [17.0], [20.0], [13.0])  # bogies at 13.5 m and 0.5 m
    assert car.bogies.reshape(-1).tolist() == pytest.approx([13.5, 0.5])
    assert car.on_one_node()


def test_force_mode_driver_plans_with_at_most_nine_tenths_of_the_brakes():
    """Asked to plan 1.2 m/s² with brakes that give less on the level, the driver of a
    force-mode freight plans with 90 % of what they give."""
    line = TrackLine.synthetic(3000.0, route_limit=20.0)
    spec = TrainSpec(
        "f", CONSISTS / "sample_freight.con", path=Path("x"), brake_mode="force", deceleration=1.2
    )
    rp = Replay(_sc(spec, duration=1.0), lines={"f": line})
    d = rp.trains[0].driver
    assert 0.0 < 0.9 * d.brake_level < 1.2
    assert d.decel == pytest.approx(0.9 * d.brake_level, rel=1e-12)


def test_a_train_placed_at_its_waiting_point_does_not_wait_there():
    """MainEW's waiting point is 1250 m along its line: a train whose front starts there
    has already arrived; its driver only has the path's end to stop at."""
    spec0 = TrainSpec("w", CONSISTS / "sample_double.con", path=Path("MainEW.pat"))
    length = Replay(_sc(spec0, duration=1.0)).trains[0].length
    spec = TrainSpec(
        "w", CONSISTS / "sample_double.con", path=Path("MainEW.pat"), start_offset=1250.0 - length
    )
    t = Replay(_sc(spec, duration=1.0)).trains[0]
    assert t.front0 == pytest.approx(1250.0) and t.waits == [(pytest.approx(1250.0, abs=1e-5), 60.0, None)]
    assert [p.kind for p in t.driver.stops] == ["end"]


def test_cars_too_close_only_at_their_rear_halves_collide():
    """Two cars standing back to back on straight parallel tracks 3 m apart, overlapping
    by 10 m at their rear ends only: a side collision (the clearance is 3.6 m)."""
    import dataclasses

    from tdbtools.physics.safety import TrainPosition, side_collisions

    a_line = TrackLine.synthetic(500.0)
    b0 = TrackLine.synthetic(500.0, node=2)
    # the same straight 3 m to the side, run the other way (line distance s at z = 500 − s)
    b_line = dataclasses.replace(
        b0, X=b0.X + 3.0, Z=500.0 - b0.Z, heading=b0.heading + np.pi, _heading_u=b0._heading_u + np.pi
    )
    a = TrainPosition("A", a_line, [250.0], [20.0])  # z 230…250, rear half 230…240
    b = TrainPosition("B", b_line, [285.0], [20.0])  # z 215…235, rear half 225…235
    (e,) = side_collisions([a, b], 0.0)
    assert (e.train, e.other_train, e.cars, e.other_cars) == ("A", "B", (0,), (0,))
    assert e.cause == "cars 3.00 m apart (clearance 3.6 m) on different lines"


def test_a_line_ahead_of_a_traveller_is_one_part():
    from test_mutation_k1 import V_A, _route

    from tdbtools.track import Traveller

    tl = TrackLine.from_traveller(Traveller(_route(), V_A, 100.0, 1), length=50.0, step=5.0)
    assert (tl.part, tl.parts) == (0, 1)


def test_written_activity_books_every_stop_at_the_path_start_distance(tmp_path):
    """The .act written for an activity gives each booked stop of each service (player
    and AI) a DistanceDownPath of 0: Open Rails works the distance out itself."""
    import shutil

    from helpers import SAMPLE_INSTALL
    from test_activity_replay import services

    from tdbtools.formats.activity import read_activity
    from tdbtools.formats.route import load_route
    from tdbtools.physics.activity import ActivityReplay, plan_activity
    from tdbtools.physics.activity_build import write_activity_files

    shutil.copytree(SAMPLE_INSTALL, tmp_path / "sample")
    route = load_route(tmp_path / "sample" / "ROUTES" / "SAMPLE", cache=False)
    act = write_activity_files(route, "Day", services())
    a = read_activity(act)
    stops = [s for ref in (a.player, *a.services) if ref is not None for s in ref.stops]
    assert len(stops) == 2 and all(s.distance_down_path == 0.0 for s in stops)
    # before the first step nothing holds a block; the dispatcher's first run hands them out
    rp = ActivityReplay(plan_activity(act), route=route)
    assert rp.trace_every == 2.0  # an activity's trace: every 2 s unless asked
    assert rp.dispatcher.holder == {}
    while not rp.dispatcher.holder and rp.time < 120.0:
        rp.step()
    assert set(rp.dispatcher.holder.values()) == {"Freight east"}


def test_a_second_collision_of_the_same_two_trains_is_reported():
    """Train B runs at 30 m/s (1 s steps) through standing train A, away, and back over
    A's track (a line that doubles back over the same node, as a balloon loop does): both
    collisions are reported, although B leaves A's surroundings within one step."""
    import dataclasses

    from tdbtools.physics.events import Collision

    a_line = TrackLine.synthetic(600.0, route_limit=40.0)
    b0 = TrackLine.synthetic(600.0, route_limit=40.0, step=1.0)
    back = b0.s > 300.0
    fold = np.where(back, 600.0 - b0.s, b0.s)
    b_line = dataclasses.replace(
        b0,
        Z=fold,
        z=fold,
        offset=fold,
        direction=np.where(back, -1, 1).astype(np.int8),
        heading=np.where(back, np.pi, 0.0),
        _heading_u=np.where(back, np.pi, 0.0),
        seg_node=np.array([1, 1], np.int64),
        seg_dir=np.array([1, -1], np.int8),
        seg_s0=np.array([0.0, 300.0]),
        seg_s1=np.array([300.0, 600.0]),
        seg_off0=np.array([0.0, 300.0]),
    )
    assert b_line.occupancy(440.0, 480.0) == [(1, 160.0, 120.0)]  # back over node 1
    double = CONSISTS / "sample_double.con"
    a = TrainSpec("A", double, path=Path("x"), start_offset=120.0, driver="schedule")
    b = TrainSpec("B", double, path=Path("x"), start_speed=30.0, driver="schedule")
    res = Replay(_sc(a, b, duration=20.0, step=1.0), lines={"A": a_line, "B": b_line}).run()
    hits = [e for e in res.events if isinstance(e, Collision)]
    # B closes on A at its own speed both times, over the node forwards and then backwards
    assert hits[0].closing_speed == pytest.approx(30.0, abs=0.5)
    assert [(e.train, e.other_train) for e in hits] == [("A", "B")] * 2
    assert hits[1].closing_speed == pytest.approx(29.4, abs=0.5)  # B coasts, a little slower
    assert hits[0].time < 6.0 < 12.0 < hits[1].time


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


def test_train_position_stores_whole_metre_fronts_as_float():
    from tdbtools.physics.safety import TrainPosition

    pos = TrainPosition("A", TrackLine.synthetic(500.0), [250, 229], [20.0, 20.0])
    assert pos.car_front.dtype == np.float64 and pos.car_front.tolist() == [250.0, 229.0]


def test_a_train_without_throttle_spends_no_traction_energy():
    """A freight rolling a minute with nothing asked of it: no traction energy, no
    braking energy, though it moves."""
    line = TrackLine.synthetic(3000.0, route_limit=20.0)
    spec = TrainSpec(
        "c",
        CONSISTS / "sample_freight.con",
        path=Path("x"),
        start_offset=100.0,
        start_speed=10.0,
        driver="schedule",
    )
    s = Replay(_sc(spec, duration=60.0), lines={"c": line}).run().summary["trains"]["c"]
    assert s["distance_m"] > 300.0
    assert (s["traction_energy_kwh"], s["braking_energy_kwh"]) == (0.0, 0.0)


def test_exact_columns_from_single_precision_distances_are_double():
    """Distances given as float32: the exact columns are worked out in double precision,
    and a distance past the line's end is clipped to the end exactly."""
    from test_mutation_k1 import _line

    line = _line()
    ex = line.at(np.array([700.0, 1e6], dtype=np.float32), exact=True)
    assert ex["s"].dtype == np.float64 and ex["s"].tolist() == [700.0, line.length]
    assert ex["X"][1] == pytest.approx(line.at([line.length], exact=True)["X"][0], abs=1e-9)


def test_a_replay_runs_with_stock_whose_reader_skips_a_bad_value(tmp_path):
    """A coach .wag with an unreadable second Mass: the stock is read leniently (the
    finding kept, the good value used), not refused."""
    import shutil

    from helpers import SAMPLE_INSTALL

    shutil.copytree(SAMPLE_INSTALL / "TRAINS", tmp_path / "TRAINS")
    wag = tmp_path / "TRAINS" / "TRAINSET" / "SAMPLE_COACH" / "SAMPLE_BPMZ.wag"
    text = wag.read_text(encoding="utf-16")
    wag.write_text(
        text.replace("\tMaxBrakeForce ( 50kN )", "\tMaxBrakeForce ( 50kN )\n\tMass ( heavy )"),
        encoding="utf-16",
    )
    spec = TrainSpec("p", tmp_path / "TRAINS" / "CONSISTS" / "sample_passenger.con", path=Path("x"))
    rp = Replay(_sc(spec, duration=1.0), lines={"p": TrackLine.synthetic(3000.0)})
    assert rp.trains[0].model.mass.tolist()[:2] == [84000.0, 10000.0]
    assert any("Mass: not a number: 'heavy'" in str(f) for f in rp.diags.findings)


def test_a_path_whose_reader_skips_a_bad_value_still_gives_its_waiting_point(tmp_path):
    """MainEW with an unreadable serial number: the path is read leniently, and its
    60 s wait at 1250 m still reaches the train."""
    from helpers import SAMPLE_ROUTE

    text = (SAMPLE_ROUTE / "PATHS" / "MainEW.pat").read_text(encoding="utf-16")
    (tmp_path / "EW.pat").write_text(text.replace("Serial ( 1 )", "Serial ( x )"), encoding="utf-16")
    spec = TrainSpec("w", CONSISTS / "sample_double.con", path=tmp_path / "EW.pat")
    t = Replay(_sc(spec, duration=1.0)).trains[0]
    assert t.waits == [(pytest.approx(1250.0, abs=1e-5), 60.0, None)]


def test_a_train_running_off_its_line_is_not_moved_by_another_trains_line():
    """A train climbing 3 % runs off its line's end and derails: what happens next is the
    same whether or not another train stands 100 m away on a lower line of its own."""
    import dataclasses

    a_line = TrackLine.synthetic(200.0, grade=0.03, route_limit=40.0)
    b0 = TrackLine.synthetic(2000.0, route_limit=40.0, node=2)
    b_line = dataclasses.replace(b0, X=b0.X + 100.0)  # 6 m below a's end
    double = CONSISTS / "sample_double.con"
    a = TrainSpec("A", double, path=Path("x"), start_offset=100.0, start_speed=12.0, driver="schedule")
    b = TrainSpec("B", double, path=Path("x"), start_offset=100.0, driver="schedule")

    def run(*specs: TrainSpec) -> tuple[float, list[tuple[str, float]]]:
        res = Replay(_sc(*specs, duration=20.0), lines={"A": a_line, "B": b_line}).run()
        evs = [(type(e).__name__, e.time) for e in res.events if getattr(e, "train", "A") == "A"]
        return res.summary["trains"]["A"]["distance_m"], evs

    alone, with_b = run(a), run(a, b)
    assert ("Derailment", pytest.approx(6.0)) in alone[1]
    assert with_b == alone


def test_engine_step_names_the_bad_force_argument():
    from tdbtools.physics.engine import EngineError

    b = Bodies(
        mass=[1000.0, 1000.0], length=[10.0, 10.0], line=[0, 0], coupled=[False, False], slack=[0.0, 0.0]
    )
    e = Engine(b, x=[10.0, 0.0], v=[0.0, 0.0])
    with pytest.raises(EngineError, match=r"^Engine.step: drive has shape \(3,\), expected \(2,\)$"):
        e.step(0.1, [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(EngineError, match=r"^Engine.step: resist has shape \(3,\), expected \(2,\)$"):
        e.step(0.1, 0.0, [1.0, 2.0, 3.0])


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


def test_a_service_is_ready_at_its_start_time_exactly():
    """A service booked at 36,000 s (the clock's t0 at 35,990 s) is ready for the
    dispatcher at the call 10 s in, not a step later; before that it waits."""
    from tdbtools.physics.activity import ServiceDriver
    from tdbtools.physics.driver import AutoDriver, DriveState

    auto = AutoDriver(
        np.array([0.0]), np.array([15.0]), 2000.0, max_speed=15.0, deceleration=0.5, train_length=50.0
    )
    d = ServiceDriver("svc", auto, 35990.0, 36000.0, [], 1600.0, 1, True, None, None)
    d(DriveState(9.5, 0.0, 0.0, 50.0, 0.0, 0.5))
    assert d.state == "waiting"
    d(DriveState(10.0, 0.0, 0.0, 50.0, 0.0, 0.5))
    assert d.state == "ready"


def test_traction_energy_of_a_long_climb_in_kilowatt_hours():
    """The freight climbing 1 % at full power for 400 s: its traction energy in the
    summary is the work counted, in kWh (3.6 MJ) to the fourth decimal, and at least
    the work against gravity (m·g·h)."""
    line = TrackLine.synthetic(20000.0, grade=0.01, route_limit=30.0)
    spec = TrainSpec(
        "f",
        CONSISTS / "sample_freight.con",
        path=Path("x"),
        driver="schedule",
        schedule=(Command(0.0, 1.0, 0.0),),
    )
    rp = Replay(_sc(spec, duration=400.0, step=1.0), lines={"f": line})
    s = rp.run().summary["trains"]["f"]
    assert s["traction_energy_kwh"] == round(rp.trains[0].traction_j / 3.6e6, 4)
    front0 = rp.trains[0].front0
    rise = float(line.elevation(front0 + s["distance_m"]) - line.elevation(front0))
    lift = s["mass_t"] * 1000.0 * 9.81 * rise / 3.6e6
    assert s["traction_energy_kwh"] > lift > 150.0


def test_waits_at_one_signal_add_up_in_the_signalling_summary():
    """signals_follow: the follower waits 21 s at signal 0; a second wait there (added to
    the replay's events as a later one would be) adds to it."""
    import dataclasses

    from helpers import SAMPLE_INSTALL

    from tdbtools.physics.events import SignalWait
    from tdbtools.physics.scenario import read_scenario

    rp = Replay(dataclasses.replace(read_scenario(SAMPLE_INSTALL / "signals_follow.toml"), duration=90.0))
    res = rp.run()
    (w,) = [e for e in res.events if isinstance(e, SignalWait)]
    assert (w.train, w.signal, w.seconds) == ("follower", 0, pytest.approx(21.0))
    assert res.summary["signalling"]["trains"]["follower"]["signal_waits_s"] == {"0": pytest.approx(21.0)}
    rp.events.append(dataclasses.replace(w, time=80.0, until=85.0, seconds=5.0))
    assert rp.signals.summary()["trains"]["follower"]["signal_waits_s"] == {"0": pytest.approx(26.0)}


def test_a_synthetic_line_has_integer_tiles():
    line = TrackLine.synthetic(100.0)
    assert line.tile_x.dtype == np.int64 and line.tile_z.dtype == np.int64


def test_an_early_ai_train_waits_for_its_booked_departure():
    """An AI service booked to arrive and leave at 10:00:00 that arrives a minute early
    leaves at 10:00:00, not as soon as its passengers are aboard; the player's train too."""
    from tdbtools.formats.activity import StopItem
    from tdbtools.physics.activity import Platform, Stop, departure

    platform = Platform((1, 2), "P", "Station", 1, 0.0, 100.0, 20, 0)
    stop = Stop(platform, StopItem(1, 36000, 36000), 400.0)
    assert departure(stop, 35940.0, 3, True) == 36000.0
    assert departure(stop, 35940.0, 3, False) == 36000.0


def test_a_small_standstill_friction_is_used_as_given():
    import dataclasses

    from helpers import SAMPLE_INSTALL

    eng, coach = resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)[:2]
    light = dataclasses.replace(coach, standstill_friction_n=0.5, friction0_n=None)
    m = F.CarModel.from_stock([eng, light])
    assert m.starting_resistance is not None and m.starting_resistance[1] == 0.5


def test_plan_stopped_by_its_time_limit_is_not_finished():
    from helpers import SAMPLE_INSTALL
    from test_mutation_runtime import _plan

    freight = F.CarModel.from_stock(
        resolve_stock(read_consist(CONSISTS / "sample_freight.con"), SAMPLE_INSTALL)
    )
    r = _plan(freight, TrackLine.synthetic(4000.0, route_limit=20.0), limit_s=30.0)
    assert r.finished is False


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


def test_a_route_line_samples_its_speed_limits():
    """The sampled ``speed_limit`` column of a line along a path is the limit there."""
    from test_mutation_k1 import _line

    line = _line()
    assert len(line.speed_limit) == len(line.s) > 10
    assert line.speed_limit == pytest.approx(line.limit(line.s))


def test_a_stop_on_a_service_over_a_named_path(tmp_path):
    """A service over a path given by name (not built) with a booked stop: the stop is
    written with the station's platform."""
    import shutil

    from helpers import SAMPLE_INSTALL

    from tdbtools.formats.activity import read_activity
    from tdbtools.formats.route import load_route
    from tdbtools.physics.activity_build import ServiceSpec, write_activity_files

    shutil.copytree(SAMPLE_INSTALL, tmp_path / "sample")
    route = load_route(tmp_path / "sample" / "ROUTES" / "SAMPLE", cache=False)
    specs = [
        ServiceSpec("P", "sample_passenger", 36000, "MainEW", stops=(("Sampleby", None, None),), player=True)
    ]
    a = read_activity(write_activity_files(route, "Named", specs))
    assert a.player is not None and [s.platform_id for s in a.player.stops] == [1]


def test_a_running_service_leaves_its_driver_unfinished_until_it_arrives():
    from tdbtools.physics.activity import ServiceDriver
    from tdbtools.physics.driver import AutoDriver, DriveState

    auto = AutoDriver(
        np.array([0.0]), np.array([15.0]), 2000.0, max_speed=15.0, deceleration=0.5, train_length=50.0
    )
    d = ServiceDriver("svc", auto, 0.0, 0.0, [], 1600.0, 1, True, None, None)
    d.state = "running"  # the dispatcher's part
    d(DriveState(1.0, 0.0, 0.0, 50.0, 0.0, 0.5))
    assert auto.finished is False and not d.finished


def test_force_mode_driver_knows_the_full_braking_with_shoe_curves(tmp_path):
    """With brake-shoe curves the force-mode driver is told, per speed, what full brakes
    give: the brake force at that speed plus the rolling resistance, over the inertia."""
    inst = install_with_shoe_curve(tmp_path)
    line = TrackLine.synthetic(3000.0, route_limit=40.0)
    spec = TrainSpec(
        "p", inst / "TRAINS" / "CONSISTS" / "sample_passenger.con", path=Path("x"), brake_mode="force"
    )
    rp = Replay(_sc(spec, duration=1.0), lines={"p": line})
    m, d = rp.trains[0].model, rp.trains[0].driver
    davis0, inertia = float(F.davis(m, 0.0).sum()), float(m.inertial_mass.sum())
    for v in (0.0, 10.0, 30.0):
        _planned, full = d.brakes_at(v)
        assert full == pytest.approx((float(F.brake(m, 1.0, v).sum()) + davis0) / inertia, rel=1e-12)


def test_twenty_cars_on_one_line_close_up_with_impacts():
    """Twenty loose cars on one line, 0.5 m apart, every second one rolling at 1 m/s onto
    the standing one ahead: ten buffer impacts in the first step, none of them skipped."""
    n = 20
    b = Bodies(mass=[1000.0] * n, length=[10.0] * n, line=[0] * n, coupled=[False] * n, slack=[0.0] * n)
    e = Engine(b, x=[-10.5 * i for i in range(n)], v=[float(i % 2) for i in range(n)])
    ev = e.step(1.0, 0.0, 0.0)
    impacts = [x for x in ev if x.kind == "impact"]
    assert len(impacts) >= 10 and impacts[0].time == pytest.approx(0.5)
    assert e.truncated_steps == 0


def test_a_one_car_body_from_scalars_and_model_names():
    from helpers import SAMPLE_INSTALL

    b = Bodies(mass=1000.0, length=10.0, line=0, coupled=False, slack=0.0)
    assert b.n == 1 and b.length.tolist() == [10.0]
    cars = resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)
    assert F.CarModel.from_stock(cars).names == tuple(c.name for c in cars)
