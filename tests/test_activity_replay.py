"""Replaying activities: start times, station stops and dwell, occupancy, deadlocks."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import CONSISTS, SAMPLE_INSTALL

from tdbtools.cli import main
from tdbtools.errors import TdbToolsError
from tdbtools.formats.activity import StopItem, make_traffic, read_service, read_traffic, write_stf_file
from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.formats.route import load_route
from tdbtools.physics import forces as F
from tdbtools.physics.activity import (
    BLOCK_M,
    DEADLOCK_AFTER_S,
    DISPATCH_EVERY_S,
    JUNCTION_MAX_M,
    JUNCTION_MIN_M,
    ActivityError,
    ActivityReplay,
    Platform,
    ServiceDriver,
    Stop,
    block_name,
    boarding_time,
    clock,
    departure,
    fouling_length,
    place_stops,
    plan_activity,
    replay_activity,
    route_platforms,
)
from tdbtools.physics.activity_build import ServiceSpec, write_activity_files
from tdbtools.physics.driver import AutoDriver, DriveState
from tdbtools.physics.events import (
    Arrived,
    CarsStarted,
    CarsStopped,
    Deadlock,
    NotAtEnd,
    ServiceStarted,
    SetupWarning,
    StartDelayed,
    Stuck,
)
from tdbtools.physics.trackline import TrackLine
from tdbtools.track.pathbuild import build_path, write_path

H = 8 * 3600


def services(freight_west_start: int = 60) -> list[ServiceSpec]:
    """Four trains on the sample route's Y: a freight leaves eastwards, a local from the
    siding crosses its route at J1 behind it and stops at Sampleby, a second freight
    enters from the east once the first is gone and follows the local west, and the
    player follows them all west with a stop at Sampleby."""
    return [
        ServiceSpec("Freight east", "sample_freight", H, ("2@420", "5")),
        ServiceSpec("Local", "sample_double", H + 30, ("7", "1"), stops=(("Sampleby", H + 180, H + 210),)),
        ServiceSpec("Freight west", "sample_freight", H + freight_west_start, ("4@900", "1")),
        ServiceSpec(
            "Passenger",
            "sample_passenger",
            H + 360,
            ("5", "1"),
            stops=(("Sampleby", H + 720, H + 780),),
            player=True,
        ),
    ]


@pytest.fixture
def sample_copy(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    return load_route(dst / "ROUTES" / "SAMPLE", cache=False)


def test_boarding_and_departure():
    # docs/activities.md §5: 7 passengers over 3 cars -> 23 s; freight 20 s
    assert boarding_time(7, 3) == 23 and boarding_time(7, 0) == 20 and boarding_time(1, 6) == 20

    class P:
        passengers, min_wait = 7, 180

    class S:
        platform = P()
        booked = StopItem(1, 36600, 36630)

    assert departure(S(), 36620, 3, ai=True) == 36643
    assert departure(S(), 36620, 0, ai=True) == 36640
    S.booked = StopItem(1, None, None)
    assert departure(S(), 36620, 3, ai=False) == 36620 + 180  # no times: the minimum waiting time
    S.booked = StopItem(1, 1000, 1000)  # AI, arr == dep, 10 h away: not credible
    assert departure(S(), 37000, 3, ai=True) == 37023


def test_stop_placement(sample_copy, tmp_path):
    route = sample_copy
    built = build_path(route, "5", "1")
    pat = write_path(route, built, tmp_path / "p.pat")
    line = TrackLine.from_path(route, pat)
    plats = route_platforms(route)
    p = plats[1]
    assert p.name == "Sampleby, Spor 1" and p.length == pytest.approx(160.0, abs=0.5) and plats[2] is p
    (stop,), warns = place_stops(line, 38.0, 120.0, (StopItem(2, 100, 200),), plats)
    far = max(line.locate(p.node, p.near)[0], line.locate(p.node, p.far)[0])
    assert not warns and stop.stop_s == pytest.approx(far - 20.0)  # middle of train at middle of platform
    stops, warns = place_stops(line, 38.0, 120.0, (StopItem(99), StopItem(1, 5, 6)), plats)
    assert len(stops) == 1 and "99" in warns[0]
    # a path that does not pass the platform
    other = TrackLine.from_path(route, write_path(route, build_path(route, "4@100", "5"), tmp_path / "q.pat"))
    stops, warns = place_stops(other, 0.0, 120.0, (StopItem(1),), plats)
    assert not stops and "not on the path" in warns[0]


def test_sample_activity_runs_to_schedule(sample_copy, tmp_path):
    act = write_activity_files(sample_copy, "Morning", services())
    # the booked times were set with the engineers' laws (docs/running-time.md); the
    # sample's stock comes from .eng/.wag files, whose default is Open Rails' (below)
    res = replay_activity(act, route=sample_copy, physics="engineering")
    s = res.replay.summary
    assert s["physics"] == "engineering"
    assert not res.failed and s["deadlocks"] == 0 and s["collisions"] == 0 and not s["stuck"]
    assert all(t["reached_end"] for t in s["trains"].values())
    kinds = [e.kind for e in res.replay.events]
    assert "start_delayed" in kinds  # Freight west waits until Freight east is gone
    assert len(res.timetable) == 2
    for row in res.timetable:
        assert row["actual_arr"] is not None and row["actual_arr"] <= row["sched_arr"] + 60
        assert row["actual_dep"] >= row["sched_dep"]  # never before the booked time
    # the local waits at J1 for the freight: it reaches the junction after the freight's rear has passed
    ev = {e.train: e.clock for e in res.replay.events if isinstance(e, Arrived)}
    assert ev["Freight east"] < ev["Freight west"] < ev["Passenger"]
    files = {p.name for p in res.write(tmp_path / "out")}
    assert {"timetable.csv", "events.json", "summary.json", "Passenger.csv"} <= files
    rows = list(csv.DictReader((tmp_path / "out" / "timetable.csv").read_text().splitlines()))
    assert rows[0]["train"] == "Passenger" and rows[0]["station"] == "Sampleby"
    assert rows[0]["sched_dep"] == "08:13:00" and rows[0]["actual_dep"] == "08:13:00"
    tr = res.replay.traces["Passenger"]
    assert np.all(tr["clock"] >= H)


@pytest.mark.by_stock
def test_sample_activity_with_open_rails_physics(sample_copy):
    """The default for the sample's .eng/.wag stock: Open Rails' laws. Its brakes lag
    (AirSinglePipe defaults: ~35 s) and release slowly, so the trains run later than
    booked, but every one reaches its end and makes its stops, without a problem."""
    act = write_activity_files(sample_copy, "Morning", services())
    res = replay_activity(act, route=sample_copy)
    s = res.replay.summary
    assert s["physics"] == "openrails"
    assert not res.failed and s["deadlocks"] == 0 and s["collisions"] == 0 and not s["stuck"]
    assert all(t["reached_end"] for t in s["trains"].values())
    assert all(row["actual_arr"] is not None for row in res.timetable)


def test_conflicting_variant_reports_deadlock(sample_copy, tmp_path):
    act = write_activity_files(sample_copy, "Clash", services(freight_west_start=0))
    res = replay_activity(act, route=sample_copy)
    dl = [e for e in res.replay.events if isinstance(e, Deadlock)]
    assert len(dl) == 1 and dl[0].trains == ("Freight east", "Freight west")
    assert dl[0].sections and all(x.startswith("node 4") for x in dl[0].sections)
    assert res.failed and "Freight west" in res.replay.summary["not_at_end"]
    r = CliRunner().invoke(main, ["replay", str(act), "--out", str(tmp_path / "o"), "--plot"])
    assert r.exit_code == 1 and "deadlock" in r.output and (tmp_path / "o" / "spacetime.png").is_file()


def test_cli_and_bad_input(sample_copy, tmp_path):
    act = write_activity_files(sample_copy, "Morning", services())
    r = CliRunner().invoke(main, ["replay", str(act), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "Passenger at Sampleby, Spor 1" in r.output and (tmp_path / "o" / "timetable.csv").is_file()
    from tdbtools.formats.activity import make_service, write_stf_file

    srv = act.parent.parent / "SERVICES" / "Morning_Local.srv"
    write_stf_file(make_service("Local", "sample_double", "../../../x"), srv)
    r = CliRunner().invoke(main, ["replay", str(act), "--out", str(tmp_path / "o2")])
    assert r.exit_code == 2 and "plain file name" in r.output
    srv.unlink()
    r = CliRunner().invoke(main, ["replay", str(act), "--out", str(tmp_path / "o2")])
    assert r.exit_code == 2 and "Morning_Local" in r.output
    with pytest.raises(TdbToolsError, match="Tr_Activity"):
        replay_activity(tmp_path / "o" / "timetable.csv")
    shutil.copy(act, tmp_path / "loose.act")
    with pytest.raises(ActivityError, match="ACTIVITIES"):
        replay_activity(tmp_path / "loose.act")


@pytest.mark.slow
# another Dask cluster on this machine (other work) may hold the dashboard port
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
def test_sweep_over_activities(sample_copy, tmp_path):
    from tdbtools.physics.scenario import ScenarioError
    from tdbtools.sweep.run import run_combination, run_sweep
    from tdbtools.sweep.spec import sweep_spec_from_text

    write_activity_files(sample_copy, "Morning", services())
    write_activity_files(sample_copy, "Clash", services(freight_west_start=0))
    text = f'route = "{sample_copy.folder}"\nactivities = ["*.act"]\n[grid]\ndeceleration = [0.4, 0.6]\n'
    spec = sweep_spec_from_text(text)
    assert spec.paths == ("Clash.act", "Morning.act") and len(spec.combinations) == 4
    rec = run_combination(spec.combinations[-1])  # Morning, deceleration 0.6
    assert rec["status"] == "ok" and rec["finished"] and rec["collisions"] == 0
    res = run_sweep(spec, out=tmp_path / "sw", workers=1, processes=False, dashboard=False)
    rows = {(r["path"], r["deceleration"]): r for r in res.rows}
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows.values())
    assert rows[("Morning.act", 0.4)]["finished"] is True and rows[("Clash.act", 0.4)]["finished"] is False
    assert "deadlock" in str(rows[("Clash.act", 0.6)]["events"])
    for bad in (
        'activities = ["*.act"]\npaths = ["*.pat"]',
        'activities = ["none*.act"]',
        'activities = ["*.act"]\n[grid]\nmax_speed = [1]',
    ):
        with pytest.raises(ScenarioError):
            sweep_spec_from_text(f'route = "{sample_copy.folder}"\n{bad}\n')


def test_shipped_sample_activity():
    """sample_routes/generate.py writes an activity on the sample's own paths: every train
    reaches its end, stops where booked, leaves on time, and nothing deadlocks."""
    act = SAMPLE_INSTALL / "ROUTES" / "SAMPLE" / "ACTIVITIES" / "Morning.act"
    res = replay_activity(act, physics="engineering")  # (booked with the engineers' laws)
    s = res.replay.summary
    assert len(s["trains"]) == 4 and not res.failed
    assert all(t["reached_end"] and t["stops"] == t["booked_stops"] for t in s["trains"].values())
    assert len(res.timetable) == 2
    for row in res.timetable:
        assert row["sched_arr"] - 300 <= row["actual_arr"] <= row["sched_arr"] + 60
        assert row["actual_dep"] == row["sched_dep"]
    delayed = {e.train for e in res.replay.events if isinstance(e, StartDelayed)}
    assert delayed == {"Local to the siding", "Passenger east"}  # each follows the train ahead out


def test_activity_sweep_is_bounded(sample_copy):
    from tdbtools.sweep.spec import TooManyCombinations, sweep_spec_from_text

    write_activity_files(sample_copy, "Morning", services())
    text = f'route = "{sample_copy.folder}"\nactivities = ["*.act"]\n[grid]\nstep = [0.1, 0.2, 0.5]\n'
    assert len(sweep_spec_from_text(text).combinations) == 3
    with pytest.raises(TooManyCombinations, match="3 combinations"):
        sweep_spec_from_text(text, max_combinations=2)


def test_freight_stops_at_path_end_with_firmer_planned_braking(sample_copy):
    """Regression: at a planned 0.6 m/s² the freight's driver released and re-applied its
    slowly building brakes every step, ran off the end of its path and left the trains
    behind it stuck (the Morning row of the deceleration sweep)."""
    from tdbtools.physics.activity import ActivityReplay, plan_activity

    act = write_activity_files(sample_copy, "Morning", services())
    rp = ActivityReplay(plan_activity(act), route=sample_copy)
    for d in rp.drivers:
        d.auto.decel = 0.6
    s = rp.run().replay.summary
    assert not s["derailed"] and not s["stuck"] and not s["not_at_end"]
    k = rp.index["Freight east"]
    assert float(rp.engine.x[rp.train_start[k]]) == pytest.approx(rp.drivers[k].path_end, abs=0.5)


def _run_service(d: ServiceDriver, front0: float, length: float, seconds: float, dt: float = 0.5) -> None:
    """A point-mass run of ``d``: ±0.5 m/s² towards the speed it asks for, its
    deceleration when it brakes (enough for the driver's own stopping curve)."""
    s, v, t = front0, 0.0, 0.0
    while t < seconds and not d.finished:
        c = d(DriveState(t, s - front0, v, s, s - length, dt))
        if c.speed_target is not None:
            v = min(c.speed_target, v + 0.5 * dt) if c.speed_target > v else max(c.speed_target, v - 0.5 * dt)
        elif c.deceleration > 0:
            v = max(v - c.deceleration * dt, 0.0)
        else:
            v = max(v - 0.5 * dt, 0.0)
        s += v * dt
        t += dt


def test_a_service_stops_at_each_of_its_stations():
    """Kills `ServiceDriver`'s `next_stop += 2`: three booked stops on one line are all
    called at, in order, and the service then runs on to its path's end."""
    platform = Platform((1, 2), "P", "Station", 1, 0.0, 100.0, 20, 0)
    stops = [Stop(platform, StopItem(1), s) for s in (400.0, 800.0, 1200.0)]
    line_s, line_v = np.array([0.0]), np.array([15.0])
    auto = AutoDriver(line_s, line_v, 2000.0, max_speed=15.0, deceleration=0.5, train_length=50.0)
    d = ServiceDriver("svc", auto, 0.0, 0.0, stops, 1600.0, 1, True, None, None)
    d.state = "running"  # the dispatcher's part: put it on the track with authority
    _run_service(d, 50.0, 50.0, 3600.0)
    assert d.finished and d.state == "done"
    arrivals = [st.arrival for st in stops]
    assert all(a is not None for a in arrivals), arrivals
    departs = [st.depart for st in stops]
    assert all(p is not None for p in departs), departs
    assert arrivals[0] < departs[0] < arrivals[1] < departs[1] < arrivals[2] < departs[2]
    assert all(p - a >= 20.0 for a, p in zip(arrivals, departs, strict=True))  # the platform's wait


def _replay(route, name: str, freight_west_start: int = 60, **kw):  # noqa: ANN001, ANN202
    act = write_activity_files(route, name, services(freight_west_start))
    rp = ActivityReplay(plan_activity(act), route=route, **kw)
    return rp, rp.run()


def _first(events, kind, train):  # noqa: ANN001, ANN202
    return next(e for e in events if isinstance(e, kind) and e.train == train)


@pytest.fixture(scope="module")
def lines():
    from helpers import SAMPLE_ROUTE

    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    return tuple(
        TrackLine.from_path(route, SAMPLE_ROUTE / "PATHS" / f"{p}.pat") for p in ("MainWE", "MainEW")
    )


def test_activity_on_a_named_path_and_bad_specs(sample_copy):
    folder = sample_copy.folder
    specs = [ServiceSpec("P", "sample_passenger", H, "MainWE", player=True)]
    act = write_activity_files(sample_copy, "Named", specs)
    assert read_service(f"{folder}/SERVICES/Named_P.srv").path_id == "MainWE"
    assert not list((act.parents[1] / "PATHS").glob("Named_*"))  # no path written
    with pytest.raises(ActivityError, match="exactly one player service, got 0"):
        write_activity_files(sample_copy, "X", [ServiceSpec("A", "sample_double", H, "MainWE")])
    two = [ServiceSpec(n, "sample_double", H, "MainWE", player=True) for n in "AB"]
    with pytest.raises(ActivityError, match="exactly one player service, got 2"):
        write_activity_files(sample_copy, "X", two)
    bad = [ServiceSpec("A", "sample_double", H, "MainWE", stops=(("Nowhere", 1, 2),), player=True)]
    with pytest.raises(ActivityError, match="service 'A': no platform or station 'Nowhere'"):
        write_activity_files(sample_copy, "X", bad)


def test_plan_without_traffic_entries(sample_copy):
    """A missing traffic file, or a service without an entry in it: warnings, no booked times."""
    act = write_activity_files(sample_copy, "Morning", services())
    trf_path = act.parents[1] / "TRAFFIC" / "Morning.trf"
    trf = read_traffic(trf_path)
    # the traffic file without the Local's entry
    write_stf_file(make_traffic("Morning", [s for s in trf.services if s.name != "Morning_Local"]), trf_path)
    plan = plan_activity(act)
    local = next(t for t in plan.trains if t.name == "Local")
    assert not local.booked and local.stops == ()
    assert plan.warnings == (
        "service 'Morning_Local' at 08:00:30: no entry in the traffic file (no booked times)",
    )
    freight = next(t for t in plan.trains if t.name == "Freight east")
    assert freight.booked
    trf_path.unlink()
    # Open Rails refuses an activity whose traffic file is missing: so does the plan,
    # naming the file and the nearest name there is; --skip-missing runs without it
    (trf_path.parent / "Evening.trf").write_bytes(b"")
    with pytest.raises(
        ActivityError, match=r"TRAFFIC/Morning.trf not found; the nearest that exists is 'Evening.trf'"
    ):
        plan_activity(act)
    plan = plan_activity(act, skip_missing=True)
    assert len(plan.warnings) == 1
    assert (
        plan.warnings[0].startswith("traffic file: ")
        and "AI services have no booked times" in plan.warnings[0]
    )
    assert [t.booked for t in plan.trains] == [True, False, False, False]  # the player's are its own
    # the warning is an event of the replay
    rp = ActivityReplay(plan, route=sample_copy, duration=1.0)
    w = [e for e in rp.run().replay.events if isinstance(e, SetupWarning)]
    assert [e.message for e in w] == [plan.warnings[0]]


def test_plan_names_services_apart_and_finds_them(sample_copy, tmp_path):
    same = [
        ServiceSpec("A", "sample_double", H, "MainWE"),
        ServiceSpec("B", "sample_double", H + 10, "MainWE"),
        ServiceSpec("P", "sample_passenger", H + 20, "MainWE", player=True),
    ]
    act = write_activity_files(sample_copy, "Same", same)
    folder = act.parents[1]
    # two services that call themselves the same: the second one gets a number
    b = (folder / "SERVICES" / "Same_B.srv").read_text(encoding="utf-16")
    (folder / "SERVICES" / "Same_B.srv").write_text(b.replace('"B"', '"A"', 1), encoding="utf-16")
    assert [t.name for t in plan_activity(act).trains] == ["P", "A", "A#2"]
    # an explicit route folder is used instead of the activity's parent
    loose = tmp_path / "loose.act"
    shutil.copy(act, loose)
    assert len(plan_activity(loose, route_folder=folder).trains) == 3
    (folder / "SERVICES" / "Same_B.srv").unlink()
    with pytest.raises(
        ActivityError, match=r"service 'Same_B': .*SERVICES/Same_B.srv not found; the nearest"
    ):
        plan_activity(act)
    # --skip-missing leaves the AI service out, with a warning
    plan = plan_activity(act, skip_missing=True)
    assert [t.name for t in plan.trains] == ["P", "A"] and "left out" in plan.warnings[0]
    with pytest.raises(ActivityError, match="activity file not found"):
        plan_activity(folder / "ACTIVITIES" / "none.act")


def test_dispatcher_starts_a_train_once_its_start_is_free(sample_copy):
    rp, res = _replay(sample_copy, "Morning")
    ev = res.replay.events
    started = {e.train: e.time for e in ev if isinstance(e, ServiceStarted)}
    # each at the first dispatcher run at or after its start time (start times 0, 30, 60, 360 s)
    assert started["Freight east"] == 1.0 and started["Local"] == 31.0
    delayed = _first(ev, StartDelayed, "Freight west")
    assert delayed.time == 61.0 and delayed.clock == "08:01:01"
    assert delayed.waiting_for == ("Freight east",)
    assert delayed.message == "its start is occupied by Freight east"
    assert sum(isinstance(e, StartDelayed) and e.train == "Freight west" for e in ev) == 1
    # Freight west starts at the first dispatcher run after Freight east has left the track
    gone = _first(ev, Arrived, "Freight east").time
    assert 0.0 < started["Freight west"] - gone <= DISPATCH_EVERY_S
    arrived = {e.train: e for e in ev if isinstance(e, Arrived)}
    assert set(arrived) == {"Freight east", "Local", "Freight west", "Passenger"}
    for e in arrived.values():
        assert e.clock == clock(H + e.time)
    # AI trains leave the world at the end of their path; the player's train stays
    for name in ("Freight east", "Local", "Freight west"):
        assert res.on_track[name] == (H + started[name], H + arrived[name].time)
    assert res.on_track["Passenger"] == (H + started["Passenger"], math.inf)
    assert not [e for e in ev if isinstance(e, (NotAtEnd, Stuck, Deadlock))]
    assert rp.dispatcher.holder == {} or set(rp.dispatcher.holder.values()) <= {"Passenger"}


def test_activity_summary_and_timetable(sample_copy, tmp_path):
    rp, res = _replay(sample_copy, "Morning")
    s = res.replay.summary
    assert s["activity"] == "Morning"
    assert s["clock_start"] == "08:00:00" and s["clock_start_s"] == H == res.t0
    assert s["clock_end"] == clock(H + rp.time)
    assert (s["deadlocks"], s["collisions"], s["derailed"], s["stuck"], s["not_at_end"]) == (0, 0, [], [], [])
    trains = s["trains"]
    assert {n: trains[n]["start"] for n in trains} == {
        "Freight east": "08:00:00",
        "Local": "08:00:30",
        "Freight west": "08:01:00",
        "Passenger": "08:06:00",
    }
    assert {n: (t["stops"], t["booked_stops"]) for n, t in trains.items()} == {
        "Freight east": (0, 0),
        "Local": (1, 1),
        "Freight west": (0, 0),
        "Passenger": (1, 1),
    }
    assert all(t["reached_end"] and not t["stuck"] for t in trains.values())
    for name, tr in res.replay.traces.items():
        assert np.array_equal(tr["clock"], np.asarray(tr["time"]) + H), name
    rows = {r["train"]: r for r in res.timetable}
    assert list(rows) == ["Passenger", "Local"]  # the player first, as planned
    for r in rows.values():
        assert (r["station"], r["platform"]) == ("Sampleby", "Sampleby, Spor 1")
        assert r["arr_delay_s"] == r["actual_arr"] - r["sched_arr"]
        assert r["dep_delay_s"] == r["actual_dep"] - r["sched_dep"] == 0.0
    assert rows["Local"]["sched_arr"] == H + 180 and rows["Local"]["sched_dep"] == H + 210
    stops = res.stops["Local"]
    assert len(stops) == 1 and stops[0].arrival == rows["Local"]["actual_arr"]
    assert res.lines["Local"] is rp.trains[rp.index["Local"]].line
    lines = res.timetable_csv().splitlines()
    assert (
        lines[0] == "train,station,platform,sched_arr,sched_dep,actual_arr,actual_dep,arr_delay_s,dep_delay_s"
    )
    r = rows["Local"]
    assert lines[2] == (
        f'Local,Sampleby,"Sampleby, Spor 1",08:03:00,08:03:30,{clock(r["actual_arr"])},08:03:30,'
        f"{r['arr_delay_s']:.0f},0"
    )
    files = res.write(tmp_path / "deep" / "out")
    assert files[-1] == tmp_path / "deep" / "out" / "timetable.csv"
    assert files[-1].read_text() == res.timetable_csv()


def test_deadlock_and_the_trains_stuck_behind_it(sample_copy):
    """Two freights head-on on V_main: a deadlock a minute after both stand; the player,
    whose start the deadlocked trains hold, is stuck a minute after its start time."""
    rp, res = _replay(sample_copy, "Clash", freight_west_start=0)
    ev = res.replay.events
    (dl,) = [e for e in ev if isinstance(e, Deadlock)]
    pair = ("Freight east", "Freight west")
    assert dl.trains == pair
    assert dl.sections == ("node 4 [250-500 m]", "node 4 [500-750 m]")
    assert (
        dl.message
        == "Freight east, Freight west wait for each other at node 4 [250-500 m], node 4 [500-750 m]"
    )
    assert dl.clock == clock(H + dl.time)
    # both have stood since the dispatcher run after their last stop
    stood = max(
        e.time for e in ev if isinstance(e, CarsStopped) and e.time < dl.time and e.cars[0][0] in pair
    )
    assert dl.time == math.ceil(stood) + DEADLOCK_AFTER_S
    stuck = _first(ev, Stuck, "Passenger")
    assert stuck.waiting_for == ("Freight west",)
    assert stuck.time == 360.0 + DEADLOCK_AFTER_S  # not the 30 minutes of stuck_after
    assert stuck.message == "stood 60 s waiting for track held by Freight west, which will not move again"
    nae = {e.train: e for e in ev if isinstance(e, NotAtEnd)}
    assert {n: e.state for n, e in nae.items()} == {
        "Freight east": "stuck",
        "Freight west": "stuck",
        "Passenger": "not_started",
    }
    assert nae["Passenger"].message == "never reached the end of its path (not_started)"
    s = res.replay.summary
    assert s["deadlocks"] == 1 and s["stuck"] == ["Freight east", "Freight west", "Passenger"]
    assert s["not_at_end"] == ["Freight east", "Freight west", "Passenger"]
    assert s["trains"]["Local"]["reached_end"] and not s["trains"]["Local"]["stuck"]
    assert s["trains"]["Freight west"]["stuck"] and not s["trains"]["Freight west"]["reached_end"]
    assert res.failed
    for n in pair:
        assert rp.trains[rp.index[n]].done_at == dl.time
    assert rp.trains[rp.index["Passenger"]].done_at == stuck.time
    # the player never got to its stop: booked times only
    row = next(r for r in res.timetable if r["train"] == "Passenger")
    assert (row["actual_arr"], row["actual_dep"], row["arr_delay_s"], row["dep_delay_s"]) == (None,) * 4
    assert 'Passenger,Sampleby,"Sampleby, Spor 1",08:12:00,08:13:00,,,,' in res.timetable_csv().splitlines()
    assert s["trains"]["Passenger"]["stops"] == 0 and s["trains"]["Passenger"]["booked_stops"] == 1


def test_a_train_waiting_for_a_moving_one_is_late_not_stuck(sample_copy):
    """Freight west waits from its start time (60 s) for the first freight, which runs on:
    far longer than stuck_after (30 s), but its blocker moves, so it waits, starts late and
    reaches its end, as Open Rails' trains wait (issue 27; docs/signals.md §4.7)."""
    rp, res = _replay(sample_copy, "Morning", stuck_after=30.0)
    ev = res.replay.events
    delayed = _first(ev, StartDelayed, "Freight west")
    started = _first(ev, ServiceStarted, "Freight west")
    assert delayed.waiting_for == ("Freight east",) and started.time - delayed.time > 30.0
    assert not [e for e in ev if isinstance(e, Stuck)] and res.replay.summary["stuck"] == []
    assert all(t["reached_end"] for t in res.replay.summary["trains"].values())


def test_block_names():
    assert block_name(("j", 3)) == "junction 3"
    assert block_name(("n", 4 * 100_000)) == "node 4 [0-250 m]"
    assert block_name(("n", 12 * 100_000 + 3)) == "node 12 [750-1000 m]"


def test_blocks_of_a_line(sample_copy):
    act = write_activity_files(sample_copy, "Morning", services())
    rp = ActivityReplay(plan_activity(act), route=sample_copy)
    t = rp.trains[rp.index["Passenger"]]  # E_east -> W over V_main, J1, V_a
    ln = t.line
    lo, hi = 100.0, float(ln.path_length) - 100.0
    blocks = rp.dispatcher._blocks(t, lo, hi)
    starts = [s for _b, s in blocks]
    assert starts == sorted(starts)
    nodes = {b for b, _s in blocks if b[0] == "n"}
    # every piece of every node the line occupies between lo and hi, and no other
    want = set()
    for node, a, b in ln.occupancy(lo, hi):
        for piece in range(int(min(a, b) // BLOCK_M), int(max(a, b) // BLOCK_M) + 1):
            want.add(("n", node * 100_000 + piece))
    assert nodes == want
    # each piece is entered at lo or where the line crosses the piece's edge
    for b, s in blocks:
        if b[0] != "n" or s <= lo + 1e-6:
            continue
        node, off, _d = ln.node_offset(np.array([s + 1e-3]))  # just inside the piece
        assert int(node[0]) == b[1] // 100_000
        edges = (b[1] % 100_000) * BLOCK_M, (b[1] % 100_000 + 1) * BLOCK_M
        assert min(abs(off[0] - e) for e in edges) < 1e-2 or s == pytest.approx(
            float(ln.seg_s0[ln.segment_index(np.array([s + 1e-3]))[0]])
        )
    (jb,) = [(b, s) for b, s in blocks if b[0] == "j"]
    j = int(ln.junction_node[0])
    f = fouling_length(sample_copy, j)
    assert jb == (("j", j), pytest.approx(float(ln.junction_s[0]) - f))
    assert rp.dispatcher.foul == {j: f}
    # a stretch ending well short of the junction area does not include it
    js = float(ln.junction_s[0])
    assert not [b for b, _s in rp.dispatcher._blocks(t, js - f - 60.0, js - f - 10.0) if b[0] == "j"]
    assert [b for b, _s in rp.dispatcher._blocks(t, js + f - 5.0, js + f + 10.0) if b[0] == "j"] == [("j", j)]


def test_fouling_length_is_where_the_branches_part(sample_copy):
    from tdbtools.formats.tdb import JunctionNode
    from tdbtools.physics.activity import FOUL_SEPARATION_M
    from tdbtools.physics.trackline import TrackLine
    from tdbtools.track.pathbuild import build_path, write_path

    (j,) = [k for k, n in enumerate(sample_copy.tdb.nodes) if isinstance(n, JunctionNode)]
    f = fouling_length(sample_copy, j)
    assert JUNCTION_MIN_M <= f < JUNCTION_MAX_M and f % 5.0 == 0.0
    # the same from two lines that leave J1 on its two branches, in 5 m steps
    folder = Path(sample_copy.folder)
    main = TrackLine.from_path(sample_copy, folder / "PATHS" / "MainWE.pat")
    siding = TrackLine.from_path(
        sample_copy,
        write_path(sample_copy, build_path(sample_copy, "2@100", "7"), folder / "PATHS" / "s.pat"),
    )
    (ja,), (jb,) = main.junctions, siding.junctions
    assert (ja.node, jb.node, ja.route, jb.route) == (j, j, 0, 1)

    def apart(d: float) -> float:
        a, b = main.location(ja.s + d), siding.location(jb.s + d)
        return math.hypot(
            (a.tile_x - b.tile_x) * 2048.0 + a.x - b.x, (a.tile_z - b.tile_z) * 2048.0 + a.z - b.z
        )

    first = next(d for d in np.arange(0.0, JUNCTION_MAX_M, 5.0) if apart(d) >= FOUL_SEPARATION_M)
    assert f == max(float(first), JUNCTION_MIN_M)
    # not a junction: the minimum
    assert fouling_length(sample_copy, 2) == JUNCTION_MIN_M


def test_activity_replay_sets_up_each_service(sample_copy):
    act = write_activity_files(sample_copy, "Morning", services())
    plan = plan_activity(act)
    rp = ActivityReplay(plan, route=sample_copy)
    # the activity's hour after the player's start (its header), and four more hours
    assert rp.t0 == H and rp.scenario.duration == (H + 360 + 3600) - H + 4 * 3600.0
    assert ActivityReplay(plan, route=sample_copy, duration=100.0).scenario.duration == 100.0
    d = {n: rp.drivers[k] for n, k in rp.index.items()}
    assert {n: x.start - H for n, x in d.items()} == {
        "Passenger": 360,
        "Freight east": 0,
        "Local": 30,
        "Freight west": 60,
    }
    assert {n: x.ai for n, x in d.items()} == {
        "Passenger": False,
        "Freight east": True,
        "Local": True,
        "Freight west": True,
    }
    assert {n: x.passenger_cars for n, x in d.items()} == {
        "Passenger": 6,
        "Freight east": 0,
        "Local": 0,
        "Freight west": 0,
    }
    for n, x in d.items():
        t = rp.trains[rp.index[n]]
        assert x.path_end == pytest.approx(float(t.line.path_length))
        assert x.vmax == pytest.approx(t.consist.max_velocity)
        assert x.final_efficiency == 0.9 and x.auto.max_speed == pytest.approx(0.9 * x.vmax)
        assert x.state == "waiting" and x.t0 == H and t.driver is x
    # the stop puts the middle of the train at the middle of the platform
    (stop,) = d["Passenger"].stops
    t = rp.trains[rp.index["Passenger"]]
    p = stop.platform
    ends = sorted(float(t.line.locate(p.node, o)[0]) for o in (p.near, p.far))
    assert stop.stop_s - t.length / 2.0 == pytest.approx((ends[0] + ends[1]) / 2.0)
    assert not d["Passenger"].stops[0].arrival and d["Freight east"].stops == []


def test_stops_are_moved_out_of_junction_areas(sample_copy):
    act = write_activity_files(sample_copy, "Morning", services())
    rp = ActivityReplay(plan_activity(act), route=sample_copy)
    line = rp.trains[0].line
    js, j = float(line.junction_s[0]), int(line.junction_node[0])
    f = rp.policy.signal_clearance()(j)
    assert f == fouling_length(sample_copy, j)
    moved = js - f - 1.0
    assert rp.policy.clear_of_junctions(line, js - 5.0) == pytest.approx(moved)
    assert rp.policy.clear_of_junctions(line, js) == pytest.approx(moved)
    assert rp.policy.clear_of_junctions(line, js - f + 0.5) == pytest.approx(moved)
    assert rp.policy.clear_of_junctions(line, js + 10.0) == js + 10.0  # the junction is behind
    assert rp.policy.clear_of_junctions(line, js - f - 50.0) == js - f - 50.0  # clear of it already


def test_activity_replay_errors_name_the_train(sample_copy):
    act = write_activity_files(sample_copy, "Bad", [ServiceSpec("P", "no_such", H, "MainWE", player=True)])
    with pytest.raises(ActivityError, match="train 'P': consist 'no_such.con' not found"):
        ActivityReplay(plan_activity(act), route=sample_copy)
    act = write_activity_files(
        sample_copy, "Bad2", [ServiceSpec("P", "sample_double", H, "NoPath", player=True)]
    )
    with pytest.raises(ActivityError, match="train 'P': path 'NoPath.pat' not found"):
        ActivityReplay(plan_activity(act), route=sample_copy)


def test_service_speed_follows_the_efficiency_of_the_next_stop():
    from tdbtools.formats.activity import StopItem
    from tdbtools.physics.activity import Platform, ServiceDriver, Stop
    from tdbtools.physics.driver import AutoDriver

    platform = Platform((1, 2), "P", "Station", 1, 0.0, 100.0, 20, 0)
    stops = [
        Stop(platform, StopItem(1, efficiency=e), s) for e, s in ((0.5, 400.0), (None, 800.0), (0.0, 900.0))
    ]

    def auto() -> AutoDriver:
        return AutoDriver(
            np.array([0.0]), np.array([40.0]), 2000.0, max_speed=40.0, deceleration=0.5, train_length=50.0
        )

    d = ServiceDriver("s", auto(), 0.0, 0.0, stops, 1600.0, 1, True, 30.0, 0.8)
    assert d.auto.max_speed == 15.0  # 0.5 of 30 m/s to the first stop
    assert d.target() == (400.0, "stop")
    d.next_stop = 1
    d._set_speed_cap()
    assert d.auto.max_speed == pytest.approx(24.0)  # no efficiency of its own: the service's
    d.next_stop = 2
    d._set_speed_cap()
    assert d.auto.max_speed == 30.0  # an efficiency of 0 means none
    d.next_stop = 3
    d._set_speed_cap()
    assert d.auto.max_speed == pytest.approx(24.0) and d.target() == (1600.0, "end")
    d.authority = 1200.0
    assert d.target() == (1200.0, "authority")
    none = ServiceDriver("n", auto(), 0.0, 0.0, stops, 1600.0, 1, True, None, 0.8)
    assert none.auto.max_speed == 40.0  # no top speed known: the driver's own
    assert ServiceDriver("z", auto(), 0.0, 0.0, [], 1600.0, 1, True, 30.0, None).auto.max_speed == 30.0


def test_signalled_activity_starts_and_ends(tmp_path):
    """On the signalled sample route: the follower's start waits for the eastbound's
    route to clear; the westbound, held at a red on the loop, does not count as arrived
    there but runs on to the end of its path."""
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    route = load_route(dst / "ROUTES" / "SIGNALS", cache=False)
    specs = [
        ServiceSpec("Eastbound", "sample_freight", H, "East_main"),
        ServiceSpec("Westbound", "sample_passenger", H, "West_loop"),
        ServiceSpec("Follower", "sample_passenger", H + 60, "East_main", player=True),
    ]
    rp = ActivityReplay(plan_activity(write_activity_files(route, "Sig", specs)), route=route, signals=True)
    res = rp.run()
    ev = res.replay.events
    started = {e.train: e.time for e in ev if isinstance(e, ServiceStarted)}
    assert started["Eastbound"] == started["Westbound"] == 1.0
    (delayed,) = [e for e in ev if isinstance(e, StartDelayed)]
    assert (delayed.train, delayed.time, delayed.waiting_for) == ("Follower", 61.0, ("Eastbound",))
    assert delayed.message == "its start is occupied by Eastbound" and delayed.clock == "08:01:01"
    assert started["Follower"] > 61.0
    arrived = {e.train: e.time for e in ev if isinstance(e, Arrived)}
    assert arrived["Eastbound"] < arrived["Follower"]
    assert res.on_track == {
        "Eastbound": (H + 1.0, H + arrived["Eastbound"]),
        "Westbound": (H + 1.0, H + arrived["Westbound"]),
        "Follower": (H + started["Follower"], math.inf),
    }
    for k, d in enumerate(rp.drivers):
        assert d.finished and d.state == "done" and d.authority == math.inf and not d.blocked_by
        assert float(rp.engine.x[rp.train_start[k]]) == pytest.approx(d.path_end, abs=1.0), d.name


def test_a_running_train_standing_too_long_is_stuck(sample_copy):
    """With stuck_after = 5 s: the local standing at J1 for the first freight (which moves)
    waits and is not stuck; Freight west, standing 5 s with nobody to wait for, is stuck,
    and the passenger whose start it holds is stuck at once as hopeless (it waits for a
    train that will not move again)."""
    rp, res = _replay(sample_copy, "Morning", stuck_after=5.0)
    ev = res.replay.events
    stood = next(e.time for e in ev if isinstance(e, CarsStopped) and e.cars[0][0] == "Local")
    started = next(
        e.time for e in ev if isinstance(e, CarsStarted) and e.cars[0][0] == "Local" and e.time > stood
    )
    assert started - stood > 5.0  # the local stood longer than stuck_after ...
    stuck = {e.train: e for e in ev if isinstance(e, Stuck)}
    assert "Local" not in stuck  # ... but waited for a moving train
    assert stuck["Freight west"].waiting_for == ()
    assert stuck["Freight west"].message == "stood 5 s waiting for track held by nobody"
    assert stuck["Passenger"].waiting_for == ("Freight west",)
    assert stuck["Passenger"].message.endswith("which will not move again")
    assert {e.train: e.state for e in ev if isinstance(e, NotAtEnd)} == {
        "Freight west": "stuck",
        "Passenger": "not_started",
    }
    assert res.replay.summary["stuck"] == ["Freight west", "Passenger"]


def test_dispatcher_authority_and_reservations(sample_copy):
    """The dispatcher's state during the sample activity (docs/activities.md §4.1): the
    first freight reserves V_main to its path's end (no junction ahead); the local, whose
    way through J1 the freight holds, gets authority up to the junction area less the
    margin and stands there; once the freight has cleared J1 the junction is the local's."""
    from tdbtools.physics.activity import BLOCK_MARGIN_M

    act = write_activity_files(sample_copy, "Morning", services())
    rp = ActivityReplay(plan_activity(act), route=sample_copy)
    seen: dict[float, dict] = {}

    def snapshot(t: float) -> None:
        if t in (40.0, 75.0, 100.0, 140.0):
            seen[t] = {
                "holder": dict(rp.dispatcher.holder),
                "reserved": dict(rp.dispatcher.reserved),
                "drivers": {
                    d.name: (d.state, d.authority, set(d.blocked_by), set(d.blocked_blocks))
                    for d in rp.drivers
                },
                "front": {d.name: float(rp.engine.x[rp.train_start[k]]) for k, d in enumerate(rp.drivers)},
            }

    rp.run(snapshot)
    local = rp.trains[rp.index["Local"]].line
    j1 = ("j", int(local.junction_node[0]))
    limit = float(local.junction_s[0]) - fouling_length(sample_copy, j1[1]) - BLOCK_MARGIN_M
    at = seen[40.0]
    assert {b for b, n in at["reserved"].items() if n == "Freight east"} == {
        ("n", 400_000 + p) for p in range(1, 5)
    }
    assert at["holder"][j1] == "Freight east"
    assert at["drivers"]["Local"] == ("running", pytest.approx(limit), {"Freight east"}, {j1})
    assert at["drivers"]["Freight west"][0] == "waiting"
    at = seen[75.0]
    assert at["drivers"]["Local"] == ("running", pytest.approx(limit), {"Freight east"}, {j1})
    assert at["front"]["Local"] == pytest.approx(limit, abs=0.5)  # standing at its authority
    assert at["drivers"]["Freight west"] == ("ready", math.inf, {"Freight east"}, set())
    at = seen[100.0]
    assert at["holder"][j1] == "Local"
    assert at["drivers"]["Local"] == ("running", math.inf, set(), set())
    at = seen[140.0]
    assert at["drivers"]["Local"][0] == "dwell" and j1 not in at["holder"] and at["reserved"] == {}


def test_replay_activity_refuses_missing_stock_unless_told(sample_copy):
    """A consist naming a locomotive the install lacks: an error by default, generic
    stand-in stock when asked for."""
    from tdbtools.physics.activity import replay_activity

    con = SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / "sample_double.con"
    text = con.read_text(encoding="utf-16").replace("sample_el64 SAMPLE_EL", "no_such_loco NO_SUCH")
    (Path(sample_copy.folder).parents[1] / "TRAINS" / "CONSISTS" / "ghost.con").write_text(
        text, encoding="utf-16"
    )
    act = write_activity_files(sample_copy, "Ghost", [ServiceSpec("P", "ghost", H, "MainWE", player=True)])
    with pytest.raises(ActivityError, match="no_such_loco"):
        replay_activity(act, route=sample_copy, duration=2.0)
    res = replay_activity(act, route=sample_copy, duration=2.0, stand_in=True)
    assert list(res.replay.summary["trains"]) == ["P"]


def test_plan_checks_names_and_counts(sample_copy, monkeypatch):
    from tdbtools.formats.activity import make_service
    from tdbtools.physics import activity

    act = write_activity_files(sample_copy, "Morning", services())
    monkeypatch.setattr(activity, "MAX_TRAINS", 4)
    assert len(plan_activity(act).trains) == 4  # the player and three AI services: at the limit
    monkeypatch.setattr(activity, "MAX_TRAINS", 3)
    with pytest.raises(ActivityError, match="4 services, at most 3 are replayed"):
        plan_activity(act)
    monkeypatch.undo()
    srv = act.parents[1] / "SERVICES" / "Morning_Local.srv"
    for consist, path, what in (
        (".", "p", "Train_Config '.'"),
        ("c", "..", "PathID '..'"),
        ("c", "a\\b", "PathID 'a\\\\\\\\b'"),
    ):
        write_stf_file(make_service("Local", consist, path), srv)
        with pytest.raises(ActivityError, match=f"{what} must be a plain file name"):
            plan_activity(act)
    # an activities folder in lower case still tells the route
    write_stf_file(make_service("Local", "sample_double", "Morning_Local"), srv)
    low = act.parents[1] / "activities"
    act.parent.rename(low)
    assert plan_activity(low / act.name).route_folder == act.parents[1]


def test_clock():
    assert clock(None) == "" and clock(math.inf) == "" and clock(math.nan) == ""
    assert clock(0) == "00:00:00" and clock(3599.4) == "00:59:59" and clock(3599.6) == "01:00:00"
    assert clock(H + 3661) == "09:01:01" and clock(86400 + 61) == "00:01:01"  # the next day


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


def test_an_early_ai_train_waits_for_its_booked_departure():
    """An AI service booked to arrive and leave at 10:00:00 that arrives a minute early
    leaves at 10:00:00, not as soon as its passengers are aboard; the player's train too."""
    from tdbtools.formats.activity import StopItem
    from tdbtools.physics.activity import Platform, Stop, departure

    platform = Platform((1, 2), "P", "Station", 1, 0.0, 100.0, 20, 0)
    stop = Stop(platform, StopItem(1, 36000, 36000), 400.0)
    assert departure(stop, 35940.0, 3, True) == 36000.0
    assert departure(stop, 35940.0, 3, False) == 36000.0


def test_plan_stopped_by_its_time_limit_is_not_finished():
    from helpers import SAMPLE_INSTALL
    from test_running_time import _plan

    freight = F.CarModel.from_stock(
        resolve_stock(read_consist(CONSISTS / "sample_freight.con"), SAMPLE_INSTALL)
    )
    r = _plan(freight, TrackLine.synthetic(4000.0, route_limit=20.0), limit_s=30.0)
    assert r.finished is False


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
