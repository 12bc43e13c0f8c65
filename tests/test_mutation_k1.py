"""Second mutation pass over the scenario reader, the track line, the replay, its
signalling and its events (docs/mutation.md §6): each test pins a behaviour a user
relies on that mutants changed without any other fast test noticing."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL, SAMPLE_ROUTE

from tdbtools.formats import load_route
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
    MAX_DURATION,
    MAX_STEP,
    MAX_STEPS,
    MIN_STEP,
    Command,
    Scenario,
    ScenarioError,
    SwitchEvent,
    TrainSpec,
    one_train_scenario,
    read_scenario,
    read_toml_text,
    run_limits_problem,
    scenario_from_dict,
    scenario_from_text,
    with_settings,
)
from tdbtools.physics.signalling import DepartDriver, SignalDriver, wrap_driver
from tdbtools.physics.trackline import TrackLine, TrackLineError
from tdbtools.signals.runtime import CREEP
from tdbtools.track import Traveller

# -- the scenario reader -----------------------------------------------------------------

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
            "train 'train1' schedule: unknown key 'gear' (known: at, brake, throttle)",
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
        True,
        "dry",
        "s.toml",
    )
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


# -- the track line ----------------------------------------------------------------------
# Lines are built inside each test (no module fixture): mutmut ties a function's mutants
# to the tests that ran it, and a shared fixture would hide all but the first test.

PATHS = SAMPLE_ROUTE / "PATHS"
V_A, J1, V_MAIN, V_SID = 2, 3, 4, 6
KMH = 1 / 3.6


@functools.lru_cache(maxsize=1)
def _route():
    return load_route(SAMPLE_ROUTE, cache=False)


def _line(name: str = "MainWE.pat", **kw) -> TrackLine:
    return TrackLine.from_path(_route(), PATHS / name, **kw)


def test_main_line_pieces_are_the_sections_walked():
    """MainWE (sample_routes/README.md): V_a walked backward from offset 420 (its three
    sections, rising 4 ‰ eastbound on the last two), then V_main forward section by
    section, to the east buffer 23.6 m past the path's end."""
    line = _line()
    j = 420.0
    sec = [80.0, 60.0, 60.0, 250.0, 43.633232, 120.0, 40.0, 250.0, 250.0]
    bounds = [0.0, 420.0 - 337.266463, 420.0 - 250.0, j] + list(j + np.cumsum(sec))
    assert line.piece_s1[-1] == line.length == pytest.approx(j + 1153.633232, abs=1e-5)
    assert np.array_equal(line.piece_s0[1:], line.piece_s1[:-1])
    assert line.piece_s0[0] == 0.0
    edges = np.concatenate([line.piece_s0, line.piece_s1[-1:]])
    # the last 250 m section of V_main crosses a tile boundary: walked as two pieces
    assert np.allclose(np.delete(edges, -2), bounds, atol=1e-5)
    assert line.piece_row.tolist() == list(range(2, -1, -1)) + list(range(3, 12)) + [11]
    assert line.piece_dir.tolist() == [0, 0, 0] + [1] * 10
    assert line.piece_soff0[:4] == pytest.approx([420.0 - 337.266463, 87.266463, 250.0, 0.0], abs=1e-5)
    assert line.piece_soff0[-1] == pytest.approx(line.piece_s0[-1] - line.piece_s0[-2], abs=1e-9)
    tan4, tan5 = math.tan(0.004), math.tan(0.005)
    assert line.piece_grade == pytest.approx([tan4, tan4, 0, 0, 0, 0, tan5, tan5, 0, 0, 0, 0, 0], abs=1e-6)
    # R500 +10° walked backward turns left; V_main: R1200 left, R500 left, R1500 right
    assert line.piece_curvature == pytest.approx(
        [0, -1 / 500, 0, 0, 0, -1 / 1200, 0, -1 / 500, 1 / 1500, 0, 0, 0, 0], abs=1e-6
    )
    assert (line.seg_node.tolist(), line.seg_dir.tolist()) == ([V_A, V_MAIN], [0, 1])
    assert line.seg_s0 == pytest.approx([0.0, j], abs=1e-5)
    assert line.seg_s1 == pytest.approx([j, line.length], abs=1e-5)
    assert line.seg_off0 == pytest.approx([420.0, 0.0], abs=1e-5)
    assert (line.junction_node.tolist(), line.junction_route.tolist(), line.junction_facing.tolist()) == (
        [J1],
        [0],
        [True],
    )
    assert (line.route_name, line.step, line.part, line.parts) == ("tdbtools sample route", 2.0, 0, 1)
    assert line.path_length == pytest.approx(j + 1130.0, abs=1e-5)
    # samples every 2 m and at every piece boundary
    assert len(line) == len(line.s) == 800
    assert set(np.round(edges, 6)) <= set(np.round(line.s, 6))
    assert np.diff(line.s).max() <= 2.0 + 1e-9 and np.diff(line.s).min() > 1e-7
    assert (
        repr(line) == f"TrackLine({str(PATHS / 'MainWE.pat')!r}, 1573.6 m, 800 samples, 2 node(s), track end)"
    )


def test_lines_the_other_way_and_into_the_siding():
    """Westbound the junction is met trailing from route 0 and the grades fall; into the
    siding it is met facing, set to route 1; the 80 km/h post governs eastbound only."""
    ew = _line("MainEW.pat")
    (jn,) = ew.junctions
    assert (jn.node, jn.route, jn.facing) == (J1, 0, False)
    assert jn.s == pytest.approx(1130.0, abs=1e-5)
    assert ew.piece_dir.tolist() == [0] * 9 + [1] * 5
    assert ew.piece_grade[ew.piece_grade != 0] == pytest.approx(
        [-math.tan(0.005)] * 2 + [-math.tan(0.004)] * 3, abs=1e-6
    )
    assert ew.limit_s.tolist() == [0.0] and ew.post_s.size == 0 and ew.post_kind == ()
    assert ew.ends_at_track_end and not ew.starts_at_track_end
    sid = _line("Siding.pat")
    (jn,) = sid.junctions
    assert (jn.node, jn.route, jn.facing) == (J1, 1, True)
    assert sid.seg_node.tolist() == [V_A, V_SID]
    assert sid.limit_v.tolist() == sid.limit_v_freight.tolist() == [pytest.approx(120 * KMH)]
    assert sid.post_kind == ("warning",) and sid.post_s == pytest.approx([20.0])
    assert repr(sid).endswith(", 454 samples, 2 node(s), track end)")
    short = _line("Siding.pat", extend=5.0)
    assert not short.ends_at_track_end and repr(short).endswith(" 2 node(s))")
    assert short.length == pytest.approx(short.path_length + 5.0, abs=1e-6)


def test_line_lookups_at_exact_places():
    """node/offset/direction at and around the junction, clipping, and the columns of
    ``at`` (interpolated and exact) against the route's geometry."""
    line = _line()
    node, off, d = line.node_offset([-5.0, 0.0, 100.0, 420.0, 420.5, 5000.0])
    assert node.tolist() == [V_A, V_A, V_A, V_A, V_MAIN, V_MAIN]
    assert d.tolist() == [0, 0, 0, 0, 1, 1]
    assert off == pytest.approx([420.0, 420.0, 320.0, 0.0, 0.5, 1153.633232], abs=1e-5)
    a = line.at([-5.0, 100.0, 420.5, 1e4])
    assert a["s"].tolist() == [0.0, 100.0, 420.5, line.length]
    assert set(a) == {
        "s", "node", "offset", "direction", "tile_x", "tile_z", "x", "y", "z", "X", "Z", "heading",
        "grade", "curvature", "speed_limit",
    }  # fmt: skip
    assert a["tile_x"].tolist() == [-5631, -5631, -5631, -5630] and a["tile_z"].tolist() == [15116] * 4
    assert a["y"][2] == pytest.approx(42.0, abs=1e-6) and a["y"][3] == pytest.approx(43.467883, abs=1e-5)
    assert a["x"][3] == pytest.approx(-737.632466, abs=1e-3) and a["z"][3] == pytest.approx(
        1.366876, abs=1e-3
    )
    assert a["X"][2] == pytest.approx(-5631 * 2048 + a["x"][2]) and a["Z"][2] == pytest.approx(
        15116 * 2048 + a["z"][2]
    )
    assert a["grade"] == pytest.approx([math.tan(0.004), math.tan(0.004), 0.0, 0.0], abs=1e-6)
    assert a["curvature"] == pytest.approx([0.0, -0.002, 0.0, 0.0], abs=1e-9)
    assert a["speed_limit"] == pytest.approx([120 * KMH] * 3 + [80 * KMH])
    assert a["heading"][2] == pytest.approx(1.35, abs=1e-6)  # AY of V_main at J1
    ex = line.at([-5.0, 100.3, 421.1, 1e4], exact=True)
    assert set(ex) == set(a) and ex["s"].tolist() == [0.0, 100.3, 421.1, line.length]
    assert ex["node"].tolist() == [V_A, V_A, V_MAIN, V_MAIN] and ex["direction"].tolist() == [0, 0, 1, 1]
    assert ex["offset"] == pytest.approx([420.0, 319.7, 1.1, 1153.633232], abs=1e-5)
    assert ex["tile_x"].tolist() == [-5631, -5631, -5631, -5630]
    assert ex["x"][2] == pytest.approx(200.0 + 1.1 * math.sin(1.35), abs=1e-5)
    assert ex["z"][2] == pytest.approx(-310.0 + 1.1 * math.cos(1.35), abs=1e-5)
    assert ex["X"][2] == pytest.approx(-5631 * 2048 + 200.0 + 1.1 * math.sin(1.35), abs=1e-5)
    assert ex["Z"][2] == pytest.approx(15116 * 2048 - 310.0 + 1.1 * math.cos(1.35), abs=1e-5)
    assert ex["y"][2] == pytest.approx(42.0, abs=1e-9) and ex["y"][3] == pytest.approx(43.467883, abs=1e-5)
    assert ex["heading"][2] == pytest.approx(1.35, abs=1e-9)
    # walked backward, V_a's heading is its own AY + π, wrapped
    assert -math.pi < ex["heading"][1] <= math.pi
    assert ex["heading"][1] == pytest.approx(a["heading"][1] + 0.0003 * 0, abs=2e-3)
    assert ex["grade"] == pytest.approx(a["grade"], abs=0) and ex["curvature"][1] == -0.002
    assert ex["speed_limit"] == pytest.approx([120 * KMH] * 3 + [80 * KMH])
    loc = line.location(420.0)
    assert loc.as_tuple() == pytest.approx((-5631, 15116, 200.0, 42.0, -310.0), abs=1e-5)
    assert type(loc.tile_x) is int and type(loc.y) is float
    assert line.heading_at([420.0]) == pytest.approx([1.35], abs=1e-6)
    assert line.limit([429.0, 431.0], "freight") == pytest.approx([120 * KMH, 80 * KMH])
    with pytest.raises(ValueError, match=r"category must be one of \('passenger', 'freight'\), not 'goods'"):
        line.limit(0.0, "goods")


def test_occupancy_and_locate_at_the_edges():
    line = _line()
    j = 420.0
    occ = line.occupancy(j + 10.0, j - 20.0)  # either order
    assert [o[0] for o in occ] == [V_A, V_MAIN]
    assert occ[0][1:] == pytest.approx((20.0, 0.0), abs=1e-5) and occ[1][1:] == pytest.approx(
        (0.0, 10.0), abs=1e-5
    )
    assert line.occupancy(-10.0, 5.0) == [(V_A, pytest.approx(420.0), pytest.approx(415.0))]
    assert line.occupancy(line.length - 3.0, line.length + 50.0) == [
        (V_MAIN, pytest.approx(1150.633232, abs=1e-5), pytest.approx(1153.633232, abs=1e-5))
    ]
    assert line.occupancy(line.length + 1.0, line.length + 50.0) == []
    assert line.occupancy(-20.0, -10.0) == []
    assert line.occupancy(100.0, 100.0) == [(V_A, pytest.approx(320.0), pytest.approx(320.0))]
    assert line.occupancy(j, j) == [(V_A, pytest.approx(0.0, abs=1e-5), pytest.approx(0.0, abs=1e-5))]
    assert line.occupancy(j + 5.0, j + 5.0 + 1e-10)[0][0] == V_MAIN
    assert line.locate(V_A, 320.0) == pytest.approx([100.0], abs=1e-5)
    assert line.locate(V_A, 420.0 + 5e-7) == pytest.approx([0.0], abs=1e-6)  # within the tolerance: clamped
    assert line.locate(V_A, 420.01).size == 0 and line.locate(V_A, -0.01).size == 0
    assert line.locate(V_A, 420.01, tol=0.1) == pytest.approx([0.0], abs=1e-6)
    assert line.locate(V_MAIN, 1153.633232) == pytest.approx([line.length], abs=1e-5)
    assert line.locate(V_MAIN, 1153.64).size == 0 and line.locate(V_SID, 1.0).size == 0


def test_synthetic_line_columns():
    """A 1 % grade, curved synthetic line with posts given out of order and their own
    freight values."""
    g = 0.01
    line = TrackLine.synthetic(
        95.0,
        grade=g,
        curvature=0.002,
        route_limit=30.0,
        limits=((50.0, 20.0), (20.0, 40.0)),
        freight_limits=((20.0, 25.0), (50.0, 10.0)),
        step=10.0,
        node=7,
        source="syn",
    )
    assert line.s == pytest.approx(np.linspace(0.0, 95.0, 11))
    assert (line.route_name, line.source, line.step, line.length, line.path_length) == (
        "synthetic",
        "syn",
        10.0,
        95.0,
        95.0,
    )
    assert line.ends_at_track_end and line.starts_at_track_end
    c = 1 / math.sqrt(1 + g * g)
    assert line.y == pytest.approx(line.s * g * c) and line.z == pytest.approx(line.s * c)
    assert (
        line.Z == pytest.approx(line.z) and not line.X.any() and not line.x.any() and not line.heading.any()
    )
    assert line.offset == pytest.approx(line.s) and line.offset is not line.s
    assert set(line.node.tolist()) == {7} and set(line.direction.tolist()) == {1}
    assert not line.tile_x.any() and not line.tile_z.any()
    assert line.grade == pytest.approx([g] * 11) and line.curvature == pytest.approx([0.002] * 11)
    assert line.limit_s.tolist() == [0.0, 20.0, 50.0]
    assert line.limit_v.tolist() == [30.0, 30.0, 20.0]  # 40 capped at the route limit
    assert line.limit_v_freight.tolist() == [30.0, 25.0, 10.0]
    assert line.speed_limit.tolist() == [30.0] * 6 + [20.0] * 5  # 50 m lies between 47.5 and 57
    assert line.limit(50.0, "freight") == 10.0 and line.limit(49.9, "freight") == 25.0
    assert line.post_s.tolist() == [20.0, 50.0] and line.post_kind == ("limit", "limit")
    assert (line.seg_node.tolist(), line.seg_dir.tolist(), line.seg_s0.tolist(), line.seg_s1.tolist()) == (
        [7],
        [1],
        [0.0],
        [95.0],
    )
    assert line.seg_off0.tolist() == [0.0] and line.piece_soff0.tolist() == [0.0]
    assert (line.piece_s0.tolist(), line.piece_s1.tolist(), line.piece_dir.tolist()) == ([0.0], [95.0], [1])
    assert line.piece_grade.tolist() == [g] and line.piece_curvature.tolist() == [0.002]
    assert line.junctions == [] and line.junction_s.size == 0
    assert line.heading_at([30.0]).tolist() == [0.0]
    assert line.node_offset([30.0])[1].tolist() == [30.0]
    assert line.grade_at(50.0) == g and line.curvature_at(50.0) == 0.002
    assert line.occupancy(10.0, 30.0) == [(7, 10.0, 30.0)]
    assert line.locate(7, 30.0).tolist() == [30.0]
    assert repr(line) == "TrackLine('syn', 95.0 m, 11 samples, 1 node(s), track end)"
    one = TrackLine.synthetic(0.5)
    assert one.s.tolist() == [0.0, 0.5] and one.limit_v.tolist() == [500.0] and one.post_kind == ()
    assert one.limit_v_freight.tolist() == [500.0] and one.step == 10.0 and one.node.tolist() == [1, 1]
    same = TrackLine.synthetic(100.0, limits=((40.0, 10.0),))
    assert same.limit_v_freight.tolist() == [500.0, 10.0]  # freight as passenger by default
    with pytest.raises(TrackLineError, match="^freight limits must be given at the same posts$"):
        TrackLine.synthetic(100.0, limits=((40.0, 10.0),), freight_limits=())
    with pytest.raises(TrackLineError, match="^freight limits must be given at the same posts$"):
        TrackLine.synthetic(100.0, limits=((40.0, 10.0),), freight_limits=((30.0, 10.0),))


def test_line_construction_errors_say_why(tmp_path):
    route = _route()
    with pytest.raises(TrackLineError) as ei:
        _line(part=1)
    assert str(ei.value) == f"path {PATHS / 'MainWE.pat'} has 1 part(s): no part 1"
    with pytest.raises(TrackLineError, match="no part -1$"):
        _line(part=-1)
    for bad in (0, -2.0, float("nan"), "2", True * 0):
        with pytest.raises(TrackLineError) as ei:
            TrackLine.from_path(route, PATHS / "MainWE.pat", step=bad)  # type: ignore[arg-type]
        assert str(ei.value) == f"the sampling step must be a positive number of metres, got {bad!r}"
    t = Traveller(route, V_A, 100.0, 1)
    with pytest.raises(
        TrackLineError, match="^the sampling step must be a positive number of metres, got 0$"
    ):
        TrackLine.from_traveller(t, step=0)
    tl = TrackLine.from_traveller(t, length=50.0, step=5.0)
    assert (tl.source, tl.length, tl.path_length, tl.step) == ("traveller", 50.0, 50.0, 5.0)
    assert t.offset == 100.0  # the traveller is not moved
    assert tl.node_offset([50.0])[1] == pytest.approx([150.0])
    assert not tl.ends_at_track_end and not tl.starts_at_track_end
    end = TrackLine.from_traveller(Traveller(route, V_A, 430.0, 1), length=50.0, source="w")
    assert end.source == "w" and end.ends_at_track_end and end.length == pytest.approx(7.266463, abs=1e-5)
    at_buffer = TrackLine.from_traveller(Traveller(route, V_A, 437.266463 - 1e-4, 0), length=5.0)
    assert at_buffer.starts_at_track_end  # the buffer is 0.1 mm behind: within 1 mm
    near = TrackLine.from_traveller(Traveller(route, V_A, 437.266463 - 0.01, 0), length=5.0)
    assert not near.starts_at_track_end and not near.ends_at_track_end


# -- the replay --------------------------------------------------------------------------

CONSISTS = SAMPLE_INSTALL / "TRAINS" / "CONSISTS"


def _sc(*trains: TrainSpec, **kw) -> Scenario:  # noqa: ANN003
    return Scenario(SAMPLE_ROUTE, tuple(trains), **kw)


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
            Replay(_sc(spec, duration=5.0))
        assert str(ei.value) == message
    # the same train fits when the path is extended, or starts 7 m further back
    Replay(_sc(dataclasses.replace(cases[3][0], beyond_path=7.0), duration=5.0))
    Replay(_sc(dataclasses.replace(cases[3][0], start_offset=1213.0), duration=5.0))


def test_replay_summary_and_traces_of_a_short_run(tmp_path):
    """Three seconds of an engine pair starting at 5 m/s, 100 m along a level line: every
    summary figure, trace column and car-trace row."""
    line = TrackLine.synthetic(3000.0, route_limit=20.0)
    spec = TrainSpec(
        "b/1", CONSISTS / "sample_double.con", path=Path("x"), start_offset=100.0, start_speed=5.0
    )
    rp = Replay(_sc(spec, duration=3.0, step=0.1), lines={"b/1": line}, cars_trace=True, trace_every=1.0)
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
    assert set(s) == {"scenario", "route", "simulated_seconds", "wall_seconds", "trains", "realtime_factor"}
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
    rp = Replay(_sc(a, b, duration=1.0), lines={"behind": line, "ahead": line})
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
    own = Replay(_sc(a, b, duration=1.0), lines={"behind": line, "ahead": TrackLine.synthetic(2000.0)})
    assert [t.line_id for t in own.trains] == [0, 1]
    res = rp.run()
    assert set(res.summary["trains"]) == {"ahead", "behind"}
    assert res.summary["trains"]["behind"]["cars"] == 2


# -- signalling ----------------------------------------------------------------------------


def _auto(stop_at: float | None = 1000.0) -> AutoDriver:
    return AutoDriver([0.0], [20.0], stop_at, max_speed=None, deceleration=0.5)


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


# -- the replay's loop: how runs end, and the events on the way -------------------------------


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
    rp = Replay(_sc(spec, duration=60.0), lines={"s": line})
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
    rp = Replay(_sc(spec, duration=30.0), lines={"r": line})
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
    rp = Replay(_sc(spec, duration=200.0, events=(SwitchEvent(1.0, 3, 1),)))
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
    rp = Replay(_sc(spec, duration=20.0), lines={"b": TrackLine.synthetic(3000.0)})
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
    rp = Replay(_sc(spec, duration=30.0), lines={"r": line})
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
    rp = Replay(_sc(spec, duration=1.0))
    t = rp.trains[0]
    assert t.waits == [(pytest.approx(1250.0, abs=1e-5), 60.0, None)]
    stops = [(p.s, p.wait, p.kind) for p in t.driver.stops]
    assert stops == [
        (pytest.approx(1250.0, abs=1e-5), 60.0, "waiting point"),
        (pytest.approx(t.line.path_length - 2.0), math.inf, "end"),
    ]
    elsewhere = dataclasses.replace(_sc(spec, duration=1.0), route=tmp_path / "no route here")
    res = replay(elsewhere, route=_route())
    assert res.summary["route"] == "tdbtools sample route"


def test_stand_in_stock_is_reported_at_the_start(tmp_path):
    con = tmp_path / "odd.con"
    con.write_text(
        'SIMISA@@@@@@@@@@JINX0D0t______\nTrain ( TrainCfg ( "odd" Name ( "odd" ) '
        "Engine ( UiD ( 1 ) EngineData ( NOPE_LOCO NOPE_FOLDER ) ) ) )\n"
    )
    spec = TrainSpec("odd", con, path=Path("MainWE.pat"), stand_in=True)
    res = Replay(_sc(spec, duration=0.5)).run()
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
        _sc(spec, duration=10.0), lines={"c": TrackLine.synthetic(2000.0, grade=-0.01)}, trace_every=1.0
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
    rp = Replay(_sc(behind, ahead, duration=8.0), lines={"behind": line, "ahead": line})
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
    rp = Replay(_sc(west, east, duration=20.0))
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
    rp = Replay(_sc(spec, duration=15.0), lines={"d": TrackLine.synthetic(2000.0)})
    s = rp.run().summary["trains"]["d"]
    assert (s["finished"], s["running_time_s"], s["distance_m"]) == (False, 15.0, 0.0)
    done = dataclasses.replace(spec, schedule=(Command(0.0, 0.0, 1.0),))
    s = (
        Replay(_sc(done, duration=15.0), lines={"d": TrackLine.synthetic(2000.0)})
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
        _sc(spec, duration=8.0), lines={"b": TrackLine.synthetic(2000.0, grade=0.01)}, trace_every=0.5
    )
    tr = rp.run().traces["b"]
    assert tr["speed"][:13] == pytest.approx(-3.0 + 0.25 * np.arange(13), abs=1e-9)
    assert tr["speed"][-1] == 0.0 and tr["distance"][-1] == pytest.approx(-9.0, abs=1e-6)
