"""Readers and lossless writers of .act, .srv and .trf."""

from __future__ import annotations

import shutil

import pytest
from helpers import SAMPLE_INSTALL
from test_activity_replay import H, services

from tdbtools.errors import Diagnostics, TdbToolsError
from tdbtools.formats.activity import (
    ActivityHeader,
    ServiceRef,
    StopItem,
    TrafficService,
    activity_from_tree,
    find_activity_file,
    make_activity,
    make_service,
    make_traffic,
    read_activity,
    read_service,
    read_traffic,
    traffic_from_tree,
    write_stf_file,
)
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import plan_activity
from tdbtools.physics.activity_build import ServiceSpec, write_activity_files
from tdbtools.stf import parse_file
from tdbtools.stf.parser import parse_text

ACT = """SIMISA@@@@@@@@@@JINX0a0t______

Tr_Activity (
  Serial ( 1 )
  Tr_Activity_Header ( RouteID ( OR_DK24 ) Name ( "Morning" ) Description ( "d" ) StartTime ( 10 0 0 )
     Season ( 2 ) Weather ( 1 ) PathID ( p1 ) StartingSpeed ( 0 ) Duration ( 1 30 ) Difficulty ( 1 ) )
  Tr_Activity_File (
    Player_Service_Definition ( "player" Player_Traffic_Definition ( 36000 ArrivalTime ( 36600 )
       DepartTime ( 36660 ) SkipCount ( 0 ) DistanceDownPath ( 1200 ) PlatformStartID ( 303 )
       ArrivalTime ( 37200 ) DepartTime ( 37260 ) PlatformStartID ( 305 ) ) UiD ( 0 ) )
    NextServiceUID ( 4 ) NextActivityObjectUID ( 1 )
    Traffic_Definition ( "traffic"
       Service_Definition ( "frt1" 28800 UiD ( 3 ) Efficiency ( 0.8 ) SkipCount ( 0 ) DistanceDownPath ( 0 )
          PlatformStartID ( 303 ) ) )
    Events ( EventCategoryTime ( ID ( 1 ) Time ( 100 ) Outcomes ( DisplayMessage ( "hello world" ) ) ) )
    ActivityRestrictedSpeedZones ( ActivityRestrictedSpeedZone ( StartPosition ( 1 2 3 4 ) EndPosition ( 1 2 5 6 ) ) )
    ORTSAIHornAtCrossings ( 1 ) ) )
"""

TRF = """SIMISA@@@@@@@@@@JINX0f0t______

Traffic_Definition ( "traffic" Serial ( 1 )
  Service_Definition ( "frt1" 30000 ArrivalTime ( 1 ) DepartTime ( 2 ) SkipCount ( 0 ) DistanceDownPath ( 0 )
     PlatformStartID ( 303 ) )
  Service_Definition ( "frt1" 28800 ArrivalTime ( 36600 ) DepartTime ( 36630 ) SkipCount ( 1 )
     DistanceDownPath ( 10.5 ) PlatformStartID ( 303 ) ) )
"""

SRV = """SIMISA@@@@@@@@@@JINX0v0t______

Service_Definition ( Serial ( 1 ) Name ( "Freight one" ) Train_Config ( "DSB MX 1001 solo" ) PathID ( p2 )
  MaxWheelAcceleration ( 1 ) Efficiency ( 0.75 )
  TimeTable ( StartingSpeed ( 10 ) EndingSpeed ( 0 ) StartInWorld ( 0 ) EndInWorld ( 0 )
     StationStop ( PlatformStartID ( 305 ) DistanceDownPath ( 0 ) SkipCount ( 0 ) ) ) )
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_bytes(b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le"))
    return p


def test_activity_fields(tmp_path):
    a = read_activity(_write(tmp_path, "a.act", ACT))
    h = a.header
    assert (h.name, h.start_time, h.duration, h.season, h.weather, h.difficulty) == (
        "Morning",
        36000,
        5400,
        2,
        1,
        1,
    )
    # docs/activities.md §3.2: items complete at each PlatformStartID, earlier values carry over
    assert a.player == ServiceRef(
        "player", 36000, 0, (StopItem(303, 36600, 36660, 0, 1200.0), StopItem(305, 37200, 37260, 0, 1200.0))
    )
    assert a.traffic_name == "traffic" and a.events == 1
    assert a.services == (ServiceRef("frt1", 28800, 3, (StopItem(303, None, None, 0, 0.0, 0.8),)),)


def test_traffic_entry_by_name_and_time(tmp_path):
    t = read_traffic(_write(tmp_path, "t.trf", TRF))
    e = t.entry("frt1", 28800)
    assert e is not None and e.stops == (StopItem(303, 36600, 36630, 1, 10.5),)
    assert t.entry("FRT1", 28800) is None and t.entry("frt1", 1) is None


def test_service_fields(tmp_path):
    s = read_service(_write(tmp_path, "s.srv", SRV))
    assert (s.name, s.train_config, s.path_id, s.efficiency, s.starting_speed, s.platform_ids) == (
        "Freight one",
        "DSB MX 1001 solo",
        "p2",
        0.75,
        10.0,
        (305,),
    )


@pytest.mark.parametrize(
    "name,text,reader",
    [("a.act", ACT, read_activity), ("t.trf", TRF, read_traffic), ("s.srv", SRV, read_service)],
)
def test_lossless_round_trip(tmp_path, name, text, reader):
    src = _write(tmp_path, name, text)
    rec = reader(src)
    out = write_stf_file(rec, tmp_path / f"out_{name}")
    assert out.read_bytes()[:2] == b"\xff\xfe"
    a, b = parse_file(src), parse_file(out)
    assert a == b and a.signature == b.signature  # the whole STF tree, unknown blocks included
    assert reader(out) == rec


def test_builders_round_trip(tmp_path):
    act = make_activity(
        ActivityHeader(route_id="SAMPLE", name="n", start_time=8 * 3600 + 5),
        ServiceRef("pl", 8 * 3600 + 5, 0, (StopItem(1, 29000, 29060),)),
        "tr",
        [ServiceRef("ai1", 29100, None, (StopItem(1, efficiency=0.7),))],
    )
    assert act.header.start_time == 28805 and act.player.stops[0].depart == 29060
    assert act.services[0].uid == 1 and act.services[0].stops[0].efficiency == 0.7
    srv = make_service("ai1", "cons", "MainWE", efficiency=0.8)
    trf = make_traffic("tr", [TrafficService("ai1", 29100, (StopItem(1, 29200, 29260),))])
    for rec, reader, name in (
        (act, read_activity, "x.act"),
        (srv, read_service, "x.srv"),
        (trf, read_traffic, "x.trf"),
    ):
        out = write_stf_file(rec, tmp_path / name)
        assert reader(out) == rec
    assert read_service(tmp_path / "x.srv").train_config == "cons"


def test_bad_input(tmp_path):
    with pytest.raises(TdbToolsError, match="Train_Config"):
        read_service(_write(tmp_path, "bad.srv", SRV.replace('Train_Config ( "DSB MX 1001 solo" )', "")))
    with pytest.raises(TdbToolsError, match="Tr_Activity"):
        read_activity(_write(tmp_path, "bad.act", TRF))
    with pytest.raises(TdbToolsError, match="platform id"):
        traffic_from_tree(
            parse_text(TRF.replace("PlatformStartID ( 303 )", "PlatformStartID ( x )")),
            Diagnostics(strict=True),
        )
    lenient = Diagnostics(strict=False)
    a = activity_from_tree(parse_text(ACT.replace("( 36600 )", "( soon )")), lenient)
    assert a.player is not None and lenient.findings


def test_find_files_any_case(tmp_path):
    (tmp_path / "Activities").mkdir()
    (tmp_path / "Activities" / "Morning.ACT").write_text("x")
    assert find_activity_file(tmp_path, "act", "morning") is not None
    assert find_activity_file(tmp_path, "srv", "x") is None
    assert find_activity_file(tmp_path, "act", "../Activities/Morning") is None


@pytest.fixture
def sample_copy(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    return load_route(dst / "ROUTES" / "SAMPLE", cache=False)


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


def test_activity_files_go_into_new_folders(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    route = load_route(dst / "ROUTES" / "SAMPLE", cache=False)
    for sub in ("PATHS", "SERVICES", "TRAFFIC", "ACTIVITIES"):
        shutil.rmtree(dst / "ROUTES" / "SAMPLE" / sub, ignore_errors=True)
    act = write_activity_files(route, "New", services())
    assert act.is_file() and len(plan_activity(act).trains) == 4


def test_written_activity_books_every_stop_at_the_path_start_distance(tmp_path):
    """The .act written for an activity gives each booked stop of each service (player
    and AI) a DistanceDownPath of 0: Open Rails works the distance out itself."""
    import shutil

    from helpers import SAMPLE_INSTALL
    from test_activity_replay import services

    from tdbtools.formats.activity import read_activity
    from tdbtools.formats.route import load_route
    from tdbtools.physics.activity import ActivityReplay, plan_activity
    from tdbtools.physics.activity_build import write_activity_files

    shutil.copytree(SAMPLE_INSTALL, tmp_path / "sample")
    route = load_route(tmp_path / "sample" / "ROUTES" / "SAMPLE", cache=False)
    act = write_activity_files(route, "Day", services())
    a = read_activity(act)
    stops = [s for ref in (a.player, *a.services) if ref is not None for s in ref.stops]
    assert len(stops) == 2 and all(s.distance_down_path == 0.0 for s in stops)
    # before the first step nothing holds a block; the dispatcher's first run hands them out
    rp = ActivityReplay(plan_activity(act), route=route)
    assert rp.trace_every == 2.0  # an activity's trace: every 2 s unless asked
    assert rp.dispatcher.holder == {}
    while not rp.dispatcher.holder and rp.time < 120.0:
        rp.step()
    assert set(rp.dispatcher.holder.values()) == {"Freight east"}
