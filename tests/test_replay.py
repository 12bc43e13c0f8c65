"""Replays: the bundled scenarios, events (impacts, derailments, collisions), outputs,
scenario errors, and a sample consist over DK24."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import (
    DK24,
    DK24_ROUTE,
    SAMPLE_INSTALL,
    SAMPLE_ROUTE,
    V_MAIN,
    needs_dk24,
    sample_route,
    sample_scenario,
)

from tdbtools.cli import main
from tdbtools.physics.driver import AutoDriver, Controls, DriveState, ScheduleDriver
from tdbtools.physics.events import (
    CarsStopped,
    Collision,
    CouplerSnatch,
    Derailment,
    EndOfLine,
    EventLocation,
    Impact,
    StandIn,
)
from tdbtools.physics.replay import (
    CAR_COLUMNS,
    EVENT_UNITS,
    TRACE_COLUMNS,
    Replay,
    ReplayError,
    replay,
    safe_name,
)
from tdbtools.physics.scenario import (
    Command,
    ScenarioError,
    SwitchEvent,
    TrainSpec,
    read_scenario,
    scenario_from_text,
)
from tdbtools.physics.signalling import DepartDriver, SignalDriver, wrap_driver
from tdbtools.physics.trackline import TrackLine
from tdbtools.signals.runtime import CREEP


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


def scenario(tmp_path, body: str, route=SAMPLE_ROUTE):
    p = tmp_path / "s.toml"
    p.write_text(f'route = "{route}"\n' + body)
    return read_scenario(p)


CONSISTS = SAMPLE_INSTALL / "TRAINS" / "CONSISTS"


def test_bundled_replay_stops_at_the_end_of_its_path(tmp_path, implementation):
    res = replay(SAMPLE_INSTALL / "replay.toml")
    s = res.summary["trains"]["passenger"]
    assert s["finished"] and not s["derailed"]
    tr = res.traces["passenger"]
    # MainWE is 1550 m from the rear of the train to the end; the front stops 2 m short.
    assert math.isclose(tr["distance"][-1] + 177.38, 1550 - 2.0, abs_tol=0.5)
    assert tr["speed"][-1] == 0.0 and (tr["speed"] * 3.6 <= 80.0 + 0.5).all()
    assert s["traction_energy_kwh"] > 0 and s["braking_energy_kwh"] > 0
    files = res.write(tmp_path / "out")
    names = {f.name for f in files}
    assert {"passenger.csv", "events.json", "summary.json"} <= names
    from tdbtools.render.plots import plot_speed_distance

    png = plot_speed_distance(res.traces["passenger"], "passenger", res.events, tmp_path / "out" / "p.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    header = (tmp_path / "out" / "passenger.csv").read_text().splitlines()[0].split(",")
    assert header == [
        "time",
        "distance",
        "speed",
        "acceleration",
        "throttle",
        "brake",
        "node",
        "offset",
        "tile_x",
        "tile_z",
        "x",
        "y",
        "z",
        "grade_permille",
    ]
    json.loads((tmp_path / "out" / "events.json").read_text())


def test_shunt_into_standing_train_conserves_momentum(implementation):
    rep = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    compiled = implementation == "compiled"
    assert rep.engine.compiled == compiled and (rep.forces.ck is not None) == compiled
    eng = rep.engine
    m = rep.bodies.mass
    t = {tr.spec.name: tr.cars for tr in rep.trains}
    mover, standing = t["engine"], t["standing"]
    dt = rep.scenario.step

    def gap() -> float:
        x = eng.x
        ahead, behind = (standing, mover) if x[standing.start] > x[mover.start] else (mover, standing)
        return float(x[ahead.stop - 1] - rep.bodies.length[ahead.stop - 1] - x[behind.start])

    # The replay drives the engine up to the standing train; the last 2 m are left to the
    # engine alone with no forces, so that the total momentum must stay what it was.
    while gap() > 2.0:
        rep.step()
        assert rep.time < 300, "the engine never came near the standing train"
    v0 = eng.v.copy()
    p0 = float(np.sum(m * v0))
    e0 = float(np.sum(0.5 * m * v0 * v0))
    assert p0 > 100.0  # it is moving
    events = []
    for _ in range(int(10.0 / dt)):
        events += eng.step(dt, 0.0, 0.0)
    v1 = eng.v
    assert float(np.sum(m * v1)) == pytest.approx(p0, rel=1e-9)
    assert float(np.sum(0.5 * m * v1 * v1)) <= e0 * (1 + 1e-12)
    hit = [
        e
        for e in events
        if e.kind == "impact"
        and {int(c) for c in e.cars} & set(range(standing.start, standing.stop))
        and {int(c) for c in e.cars} & set(range(mover.start, mover.stop))
    ]
    assert hit and hit[0].relative_speed > 0 and hit[0].energy_lost > 0
    # The standing train was set moving: momentum went from the mover into it.
    assert float(np.sum(m[standing] * v1[standing])) > 0.3 * p0


def test_running_off_a_track_end_derails(tmp_path, implementation):
    sc = scenario(
        tmp_path,
        """
[[train]]
name = "runaway"
consist = "sample_double"
path = "MainWE.pat"
driver = "schedule"
schedule = [ { at = 0, throttle = 1.0 } ]
""",
    )
    res = Replay(sc).run()
    der = [e for e in res.events if isinstance(e, Derailment)]
    assert der and der[0].train == "runaway" and "track end" in der[0].message
    assert der[0].node == 4 and {"tile_x", "tile_z", "x", "y", "z"} <= der[0].to_dict()["location"].keys()
    assert res.summary["trains"]["runaway"]["derailed"]


def test_switch_thrown_under_a_train_derails_it(tmp_path):
    sc = scenario(
        tmp_path,
        """
duration = 200
[[train]]
name = "p"
consist = "sample_passenger"
path = "MainWE.pat"
driver = "auto"
""",
    )
    rep = Replay(sc)
    train = rep.trains[0]
    (j,) = train.line.junctions
    assert (j.node, j.route) == (3, 0)
    # Run until a car has its two bogies on either side of the switch, then throw it.
    while not len(train.bogies.straddling(j.s)):
        rep.step()
        assert rep.time < 100
    car = int(train.bogies.straddling(j.s)[0])
    rep.throw_switch(3, 1)
    der = [e for e in rep.events if isinstance(e, Derailment)]
    assert len(der) == 1 and der[0].cars == (car,) and der[0].node == 3
    assert "different routes" in der[0].message
    # Thrown back while no car straddles it: nothing more happens.
    while len(train.bogies.straddling(j.s)):
        rep.step()
    rep.throw_switch(3, 0)
    assert len([e for e in rep.events if isinstance(e, Derailment)]) == 1


def test_head_on_collision_is_detected(tmp_path):
    sc = scenario(
        tmp_path,
        """
duration = 300
[[train]]
name = "west"
consist = "sample_double"
path = "MainWE.pat"
driver = "schedule"
schedule = [ { at = 0, throttle = 0.5 } ]
[[train]]
name = "east"
consist = "sample_double"
path = "MainEW.pat"
driver = "schedule"
schedule = [ { at = 0, throttle = 0.5 } ]
""",
    )
    res = Replay(sc).run()
    col = [e for e in res.events if isinstance(e, Collision)]
    assert col and {col[0].train, col[0].other_train} == {"west", "east"}
    assert col[0].closing_speed is not None and col[0].closing_speed > 0


def test_missing_stock_names_the_file_and_stand_in_runs(tmp_path):
    con = tmp_path / "odd.con"
    con.write_text(
        'SIMISA@@@@@@@@@@JINX0D0t______\nTrain ( TrainCfg ( "odd" Name ( "odd" ) '
        "Engine ( UiD ( 1 ) EngineData ( NOPE_LOCO NOPE_FOLDER ) ) "
        "Wagon ( UiD ( 2 ) WagonData ( NOPE_COACH NOPE_FOLDER ) ) ) )\n"
    )
    body = f'''
duration = 30
[[train]]
name = "odd"
consist = "{con}"
path = "MainWE.pat"
'''
    with pytest.raises(ReplayError, match="NOPE_LOCO") as ei:
        Replay(scenario(tmp_path, body))
    assert "stand_in" in str(ei.value)
    res = Replay(scenario(tmp_path, "stand_in = true\n" + body)).run()
    assert res.summary["trains"]["odd"]["cars"] == 2
    assert any(isinstance(e, StandIn) for e in res.events)


@pytest.mark.parametrize(
    "body, message, line, column",
    [
        ('[[train]]\nconsist = "c"\n', "give either 'path' or 'start'", 2, 1),
        ('[[train]]\nconsist = "c"\npath = "p"\nthrottle = 1\n', "unknown key 'throttle'", 5, 1),
        ('step = "fast"\n[[train]]\nconsist = "c"\npath = "p"\n', "step", 2, 1),
        ('[[train]]\nconsist = "c"\npath = "p"\ndriver = "schedule"\n', "needs [[train.schedule]]", 5, 1),
        ("[[train]\n", "invalid TOML", 2, 8),
        ('[[train]]\nconsist = "c"\npath = "p"\ncategory = "goods"\n', "category must be", 5, 1),
        # The second train's error points at the second train's key, not the first one's.
        (
            '[[train]]\nconsist = "c"\npath = "p"\nmax_speed = 10\n'
            '[[train]]\nname = "b"\nconsist = "c"\npath = "p"\nmax_speed = "x"\n',
            "max_speed",
            10,
            1,
        ),
        # An event's 'route' is its switch position, not the scenario's route line.
        ('[[train]]\nconsist = "c"\npath = "p"\n[[event]]\nat = 1\njunction = 3\nroute = 5\n', "route", 8, 1),
    ],
)
def test_scenario_errors_are_located(tmp_path, body, message, line, column):
    # Line numbers count the 'route = "x"' line put in front of every body.
    with pytest.raises(ScenarioError) as ei:
        scenario_from_text('route = "x"\n' + body, "s.toml")
    assert message in str(ei.value)
    assert (ei.value.line, ei.value.column) == (line, column)


def test_cli_replay_default_and_shortcuts(tmp_path):
    r = CliRunner().invoke(main, ["replay", "--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    assert "passenger" in r.output and (tmp_path / "a" / "summary.json").is_file()
    r = CliRunner().invoke(
        main,
        [
            "replay",
            "--route",
            str(SAMPLE_ROUTE),
            "--consist",
            str(CONSISTS / "sample_freight.con"),
            "--path",
            "Siding.pat",
            "--out",
            str(tmp_path / "b"),
        ],
    )
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["trains"]["sample_freight"]["finished"]
    r = CliRunner().invoke(main, ["replay", "--route", str(SAMPLE_ROUTE)])
    assert r.exit_code == 2


@needs_dk24
def test_sample_consist_over_a_dk24_path(tmp_path, dk24, dk24_signals):
    sc = scenario(
        tmp_path,
        f'''
duration = 900
[[train]]
name = "freight"
consist = "{CONSISTS / "sample_freight.con"}"
path = "1803.pat"
beyond_path = 3000
driver = "auto"
''',
        route=DK24_ROUTE,
    )
    res = replay(sc, route=dk24, signals=dk24_signals)  # the route and its signals, read once per run
    s = res.summary["trains"]["freight"]
    assert s["finished"] and not s["derailed"]
    # DK24's paths are 10 m stubs at end nodes; 1803.pat has > 6 km of track beyond it.
    # The front stops 2 m short of 3000 m past the path end.
    assert 1000 < s["distance_m"] <= 3010 - 2 - s["length_m"] + 1
    assert res.traces["freight"]["speed"].max() > 5.0


@needs_dk24
def test_dk24_consist_needs_stand_in(tmp_path, dk24, dk24_signals):
    con = DK24 / "TRAINS" / "CONSISTS" / "DSB MZ 1401 solo.con"
    body = f'''
duration = 120
[[train]]
name = "mz"
consist = "{con}"
path = "10.pat"
beyond_path = 2000                # DK24's paths are 10 m stubs: shorter than the engine
'''
    with pytest.raises(ReplayError, match="mz1401.eng"):
        Replay(scenario(tmp_path, body, route=DK24_ROUTE), route=dk24, signals=dk24_signals)
    res = replay(
        scenario(tmp_path, "stand_in = true\n" + body, route=DK24_ROUTE), route=dk24, signals=dk24_signals
    )
    assert res.summary["trains"]["mz"]["cars"] == 1
    assert any("diesel locomotive" in e.message for e in res.events if isinstance(e, StandIn))


def test_a_trains_flags_change_only_through_methods_that_bump_its_replays_version():
    """A train's driver, derailed and done flags are read-only: setting one is an error,
    not a stale cache; each method that changes one bumps the version of its own replay
    (not of another), and the driving stage's per-train caches see the change."""
    from tdbtools.physics.driver import Controls

    rep = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    other = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    t = rep.trains[0]
    for name, value in (("done_at", 1.0), ("derailed", True), ("driver", None)):
        with pytest.raises(AttributeError):
            setattr(t, name, value)
    v0 = t.changes.version
    assert all(u.changes is t.changes for u in rep.trains)
    assert not rep.driving.derailed()[0].any()  # (cached now)
    t.derail()
    assert t.derailed and t.changes.version == v0 + 1
    assert rep.driving.derailed()[0].tolist() == [True] + [False] * (len(rep.trains) - 1)
    t.finish(3.0)
    assert t.done_at == 3.0 and t.changes.version == v0 + 2
    assert rep.driving.any_done()

    def brake(st):  # noqa: ANN001, ANN202
        return Controls(0.0, 1.0, 0.0)

    t.replace_driver(brake)
    assert t.driver is brake and t.changes.version == v0 + 3
    assert rep.driving.inner_drivers()[0][0] is brake
    assert other.trains[0].changes is not t.changes and not other.driving.derailed()[0].any()


def test_a_policy_is_asked_around_every_step_and_for_the_trains_on_the_track():
    """A :class:`ReplayPolicy` given to a replay: started once, called before and after
    every step, asked which trains are on the track (a train off it meets no switch
    thrown under it), and its driver factory drives the trains."""
    from tdbtools.physics.driver import Controls
    from tdbtools.physics.stages.policy import ReplayPolicy

    calls: list[str] = []

    class Held(ReplayPolicy):
        def driver(self, spec, auto, default, train):  # noqa: ANN001, ANN201
            return lambda st: Controls(0.0, 1.0, 0.0)  # brakes held: nobody moves

        def start(self, replay):  # noqa: ANN001, ANN201
            calls.append("start")

        def before_step(self, replay):  # noqa: ANN001, ANN201
            calls.append("before")

        def after_step(self, replay):  # noqa: ANN001, ANN201
            calls.append("after")

        def on_track(self, replay):  # noqa: ANN001, ANN201
            return np.zeros(len(replay.trains), dtype=bool)

    sc = read_scenario(SAMPLE_INSTALL / "shunt.toml")
    rep = Replay(sc, policy=Held())
    assert calls == ["start"]
    rep.step()
    rep.step()
    assert calls == ["start", "before", "after", "before", "after"]
    assert all(t.controls == Controls(0.0, 1.0, 0.0) for t in rep.trains)  # the policy's drivers
    assert rep.on_track() is not None and not rep.on_track().any()


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


def test_traces_are_sampled_every_trace_every_seconds():
    res = Replay(_short("replay.toml", 6.0), trace_every=1.0).run()
    t = np.asarray(res.traces["passenger"]["time"])
    assert len(t) == 7  # 0, 1, … 6 s
    assert np.allclose(np.diff(t), 1.0, atol=0.11)  # to within a 0.1 s step


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


def _auto(stop_at: float | None = 1000.0) -> AutoDriver:
    return AutoDriver([0.0], [20.0], stop_at, max_speed=None, deceleration=0.5)


def test_replay_set_up_errors_name_the_train_and_the_figures():
    freight = CONSISTS / "sample_freight.con"
    here = SAMPLE_INSTALL / "TRAINS" / "CONSISTS"
    looked = f"., {here}, {SAMPLE_ROUTE / 'CONSISTS'}"
    cases = [
        (
            TrainSpec("a", Path("nope"), path=Path("MainWE.pat")),
            f"train 'a': consist 'nope' not found (looked in {looked})",
        ),
        (TrainSpec("b", freight, path=Path("Nope.pat")), "train 'b': path 'Nope.pat' not found"),
        (
            TrainSpec("c", freight, path=Path("MainWE.pat"), start_offset=1450.0),
            "train 'c' (336.2 m) does not fit on its line (1573.6 m) from 1450.0 m",
        ),
        (
            TrainSpec("d", freight, path=Path("MainWE.pat"), start_offset=1220.0),
            "train 'd' is 336.2 m long but its path ends 330.0 m from where it starts (beyond_path 0 m): "
            "it cannot run. Give beyond_path (--beyond-path) of at least 6 m, or a longer path",
        ),
    ]
    for spec, message in cases:
        with pytest.raises(ReplayError) as ei:
            Replay(sample_scenario(spec, duration=5.0))
        assert str(ei.value) == message
    # the same train fits when the path is extended, or starts 7 m further back
    Replay(sample_scenario(dataclasses.replace(cases[3][0], beyond_path=7.0), duration=5.0))
    Replay(sample_scenario(dataclasses.replace(cases[3][0], start_offset=1213.0), duration=5.0))


def test_replay_summary_and_traces_of_a_short_run(tmp_path):
    """Three seconds of an engine pair starting at 5 m/s, 100 m along a level line: every
    summary figure, trace column and car-trace row."""
    line = TrackLine.synthetic(3000.0, route_limit=20.0)
    spec = TrainSpec(
        "b/1", CONSISTS / "sample_double.con", path=Path("x"), start_offset=100.0, start_speed=5.0
    )
    rp = Replay(
        sample_scenario(spec, duration=3.0, step=0.1), lines={"b/1": line}, cars_trace=True, trace_every=1.0
    )
    t = rp.trains[0]
    assert (t.front0, t.length, t.category, t.end_s) == (
        pytest.approx(137.96),
        pytest.approx(37.96),
        "passenger",
        None,
    )
    assert rp.engine.x.tolist() == pytest.approx([137.96, 118.98])  # front car first
    assert rp.engine.v.tolist() == [5.0, 5.0]
    res = rp.run()
    s = res.summary
    assert set(s) == {
        "scenario",
        "route",
        "physics",
        "simulated_seconds",
        "wall_seconds",
        "trains",
        "realtime_factor",
    }
    assert (s["scenario"], s["route"], s["simulated_seconds"]) == ("<scenario>", "tdbtools sample route", 3.0)
    assert s["wall_seconds"] == round(res.wall_seconds, 3) and res.wall_seconds > 0
    assert s["realtime_factor"] == round(3.0 / res.wall_seconds, 1)
    tr = res.traces["b/1"]
    assert tuple(tr) == TRACE_COLUMNS
    assert tr["time"] == pytest.approx([0.0, 1.0, 2.0, 3.0])
    ts = s["trains"]["b/1"]
    assert ts == {
        "consist": "Sample double: 2 x EL 64, back to back",
        "cars": 2,
        "category": "passenger",
        "mass_t": 168.0,
        "length_m": 37.96,
        "running_time_s": 3.0,
        "finished": False,
        "derailed": False,
        "distance_m": round(float(rp.engine.x[0] - 137.96), 3),
        "max_speed_kmh": round(float(rp.engine.v.max()) * 3.6, 3),
        "traction_energy_kwh": ts["traction_energy_kwh"],
        "braking_energy_kwh": 0.0,
        "events": {},
    }
    assert ts["distance_m"] == pytest.approx(float(tr["distance"][-1]), abs=1e-3)
    assert 40.0 < ts["max_speed_kmh"] < 45.0  # 5 m/s + about 2.2 m/s² for 3 s
    # full power at about 11 m/s for 3 s: some kWh, neither 0 nor J
    assert 1.0 < ts["traction_energy_kwh"] < 10.0
    assert tr["distance"][0] == 0.0 and tr["speed"][0] == 5.0 and tr["acceleration"][0] == 0.0
    assert tr["acceleration"][1:] == pytest.approx(np.diff(tr["speed"]) / np.diff(tr["time"]))
    assert tr["throttle"].tolist() == [0.0, 1.0, 1.0, 1.0] and tr["brake"].tolist() == [0.0] * 4
    assert tr["offset"] == pytest.approx(137.96 + tr["distance"]) and tr["z"] == pytest.approx(tr["offset"])
    assert tr["node"].tolist() == [1] * 4 and tr["node"].dtype == np.int64 and tr["tile_x"].dtype == np.int64
    assert not tr["x"].any() and not tr["y"].any() and not tr["grade_permille"].any()
    cars = res.car_traces["b/1"]
    assert tuple(cars) == CAR_COLUMNS and len(cars["time"]) == 8  # 2 cars × 4 rows
    assert cars["car"].tolist() == [0, 1] * 4 and cars["time"] == pytest.approx([0, 0, 1, 1, 2, 2, 3, 3])
    assert cars["front"][::2] == pytest.approx(137.96 + tr["distance"])
    assert cars["front"][1::2] == pytest.approx(cars["front"][::2] - 18.98)
    assert np.isnan(cars["gap"][1::2]).all() and not np.isnan(cars["gap"][::2]).any()
    assert cars["speed"][::2] == pytest.approx(tr["speed"])
    assert cars["force"][0] == 0.0 and cars["force"][2] > 1e5  # full traction after the first step
    written = res.write(tmp_path / "new" / "out")
    assert [p.name for p in written] == ["b_1.csv", "b_1_cars.csv", "events.json", "summary.json"]
    csv_lines = (tmp_path / "new" / "out" / "b_1.csv").read_text().splitlines()
    assert csv_lines[0] == ",".join(TRACE_COLUMNS) and len(csv_lines) == 5
    assert csv_lines[1] == "0,0,5,0,0,0,1,137.96,0,0,0,0,137.96,0"
    assert csv_lines[2].split(",")[0] == "1" and csv_lines[2].split(",")[2] == f"{tr['speed'][1]:.6g}"
    cars_csv = (tmp_path / "new" / "out" / "b_1_cars.csv").read_text().splitlines()
    assert cars_csv[0] == "time,car,front,speed,gap,force" and cars_csv[2] == "0,1,118.98,5,nan,0"
    ev = json.loads((tmp_path / "new" / "out" / "events.json").read_text())
    assert ev == {"units": EVENT_UNITS, "events": []}
    # summary.json also lists each train's files (docs/security.md §5)
    files = {"b/1": {"trace": "b_1.csv", "cars": "b_1_cars.csv"}}
    assert json.loads((tmp_path / "new" / "out" / "summary.json").read_text()) == {**s, "files": files}
    assert safe_name("a b/c-d_e.f:é") == "a_b_c-d_e.f_é"


def test_replay_places_trains_on_one_line_front_to_back():
    """Two trains given on the same line object share it; each starts at its offset, the
    one further along first in the engine's arrays, with its own start speed and
    category; a train without traction gets no throttle."""
    line = TrackLine.synthetic(2000.0, route_limit=20.0)
    a = TrainSpec(
        "behind", CONSISTS / "sample_double.con", path=Path("x"), start_offset=10.0, category="freight"
    )
    b = TrainSpec(
        "ahead", CONSISTS / "sample_freight.con", path=Path("x"), start_offset=500.0, start_speed=2.0
    )
    rp = Replay(sample_scenario(a, b, duration=1.0), lines={"behind": line, "ahead": line})
    assert [t.spec.name for t in rp.trains] == ["ahead", "behind"]
    ahead, behind = rp.trains
    assert ahead.line_id == behind.line_id == 0
    assert (ahead.cars.start, behind.cars.start) == (0, ahead.cars.stop)
    assert ahead.front0 == pytest.approx(500.0 + ahead.length) and behind.front0 == pytest.approx(
        10.0 + 37.96
    )
    assert rp.engine.v[ahead.cars].tolist() == [2.0] * len(ahead.consist.cars)
    assert rp.engine.v[behind.cars].tolist() == [0.0, 0.0]
    assert (ahead.category, behind.category) == ("freight", "freight")  # by the wagons / by the scenario
    own = Replay(
        sample_scenario(a, b, duration=1.0), lines={"behind": line, "ahead": TrackLine.synthetic(2000.0)}
    )
    assert [t.line_id for t in own.trains] == [0, 1]
    res = rp.run()
    assert set(res.summary["trains"]) == {"ahead", "behind"}
    assert res.summary["trains"]["behind"]["cars"] == 2


def test_drivers_are_wrapped_for_signals_and_departures():
    auto = _auto()
    sig = wrap_driver(auto, 5.0, True)
    assert isinstance(sig, SignalDriver) and sig.inner is auto and sig.depart == 5.0
    assert wrap_driver(auto, 0.0, False) is auto
    held = wrap_driver(auto, 0.5, False)
    assert isinstance(held, DepartDriver) and held.inner is auto and held.depart == 0.5
    sched = ScheduleDriver((Command(0.0, 1.0, 0.0),))
    assert wrap_driver(sched, 0.0, True) is sched  # signals drive only the automatic driver
    assert isinstance(wrap_driver(sched, 3.0, True), DepartDriver)
    st = DriveState(time=2.9, travelled=0.0, speed=0.0, front=100.0, rear=50.0)
    assert held(dataclasses.replace(st, time=0.4)) == Controls(0.0, 1.0, 0.0)
    assert wrap_driver(sched, 3.0, True)(st) == Controls(0.0, 1.0, 0.0)
    assert wrap_driver(sched, 3.0, True)(dataclasses.replace(st, time=3.0)).throttle == 1.0
    assert held.finished is False and DepartDriver(lambda s: Controls(), 1.0).finished is False
    auto.finished = True
    assert held.finished is True and sig.finished is True


def test_signal_driver_obeys_what_the_interlocking_sets():
    auto = _auto(stop_at=2000.0)
    d = SignalDriver(auto, depart=10.0)
    st = DriveState(time=12.0, travelled=0.0, speed=10.0, front=100.0, rear=50.0)
    base = [c for c in auto.constraints(st)]
    assert d(dataclasses.replace(st, time=9.9)) == Controls(0.0, 1.0, 0.0)
    d.stop_s = 400.0
    assert (0.0, 300.0) in auto.constraints(st)
    d.stop_s = 90.0  # behind the front: stop now
    assert (0.0, 0.0) in auto.constraints(st)
    d.stop_s = None
    d.creep_at = 160.0
    assert (CREEP, 60.0) in auto.constraints(st)
    d.creep_at = 100.0  # at the front: passed
    assert auto.constraints(st) == base
    d.creep_at = None
    d.limits = [(150.0, 400.0, 8.0), (20.0, 49.9, 5.0), (80.0, 120.0, 6.0)]
    out = auto.constraints(st)
    assert (8.0, 50.0) in out and (6.0, 0.0) in out  # ahead; over the train
    assert all(v != 5.0 for v, _a in out)  # wholly behind the rear
    d.limits = [(20.0, 50.0, 5.0)]  # ends at the rear: still over the train
    assert (5.0, 0.0) in auto.constraints(st)
    d.limits = []
    # held at a signal short of the end, the inner driver does not count as finished
    stand = DriveState(time=20.0, travelled=0.0, speed=0.0, front=500.0, rear=450.0)
    d.stop_s = 500.0
    d(stand)
    assert auto.finished is False
    auto.stop_at = 502.0 + AutoDriver.ARRIVED_WITHIN - 0.01  # its own end, within reach
    d.stop_s = None
    d(stand)
    assert auto.finished is True


def test_signalling_summary_and_aspects_on_the_signals_route():
    """signals_follow (sample_routes): the follower departs at 20 s behind the leader and
    waits at signal 0 from its first signalling cycle; the leader sees signal 0 clear."""
    sc = read_scenario(SAMPLE_INSTALL / "signals_follow.toml")
    rp = Replay(dataclasses.replace(sc, duration=20.0))
    assert [type(t.driver) for t in rp.trains] == [SignalDriver, SignalDriver]
    assert [t.driver.depart for t in rp.trains] == [0.0, 20.0]
    res = rp.run()
    s = res.summary["signalling"]
    assert (s["signals"], s["heads"], s["sections"]) == (6, 6, 12)
    lead, follow = s["trains"]["leader"], s["trains"]["follower"]
    assert [(e["signal"], e["aspect"]) for e in lead["aspects_seen"]] == [(0, "APPROACH_1"), (0, "CLEAR_2")]
    assert [e["time"] for e in lead["aspects_seen"]] == pytest.approx([0.2, 1.2])
    assert lead["aspect_counts"] == {"APPROACH_1": 1, "CLEAR_2": 1} and lead["signal_waits_s"] == {}
    assert lead["deadlocked"] is False and follow["deadlocked"] is False
    assert follow["aspects_seen"] == [
        {"time": pytest.approx(0.2), "signal": 0, "aspect": "STOP (not cleared)"}
    ]
    assert follow["aspect_counts"] == {}  # not one of the signal script aspects
    assert follow["signal_waits_s"] == {"0": pytest.approx(19.0)}  # still waiting: counted to now
    assert rp.signals.aspects() == {0: "CLEAR_2", 1: "APPROACH_1", 2: "STOP", 3: "STOP", 4: "STOP", 5: "STOP"}
    assert rp.signals.next_update == pytest.approx(20.2)  # every second from the first step
    assert {e.kind for e in res.events} >= {"aspect", "signal", "switch"}


def test_a_scheduled_train_is_done_once_it_has_stood_ten_seconds():
    """Full power for 8 s, then full brake: the freight stops near 15.8 s, and its run
    ends at the step it stopped in once it has stood 10 s with no throttle."""
    line = TrackLine.synthetic(400.0, route_limit=20.0)
    spec = TrainSpec(
        "s",
        CONSISTS / "sample_freight.con",
        path=Path("x"),
        driver="schedule",
        schedule=(Command(0.0, 1.0, 0.0), Command(8.0, 0.0, 1.0)),
    )
    rp = Replay(sample_scenario(spec, duration=60.0), lines={"s": line})
    res = rp.run()
    kinds = [type(e).__name__ for e in res.events]
    assert kinds == ["CarsStarted"] + ["CouplerSnatch"] * 20 + ["CarsStopped", "TrainStopped"]
    taut = [e for e in res.events if isinstance(e, CouplerSnatch)]
    # the slack runs out joint after joint from the engine back, each car named in its train
    assert [e.cars for e in taut] == [(("s", i), ("s", i + 1)) for i in range(20)]
    assert all(a.time < b.time for a, b in zip(taut, taut[1:]))
    assert all(0.5 < e.relative_speed < 0.7 and e.impulse > 0 and e.energy_lost > 0 for e in taut)
    started, stopped, done = res.events[0], res.events[-2], res.events[-1]
    assert started.cars == (("s", 0),) and started.location.to_dict() == {
        "node": 1,
        "tile_x": 0,
        "tile_z": 0,
        "x": 0.0,
        "y": 0.0,
        "z": pytest.approx(336.15, abs=0.05),  # the engine's front, after the first step
    }
    assert stopped.cars == (("s", 0), ("s", 20)) and 15.7 < stopped.time < 15.8
    assert (done.train, done.time) == ("s", pytest.approx(15.7))
    assert rp.time == pytest.approx(25.8)  # the replay ends when every train is done
    s = res.summary["trains"]["s"]
    assert (s["finished"], s["derailed"], s["running_time_s"]) == (True, False, 15.7)
    assert s["events"] == {"coupler_taut": 20, "started": 1, "stopped": 2}
    assert s["braking_energy_kwh"] > 0 and s["distance_m"] == pytest.approx(15.883, abs=0.01)


def test_a_train_run_off_its_track_end_derails_and_is_done_when_it_stands():
    line = TrackLine.synthetic(400.0, route_limit=20.0)
    spec = TrainSpec(
        "r",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        driver="schedule",
        schedule=(Command(0.0, 1.0, 0.0),),
        start_offset=300.0,
    )
    rp = Replay(sample_scenario(spec, duration=30.0), lines={"r": line})
    res = rp.run()
    der = [e for e in res.events if isinstance(e, Derailment)]
    assert [e.cars for e in der] == [(0,), (1,)] and der[0].time < der[1].time
    assert {e.train for e in der} == {"r"} and {e.node for e in der} == {1}
    assert {e.message for e in der} == {"ran off the track end at the far end of the line"}
    assert der[0].location.to_dict() == {
        "tile_x": 0,
        "tile_z": 0,
        "x": 0.0,
        "y": 0.0,
        "z": pytest.approx(400.0, abs=1.0),
    }
    assert der[0].other_train is None and der[0].closing_speed is None
    t = rp.trains[0]
    assert t.derailed and t.controls == Controls(0.0, 1.0, 0.0)  # a derailed train brakes
    stopped = next(e for e in res.events if isinstance(e, CarsStopped))
    assert t.done_at == pytest.approx(stopped.time, abs=0.1) and t.done_at < 30.0
    s = res.summary["trains"]["r"]
    assert (s["finished"], s["derailed"]) == (True, True)
    assert s["events"] == {"derailment": 2, "started": 1, "stopped": 1}


def test_the_auto_driver_arrives_at_its_path_end_and_thrown_switches_are_events():
    spec = TrainSpec("a", CONSISTS / "sample_double.con", path=Path("MainWE.pat"), start_offset=1400.0)
    rp = Replay(sample_scenario(spec, duration=200.0, events=(SwitchEvent(1.0, 3, 1),)))
    t = rp.trains[0]
    assert t.end_s == pytest.approx(1550.0) and t.front0 == pytest.approx(1437.96)
    res = rp.run()
    assert [e.kind for e in res.events] == ["started", "switch", "stopped", "arrived"]
    started, switch, _stopped, arrived = res.events
    assert (switch.time, switch.junction, switch.route) == (pytest.approx(1.0), 3, 1)
    assert rp.switches.get(3) == 1
    loc = t.line.location(1437.96)
    assert started.location.node == V_MAIN
    assert (started.location.tile_x, started.location.tile_z) == (loc.tile_x, loc.tile_z)
    assert (started.location.x, started.location.y, started.location.z) == pytest.approx(
        (loc.x, loc.y, loc.z), abs=0.05
    )
    # the front stops STOP_SHORT before the path's end, within ARRIVED_WITHIN
    assert arrived.train == "a" and arrived.distance == pytest.approx(1550.0 - 2.0 - 1437.96, abs=0.5)
    assert t.done_at == arrived.time == pytest.approx(rp.time)
    s = res.summary["trains"]["a"]
    assert (s["finished"], s["running_time_s"], s["events"]) == (
        True,
        round(arrived.time, 3),
        {"arrived": 1, "started": 1, "stopped": 1},
    )


def test_event_locations_in_events_json():
    """``node`` first when known, left out otherwise; then the tile and the metres."""
    loc = EventLocation(node=4, tile_x=-5631, tile_z=15116, x=1.5, y=42.0, z=-3.25)
    assert list(loc.to_dict().items()) == [
        ("node", 4),
        ("tile_x", -5631),
        ("tile_z", 15116),
        ("x", 1.5),
        ("y", 42.0),
        ("z", -3.25),
    ]
    bare = EventLocation(tile_x=1, tile_z=2, x=3.0, y=4.0, z=5.0).to_dict()
    assert bare == {"tile_x": 1, "tile_z": 2, "x": 3.0, "y": 4.0, "z": 5.0} and "node" not in bare
    assert EventLocation(node=0, tile_x=1, tile_z=2, x=3.0, y=4.0, z=5.0).to_dict()["node"] == 0


def test_a_train_rolling_back_off_its_line_start_derails_there():
    """Rolling back at 3 m/s with no brakes, the rear car's rear bogie (5.54 m from the
    line's start, a track end) leaves the line after 1.85 s: the bogies follow the cars
    every step."""
    spec = TrainSpec(
        "b",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        start_speed=-3.0,
        start_offset=1.0,
        driver="schedule",
        schedule=(Command(0.0, 0.0, 0.0),),
    )
    rp = Replay(sample_scenario(spec, duration=20.0), lines={"b": TrackLine.synthetic(3000.0)})
    assert rp.layout.rb.tolist() == pytest.approx([24.52, 5.54])
    res = rp.run()
    der = [e for e in res.events if isinstance(e, Derailment)]
    assert [(e.cars, e.message) for e in der] == [((1,), "ran off the track end at the near end of the line")]
    assert der[0].time == pytest.approx(1.9)


def test_a_train_at_the_end_of_its_built_line_stops_there_without_derailing():
    """A line that does not end at a track end: running off it ends the run, with an
    event saying how much track there was."""
    line = dataclasses.replace(TrackLine.synthetic(400.0), ends_at_track_end=False)
    spec = TrainSpec(
        "r",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        driver="schedule",
        schedule=(Command(0.0, 1.0, 0.0),),
        start_offset=300.0,
    )
    rp = Replay(sample_scenario(spec, duration=30.0), lines={"r": line})
    res = rp.run()
    ends = [e for e in res.events if isinstance(e, EndOfLine)]
    assert [(e.train, e.message) for e in ends] == [
        ("r", "reached the end of the 400 m of track built for it")
    ]
    assert ends[0].time == pytest.approx(7.5) == rp.time == rp.trains[0].done_at
    assert not any(isinstance(e, Derailment) for e in res.events)
    s = res.summary["trains"]["r"]
    assert (s["finished"], s["derailed"], s["running_time_s"]) == (True, False, 7.5)


def test_waiting_points_reach_the_driver_and_replay_uses_the_route_given(tmp_path):
    """MainEW waits 60 s at the platform, 1250 m along its line (sample_routes/README.md);
    ``replay(route=...)`` runs on that route whatever the scenario names."""
    spec = TrainSpec("w", CONSISTS / "sample_double.con", path=Path("MainEW.pat"))
    rp = Replay(sample_scenario(spec, duration=1.0))
    t = rp.trains[0]
    assert t.waits == [(pytest.approx(1250.0, abs=1e-5), 60.0, None)]
    stops = [(p.s, p.wait, p.kind) for p in t.driver.stops]
    assert stops == [
        (pytest.approx(1250.0, abs=1e-5), 60.0, "waiting point"),
        (pytest.approx(t.line.path_length - 2.0), math.inf, "end"),
    ]
    elsewhere = dataclasses.replace(sample_scenario(spec, duration=1.0), route=tmp_path / "no route here")
    res = replay(elsewhere, route=sample_route())
    assert res.summary["route"] == "tdbtools sample route"


def test_stand_in_stock_is_reported_at_the_start(tmp_path):
    con = tmp_path / "odd.con"
    con.write_text(
        'SIMISA@@@@@@@@@@JINX0D0t______\nTrain ( TrainCfg ( "odd" Name ( "odd" ) '
        "Engine ( UiD ( 1 ) EngineData ( NOPE_LOCO NOPE_FOLDER ) ) ) )\n"
    )
    spec = TrainSpec("odd", con, path=Path("MainWE.pat"), stand_in=True)
    res = Replay(sample_scenario(spec, duration=0.5)).run()
    (si,) = [e for e in res.events if isinstance(e, StandIn)]
    assert (si.time, si.train) == (0.0, "odd") and "NOPE_LOCO" in si.message
    assert si.to_dict()["time"] == 0.0


@pytest.mark.parametrize("mode", ["force", "deceleration"])
def test_a_train_coasting_downhill_is_not_braked(mode):
    """No throttle and no brake asked for on a 1 % fall: the brakes stay off (nothing
    plans a deceleration) and the train gathers speed, about g·1 % less its resistance
    and rotating mass."""
    spec = TrainSpec(
        "c",
        CONSISTS / "sample_freight.con",
        path=Path("x"),
        driver="schedule",
        schedule=(Command(0.0, 0.0, 0.0),),
        start_offset=100.0,
        brake_mode=mode,
    )
    rp = Replay(
        sample_scenario(spec, duration=10.0),
        lines={"c": TrackLine.synthetic(2000.0, grade=-0.01)},
        trace_every=1.0,
    )
    tr = rp.run().traces["c"]
    assert tr["brake"].tolist() == [0.0] * 11 and tr["throttle"].tolist() == [0.0] * 11
    assert 0.05 < float(np.mean(tr["acceleration"][1:])) < 0.098
    assert np.all(np.diff(tr["speed"]) > 0)


def test_an_impact_between_two_trains_names_each_car_in_its_own_train():
    """A light engine pair rolling at 3 m/s into another one braked 12 m ahead on the
    same line: the buffers meet after about 4 s; the event names the last car of the
    train ahead and the first of the one behind (indices within each train)."""
    line = TrackLine.synthetic(2000.0)
    behind = TrainSpec(
        "behind",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        start_offset=100.0,
        start_speed=3.0,
        driver="schedule",
        schedule=(Command(0.0, 0.0, 0.0),),
    )
    ahead = dataclasses.replace(
        behind, name="ahead", start_offset=150.0, start_speed=0.0, schedule=(Command(0.0, 0.0, 1.0),)
    )
    rp = Replay(sample_scenario(behind, ahead, duration=8.0), lines={"behind": line, "ahead": line})
    res = rp.run()
    impact, stopped = res.events
    assert isinstance(impact, Impact) and isinstance(stopped, CarsStopped)
    assert impact.cars == (("ahead", 1), ("behind", 0))
    assert impact.time == pytest.approx(12.04 / 3.0, abs=0.05)
    assert 2.8 < impact.relative_speed < 3.0 and impact.impulse > 0 and impact.energy_lost > 0
    assert impact.location.z == pytest.approx(150.0 + 18.98, abs=0.2)  # where the rear car of "ahead" is
    assert stopped.cars == (("ahead", 0), ("behind", 1))
    s = res.summary["trains"]
    assert s["ahead"]["events"] == {"impact": 1, "stopped": 1} == s["behind"]["events"]


def test_a_head_on_collision_names_both_trains_their_cars_and_the_place():
    """Two engine pairs at half throttle towards each other on the main line, 398 m
    apart: their fronts meet on V_main after about 16.5 s."""
    west = TrainSpec(
        "west",
        CONSISTS / "sample_double.con",
        path=Path("MainWE.pat"),
        driver="schedule",
        schedule=(Command(0.0, 0.5, 0.0),),
        start_offset=600.0,
    )
    east = dataclasses.replace(west, name="east", path=Path("MainEW.pat"), start_offset=500.0)
    rp = Replay(sample_scenario(west, east, duration=20.0))
    res = rp.run()
    (col,) = [e for e in res.events if isinstance(e, Collision)]
    assert (col.train, col.cars, col.other_train, col.other_cars, col.node) == (
        "west",
        (0,),
        "east",
        (0,),
        V_MAIN,
    )
    assert col.time == pytest.approx(16.5, abs=0.5)
    assert re.fullmatch(r"both trains occupy node 4 around offset \d+\.\d\d m", col.message)
    assert 35.0 < col.closing_speed < 45.0
    assert (col.location.tile_x, col.location.tile_z) == (-5631, 15116)
    assert 42.0 < col.location.y < 43.5  # on V_main's rising grade
    assert col.to_dict()["other_cars"] == [0]


def test_a_schedule_by_distance_is_not_done_before_its_last_command():
    """Braked at the start with its last command due 100 m on: the train stands and
    waits for it to the end of the replay (it is not done after 10 s standing)."""
    spec = TrainSpec(
        "d",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        driver="schedule",
        schedule_by="distance",
        schedule=(Command(0.0, 0.0, 1.0), Command(100.0, 1.0, 0.0)),
        start_offset=100.0,
    )
    rp = Replay(sample_scenario(spec, duration=15.0), lines={"d": TrackLine.synthetic(2000.0)})
    s = rp.run().summary["trains"]["d"]
    assert (s["finished"], s["running_time_s"], s["distance_m"]) == (False, 15.0, 0.0)
    done = dataclasses.replace(spec, schedule=(Command(0.0, 0.0, 1.0),))
    s = (
        Replay(sample_scenario(done, duration=15.0), lines={"d": TrackLine.synthetic(2000.0)})
        .run()
        .summary["trains"]["d"]
    )
    assert (s["finished"], s["running_time_s"]) == (True, 0.0)  # stood from the start


def test_the_deceleration_brake_model_also_stops_a_train_rolling_back():
    """Rolling back at 3 m/s down a 1 % rise with full brake in the deceleration model
    (0.5 m/s² planned): it slows at exactly 0.5 m/s² — gravity, which here runs with the
    motion, is made up for — and stands after 6 s and 9 m."""
    spec = TrainSpec(
        "b",
        CONSISTS / "sample_double.con",
        path=Path("x"),
        driver="schedule",
        schedule=(Command(0.0, 0.0, 1.0),),
        start_speed=-3.0,
        start_offset=100.0,
        brake_mode="deceleration",
        deceleration=0.5,
    )
    rp = Replay(
        sample_scenario(spec, duration=8.0),
        lines={"b": TrackLine.synthetic(2000.0, grade=0.01)},
        trace_every=0.5,
    )
    tr = rp.run().traces["b"]
    assert tr["speed"][:13] == pytest.approx(-3.0 + 0.25 * np.arange(13), abs=1e-9)
    assert tr["speed"][-1] == 0.0 and tr["distance"][-1] == pytest.approx(-9.0, abs=1e-6)


KMH = 1 / 3.6


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
    res = Replay(sample_scenario(spec, duration=3.0, step=0.1), lines={"b": line}, trace_every=1.0).run()
    tr = res.traces["b"]
    assert tr["brake"][1:] == pytest.approx([0.5] * 3, abs=1e-9)
    assert tr["grade_permille"] == pytest.approx([10.0] * 4, rel=1e-9)


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
    res = Replay(sample_scenario(spec, duration=120.0), lines={"s": line}).run()
    s = res.summary["trains"]["s"]
    assert s["finished"] and s["distance_m"] > 400.0
    assert s["running_time_s"] < 60.0


def test_bogies_just_past_the_start_of_a_line_are_on_its_first_node():
    """A car whose rear bogie is 0.5 m into a line stands on one node of it."""
    from tdbtools.physics.safety import BogieSet

    line = TrackLine.synthetic(500.0)
    car = BogieSet("A", line, [17.0], [20.0], [13.0])  # bogies at 13.5 m and 0.5 m
    assert car.bogies.reshape(-1).tolist() == pytest.approx([13.5, 0.5])
    assert car.on_one_node()


def test_a_train_placed_at_its_waiting_point_does_not_wait_there():
    """MainEW's waiting point is 1250 m along its line: a train whose front starts there
    has already arrived; its driver only has the path's end to stop at."""
    spec0 = TrainSpec("w", CONSISTS / "sample_double.con", path=Path("MainEW.pat"))
    length = Replay(sample_scenario(spec0, duration=1.0)).trains[0].length
    spec = TrainSpec(
        "w", CONSISTS / "sample_double.con", path=Path("MainEW.pat"), start_offset=1250.0 - length
    )
    t = Replay(sample_scenario(spec, duration=1.0)).trains[0]
    assert t.front0 == pytest.approx(1250.0) and t.waits == [(pytest.approx(1250.0, abs=1e-5), 60.0, None)]
    assert [p.kind for p in t.driver.stops] == ["end"]


def test_cars_too_close_only_at_their_rear_halves_collide():
    """Two cars standing back to back on straight parallel tracks 3 m apart, overlapping
    by 10 m at their rear ends only: a side collision (the clearance is 3.6 m)."""
    import dataclasses

    from tdbtools.physics.collisions import TrainPosition, side_collisions

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
    s = Replay(sample_scenario(spec, duration=60.0), lines={"c": line}).run().summary["trains"]["c"]
    assert s["distance_m"] > 300.0
    assert (s["traction_energy_kwh"], s["braking_energy_kwh"]) == (0.0, 0.0)


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
    rp = Replay(sample_scenario(spec, duration=1.0), lines={"p": TrackLine.synthetic(3000.0)})
    assert rp.trains[0].model.mass.tolist()[:2] == [84000.0, 10000.0]
    assert any("Mass: not a number: 'heavy'" in str(f) for f in rp.diags.findings)


def test_a_path_whose_reader_skips_a_bad_value_still_gives_its_waiting_point(tmp_path):
    """MainEW with an unreadable serial number: the path is read leniently, and its
    60 s wait at 1250 m still reaches the train."""
    from helpers import SAMPLE_ROUTE

    text = (SAMPLE_ROUTE / "PATHS" / "MainEW.pat").read_text(encoding="utf-16")
    (tmp_path / "EW.pat").write_text(text.replace("Serial ( 1 )", "Serial ( x )"), encoding="utf-16")
    spec = TrainSpec("w", CONSISTS / "sample_double.con", path=tmp_path / "EW.pat")
    t = Replay(sample_scenario(spec, duration=1.0)).trains[0]
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
        res = Replay(sample_scenario(*specs, duration=20.0), lines={"A": a_line, "B": b_line}).run()
        evs = [(type(e).__name__, e.time) for e in res.events if getattr(e, "train", "A") == "A"]
        return res.summary["trains"]["A"]["distance_m"], evs

    alone, with_b = run(a), run(a, b)
    assert ("Derailment", pytest.approx(6.0)) in alone[1]
    assert with_b == alone


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
    rp = Replay(sample_scenario(spec, duration=400.0, step=1.0), lines={"f": line})
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
