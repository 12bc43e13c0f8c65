"""Behaviours of the physics that the mutation run of issue 11 found untested
(docs/mutation.md): each test here kills mutants that survived every other fast test."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL, SAMPLE_ROUTE

from tdbtools.physics.replay import Replay, replay
from tdbtools.physics.scenario import read_scenario, scenario_from_text


def test_every_train_and_scenario_key_is_read():
    """Each key set away from its default reaches the Scenario / TrainSpec."""
    sc = scenario_from_text(
        f'route = "{SAMPLE_ROUTE}"\n'
        "step = 0.25\nduration = 120\nstand_in = true\ncollision_check_interval = 2.0\n"
        'rotating_mass = false\nadhesion = "wet"\n'
        "[[train]]\n"
        'name = "a"\nconsist = "sample_freight"\npath = "MainWE.pat"\n'
        "distance = 900\nstart_offset = 12\nbeyond_path = 30\n"
        'driver = "auto"\nmax_speed = "50km/h"\nstart_speed = "10km/h"\n'
        'brake_mode = "deceleration"\ndeceleration = 0.7\nstand_in = false\n'
        'category = "passenger"\nbrake_build_up = 7\nallowance = 5\nallowance_min_per_100km = 2\n'
        'allowance_mode = "eco"\ndepart = 15\n',
        "s.toml",
    )
    assert (sc.step, sc.duration, sc.stand_in, sc.collision_check_interval) == (0.25, 120.0, True, 2.0)
    assert (sc.rotating_mass, sc.adhesion) == (False, "wet")
    t = sc.trains[0]
    assert (t.name, t.distance, t.start_offset, t.beyond_path) == ("a", 900.0, 12.0, 30.0)
    assert t.max_speed == pytest.approx(50 / 3.6, rel=1e-6)
    assert t.start_speed == pytest.approx(10 / 3.6, rel=1e-6)
    assert (t.brake_mode, t.deceleration, t.stand_in, t.category) == ("deceleration", 0.7, False, "passenger")
    assert (t.brake_build_up, t.allowance, t.allowance_min_per_100km) == (7.0, 5.0, 2.0)
    assert (t.allowance_mode, t.depart) == ("eco", 15.0)


def _short(name: str, seconds: float = 4.0):
    return dataclasses.replace(read_scenario(SAMPLE_INSTALL / name), duration=seconds)


def test_replay_passes_signals_on():
    sc = _short("signals_follow.toml")
    assert "signalling" in replay(sc).summary
    assert "signalling" not in replay(sc, signals=False).summary


def test_signalling_summary_counts_the_route_signals():
    rp = Replay(_short("signals_follow.toml"))
    s = rp.run().summary["signalling"]
    signals = rp.signal_set.signals
    assert s["signals"] == len(signals) > 0
    assert s["heads"] == sum(len(o.heads) for o in signals) > 0
    assert set(s) == {"signals", "heads", "sections", "trains"}
    assert s["sections"] > 0 and set(s["trains"]) == {t.name for t in rp.scenario.trains}


def test_timetable_csv_gives_clock_times_and_delays():
    from tdbtools.physics.activity import TIMETABLE_COLUMNS, ActivityResult, clock

    rows = (
        dict(
            train="P",
            station="A",
            platform="1",
            sched_arr=None,
            sched_dep=8 * 3600.0,
            actual_arr=None,
            actual_dep=8 * 3600.0 + 61.4,
            arr_delay_s=None,
            dep_delay_s=61.4,
        ),
        dict(
            train="P",
            station="B",
            platform="2",
            sched_arr=8 * 3600.0 + 600,
            sched_dep=8 * 3600.0 + 660,
            actual_arr=8 * 3600.0 + 630.6,
            actual_dep=86400.0 + 5.0,
            arr_delay_s=30.6,
            dep_delay_s=-2.2,
        ),
    )
    res = ActivityResult(replay=None, timetable=rows, t0=0.0, lines={})  # type: ignore[arg-type]
    lines = res.timetable_csv().splitlines()
    assert lines[0] == ",".join(TIMETABLE_COLUMNS)
    assert lines[1] == "P,A,1,,08:00:00,,08:01:01,,61"
    assert lines[2] == "P,B,2,08:10:00,08:11:00,08:10:31,00:00:05,31,-2"
    assert clock(float("nan")) == "" and clock(None) == "" and clock(3599.6) == "01:00:00"


def test_side_collision_found_wherever_the_grid_cells_fall():
    """The pair is found whichever neighbouring grid cell the other car's centre falls
    in, and whichever train comes first: slide both along the line, both orders."""
    from test_physics_parts import _parallel

    from tdbtools.formats import load_route
    from tdbtools.physics.safety import TrainPosition, side_collisions
    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    line = TrackLine.from_path(route, SAMPLE_ROUTE / "PATHS" / "MainWE.pat")
    near = _parallel(line, 3.0)
    missed = []
    for s in np.arange(120.0, 420.0, 7.3):  # V_a's straight: the cells are 23.6 m (a car and the clearance)
        a = TrainPosition("A", line, [s], [20.0], speed=1.0)
        for off in (-15.0, 15.0):  # the other car's centre behind or ahead
            b = TrainPosition("B", near, [s + off], [20.0])
            for pair in ((a, b), (b, a)):
                if len(side_collisions(list(pair), 0.0, cell=10.0)) != 1:
                    missed.append((float(s), off, pair[0].train))
    assert missed == []


def test_traces_are_sampled_every_trace_every_seconds():
    res = Replay(_short("replay.toml", 6.0), trace_every=1.0).run()
    t = np.asarray(res.traces["passenger"]["time"])
    assert len(t) == 7  # 0, 1, … 6 s
    assert np.allclose(np.diff(t), 1.0, atol=0.11)  # to within a 0.1 s step


def test_path_line_lists_its_posts_where_they_are_met():
    """MainWE meets the 80 km/h warning (V_a at 400 m) and then the 80 km/h limit (V_main
    at 10 m) eastbound (sample_routes/README.md); ``post_s`` are line distances."""
    from tdbtools.formats import load_route
    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    pat = SAMPLE_ROUTE / "PATHS" / "MainWE.pat"
    line = TrackLine.from_path(route, pat)
    assert line.post_kind == ("warning", "limit")
    limit_at = line.limit_s[1]
    assert line.post_s[1] == limit_at == pytest.approx(line.junctions[0].s + 10.0, abs=1e-5)
    assert 0.0 < line.post_s[0] < limit_at
    assert line.source == str(pat)


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


def test_switch_events_say_where_the_switch_is():
    from tdbtools.formats import load_route
    from tdbtools.physics.safety import BogieSet, throw_switch
    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    line = TrackLine.from_path(route, SAMPLE_ROUTE / "PATHS" / "MainWE.pat")
    jn = line.junctions[0]
    straddle = BogieSet("A", line, [jn.s + 10.0], [20.0], [13.0])  # bogies at j + 6.5 and j − 6.5
    ahead = BogieSet("B", line, [jn.s - 200.0], [20.0], [13.0])
    ev = throw_switch([straddle, ahead], jn.node, 1 - jn.route, 5.0)
    assert {(e.train, e.kind) for e in ev} == {("A", "derailment"), ("B", "path_changed")}
    assert all(e.s == pytest.approx(jn.s) for e in ev)


def test_bodies_trains_refuses_an_empty_or_uneven_train():
    from tdbtools.physics.engine import Bodies, EngineError

    with pytest.raises(EngineError, match="as many lengths as masses"):
        Bodies.trains([[]], [[]])
    with pytest.raises(EngineError, match="as many lengths as masses"):
        Bodies.trains([[1e4, 2e4]], [[10.0]])
    b = Bodies.trains([[1e4, 2e4], [3e4]], [[10.0, 12.0], [8.0]])
    assert len(b.mass) == 3


def test_replay_summary_counts_the_cars_and_writes_car_traces(tmp_path):
    from tdbtools.formats.consist import read_consist, resolve_stock

    def cars(name: str) -> list:
        con = read_consist(SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / f"{name}.con")
        return resolve_stock(con, SAMPLE_INSTALL)

    # two trains: the second one's cars do not start at index 0
    shunt = replay(_short("shunt.toml", 1.0)).summary["trains"]
    for train, consist in (("standing", "sample_freight"), ("engine", "sample_double")):
        assert shunt[train]["cars"] == len(cars(consist))
        assert shunt[train]["length_m"] == pytest.approx(sum(c.length_m for c in cars(consist)), abs=1e-3)
    sc = _short("replay.toml", 2.0)
    assert replay(sc).car_traces == {}
    res = replay(sc, cars_trace=True)
    assert set(res.car_traces) == {"passenger"}
    # a new folder, parents and all
    files = res.write(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b" / "passenger_cars.csv") in files
