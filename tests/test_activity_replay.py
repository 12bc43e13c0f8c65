"""Replaying activities: start times, station stops and dwell, occupancy, deadlocks."""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import SAMPLE_INSTALL

from tdbtools.cli import main
from tdbtools.errors import TdbToolsError
from tdbtools.formats.activity import StopItem
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import (
    ActivityError,
    boarding_time,
    departure,
    place_stops,
    replay_activity,
    route_platforms,
)
from tdbtools.physics.activity_build import ServiceSpec, write_activity_files
from tdbtools.physics.events import Arrived, Deadlock, StartDelayed
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
