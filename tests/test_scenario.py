"""The scenario reader (physics/scenario.py): keys, bounds, defaults, and errors that say
what and where."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers import SAMPLE_ROUTE

from tdbtools.physics.scenario import (
    MAX_DURATION,
    MAX_STEP,
    MAX_STEPS,
    MIN_STEP,
    Scenario,
    ScenarioError,
    TrainSpec,
    one_train_scenario,
    read_toml_text,
    run_limits_problem,
    scenario_from_dict,
    scenario_from_text,
    with_settings,
)


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


_T = '[[train]]\nconsist = "c"\npath = "p"\n'


@pytest.mark.parametrize(
    "body, message, line, column",
    [
        (
            "step = 2\n" + _T,
            "step: 2 s is outside [0.0001, 1] s (the physics takes one step at a time and is "
            "not stable beyond 1 s)",
            2,
            1,
        ),
        ("duration = 0\n" + _T, "duration: 0 s is outside (0, 1e+06] s", 2, 1),
        (
            "step = 1e-4\nduration = 1e4\n" + _T,
            "duration 10000 s at step 0.0001 s is 1e+08 steps, over the limit of 10,000,000: "
            "use a shorter duration or a larger step",
            3,
            1,
        ),
        ("step = true\n" + _T, "step: expected a number or a quantity like '160km/h', got bool", 2, 1),
        ("step = nan\n" + _T, "step: must be finite, got nan", 2, 1),
        ("stand_in = 1\n" + _T, "stand_in: expected true or false", 2, 1),
        ("train = 3\n", "scenario: at least one [[train]] is required", 2, 1),
        ("", "scenario: at least one [[train]] is required", 1, 1),
        ("train = [1]\n", "[[train]] entries must be tables", 2, 1),
        ("[[event]]\nat = 1\njunction = 3\n" + _T, "event: 'route' is required", 2, 1),
        ("[[event]]\nat = 1\nroute = 0\n" + _T, "event: 'junction' is required", 2, 1),
        ("[[event]]\njunction = 3\nroute = 0\n" + _T, "event: 'at' is required", 2, 1),
        ("event = [1]\n" + _T, "[[event]] entries must be tables", 2, 1),
        ("[[event]]\nat = 1\njunction = 0\nroute = 0\n" + _T, "junction: 0 is outside [1, inf]", 4, 1),
        ("[[event]]\nat = -1\njunction = 3\nroute = 0\n" + _T, "at: -1 is outside [0.0, inf]", 3, 1),
        (
            "[[event]]\nat = 1\njunction = 3\nwhen = 0\n" + _T,
            "event: unknown key 'when' (known: at, junction, route)",
            5,
            1,
        ),
        (
            "collision_check_interval = 61\n" + _T,
            "collision_check_interval: 61 is outside [0.1, 60.0]",
            2,
            1,
        ),
        (
            "step = 0.2\ncollision_check_interval = 0.1\n" + _T,
            "collision_check_interval: 0.1 is outside [0.2, 60.0]",
            3,
            1,
        ),
        ("rotating_mass = 1\n" + _T, "rotating_mass: expected true or false", 2, 1),
        ('adhesion = "icy"\n' + _T, 'adhesion must be "dry", "wet" or "off", got \'icy\'', 2, 1),
        # A key the entry lacks: the caret goes on that entry's [[train]] header.
        ('[[train]]\npath = "p"\n', "train 'train1': 'consist' is required", 2, 1),
        ('[[train]]\nconsist = 3\npath = "p"\n', "train 'train1': 'consist' is required", 3, 1),
        ('[[train]]\nname = "a"\nconsist = "c"\npath = 3\n', "train 'a': 'path' must be a file name", 5, 1),
        (
            '[[train]]\nconsist = "c"\nstart = 3\n',
            "train 'train1': 'start' must be a table { tile = [TX, TZ], pos = [X, Z] }",
            4,
            1,
        ),
        (
            '[[train]]\nconsist = "c"\nstart = { tile = [1], pos = [1, 2] }\n',
            "train 'train1': start needs tile = [TX, TZ] and pos = [X, Z]",
            4,
            11,
        ),
        (
            '[[train]]\nconsist = "c"\nstart = { tile = [1, 2], pos = [1] }\n',
            "train 'train1': start needs tile = [TX, TZ] and pos = [X, Z]",
            4,
            11,
        ),
        (
            '[[train]]\nconsist = "c"\nstart = { tile = [1, 2], pos = [1, 2], back = true }\n',
            "train 'train1' start: unknown key 'back' (known: backward, pos, tile)",
            4,
            40,
        ),
        (
            '[[train]]\nconsist = "c"\npath = "p"\nstart = { tile = [1, 2], pos = [1, 2] }\n',
            "train 'train1': give either 'path' or 'start'",
            4,
            1,
        ),
        (_T + "schedule = 3\n", "train 'train1': 'schedule' must be a list of tables", 5, 1),
        (_T + "schedule = [1]\n", "train 'train1': schedule entries must be tables", 5, 1),
        (_T + "schedule = [{ at = -1 }]\n", "at: -1 is outside [0.0, inf]", 5, 15),
        (_T + "schedule = [{ throttle = 2 }]\n", "throttle: 2 is outside [0.0, 1.0]", 5, 15),
        (_T + "schedule = [{ brake = -0.5 }]\n", "brake: -0.5 is outside [0.0, 1.0]", 5, 15),
        (
            _T + "schedule = [{ gear = 1 }]\n",
            "train 'train1' schedule: unknown key 'gear' (known: at, brake, dynamic, throttle)",
            5,
            15,
        ),
        (_T + 'driver = "x"\n', "train 'train1': driver must be \"auto\" or \"schedule\", got 'x'", 5, 1),
        (_T + 'schedule_by = "x"\n', 'train \'train1\': schedule_by must be "time" or "distance"', 5, 1),
        (_T + 'brake_mode = "x"\n', 'train \'train1\': brake_mode must be "force" or "deceleration"', 5, 1),
        (
            _T + 'allowance_mode = "x"\n',
            "train 'train1': allowance_mode must be \"linear\" or \"eco\", got 'x'",
            5,
            1,
        ),
        (_T + "stand_in = 2\n", "stand_in: expected true or false", 5, 1),
        (_T + "distance = 0.5\n", "distance: 0.5 is outside [1.0, 10000000.0]", 5, 1),
        (_T + 'deceleration = "1m/s2"\n', "deceleration: expected a number, got '1m/s2'", 5, 1),
        (_T + "deceleration = [1]\n", "deceleration: expected a number, got list", 5, 1),
        (_T + "deceleration = 0.04\n", "deceleration: 0.04 is outside [0.05, 3.0]", 5, 1),
        (
            _T + 'distance = "5 parsecs"\n',
            "distance: unknown unit 'parsecs' in '5parsecs' for distance; known: cm, ft, in, in/2, km, m, mm",
            5,
            1,
        ),
        (_T + "distance = 1e400\n", "distance: must be finite, got inf", 5, 1),
        (
            _T + "distance = 99999999999999999999999999999999999999999999" + "9" * 300 + "\n",
            "distance: 999999999999… (344 digits) is too large",
            5,
            1,
        ),
        (_T + "allowance = 101\n", "allowance: 101 is outside [0.0, 100.0]", 5, 1),
        (_T + "allowance_min_per_100km = 61\n", "allowance_min_per_100km: 61 is outside [0.0, 60.0]", 5, 1),
        (_T + "start_offset = -1\n", "start_offset: -1 is outside [0.0, inf]", 5, 1),
        (_T + "beyond_path = 2e6\n", "beyond_path: 2e+06 is outside [0.0, 1000000.0]", 5, 1),
        (_T + 'max_speed = "0.05m/s"\n', "max_speed: 0.05 is outside [0.1, 300.0]", 5, 1),
        (_T + "start_speed = 301\n", "start_speed: 301 is outside [0.0, 300.0]", 5, 1),
        (_T + "brake_build_up = 121\n", "brake_build_up: 121 is outside [0.0, 120.0]", 5, 1),
        (_T + "depart = -1\n", "depart: -1 is outside [0.0, 10000000.0]", 5, 1),
        (
            _T + '[[train]]\nname = "train1"\nconsist = "c"\npath = "p"\n',
            "train names must be unique: ['train1', 'train1']",
            6,
            1,
        ),
    ],
)
def test_each_scenario_error_says_what_and_where(body, message, line, column):
    """The exact message (what a user reads) and the line and column of the key."""
    with pytest.raises(ScenarioError) as ei:
        scenario_from_text('route = "x"\n' + body, "s.toml")
    assert ei.value.message == message
    assert (ei.value.path, ei.value.line, ei.value.column) == ("s.toml", line, column)
    assert ei.value.snippet.endswith("^")


def test_a_key_missing_from_a_later_entry_points_at_that_entrys_header():
    """Not at (1, 1), nor at the same key of an earlier entry."""
    text = 'route = "x"\n' + _T + '\n  [[train]]\nname = "b"\npath = "p"\n'
    with pytest.raises(ScenarioError) as ei:
        scenario_from_text(text, "s.toml")
    assert ei.value.message == "train 'b': 'consist' is required"
    assert (ei.value.line, ei.value.column) == (6, 3)
    assert ei.value.snippet == "      [[train]]\n      ^"
    text = 'route = "x"\n[[event]]\nat = 1\njunction = 3\nroute = 0\n[[event]]\nat = 2\nroute = 0\n' + _T
    with pytest.raises(ScenarioError) as ei:
        scenario_from_text(text, "s.toml")
    assert ei.value.message == "event: 'junction' is required"
    assert (ei.value.line, ei.value.column) == (6, 1)


def test_scenario_keys_at_their_bounds_are_accepted():
    """Every bound is inclusive: the extreme values a user may give all read back."""
    sc = scenario_from_text(
        'route = "x"\nstep = 1\nduration = 1e6\ncollision_check_interval = 60\n'
        "[[event]]\nat = 0\njunction = 1\nroute = 1\n"
        '[[train]]\nconsist = "c"\npath = "p"\ndistance = 1\nmax_speed = 0.1\nstart_speed = 300\n'
        "deceleration = 3\ndepart = 0\nbrake_build_up = 0\nallowance = 100\nallowance_min_per_100km = 60\n"
        "beyond_path = 1e6\n"
        "schedule = [ { at = 0, throttle = 1, brake = 1 } ]\n"
        '[[train]]\nconsist = "c"\npath = "p"\ndistance = 1e7\ndeceleration = 0.05\nstart_speed = 0\n'
        "depart = 1e7\nbrake_build_up = 120\nmax_speed = 300\n",
        "s.toml",
    )
    assert (sc.step, sc.duration, sc.collision_check_interval) == (1.0, 1e6, 60.0)
    a, b = sc.trains
    assert (a.name, b.name) == ("train1", "train2")  # named by their place
    assert (a.distance, a.max_speed, a.start_speed, a.deceleration) == (1.0, 0.1, 300.0, 3.0)
    assert (a.brake_build_up, a.allowance, a.allowance_min_per_100km, a.beyond_path) == (
        0.0,
        100.0,
        60.0,
        1e6,
    )
    assert a.driver == "schedule" and a.schedule[0] == dataclasses.replace(
        a.schedule[0], at=0.0, throttle=1.0
    )
    assert a.schedule[0].brake == 1.0
    assert (b.distance, b.deceleration, b.depart, b.brake_build_up, b.max_speed) == (
        1e7,
        0.05,
        1e7,
        120.0,
        300.0,
    )
    assert b.driver == "auto" and b.schedule == ()
    assert sc.events[0] == dataclasses.replace(sc.events[0], at=0.0, junction=1, route=1)
    assert run_limits_problem(MIN_STEP, MIN_STEP * MAX_STEPS) is None
    assert run_limits_problem(MAX_STEP, MAX_DURATION) is None


def test_scenario_defaults_and_orders():
    """What a minimal file gives, events and schedule sorted by time, the route folder
    relative to the file, and the collision interval following a large step."""
    sc = scenario_from_text(
        'route = "r/ROUTE"\nstep = 0.8\n'
        "[[event]]\nat = 9\njunction = 4\nroute = 1\n[[event]]\nat = 2\njunction = 5\nroute = 0\n"
        '[[train]]\nconsist = "c"\nstart = { tile = [-1, 2], pos = [3.5, -4] }\n'
        'schedule = [ { at = 30, brake = 0.5 }, { at = 10, throttle = 0.25 } ]\nschedule_by = "distance"\n',
        "s.toml",
        base=Path("/base"),
    )
    assert sc.route == Path("/base/r/ROUTE").resolve()
    assert (sc.duration, sc.stand_in, sc.rotating_mass, sc.adhesion, sc.source) == (
        3600.0,
        False,
        None,
        "dry",
        "s.toml",
    )
    assert sc.profile(True) == ("engineering", True)  # (None: the profile's default)
    assert sc.collision_check_interval == 0.8  # max(0.5, step)
    assert [(e.at, e.junction, e.route) for e in sc.events] == [(2.0, 5, 0), (9.0, 4, 1)]
    t = sc.trains[0]
    assert t.path is None and (t.start.tile_x, t.start.tile_z, t.start.x, t.start.z) == (-1, 2, 3.5, -4.0)
    assert t.start.backward is False
    assert [(c.at, c.throttle, c.brake) for c in t.schedule] == [(10.0, 0.25, 0.0), (30.0, 0.0, 0.5)]
    assert (t.driver, t.schedule_by) == ("schedule", "distance")
    d = TrainSpec("x", Path("c"))
    assert (t.distance, t.start_offset, t.beyond_path, t.max_speed, t.start_speed) == (
        d.distance,
        d.start_offset,
        d.beyond_path,
        None,
        0.0,
    )
    assert (t.brake_mode, t.deceleration, t.stand_in, t.category, t.brake_build_up) == (
        "force",
        0.5,
        None,
        None,
        None,
    )
    assert (t.allowance, t.allowance_min_per_100km, t.allowance_mode, t.depart) == (0.0, 0.0, "linear", 0.0)
    assert scenario_from_text('route = "/abs/R"\n' + _T, "s.toml").route == Path("/abs/R")
    small = scenario_from_text('route = "x"\nstep = 0.05\n' + _T, "s.toml")
    assert small.collision_check_interval == 0.5


def test_scenario_from_a_dict_and_its_settings():
    sc = scenario_from_dict({"route": "/r", "train": [{"consist": "c", "path": "p"}]})
    assert sc.source == "<scenario>" and sc.trains[0].path == Path("p")
    with pytest.raises(ScenarioError) as ei:
        scenario_from_dict({"route": 3, "train": []})
    assert ei.value.message == "scenario: 'route' (the route folder …/ROUTES/NAME) is required"
    assert ei.value.path == "<scenario>"
    assert with_settings(sc) is sc
    changed = with_settings(sc, stand_in=True, step=0.5, duration=60.0)
    assert (changed.stand_in, changed.step, changed.duration) == (True, 0.5, 60.0)
    assert with_settings(sc, step=0.2).duration == sc.duration
    with pytest.raises(ScenarioError) as ei:
        with_settings(sc, duration=-1.0)
    assert ei.value.message == "duration: -1 s is outside (0, 1e+06] s"
    assert (ei.value.path, ei.value.line, ei.value.column) == ("<scenario>", 1, 1)
    with pytest.raises(ScenarioError, match="^<x>:1:1: step: expected a number of seconds"):
        Scenario(Path("r"), (), step="0.1", source="<x>")  # type: ignore[arg-type]
    with pytest.raises(ScenarioError, match="duration: must be finite, got inf"):
        Scenario(Path("r"), (), duration=float("inf"))


def test_one_train_scenario_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sc = one_train_scenario("R", "dir/freight.con", "p.pat", stand_in=True)
    assert sc.route == (tmp_path / "R").resolve() and sc.stand_in is True
    (t,) = sc.trains
    assert (t.name, t.consist, t.path, t.driver) == (
        "freight",
        Path("dir/freight.con"),
        Path("p.pat"),
        "auto",
    )
    assert sc.source == str(tmp_path / "<command line>")
    assert one_train_scenario("R", "c.con", "p.pat").stand_in is False


def test_toml_file_errors_point_at_the_file(tmp_path):
    with pytest.raises(ScenarioError) as ei:
        read_toml_text(tmp_path / "none.toml", "sweep spec")
    assert ei.value.message == "sweep spec file not found"
    assert (ei.value.path, ei.value.line, ei.value.column) == (str(tmp_path / "none.toml"), 0, 0)
    with pytest.raises(ScenarioError) as ei:
        read_toml_text(tmp_path)
    assert ei.value.message.startswith("cannot read scenario: ")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'route = "x"\nname = "caf\xe9"\n')
    with pytest.raises(ScenarioError) as ei:
        read_toml_text(bad)
    assert (
        ei.value.message == "scenario is not UTF-8 text: byte 0xe9 at offset 23 (invalid continuation byte)"
    )
    assert (ei.value.line, ei.value.column) == (2, 12)
    assert ei.value.snippet == '    name = "café"\n               ^'
