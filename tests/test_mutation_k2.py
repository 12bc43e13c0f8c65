"""Fast tests written for mutants that survived the fast physics selection (docs/mutation.md
§7): the activity dispatcher and its results, the activity writer, and the safety checks.

Each replay is built inside its test, not in a shared fixture: mutmut gives a function's
mutants only the tests that ran the function in its stats pass (docs/mutation.md §2).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL
from test_activity_replay import H, services

from tdbtools.formats.activity import make_traffic, read_service, read_traffic, write_stf_file
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import (
    BLOCK_M,
    DEADLOCK_AFTER_S,
    DISPATCH_EVERY_S,
    JUNCTION_MAX_M,
    JUNCTION_MIN_M,
    ActivityError,
    ActivityReplay,
    block_name,
    clock,
    fouling_length,
    plan_activity,
)
from tdbtools.physics.activity_build import ServiceSpec, write_activity_files
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


@pytest.fixture
def sample_copy(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    return load_route(dst / "ROUTES" / "SAMPLE", cache=False)


def _replay(route, name: str, freight_west_start: int = 60, **kw):  # noqa: ANN001, ANN202
    act = write_activity_files(route, name, services(freight_west_start))
    rp = ActivityReplay(plan_activity(act), route=route, **kw)
    return rp, rp.run()


def _first(events, kind, train):  # noqa: ANN001, ANN202
    return next(e for e in events if isinstance(e, kind) and e.train == train)


# -- writing and planning an activity ---------------------------------------------------------


def test_written_activity_reads_back(sample_copy):
    """Every file write_activity_files writes says what the specs asked for."""
    specs = [
        ServiceSpec("Goods 1", "sample_freight", H, ("2@420", "5"), efficiency=0.7),
        ServiceSpec("Local", "sample_double", H + 30, ("7", "1"), stops=(("Sampleby", H + 180, H + 210),)),
        ServiceSpec(
            "Player",
            "sample_passenger",
            H + 360,
            ("5", "1"),
            stops=(("sampleby, spor 1", None, None),),
            player=True,
        ),
    ]
    act = write_activity_files(sample_copy, "My day", specs, description="a test", duration=1800)
    folder = act.parents[1]
    assert act == folder / "ACTIVITIES" / "My_day.act"
    assert sorted(p.name for p in (folder / "PATHS").glob("My_day_*.pat")) == [
        "My_day_Goods_1.pat",
        "My_day_Local.pat",
        "My_day_Player.pat",
    ]
    srv = read_service(folder / "SERVICES" / "My_day_Goods_1.srv")
    assert (srv.name, srv.train_config, srv.path_id, srv.efficiency) == (
        "Goods 1",
        "sample_freight",
        "My_day_Goods_1",
        0.7,
    )
    assert srv.platform_ids == ()
    assert read_service(folder / "SERVICES" / "My_day_Local.srv").platform_ids == (1,)
    trf = read_traffic(folder / "TRAFFIC" / "My_day.trf")
    assert [(s.name, s.time) for s in trf.services] == [("My_day_Goods_1", H), ("My_day_Local", H + 30)]
    (stop,) = trf.services[1].stops
    assert (stop.platform_id, stop.arrival, stop.depart) == (1, H + 180, H + 210)
    plan = plan_activity(act)
    h = plan.activity.header
    assert (h.route_id, h.name, h.description, h.start_time, h.duration, h.path_id) == (
        "SAMPLE",
        "My day",
        "a test",
        H + 360,
        1800,
        "Player",
    )
    assert plan.activity.traffic_name == "My_day" and plan.warnings == ()
    by = {t.name: t for t in plan.trains}
    assert [t.name for t in plan.trains] == ["Player", "Goods 1", "Local"]
    assert by["Player"].player and not by["Local"].player and by["Local"].booked
    assert by["Player"].start == H + 360 and by["Goods 1"].start == H and by["Local"].start == H + 30
    (ps,) = by["Player"].stops
    assert (ps.platform_id, ps.arrival, ps.depart, ps.efficiency) == (1, None, None, None)
    (ls,) = by["Local"].stops
    assert (ls.platform_id, ls.arrival, ls.depart, ls.efficiency) == (1, H + 180, H + 210, 0.9)


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


# -- the replay of the sample activity ---------------------------------------------------------


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


# -- blocks -------------------------------------------------------------------------------------


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


# -- safety -------------------------------------------------------------------------------------

V_A, J1, V_MAIN = 2, 3, 4


@pytest.fixture(scope="module")
def lines():
    from helpers import SAMPLE_ROUTE

    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    return tuple(
        TrackLine.from_path(route, SAMPLE_ROUTE / "PATHS" / f"{p}.pat") for p in ("MainWE", "MainEW")
    )


def _parallel(line, lateral: float):  # noqa: ANN001, ANN202
    """The same line moved ``lateral`` metres to the right (a parallel track)."""
    import dataclasses

    h = line._heading_u
    return dataclasses.replace(line, X=line.X + lateral * np.cos(h), Z=line.Z - lateral * np.sin(h))


def test_side_collision_lists_every_car_involved(lines):
    from tdbtools.physics.safety import TrainPosition, side_collisions

    we = lines[0]
    s = 300.0
    a = TrainPosition("A", we, [s, s - 20.5, s - 41.0], [20.0, 20.0, 20.0], speed=10.0)
    # B's two cars overlap A's first two, not its third; B runs the other way
    b = TrainPosition("B", _parallel(we, 3.0), [s + 10.0, s - 10.5], [20.0, 20.0], speed=[-5.0, -5.0])
    (e,) = side_collisions([b, a], 4.0)  # the event names the first of the two trains as given
    assert (e.train, e.other_train, e.cars, e.other_cars) == ("B", "A", (0, 1), (0, 1))
    assert (e.kind, e.time, e.node) == ("side_collision", 4.0, V_A)
    assert e.cause == "cars 3.00 m apart (clearance 3.6 m) on different lines"
    assert e.closing_speed == pytest.approx(15.0)
    assert e.s in (pytest.approx(s), pytest.approx(s - 20.5))  # the middle of one of B's cars
    assert e.location.as_tuple() == pytest.approx(b.line.location(e.s).as_tuple())
    # moving together at the same speed: no closing speed
    same = TrainPosition("B", _parallel(we, 3.0), [s + 10.0], [20.0], speed=10.0)
    (e2,) = side_collisions([a, same], 1.0)
    assert e2.closing_speed == pytest.approx(0.0, abs=1e-9)
    assert e2.cars == (0,) and e2.s == pytest.approx(s - 10.0)


def test_side_collision_clearance_and_cells(lines):
    from tdbtools.physics.safety import TrainPosition, side_collisions

    we = lines[0]
    s = 300.0
    a = TrainPosition("A", we, [s], [20.0])
    b = TrainPosition("B", _parallel(we, 4.0), [s + 5.0], [20.0])
    assert side_collisions([a, b], 0.0) == []
    (e,) = side_collisions([a, b], 0.0, clearance=4.5)
    assert e.cause == "cars 4.00 m apart (clearance 4.5 m) on different lines"
    # cells far smaller than a car: enlarged, the pair is still found
    assert len(side_collisions([a, b], 0.0, clearance=4.5, cell=1.0)) == 1
    # a train wholly off its line is not anywhere: nothing to collide with
    off = TrainPosition("C", _parallel(we, 1.0), [-30.0], [20.0])
    assert side_collisions([a, off], 0.0) == []
    assert side_collisions([off], 0.0) == []
    # a car partly off the line's start still counts with the part that is on it
    part = TrainPosition("D", _parallel(we, 2.0), [8.0], [20.0])
    near0 = TrainPosition("A", we, [15.0], [20.0])
    (e,) = side_collisions([near0, part], 0.0)
    assert e.other_train == "D" and e.s == pytest.approx(5.0)


def test_segment_distance():
    from tdbtools.physics.safety import _seg_dist

    def d(p1, q1, p2, q2):  # noqa: ANN001, ANN202
        return float(_seg_dist(*(np.array([x], dtype=float) for x in (p1, q1, p2, q2)))[0])

    assert d((0, 0), (10, 0), (5, -1), (5, 1)) == 0.0  # crossing
    assert d((0, 0), (10, 0), (0, 3), (10, 3)) == pytest.approx(3.0)  # parallel
    assert d((0, 0), (10, 0), (12, 0), (20, 0)) == pytest.approx(2.0)  # in line, end to end
    assert d((0, 0), (10, 0), (13, 4), (13, 4)) == pytest.approx(5.0)  # a point beyond an end
    assert d((0, 0), (0, 0), (3, 4), (3, 4)) == pytest.approx(5.0)  # two points
    assert d((0, 0), (10, 0), (5, 2), (5, 1)) == pytest.approx(1.0)  # a T short of the bar
    assert d((5, 2), (5, 1), (0, 0), (10, 0)) == pytest.approx(1.0)
    assert d((0, 0), (10, 10), (0, 10), (5, 5)) == pytest.approx(0.0)  # touching at an end


def test_collision_event_details(lines):
    from tdbtools.physics.safety import Occupancy, TrainPosition, collisions

    we, ew = lines
    j_we, j_ew = we.junctions[0].s, ew.junctions[0].s
    # A eastbound on V_main [380, 480]; B westbound on V_main [440, 540]
    a = TrainPosition("A", we, [j_we + 480.0, j_we + 430.0], [50.0, 50.0], speed=[10.0, 10.0])
    b = TrainPosition("B", ew, [j_ew - 440.0], [100.0], speed=5.0)
    (e,) = collisions([a, b], 2.0)
    assert (e.train, e.other_train, e.node, e.cars, e.other_cars) == ("A", "B", V_MAIN, (0,), (0,))
    assert e.cause == "both trains occupy node 4 around offset 460.00 m"
    assert e.s == pytest.approx(j_we + 460.0) and e.closing_speed == pytest.approx(15.0)
    # given the other way round: named from B, closing just as fast
    (e,) = collisions([b, a], 2.0)
    assert (e.train, e.other_train, e.closing_speed) == ("B", "A", pytest.approx(15.0))
    assert e.s == pytest.approx(j_ew - 460.0)
    # moving apart: a negative closing speed
    back = TrainPosition("B", ew, [j_ew - 440.0], [100.0], speed=-12.0)
    (e,) = collisions([a, back], 2.0)
    assert e.closing_speed == pytest.approx(-2.0)
    # the nearest car of a train: its second car overlaps B, its first not
    a2 = TrainPosition("A", we, [j_we + 560.0, j_we + 500.0], [50.0, 60.0], speed=[3.0, 4.0])
    (e,) = collisions([a2, b], 2.0)
    # A's centre is east of B's: going east while B goes west, they draw apart
    assert e.cars == (1,) and e.closing_speed == pytest.approx(-9.0)
    # contacts are reported once until the trains part; all of them when asked
    occ = Occupancy([a, b])
    assert len(occ.collisions(1.0)) == 1 and occ.collisions(2.0) == []
    assert len(occ.collisions(3.0, only_new=False)) == 1
    assert occ.intervals("A") == a.intervals()
    occ.remove("B")
    occ.remove("nobody")
    assert occ.collisions(4.0) == [] and [t.train for t in occ.trains] == ["A"]
    occ.update(b)
    assert len(occ.collisions(5.0)) == 1  # new again after parting
    assert occ.by_node() == {
        V_MAIN: [
            ("A", pytest.approx(380.0), pytest.approx(480.0)),
            ("B", pytest.approx(440.0), pytest.approx(540.0)),
        ]
    }


def test_a_train_removed_and_put_back_touches_anew_whichever_side_it_was(lines):
    """Occupancy.remove forgets the removed train's contacts at once: put back, the
    same pair is reported again with no check in between to clear it, whichever of the
    two was taken off. (A train put back comes last, so the event then names it second:
    which side of a contact the removal clears cannot be told apart from outside.)"""
    from tdbtools.physics.safety import Occupancy, TrainPosition

    we, ew = lines
    j_we, j_ew = we.junctions[0].s, ew.junctions[0].s
    a = TrainPosition("A", we, [j_we + 480.0], [100.0], speed=10.0)
    b = TrainPosition("B", ew, [j_ew - 440.0], [100.0], speed=5.0)
    for gone, back in (("A", a), ("B", b)):
        occ = Occupancy([a, b])
        (e,) = occ.collisions(1.0)
        assert (e.train, e.other_train) == ("A", "B")
        assert occ.collisions(2.0) == []  # the same contact: not new
        occ.remove(gone)
        occ.update(back)
        assert len(occ.collisions(3.0)) == 1, gone


def test_collision_picks_the_longest_overlap(lines):
    from tdbtools.physics.safety import TrainPosition, collisions

    we, ew = lines
    j_we, j_ew = we.junctions[0].s, ew.junctions[0].s
    # A: 30 m of V_a before J1 and 10 m of V_main after it; B westbound: 40 m into V_main... and
    # through J1 onto V_a for 25 m
    a = TrainPosition("A", we, [j_we + 10.0], [40.0], speed=1.0)
    b = TrainPosition("B", ew, [j_ew + 25.0], [60.0], speed=1.0)
    (e,) = collisions([a, b], 0.0)
    assert e.node == V_A  # 25 m shared there, 10 m on V_main


def test_side_collision_events_reported_once(lines):
    from tdbtools.physics.safety import Occupancy, TrainPosition

    we = lines[0]
    a = TrainPosition("A", we, [300.0], [20.0])
    b = TrainPosition("B", _parallel(we, 3.0), [305.0], [20.0])
    occ = Occupancy([a, b])
    assert len(occ.side_collisions(0.0)) == 1 and occ.side_collisions(1.0) == []
    assert len(occ.side_collisions(1.0, only_new=False)) == 1
    assert len(occ.side_collisions(1.0, clearance=2.0, only_new=False)) == 0
    # collisions and side collisions are remembered apart (the parallel copy shares the nodes)
    assert len(occ.collisions(1.0)) == 1 and len(occ.side_collisions(2.0, only_new=False)) == 1


def test_track_end_derailments_at_both_ends():
    import dataclasses

    from tdbtools.physics.safety import BogieSet
    from tdbtools.physics.trackline import TrackLine

    line = dataclasses.replace(TrackLine.synthetic(500.0, node=7), starts_at_track_end=True)
    bs = BogieSet("T", line, [100.0, 79.5], [20.0, 20.0], [14.0, 14.0])
    assert bs.bogies[1] == pytest.approx([76.5, 62.5])
    assert bs.move(-60.0, 1.0) == [] and bs.move(-2.0, 2.0) == []  # the rear bogie 0.5 m from 0
    (e,) = bs.move(-1.0, 3.0)
    assert (e.kind, e.time, e.train, e.cars, e.node, e.s) == ("derailment", 3.0, "T", (1,), 7, 0.0)
    assert e.cause == "ran off the track end at the near end of the line"
    assert e.location.as_tuple() == pytest.approx(line.location(0.0).as_tuple())
    (e,) = bs.move(-21.0, 4.0)  # the first car follows; the second is not reported again
    assert e.cars == (0,)
    far = BogieSet("F", line, [495.0], [20.0], [14.0])
    assert far.move([2.5], 1.0) == [] and list(far.beyond_line()) == []
    (e,) = far.move([6.0], 2.0)  # the front bogie 0.5 m beyond the end
    assert e.cause == "ran off the track end at the far end of the line" and e.s == 500.0
    assert list(far.beyond_line()) == [0] and list(far.derailed) == [True]
    assert far.move(3.0, 3.0) == []


def test_switch_events_say_why(lines):
    from tdbtools.physics.safety import BogieSet

    we = lines[0]
    j = we.junctions[0].s
    under = BogieSet("A", we, [j + 10.0], [20.0], [14.0])
    (e,) = under.throw_switch(J1, 1, 5.0)
    assert e.kind == "derailment" and e.s == pytest.approx(j) and e.node == J1
    assert e.cause == (
        "switch 3 thrown to route 1 under the car (the line takes route 0): its bogies take different routes"
    )
    assert under.throw_switch(J1, 1, 6.0) == []  # already derailed
    ahead = BogieSet("B", we, [j - 20.0], [20.0], [14.0])
    (e,) = ahead.throw_switch(J1, 1, 5.0)
    assert (e.kind, e.cars, e.s) == ("path_changed", (), pytest.approx(j))
    assert e.cause == "facing switch 3 ahead now set to route 1; the line takes route 0: rebuild the line"
    assert ahead.throw_switch(99, 1, 5.0) == []  # a junction the line does not pass
    # a trailing switch ahead is not reported
    ew = lines[1]
    trailing = BogieSet("C", ew, [ew.junctions[0].s - 50.0], [20.0], [14.0])
    assert trailing.throw_switch(J1, 1, 5.0) == []


def test_train_position_parts(lines):
    from tdbtools.physics.safety import TrainPosition, _node_dir

    we, ew = lines
    t = TrainPosition("A", we, [100.0, 79.0, 58.0], 20.0, speed=[1.0, 2.0, 3.0])
    assert t.front == 100.0 and t.rear == 38.0
    assert list(t.car_length) == [20.0, 20.0, 20.0]
    assert [t.nearest_car(s) for s in (101.0, 90.0, 79.5, 70.0, 59.0, 30.0)] == [0, 0, 0, 1, 1, 2]
    assert [t.car_speed(i) for i in range(3)] == [1.0, 2.0, 3.0]
    assert TrainPosition("B", we, [5.0], [5.0], speed=4.0).car_speed(0) == 4.0
    assert _node_dir(we, V_MAIN, 100.0) == 1 and _node_dir(ew, V_MAIN, 100.0) == 0
    assert _node_dir(ew, V_A, 10.0) == 1 and _node_dir(we, V_A, 10.0) == 0
    assert _node_dir(we, 99, 0.0) == 1  # a node the line does not pass


# -- setting up an activity replay --------------------------------------------------------------


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


def test_collisions_between_many_trains_on_one_node(lines):
    """Four trains on V_main (each on a line of its own): the long one overlaps the two
    short ones inside it, never the one beyond it."""
    from tdbtools.physics.safety import TrainPosition, collisions

    we = lines[0]
    j = we.junctions[0].s
    spans = {"long": (0.0, 100.0), "a": (10.0, 20.0), "b": (50.0, 60.0), "far": (200.0, 300.0)}
    trains = [TrainPosition(n, we, [j + hi], [hi - lo], line_key=n) for n, (lo, hi) in spans.items()]
    pairs = {(e.train, e.other_train): e for e in collisions(trains, 0.0)}
    assert set(pairs) == {("long", "a"), ("long", "b")}
    assert pairs[("long", "b")].cause == "both trains occupy node 4 around offset 55.00 m"


def test_activity_files_go_into_new_folders(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    route = load_route(dst / "ROUTES" / "SAMPLE", cache=False)
    for sub in ("PATHS", "SERVICES", "TRAFFIC", "ACTIVITIES"):
        shutil.rmtree(dst / "ROUTES" / "SAMPLE" / sub, ignore_errors=True)
    act = write_activity_files(route, "New", services())
    assert act.is_file() and len(plan_activity(act).trains) == 4


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


def test_touch_times_of_joints_at_their_limit():
    """A joint at its limit now: closing touches at once, opening while the closing
    acceleration brings it back touches at −B/A, anything else never."""
    from tdbtools.physics.engine import EPS_V, _touch_time, _touch_times

    B = np.array([1.0, 2 * EPS_V, -1.0, -1.0, 0.0, -2.0])
    A = np.array([0.0, -5.0, 2.0, -1.0, 3.0, 0.0])
    want = [0.0, 0.0, 0.5, math.inf, math.inf, math.inf]
    assert list(_touch_times(B, A)) == want
    assert [_touch_time(float(b), float(a)) for b, a in zip(B, A)] == want


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


# -- the engine's input checks --------------------------------------------------------------------


def test_bodies_say_what_is_wrong():
    from tdbtools.physics.engine import Bodies, EngineError

    ok = {
        "mass": [1.0, 2.0],
        "length": [10.0, 12.0],
        "line": [0, 0],
        "coupled": [True, False],
        "slack": [0.1, 0.0],
    }
    b = Bodies(**ok)
    assert b.n == 2 and b.mass.dtype == np.float64 and b.line.dtype == np.int64 and b.coupled.dtype == bool
    assert list(b.coupled) == [True, False] and list(b.slack) == [0.1, 0.0]
    for name in ok:
        assert not getattr(b, name).flags.writeable, name
    bad = [
        ({"mass": [[1.0, 2.0]]}, "Bodies: mass must be a non-empty 1-D array"),
        ({"mass": []}, "Bodies: mass must be a non-empty 1-D array"),
        ({"length": [10.0]}, r"Bodies: length has shape \(1,\), expected \(2,\)"),
        ({"line": [0, 0, 0]}, r"Bodies: line has shape \(3,\), expected \(2,\)"),
        ({"coupled": [True]}, r"Bodies: coupled has shape \(1,\), expected \(2,\)"),
        ({"slack": [0.1]}, r"Bodies: slack has shape \(1,\), expected \(2,\)"),
        ({"mass": [1.0, 0.0]}, "Bodies: every mass must be finite and > 0"),
        ({"mass": [np.nan, 1.0]}, "Bodies: every mass must be finite and > 0"),
        ({"length": [10.0, 0.0]}, "Bodies: every length must be finite and > 0"),
        ({"length": [np.inf, 1.0]}, "Bodies: every length must be finite and > 0"),
        ({"slack": [0.1, -1e-9]}, "Bodies: every slack must be finite and >= 0"),
        ({"slack": [np.inf, 0.0]}, "Bodies: every slack must be finite and >= 0"),
    ]
    for change, msg in bad:
        with pytest.raises(EngineError, match=f"^{msg}$"):
            Bodies(**{**ok, **change})
    three = {k: [*v, v[-1]] for k, v in ok.items()}
    with pytest.raises(EngineError, match="^Bodies: the cars of a line must be consecutive$"):
        Bodies(**{**three, "line": [0, 1, 0]})
    assert list(Bodies(**{**three, "line": [1, 1, 0]}).line) == [1, 1, 0]  # numbers need not be sorted
    flags = Bodies(**{**ok, "coupled": [1, 0], "line": [0.0, 0.0]})  # stored as the types documented
    assert (
        flags.coupled.dtype == bool and list(flags.coupled) == [True, False] and flags.line.dtype == np.int64
    )


def test_bodies_of_trains():
    from tdbtools.physics.engine import Bodies, EngineError

    b = Bodies.trains([[1.0, 2.0, 3.0], [4.0]], [[5.0, 6.0, 7.0], [8.0]])
    assert list(b.mass) == [1.0, 2.0, 3.0, 4.0] and list(b.length) == [5.0, 6.0, 7.0, 8.0]
    assert list(b.coupled) == [True, True, False, False]
    assert list(b.line) == [0, 0, 0, 0] and list(b.slack) == [0.05] * 4
    for masses, lengths in (([[1.0, 2.0]], [[5.0]]), ([[]], [[]])):
        with pytest.raises(EngineError, match="^Bodies.trains: each train needs as many lengths as masses$"):
            Bodies.trains(masses, lengths)
    with pytest.raises(ValueError):
        Bodies.trains([[1.0]], [[5.0], [6.0]])  # one list of lengths per train


def test_clock():
    assert clock(None) == "" and clock(math.inf) == "" and clock(math.nan) == ""
    assert clock(0) == "00:00:00" and clock(3599.4) == "00:59:59" and clock(3599.6) == "01:00:00"
    assert clock(H + 3661) == "09:01:01" and clock(86400 + 61) == "00:01:01"  # the next day


def test_engine_says_what_is_wrong_with_its_start():
    from tdbtools.physics.engine import SNAP_GAP, Bodies, Engine, EngineError

    b = Bodies([1.0, 1.0, 1.0], [10.0, 10.0, 10.0], [0, 0, 1], [True, False, False], [0.5, 0.0, 0.0])
    ok = [0.0, -10.2, 500.0]  # car 2 on another line: anywhere
    eng = Engine(b, ok, [1.0, 1.0, -2.0])
    assert list(eng.x) == ok and list(eng.v) == [1.0, 1.0, -2.0] and eng.time == 0.0
    cases = [
        ((ok, [0.0, 0.0]), {}, r"^Engine: x and v must have shape \(3,\)$"),
        (([0.0, -10.2], [0.0] * 3), {}, r"^Engine: x and v must have shape \(3,\)$"),
        ((ok, [0.0, np.nan, 0.0]), {}, "^Engine: x and v must be finite$"),
        (([0.0, -np.inf, 0.0], [0.0] * 3), {}, "^Engine: x and v must be finite$"),
        ((ok, [0.0] * 3), {"rest_speed": -1e-9}, "^Engine: rest_speed must be >= 0$"),
        ((ok, [0.0] * 3), {"rest_speed": np.nan}, "^Engine: rest_speed must be >= 0$"),
        (
            ([0.0, -9.5, 0.0], [0.0] * 3),
            {},
            r"^Engine: cars 0 and 1 overlap by 0\.5 m \(within a line x\[i\] - length\[i\] >= x\[i\+1\]\)$",
        ),
        (
            ([0.0, -10.75, 0.0], [0.0] * 3),
            {},
            r"^Engine: the coupler between cars 0 and 1 is stretched to 0\.75 m, beyond its slack 0\.5 m$",
        ),
    ]
    for args, kw, msg in cases:
        with pytest.raises(EngineError, match=msg):
            Engine(b, *args, **kw)
    with pytest.raises(EngineError, match="^Engine needs a Bodies$"):
        Engine("cars", ok, [0.0] * 3)  # type: ignore[arg-type]
    # within SNAP_GAP of touching or of taut: accepted
    Engine(b, [0.0, -10.0 + 0.5 * SNAP_GAP, 0.0], [0.0] * 3)
    Engine(b, [0.0, -10.5 - 0.5 * SNAP_GAP, 0.0], [0.0] * 3)
    Engine(b, [0.0, -10.2, 0.0], [0.0] * 3, rest_speed=0.0)
    # uncoupled cars of one line may stand any distance apart
    free = Bodies([1.0, 1.0], [10.0, 10.0], [0, 0], [False, False], [0.5, 0.5])
    Engine(free, [0.0, -1000.0], [0.0, 0.0])
