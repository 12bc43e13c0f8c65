"""Replaying Open Rails timetables (docs/timetables.md §5): the sample route's timetable
(forms, triggers, pool, static, stable, create), the DK24 one (crossings, a connection
held for a late train, a pool), the command line and the audit of timetables."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from helpers import DK24_ROUTE, REPO, SAMPLE_INSTALL, load_script, needs_dk24

from tdbtools.cli import main
from tdbtools.formats.route import load_route
from tdbtools.physics.timetable import replay_timetable
from tdbtools.physics.timetable_plan import TimetableReplayError, assemble_consist, plan_timetable
from tdbtools.track.audit import audit_route

TT_NAME = "Sampleby day.timetable-or"


def _sample(tmp_path):
    inst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    folder = inst / "ROUTES" / "SAMPLE"
    return folder, folder / "ACTIVITIES" / "OpenRails" / TT_NAME


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    folder, tt = _sample(tmp_path_factory.mktemp("tt"))
    route = load_route(folder, cache=False)
    return replay_timetable(tt, route=route, stand_in=True)


def _rows(res) -> dict:  # noqa: ANN001
    return {r["train"]: r for r in res.timetable}


def _events(res, kind):  # noqa: ANN001
    return [e for e in res.replay.events if e.kind == kind]


@pytest.mark.slow
def test_sample_every_train_reaches_its_end(sample_run):
    s = sample_run.replay.summary
    assert not sample_run.failed, s["not_at_end"]
    assert s["not_at_end"] == [] and not s["stuck"] and s["collisions"] == 0 and s["deadlocks"] == 0
    out = s["timetable"]["outcomes"]
    assert out["IC 1"] == "forms IC 2" and out["IC 2"] == "triggers IC 3" and out["IC 3"] == "to pool Depot"
    assert out["L 1"] == "forms L 2" and out["L 2"] == "stabled" and out["L 2 (stable out)"] == "static"
    assert out["static 1"] == "static" and out["RB 2"] == "removed"
    # the booked times: no train leaves early; arrivals at most 90 s late, or up to 150 s
    # early (the times were booked with MainEW.pat's 60-s waiting point, which a
    # timetable's train runs past as in Open Rails)
    for r in sample_run.timetable:
        assert r["actual_dep"] >= r["sched_dep"] - 1e-6, r
        assert -150 <= r["actual_arr"] - r["sched_arr"] <= 90, r
        assert r["actual_dep"] <= r["sched_dep"] + 30, r


@pytest.mark.slow
def test_sample_trains_run_past_waiting_points(sample_run):
    """Open Rails ignores a path's waiting points in timetable mode (manual, #path): the
    sample's MainEW.pat has one of 60 s (where RB 3 and IC 2 stood before this rule)."""
    assert [e.train for e in _events(sample_run, "waiting")] == []
    trains = {r["train"] for r in sample_run.timetable}
    assert {"RB 3", "IC 2"} <= trains


@pytest.mark.slow
def test_sample_forms_triggers_pool_static(sample_run):
    s = sample_run.replay.summary
    trains = s["trains"]
    on = sample_run.activity.on_track
    formed = {(e.train, e.new_train): e for e in _events(sample_run, "formed")}
    # IC 2 is formed out of IC 1 at the east end: it starts when IC 1 is in, not before
    # its booked start, and IC 1 leaves the track as IC 2 takes it over
    f = formed[("IC 1", "IC 2")]
    assert f.how == "forms" and on["IC 2"][0] >= 8 * 3600 + 8 * 60 - 1
    assert on["IC 1"][1] == pytest.approx(on["IC 2"][0], abs=2.0)
    # the consist of the train forming it, not its own (sample_freight)
    assert trains["IC 2"]["consist"] == trains["IC 1"]["consist"] and trains["IC 2"]["cars"] == 7
    assert formed[("IC 2", "IC 3")].how == "triggers"
    assert trains["IC 3"]["cars"] == 2 + 7  # its own composite consist: double + passenger
    # the pool: IC 3 goes in, L 1 takes it out
    pool = {(e.train, e.action): e for e in _events(sample_run, "pool")}
    assert pool[("IC 3", "in")].time < pool[("L 1", "out")].time and pool[("L 1", "out")].unit == "IC 3"
    assert s["timetable"]["drawn_from_pool"] == {"L 1": "IC 3"}
    # static trains never move; the stabled one moved out and stays
    assert trains["static 1"]["distance_m"] < 1.0
    assert trains["L 2 (stable out)"]["distance_m"] > 1000 and on["L 2 (stable out)"][0] >= 9 * 3600 - 1
    # $create: G 1 is on the track from 08:20 but leaves only at its start, 08:24
    assert on["G 1"][0] == pytest.approx(8 * 3600 + 20 * 60, abs=2.0)
    g = sample_run.replay.traces["G 1"]
    moving = [c for c, v in zip(g["clock"], g["speed"]) if abs(v) > 0.1]
    assert min(moving) >= 8 * 3600 + 24 * 60 - 1


@pytest.mark.slow
def test_sample_writes_outputs_and_chart(sample_run, tmp_path):
    files = sample_run.write(tmp_path / "out")
    names = {p.name for p in files}
    assert {"timetable.csv", "events.json", "summary.json", "outcomes.json"} <= names
    csv = (tmp_path / "out" / "timetable.csv").read_text()
    assert "IC 3,Sampleby" in csv
    outcomes = json.loads((tmp_path / "out" / "outcomes.json").read_text())
    assert outcomes["IC 1"] == "forms IC 2"
    from tdbtools.render.spacetime import plot_space_time

    png = plot_space_time(sample_run.activity, tmp_path / "out" / "spacetime.png")
    assert png.stat().st_size > 10_000


def test_plan_errors(tmp_path):
    folder, tt = _sample(tmp_path)
    with pytest.raises(TimetableReplayError, match="no train 'NOPE'"):
        plan_timetable(tt, player="NOPE")
    with pytest.raises(TimetableReplayError, match="no train"):
        plan_timetable(tt, player="$static")
    text = tt.read_bytes().decode("utf-16").replace("$forms=IC 2", "$forms=IC 99")
    tt.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    # as Open Rails does, a command naming a missing train is ignored, and said
    plan = plan_timetable(tt)
    assert any("IC 99" in d for d in plan.defects)
    assert {r.name: r for r in plan.runs}["IC 1"].disposal == "removed"
    other = tmp_path / "elsewhere.timetable-or"
    shutil.copy(tt, other)
    with pytest.raises(TimetableReplayError, match="ACTIVITIES/OpenRails"):
        plan_timetable(other)


def test_plan_reads_the_links(tmp_path):
    _folder, tt = _sample(tmp_path)
    plan = plan_timetable(tt, player="IC 1")
    runs = {r.name: r for r in plan.runs}
    assert runs["IC 2"].formed_by == "IC 1" and runs["IC 2"].keeps_consist_of == "IC 1"
    assert runs["IC 3"].formed_by == "IC 2" and runs["IC 3"].keeps_consist_of is None  # triggers
    assert runs["L 1"].pool_from == "Depot" and runs["IC 3"].pool_to == "Depot"
    assert runs["L 2 (stable out)"].formed_by == "L 2" and runs["L 2 (stable out)"].start == 9 * 3600
    assert runs["G 1"].create == 8 * 3600 + 20 * 60 and runs["G 1"].max_speed == pytest.approx(60 / 3.6)
    assert [link.kind for link in runs["G 1"].links] == ["follow"]
    c = runs["RB 1"].links[0]
    assert (c.kind, c.train, c.station, c.maxdelay, c.hold) == ("connect", "IC 3", "Sampleby", 300.0, 60.0)
    assert runs["IC 1"].stays  # the player stays on the track at its end
    assert runs["static 1"].static and runs["static 1"].source == "$static"


def test_assembled_consist_turns_a_reversed_part(tmp_path):
    from tdbtools.formats.consist import read_consist

    con = read_consist(SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / "sample_freight.con")
    p = tmp_path / "x.con"
    p.write_text(assemble_consist([(con, False), (con, True)], "two"), encoding="utf-8")
    both = read_consist(p)
    assert len(both.cars) == 2 * len(con.cars)
    back = both.cars[len(con.cars) :]
    assert [c.file for c in back] == [c.file for c in reversed(con.cars)]
    assert [c.flipped for c in back] == [not c.flipped for c in reversed(con.cars)]


def test_cli_replay_timetable(tmp_path):
    _folder, tt = _sample(tmp_path)
    r = CliRunner().invoke(main, ["replay", str(tt), "--player", "NOPE", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "NOPE" in r.output
    r = CliRunner().invoke(main, ["replay", str(tt), "--cars", "--out", str(tmp_path / "o2")])
    assert r.exit_code == 2


@pytest.mark.slow
def test_cli_replay_timetable_runs(tmp_path):
    _folder, tt = _sample(tmp_path)
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["replay", str(tt), "--stand-in", "--out", str(out), "--duration", "1500"])
    # cut short at 08:10: most trains never reach their end, and the exit status says so
    assert r.exit_code == 1, r.output
    assert "IC 1: start 07:45:00" not in r.output and "forms IC 2" in r.output
    assert (out / "timetable.csv").is_file() and (out / "outcomes.json").is_file()
    assert "not at their end" in r.output


# -- the audit -----------------------------------------------------------------------------


def test_audit_sample_timetable_is_clean():
    rep = audit_route(load_route(SAMPLE_INSTALL / "ROUTES" / "SAMPLE"), paths=True)
    assert not [f for f in rep.findings if f.code.startswith("TT_")]


def test_audit_finds_broken_timetables(tmp_path):
    folder, tt = _sample(tmp_path)
    bad = (
        ";A;B;C\r\n#path;MainWE;NoSuchPath;MainEW\r\n#consist;sample_double;nope_con;sample_double\r\n"
        "#start;09:00;09:00;09:10\r\nSampleby;08:50;;09:12\r\nNowhere;;;\r\n#dispose;$forms=Z;$triggers=C;\r\n"
        "Sampleby2 $teleport;;;\r\n"
    )
    (tt.parent / "bad.timetable-or").write_text(bad, encoding="utf-8")
    (tt.parent / "bad.timetablelist-or").write_text("#x\r\nmissing.timetable-or\r\n", encoding="utf-8")
    (tt.parent / "broken.timetable-or").write_bytes(b"no separator here")
    rep = audit_route(load_route(folder, cache=False), paths=True)
    codes = sorted({f.code for f in rep.findings if f.code.startswith("TT_")})
    assert codes == [
        "TT_CONSIST_MISSING",
        "TT_LIST_MISSING",
        "TT_PATH_MISSING",
        "TT_READ",
        "TT_STATION_UNKNOWN",
        "TT_TIME_ORDER",
        "TT_TRAIN_MISSING",
        "TT_UNKNOWN_COMMAND",
    ]
    order = [f for f in rep.findings if f.code == "TT_TIME_ORDER"]
    assert len(order) == 1 and "train 'A'" in order[0].message
    assert rep.problems("error")


def test_audit_station_off_path(tmp_path):
    folder, tt = _sample(tmp_path)
    text = ";A\r\n#path;SidingStore\r\n#consist;sample_double\r\n#start;09:00\r\nSampleby;09:01\r\n"
    (tt.parent / "off.timetable-or").write_text(text, encoding="utf-8")
    rep = audit_route(load_route(folder, cache=False), paths=True)
    assert [f.code for f in rep.findings if f.code.startswith("TT_")] == ["TT_STATION_OFF_PATH"]


# -- DK24 ----------------------------------------------------------------------------------


def _bench():
    return load_script(REPO / "benchmarks" / "bench_timetable.py")


@pytest.mark.dk24
@pytest.mark.slow
@needs_dk24
def test_dk24_timetable(tmp_path):
    bench = _bench()
    tt = bench.install_timetable(DK24_ROUTE, tmp_path)
    route = load_route(tt.parent.parent.parent, cache=False)
    assert not [f for f in audit_route(route, paths=True).findings if f.code.startswith("TT_")]
    res = replay_timetable(tt, route=route, stand_in=True)
    s = res.replay.summary
    assert "signalling" in s
    assert not res.failed and s["not_at_end"] == [], s["timetable"]["outcomes"]
    assert s["deadlocks"] == 0 and s["collisions"] == 0 and not s["stuck"]
    rows = _rows(res)
    assert len(rows) == 8
    late, held = rows["IR 4506"], rows["RE 4507"]
    # tolerances: nobody leaves early; arrivals within 3 minutes of the booked ones and
    # departures within a minute, except the train that runs late by design (its booked
    # running time is too short for its 70 km/h) and the one held for it
    for name, r in rows.items():
        assert r["actual_dep"] >= r["sched_dep"] - 1e-6, r
        if name not in ("IR 4506", "RE 4507"):
            assert -180 <= r["arr_delay_s"] <= 180 and r["dep_delay_s"] <= 60, r
    assert late["arr_delay_s"] >= 60
    # the connection: RE 4507 waits at Tommerup for the late IR 4506 and 3 minutes more
    assert held["actual_arr"] < late["actual_arr"]
    assert held["actual_dep"] >= late["actual_arr"] + 180 - 1 and held["actual_dep"] > held["sched_dep"] + 60
    assert any(e.train == "RE 4507" and e.reason == "connect" for e in _events(res, "held"))
    # the crossing on the single line west of Tommerup: both in the station together
    a, b = rows["IC 801"], rows["IR 4502"]
    assert max(a["actual_arr"], b["actual_arr"]) < min(a["actual_dep"], b["actual_dep"])
    assert a["platform"] != b["platform"]
    # forms, triggers, pool
    formed = {(e.train, e.new_train) for e in _events(res, "formed")}
    assert {("IC 801", "IC 802"), ("IR 4502", "RB 4504"), ("RE 4507", "IR 4510")} <= formed
    # one storage track: the last unit in (IC 802) is nearest the access and comes out
    # first (TTPool.ExtractTrain), then Lok 1146, there from the start
    assert s["timetable"]["drawn_from_pool"] == {"RE 4507": "IC 802", "IC 808": "Lok 1146"}
    assert s["trains"]["static 1"]["distance_m"] < 1.0
    assert s["realtime_factor"] > 1.0


@pytest.mark.slow
@pytest.mark.by_stock
def test_readme_timetable_command_runs(tmp_path):
    """The README's command as a user runs it: no TDBTOOLS_PHYSICS, so the profile by the
    stock, Open Rails' for the sample's .eng/.wag files (said on stderr; docs/physics.md
    §7): every train reaches its end and makes its stops (IC 3, 9 cars and 522 t, ran
    off the track end under those laws before the driver lapped its brakes)."""
    import shlex

    line = next(
        x for x in (REPO / "README.md").read_text().splitlines() if x.startswith('tdbtools replay "sample')
    )
    words = shlex.split(line)[1:]
    assert words[words.index("--out") + 1] == "tt-out"
    words[words.index("--out") + 1] = str(tmp_path / "tt-out")
    words[1] = str(REPO / words[1])
    r = CliRunner().invoke(main, words)
    assert r.exit_code == 0, r.output
    assert "Open Rails physics profile" in r.output and "derail" not in r.output
    summary = json.loads((tmp_path / "tt-out" / "summary.json").read_text())
    assert summary["physics"] == "openrails"
    assert all(t["reached_end"] and not t["derailed"] for t in summary["trains"].values())
    assert (tmp_path / "tt-out" / "spacetime.png").is_file()


def _small_timetable(tmp_path, grid):  # noqa: ANN001
    from tdbtools.formats.timetable import make_timetable, write_timetable

    folder, tt = _sample(tmp_path)
    for p in tt.parent.iterdir():
        p.unlink()
    path = tt.parent / "small.timetable-or"
    write_timetable(make_timetable(grid), path)
    return folder, path


@pytest.mark.slow
def test_formed_train_waits_for_a_late_train_forming_it(tmp_path):
    # IC 2 is booked to leave the east end at 08:02, before IC 1 can be there (about
    # 08:04): it starts when IC 1 is in (manual, $forms: "the start of the new train is
    # also delayed"), and runs late from there
    grid = [
        ["", "IC 1", "IC 2"],
        ["#path", "MainWE", "MainEW"],
        ["#consist", "sample_passenger", "sample_freight"],
        ["#start", "08:00", "08:02"],
        ["Sampleby", "08:01-08:02", "08:04-08:05"],
        ["#dispose", "$forms=IC 2", ""],
    ]
    folder, path = _small_timetable(tmp_path, grid)
    res = replay_timetable(path, route=load_route(folder, cache=False), stand_in=True)
    assert not res.failed
    on = res.activity.on_track
    (f,) = _events(res, "formed")
    ic1_end = res.replay.summary["trains"]["IC 1"]
    assert ic1_end["reached_end"]
    assert on["IC 2"][0] >= 8 * 3600 + 3 * 60 and on["IC 2"][0] == pytest.approx(
        f.time + res.activity.t0, abs=2
    )
    assert on["IC 1"][1] == pytest.approx(on["IC 2"][0], abs=2.0)
    assert _rows(res)["IC 2"]["dep_delay_s"] > 0
    assert res.replay.summary["trains"]["IC 2"]["cars"] == 7  # IC 1's consist


def test_first_rejoin():
    from types import SimpleNamespace

    from tdbtools.physics.timetable_driver import first_rejoin as _first_rejoin

    line = SimpleNamespace(seg_node=[1, 2, 3, 4, 5], seg_s1=[100.0, 200.0, 300.0, 400.0, 500.0])
    assert _first_rejoin(line, 0.0, {1, 2, 4, 5}) == 4  # common, apart at 3, common again at 4
    assert _first_rejoin(line, 0.0, {1, 2, 3, 4, 5}) is None  # never apart: no wait position
    assert _first_rejoin(line, 250.0, {1, 5}) == 5  # searched from where the train is
    assert _first_rejoin(line, 0.0, {9}) is None


@pytest.mark.dk24
@pytest.mark.slow
@needs_dk24
def test_dk24_hold_lets_the_crossing_train_in(tmp_path):
    # RE waits at Tommerup (Spor 1, on to E1) for IR, which comes the other way from E2
    # into Spor 2 over the junctions RE would take next. With the station's $hold, RE's
    # exit signal stays at danger while it waits, so IR gets its route in; without it RE
    # would hold that route while waiting for IR (the manual's warning at $connect)
    from tdbtools.formats.timetable import make_timetable, write_timetable

    grid = [
        ["", "RE", "IR"],
        ["#path", "TT_W_E1_S1", "TT_E2_W_S2"],
        ["#consist", "DSB IC3 VIA x1", "DSB IR4 VIA"],
        ["#start", "10:00", "10:02"],
        ["#speedkph", "", "$max=70"],
        ["Tommerup $hold", "10:03-10:04 $connect=IR /maxdelay=10 /hold=3", "10:04-10:05"],
    ]
    src = tmp_path / "hold.timetable-or"
    write_timetable(make_timetable(grid), src)
    tt = _bench().install_timetable(DK24_ROUTE, tmp_path / "inst", src)
    res = replay_timetable(tt, route=load_route(tt.parent.parent.parent, cache=False), stand_in=True)
    assert not res.failed, res.replay.summary["timetable"]["outcomes"]
    rows = _rows(res)
    assert rows["RE"]["actual_arr"] < rows["IR"]["actual_arr"] <= rows["IR"]["sched_arr"] + 240
    assert rows["RE"]["actual_dep"] >= rows["IR"]["actual_arr"] + 180 - 1
