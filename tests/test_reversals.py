"""Whole paths in activity replays (issue 26): reversals, waiting points, origin stops,
outcomes that say how far each service got (docs/activities.md §4.4–4.6).

The fixtures (tests/data/reversals.py) are activities on a copy of the signalled sample
route written as MSTS writes files (UTF-16LE + BOM, CRLF, odd folder case)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tdbtools.cli import main
from tdbtools.formats.consist import read_consist
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import ActivityReplay, fouling_length, plan_activity, replay_activity
from tdbtools.physics.reversal import CLEAR_MARGIN_M, REVERSAL_S, reverse_consist
from tdbtools.physics.trackline import TrackLine
from tdbtools.track.paths import resolve_path

H = 8 * 3600
CONSISTS = Path(__file__).resolve().parents[1] / "sample_routes" / "sample" / "TRAINS" / "CONSISTS"


@pytest.fixture(scope="module")
def route_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    try:
        from reversals import make_install
    finally:
        sys.path.pop(0)
    return make_install(tmp_path_factory.mktemp("rev") / "install")


@pytest.fixture(scope="module")
def runs(route_dir: Path) -> dict:
    return {}


def _run(route_dir: Path, runs: dict, name: str):  # noqa: ANN202
    if name not in runs:
        rep = ActivityReplay(plan_activity(route_dir / "Activities" / f"{name}.act"))
        runs[name] = (rep, rep.run())
    return runs[name]


def _events(res, kind: str) -> list:  # noqa: ANN001
    return [e for e in res.replay.events if e.kind == kind]


def test_fixture_files_are_utf16_crlf(route_dir: Path) -> None:
    for sub in ("Paths", "services", "Traffic", "Activities"):
        files = list((route_dir / sub).iterdir())
        assert files
        for f in files:
            raw = f.read_bytes()
            assert raw[:2] == b"\xff\xfe"
            text = raw[2:].decode("utf-16-le")
            assert "\r\n" in text and "\n" not in text.replace("\r\n", "")


def test_reverse_consist_turns_every_car() -> None:
    c = read_consist(CONSISTS / "sample_passenger.con")
    r = reverse_consist(c)
    assert [x.file for x in r.cars] == [x.file for x in reversed(c.cars)]
    assert [x.flipped for x in r.cars] == [not x.flipped for x in reversed(c.cars)]
    assert reverse_consist(r) == c


def test_one_reversal_at_a_junction(route_dir: Path, runs: dict) -> None:
    rep, res = _run(route_dir, runs, "OneRev")
    route = rep.route
    o = res.replay.summary["services"]["Rev1"]
    assert o["reached_end"] and o["reason"] == "end of path" and o["parts"] == 2
    assert not res.failed
    a, b = rep.trains[rep.index["Rev1"]], rep.trains[rep.index["Rev1 [2]"]]
    # The reversal: J_E (node 6) is where part 2 leaves the way part 1 came; part 1 stops
    # with its rear past the junction's clearance point (by CLEAR_MARGIN_M), short of the
    # reversal point; part 2 starts there, the former front now its rear.
    lines = TrackLine.path_parts(route, resolve_path(route, route_dir / "Paths" / "OneRev_Rev1.pat"))
    j = list(lines[0].junction_node).index(6)
    js = float(lines[0].junction_s[j])
    stop = js + fouling_length(route, 6) + CLEAR_MARGIN_M + a.length
    assert stop < lines[0].path_length
    x = rep.engine.x
    front1 = float(x[rep.train_start[rep.index["Rev1"]]])
    assert front1 == pytest.approx(stop, abs=AUTO_STOP_TOL)
    assert b.front0 == pytest.approx(lines[0].path_length - stop + b.length, abs=1e-6)
    # distance: part 1 from its start to the turn, part 2 from the turn to the path end
    assert o["distance_m"] == pytest.approx(o["path_m"], abs=2 * AUTO_STOP_TOL)
    assert o["path_m"] == pytest.approx((stop - a.length) + (lines[1].path_length - b.front0), abs=1e-3)
    # which car leads: part 2 runs the consist back to front
    c = read_consist(CONSISTS / "sample_passenger.con")
    assert o["lead_cars"] == [c.cars[0].file, c.cars[-1].file]
    assert [x.file for x in b.consist.cars] == [x.file for x in reversed(c.cars)]
    # times: part 2 stands REVERSAL_S after the stop, then moves off
    (rev,) = _events(res, "reversed")
    tr = res.replay.traces["Rev1 [2]"]
    t, v = np.asarray(tr["time"]), np.asarray(tr["speed"])
    moving = t[v > 0.05]
    assert moving[0] >= rev.time + REVERSAL_S - 1e-9
    assert moving[0] <= rev.time + REVERSAL_S + 8.0  # (and its signal cleared: measured 4.5 s)


#: Metres from the auto driver's stopping point the front comes to rest (it aims
#: STOP_SHORT before the target and arrives within ARRIVED_WITHIN).
AUTO_STOP_TOL = 2.5


def test_three_reversals(route_dir: Path, runs: dict) -> None:
    rep, res = _run(route_dir, runs, "ThreeRev")
    o = res.replay.summary["services"]["Rev3"]
    assert o["reached_end"] and o["parts"] == 4
    revs = _events(res, "reversed")
    assert [e.part for e in revs] == [1, 2, 3]
    assert all(b.time - a.time > REVERSAL_S for a, b in zip(revs, revs[1:]))
    c = read_consist(CONSISTS / "sample_passenger.con")
    assert o["lead_cars"] == [c.cars[0].file, c.cars[-1].file] * 2
    assert o["distance_m"] == pytest.approx(o["path_m"], abs=4 * AUTO_STOP_TOL)
    # the third reversal is on plain track (part 4 goes back the way part 3 came): the
    # train runs up to the reversal point
    route = rep.route
    lines = TrackLine.path_parts(route, resolve_path(route, route_dir / "Paths" / "ThreeRev_Rev3.pat"))
    k = rep.index["Rev3 [3]"]
    assert rep.parts[[sp.spec.name for sp in rep.parts].index("Rev3 [3]")].plan.diverge is None
    assert float(rep.engine.x[rep.train_start[k]]) == pytest.approx(lines[2].path_length, abs=AUTO_STOP_TOL)


def test_reversal_in_a_station_with_stops_on_both_sides(route_dir: Path, runs: dict, tmp_path: Path) -> None:
    rep, res = _run(route_dir, runs, "StationRev")
    o = res.replay.summary["services"]["StRev"]
    assert o["reached_end"] and o["stops"] == o["booked_stops"] == 2
    rows = res.timetable
    assert [r["platform"] for r in rows] == ["Midtby, Spor 1", "Midtby, Spor 2"]
    assert {r["train"] for r in rows} == {"StRev"}
    (rev,) = _events(res, "reversed")
    clock_rev = res.t0 + rev.time
    # the first stop before the turn, the second after; both leave at their booked time
    assert rows[0]["actual_dep"] < clock_rev < rows[1]["actual_arr"]
    assert [r["dep_delay_s"] for r in rows] == [0.0, 0.0]
    assert rows[0]["actual_arr"] < H + 200 and rows[1]["actual_arr"] < H + 520
    res.write(tmp_path)
    text = (tmp_path / "timetable.csv").read_text()
    assert text.count("StRev,Midtby") == 2


def test_ai_reversal_crossing_the_player(route_dir: Path, runs: dict) -> None:
    rep, res = _run(route_dir, runs, "AiRev")
    s = res.replay.summary
    assert s["collisions"] == 0 and not s["stuck"] and not s["deadlocks"]
    ai, player = s["services"]["AiRev"], s["services"]["East"]
    assert ai["reached_end"] and player["reached_end"] and ai["stops"] == 1
    # the AI came back through the loop while the player went east over the main: the
    # player was on the track during the AI's turn and both ran their whole paths
    (rev,) = _events(res, "reversed")
    on, off = res.on_track["East"][0], res.on_track["AiRev [2]"][1]
    assert on < res.t0 + rev.time < off
    assert not res.failed


def test_reversal_at_a_junction_another_train_holds(route_dir: Path, runs: dict) -> None:
    """J_E (junction 6) is the AI freight's when the player comes to reverse there: the
    player waits at the signal before it until the freight is clear, runs onto V_e,
    reverses, and waits for the route back through J_E into the loop the freight holds
    ahead of it (Open Rails: a train reverses once it has the route; docs/activities.md §4.4)."""
    rep, res = _run(route_dir, runs, "Busy")
    s = res.replay.summary
    assert s["collisions"] == 0 and not s["stuck"] and not s["deadlocks"] and not res.failed
    rev, west = s["services"]["Rev1"], s["services"]["West"]
    assert rev["reached_end"] and west["reached_end"] and rev["parts"] == 2 and west["parts"] == 1
    assert rev["distance_m"] == pytest.approx(rev["path_m"], abs=2 * AUTO_STOP_TOL)
    c = read_consist(CONSISTS / "sample_passenger.con")
    assert rev["lead_cars"] == [c.cars[0].file, c.cars[-1].file]
    route = load_route(route_dir)
    west_line = TrackLine.from_path(route, resolve_path(route, route_dir / "Paths" / "Busy_West.pat"))
    j_e = float(west_line.junction_s[list(west_line.junction_node).index(6)])
    # the freight's rear is clear of J_E once it has run the way to the switch plus the clearance
    tr = res.replay.traces["West"]
    t, d = np.asarray(tr["time"]), np.asarray(tr["distance"])
    clear = float(t[np.argmax(d >= j_e + fouling_length(route, 6))])
    waits = [e for e in _events(res, "signal_wait") if e.train == "Rev1"]
    assert waits and all(e.time < clear for e in waits)  # it stood before J_E while the freight held it
    assert max(e.until for e in waits) >= clear - 1.0  # … until the freight had cleared it
    (turn,) = [e for e in _events(res, "reversed") if e.train == "Rev1"]
    assert turn.time > clear
    # after the turn, the route back through J_E into the loop is the freight's: it waits
    back = [e for e in _events(res, "signal_wait") if e.train == "Rev1 [2]"]
    assert back and back[0].time >= turn.time and back[0].seconds > 0
    (arr,) = [e for e in _events(res, "arrived") if e.train == "West"]
    tr2 = res.replay.traces["Rev1 [2]"]
    t2, v2 = np.asarray(tr2["time"]), np.asarray(tr2["speed"])
    assert np.all(v2[t2 < back[-1].until - 0.6] < 0.05)  # it stood until its route was set
    (arr2,) = [e for e in _events(res, "arrived") if e.train == "Rev1 [2]"]
    assert arr2.time > arr.time  # it follows the freight west through the loop


def test_waiting_point(route_dir: Path, runs: dict) -> None:
    rep, res = _run(route_dir, runs, "Wait")
    (w,) = _events(res, "waiting")
    (d,) = _events(res, "departed")
    assert w.wait == 60.0 and d.time - w.time == pytest.approx(60.0, abs=0.51)
    tr = res.replay.traces["Waiter"]
    t, v = np.asarray(tr["time"]), np.asarray(tr["speed"])
    assert np.all(v[(t > w.time + 1) & (t < d.time - 1)] < 0.01)
    assert res.replay.summary["services"]["Waiter"]["reached_end"]


def test_origin_stop(route_dir: Path, runs: dict) -> None:
    rep, res = _run(route_dir, runs, "Origin")
    (row,) = res.timetable
    assert row["platform"] == "Midtby, Spor 1"
    assert row["actual_arr"] <= H + 2.0  # it stands there from its start
    assert row["actual_dep"] == H + 180 and row["dep_delay_s"] == 0
    tr = res.replay.traces["Origin"]
    t, d = np.asarray(tr["time"]), np.asarray(tr["distance"])
    assert np.all(d[t < 179.0] < 0.01)  # it did not move before its booked departure
    assert res.replay.summary["services"]["Origin"]["reached_end"]


def test_short_of_the_end_is_a_problem(route_dir: Path, tmp_path: Path) -> None:
    res = replay_activity(route_dir / "Activities" / "StationRev.act", duration=200.0)
    o = res.replay.summary["services"]["StRev"]
    assert not o["reached_end"] and o["reason"] == "duration"
    assert o["distance_m"] < o["path_m"] and o["stops"] < o["booked_stops"]
    assert res.failed
    r = CliRunner().invoke(
        main,
        [
            "replay",
            str(route_dir / "Activities" / "StationRev.act"),
            "--duration",
            "200",
            "--out",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 1
    assert "problem: StRev stopped" in r.output and "made 1 of its 2 booked stops" in r.output


def test_cli_whole_path_exit_0(route_dir: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["replay", str(route_dir / "Activities" / "OneRev.act"), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.output
    assert "1 reversal(s)" in r.output and "reached its end" in r.output


def test_replay_route_runs_the_whole_path(route_dir: Path, tmp_path: Path) -> None:
    args = ["replay", "--route", str(route_dir), "--consist", str(CONSISTS / "sample_passenger.con")]
    pat = str(route_dir / "Paths" / "ThreeRev_Rev3.pat")
    r = CliRunner().invoke(main, [*args, "--path", pat, "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "3 reversal(s)" in r.output and "reached its end" in r.output
    import json

    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    o = s["services"]["sample_passenger"]
    assert o["parts"] == 4 and o["distance_m"] == pytest.approx(o["path_m"], abs=4 * AUTO_STOP_TOL)
    # with --duration short of the end: a problem, exit 1
    r = CliRunner().invoke(main, [*args, "--path", pat, "--duration", "120", "--out", str(tmp_path / "p")])
    assert r.exit_code == 1 and "problem: sample_passenger stopped" in r.output
    # a path without reversals runs until its end without --duration (not 3600 s)
    slow = route_dir / "Paths" / "Wait_Waiter.pat"
    r = CliRunner().invoke(
        main, [*args, "--path", str(slow), "--max-speed", "3", "--step", "0.5", "--out", str(tmp_path / "q")]
    )
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "q" / "summary.json").read_text())
    assert s["simulated_seconds"] > 3600 and s["trains"]["sample_passenger"]["finished"]


def test_missing_platform_is_tolerated_and_said(route_dir: Path) -> None:
    route = load_route(route_dir)
    assert route is not None
    from tdbtools.physics.events import SetupWarning, StandIn
    from tdbtools.physics.outcome import tolerated

    lines = tolerated(
        [
            StandIn(time=0.0, train="A", message="x"),
            StandIn(time=0.0, train="A", message="y"),
            SetupWarning(time=0.0, train="B", message="platform 'P' (id 3) is not on the path"),
            SetupWarning(time=0.0, message="traffic file 'T' not found"),
        ]
    )
    assert lines == [
        "stand-in stock for A (2 substitutions)",
        "1 booked stop(s) skipped: B: platform 'P' (id 3) is not on the path",
        "traffic file 'T' not found",
    ]
    from tdbtools.signals.events import ScriptFailed

    fail = ScriptFailed(time=3.0, signal=4, head=7, script="b3", path="sigscr.dat", line=12, message="x")
    assert tolerated([fail]) == [
        "1 signal script(s) disabled after an error, basic rule from then on: signal 4 head 7 (b3, sigscr.dat:12)"
    ]


def test_unscripted_signals_are_tolerated_and_said(route_dir: Path, tmp_path: Path) -> None:
    """A signal type whose script is missing: its heads follow the basic rule, and the
    tolerated summary on stderr names the type and the signals (issue 26 item 4)."""
    import shutil

    install = tmp_path / "install"
    shutil.copytree(route_dir.parents[1], install)
    rdir = install / "ROUTES" / "SIGNALS"
    scr = rdir / "sigscr.dat"
    raw = scr.read_bytes()
    scr.write_bytes(
        raw[:2] + raw[2:].decode("utf-16-le").replace("SCRIPT B3", "SCRIPT B3X").encode("utf-16-le")
    )
    r = CliRunner().invoke(
        main, ["replay", str(rdir / "Activities" / "OneRev.act"), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code in (0, 1), r.output
    (line,) = [ln for ln in r.output.splitlines() if "without a script" in ln]
    assert (
        line
        == "tolerated: 6 signal head(s) without a script follow the basic rule: type 'b3' (signals 0, 1, 2, 3, 4, 5)"
    )
    # the route as shipped has none
    r = CliRunner().invoke(
        main, ["replay", str(route_dir / "Activities" / "OneRev.act"), "--out", str(tmp_path / "p")]
    )
    assert r.exit_code == 0 and "without a script" not in r.output


def test_missing_traffic_file_is_bad_input(route_dir: Path, tmp_path: Path) -> None:
    import shutil

    install = tmp_path / "install"
    shutil.copytree(route_dir.parents[1], install)
    rdir = install / "ROUTES" / "SIGNALS"
    (rdir / "Traffic" / "AiRev.trf").rename(rdir / "Traffic" / "AiRevs.trf")
    act = str(rdir / "Activities" / "AiRev.act")
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["replay", act, "--out", str(out)])
    assert r.exit_code == 2
    assert "AiRev.trf not found; the nearest that exists is 'AiRevs.trf'" in r.output
    assert "--skip-missing" in r.output
    assert not out.exists() or not any(out.iterdir())  # nothing half-written
    r = CliRunner().invoke(main, ["replay", act, "--skip-missing", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "tolerated: traffic file: " in r.output


def test_sample_turnback_activity() -> None:
    act = Path(__file__).resolve().parents[1] / "sample_routes/sample/ROUTES/SIGNALS/ACTIVITIES/Turnback.act"
    res = replay_activity(act)
    o = res.replay.summary["services"]["Turn back"]
    assert o["reached_end"] and o["parts"] == 2 and o["stops"] == o["booked_stops"] == 2
    c = read_consist(CONSISTS / "sample_passenger.con")
    assert o["lead_cars"] == [c.cars[0].file, c.cars[-1].file]
    rows = res.timetable
    assert [r["platform"] for r in rows] == ["Midtby, Spor 1", "Midtby, Spor 2"]
    # on time: in before the booked arrival, out at the booked departure
    assert all(r["arr_delay_s"] <= 0 and r["dep_delay_s"] == 0 for r in rows)
    assert not res.failed
