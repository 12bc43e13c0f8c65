"""Activities on the signalled sample route: trains enter the interlocking at their start
time and leave it at the end of their path, and wait at the loop for trains coming the
other way (docs/activities.md §4.3, docs/signals.md §4.8–4.9)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import SAMPLE_INSTALL, signalled_sample_activity

from tdbtools.cli import main
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import ActivityReplay, plan_activity, replay_activity

H = 8 * 3600


@pytest.fixture
def signalled(tmp_path):
    return signalled_sample_activity(tmp_path, H)


def _events(res, kind):
    return [e for e in res.replay.events if e.kind == kind]


def test_signalled_activity_crosses_and_follows(signalled):
    route, act = signalled
    res = replay_activity(act, route=route, signals=True)
    s = res.replay.summary
    assert "signalling" in s  # the route's signals ran
    assert not res.failed and all(t["reached_end"] for t in s["trains"].values()), s
    assert s["collisions"] == 0 and s["deadlocks"] == 0
    assert not _events(res, "spad")
    started = {e.train: e.time for e in _events(res, "service_started")}
    # Nobody is in the interlocking before its start time: the follower's start is
    # held by the eastbound's route, so it enters later than booked.
    assert started["Eastbound"] <= 1.0 and started["Westbound"] <= 1.0
    delayed = {e.train for e in _events(res, "start_delayed")}
    assert delayed == {"Follower"}
    assert started["Follower"] > 60.0
    arrived = {e.train: e.time for e in _events(res, "arrived")}
    # The crossing: the westbound waits at a red on the loop while the eastbound passes.
    waits = {e.train: e for e in _events(res, "signal_wait") if e.seconds > 10}
    assert "Westbound" in waits and waits["Westbound"].until <= arrived["Eastbound"]
    # The follower runs behind the eastbound on its line and never passes it.
    assert arrived["Follower"] > arrived["Eastbound"]
    assert set(s["signalling"]["trains"]) == {"Eastbound", "Westbound", "Follower"}


def test_ai_train_leaves_the_interlocking(signalled):
    route, act = signalled
    rp = ActivityReplay(plan_activity(act), route=route, signals=True)
    ilk = rp.signals.ilk
    assert not any(t.on_track for t in ilk.trains)  # nobody before the start
    assert all(s.reserved < 0 for s in ilk.sections)
    rp.run()
    east = rp.index["Eastbound"]
    player = rp.index["Follower"]
    assert not ilk.trains[east].on_track
    assert all(s.reserved != east and east not in s.occupants for s in ilk.sections)
    assert east not in ilk.enabled_train
    assert ilk.trains[player].on_track  # the player's train stays


def test_signals_by_default_and_no_signals(signalled):
    """On a signalled route an activity runs on the signals unless told otherwise."""
    route, act = signalled
    assert "signalling" in replay_activity(act, route=route).replay.summary
    res = replay_activity(act, route=route, signals=False)
    s = res.replay.summary
    assert "signalling" not in s and not res.failed
    assert not _events(res, "start_delayed")  # blocks, not signal sections
    out = act.parent.parent / "out"
    r = CliRunner().invoke(main, ["replay", str(act), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert '"signalling"' in (out / "summary.json").read_text()
    r = CliRunner().invoke(main, ["replay", str(act), "--no-signals", "--out", str(out / "plain")])
    assert r.exit_code == 0, r.output
    assert '"signalling"' not in (out / "plain" / "summary.json").read_text()


def test_shipped_signalled_activity():
    """sample_routes/generate_signals.py ships ``Crossing.act``: a player and three AI
    services that cross in the Midtby loop and follow each other, all on time."""
    act = SAMPLE_INSTALL / "ROUTES" / "SIGNALS" / "ACTIVITIES" / "Crossing.act"
    res = replay_activity(act)
    s = res.replay.summary
    assert "signalling" in s and len(s["trains"]) == 4 and not res.failed
    assert s["deadlocks"] == 0 and s["collisions"] == 0 and not _events(res, "spad")
    assert all(t["reached_end"] and t["stops"] == t["booked_stops"] for t in s["trains"].values())
    rows = {r["train"]: r for r in res.timetable}
    assert set(rows) == {"Regional west", "Passenger east", "Local west"}
    for r in rows.values():
        assert r["sched_arr"] - 300 <= r["actual_arr"] <= r["sched_arr"] + 60, r
        assert r["actual_dep"] == r["sched_dep"], r
    # The crossing: the regional stands on the loop track while the passenger comes in on
    # the main track (eastbound trains run through the main, westbound ones the loop).
    reg, pas = rows["Regional west"], rows["Passenger east"]
    assert reg["platform"] == "Midtby, Spor 2" and pas["platform"] == "Midtby, Spor 1"
    assert reg["actual_arr"] < pas["actual_arr"] < reg["actual_dep"]
    # Following: the passenger's start waits for the freight ahead on the single line.
    delayed = {e.train: e.waiting_for for e in _events(res, "start_delayed")}
    assert delayed == {"Passenger east": ("Freight east",)}
    arrived = {e.train: e.time for e in _events(res, "arrived")}
    assert arrived["Freight east"] < arrived["Passenger east"]
    assert arrived["Regional west"] < arrived["Local west"]
    assert plan_activity(act).trains[0].name == "Local west"  # the player: its train stays at its end


class _Line:
    """The TrackLine columns the interlocking reads: one node walked one way."""

    def __init__(self, node: int, direction: int, length: float, start_offset: float):
        self.seg_node = np.array([node])
        self.seg_dir = np.array([direction])
        self.seg_s0 = np.array([0.0])
        self.seg_s1 = np.array([length])
        self.seg_off0 = np.array([start_offset])
        self.junction_s = self.junction_node = self.junction_route = np.array([])
        self.length = length


def _single_line(look_ahead: bool):
    """The sample's V_main (node 4, 1153.6 m) as a single line cut by two signals (400 m
    eastbound, 800 m westbound): ``east`` enters at 100 m, ``west`` wants to enter at
    1100 m, each runs at 10 m/s to the far end, where it leaves."""
    from tdbtools.formats.sigcfg import read_sigcfg
    from tdbtools.signals.objects import Head, SignalObject
    from tdbtools.signals.runtime import Interlocking

    route = load_route(SAMPLE_INSTALL / "ROUTES" / "SAMPLE")
    b3 = read_sigcfg(SAMPLE_INSTALL / "ROUTES" / "SIGNALS" / "sigcfg.dat").types["b3"]
    objs = [
        SignalObject(k, "signal", (Head(100 + k, "b3", b3, "NORMAL", 0, d, 4, off, None, None),), 4, off, d)
        for k, (off, d) in enumerate(((400.0, 0), (800.0, 1)))
    ]
    ilk = Interlocking(route, objs, ahead=200.0, deadlock_after=10.0)
    ilk.avoid_deadlocks = look_ahead
    length, end = 1153.6, 1152.0
    ilk.add_train("east", _Line(4, 1, length, 0.0), 50.0, front=100.0, end_s=length, on_track=False)
    ilk.add_train("west", _Line(4, 0, length, length), 50.0, front=53.6, end_s=length, on_track=False)
    fronts, state, speeds = [100.0, 53.6], ["off", "off"], [0.0, 0.0]
    entered = [-1.0, -1.0]
    for k in range(600):
        for i in range(2):
            if state[i] == "off" and not ilk.can_enter(i, fronts[i]):
                ilk.enter(i, fronts[i])
                state[i], entered[i] = "on", float(k)
        ilk.update(float(k), fronts, speeds)
        for i in range(2):
            if state[i] != "on" or ilk.trains[i].deadlocked:
                speeds[i] = 0.0
                continue
            stop, _c, _l = ilk.targets(i)
            speeds[i] = max(0.0, min(10.0, min(end, stop if stop is not None else end) - fronts[i]))
            fronts[i] += speeds[i]
            if fronts[i] >= end - 1e-6:
                ilk.leave(i)
                state[i] = "done"
    return ilk, state, entered


def test_single_line_look_ahead_holds_the_opposing_train():
    """docs/signals.md §4.9: without the look-ahead the two enter the single line from
    both ends and stand facing each other at its signals (a deadlock naming both trains
    and the sections); with it the westbound's start waits until the eastbound is through."""
    ilk, state, entered = _single_line(look_ahead=False)
    dl = [e for e in ilk.events if e.kind == "deadlock"]
    assert len(dl) == 1 and sorted(dl[0].trains) == ["east", "west"] and dl[0].sections
    assert entered == [0.0, 0.0] and state == ["on", "on"]
    ilk, state, entered = _single_line(look_ahead=True)
    assert not [e for e in ilk.events if e.kind == "deadlock"]
    assert state == ["done", "done"] and entered[1] > entered[0] + 90.0
