"""Replays: the bundled scenarios, events (impacts, derailments, collisions), outputs,
scenario errors, and a sample consist over DK24."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import DK24, DK24_ROUTE, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24

from tdbtools.cli import main
from tdbtools.physics.events import Collision, Derailment, StandIn
from tdbtools.physics.replay import Replay, ReplayError, replay
from tdbtools.physics.scenario import ScenarioError, read_scenario, scenario_from_text


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
