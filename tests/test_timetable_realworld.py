"""Timetables as real files have them (docs/timetables.md §1-§2, "What real files
hold"): the layout YoRyan/autotable writes (a blank-headed station-command column, all
three speed rows, empty rows, #comment rows under the stations, tab separators), the
cutting rules of Open Rails' reader (the separator is the first character; a blank
first cell continues only a station row), passing times written ``P10:05``, names
matched as Open Rails matches them (ignoring case, ``train:description``), static
trains named ``Name $static``, and path or consist names with a suffix or a subfolder.
Every fixture is our own, written in those shapes."""

from __future__ import annotations

import shutil

import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.formats.route import load_route
from tdbtools.formats.timetable import TimetableError, parse_timetable, relative_file_name, timetable_bytes
from tdbtools.formats.timetable_list import read_timetable_list, timetable_list_bytes
from tdbtools.physics.timetable import replay_timetable
from tdbtools.physics.timetable_plan import TimetableReplayError, plan_timetable, with_route_stations
from tdbtools.track.audit import audit_route


def autotable_like(*, forms: str = "ic 2 westbound", station: str = "Sampleby") -> bytes:
    """The sample route's trains in the layout autotable writes (tab, CRLF, UTF-8)."""
    rows = [
        ["", "", "#comment", "IC 1 Eastbound", "IC 2 Westbound", "G 1 Freight"],
        ["#comment", "", "Sampleby generated"],
        ["#path", "", "", "MainWE", "MainEW.pat", "MainWE"],
        ["#consist", "", "", "sample_passenger", "sample_passenger", "sample_freight"],
        ["#start", "", "", "7:45", "08:00", "08:10 $create=08:05"],
        ["#note", "", "", "", "", ""],
        ["#speed", "", "", "", "", ""],
        ["#speedkph", "", "", "", "", "$max=40"],
        ["#speedmph", "", "", "", "", ""],
        ["#restartdelay", "", "", "", "", ""],
        [],
        [station, "$hold", "", "07:46-07:47", "08:03:30", "P08:13"],
        ["#comment", "", "", "S1 - Sampleby", "S1 - Sampleby", ""],
        [],
        ["#dispose", "", "", f"$forms={forms}", "", ""],
    ]
    return "".join("\t".join(r) + "\r\n" for r in rows).encode("utf-8")


def test_autotable_layout_reads_as_open_rails_reads_it():
    data = autotable_like()
    tt = parse_timetable(data, "auto.timetable-or")
    assert timetable_bytes(tt) == data  # lossless
    assert tt.separator == "\t" and tt.description == "Sampleby generated"
    # the blank-headed second column holds station commands (Open Rails' addStationInfo)
    (st,) = tt.stations
    assert st.name == "Sampleby" and [c.name for c in st.commands] == ["hold"]
    ic1, ic2, g1 = tt.trains
    assert ic1.start is not None and ic1.start.seconds == 7 * 3600 + 45 * 60  # "7:45"
    assert ic2.stops[0].depart is not None and ic2.stops[0].depart.seconds == 8 * 3600 + 3 * 60 + 30
    # P08:13: a passing time, no stop
    assert g1.stops[0].passing
    # three speed rows: Open Rails reads the first (#speed, empty) and ignores the rest,
    # so G 1's $max=40 in #speedkph is not applied, and a finding says so
    assert g1.speed == () and g1.speed_unit == "m/s"
    assert [f.code for f in tt.findings] == ["TT_SPEED_ROWS"]
    # an empty later speed row is no finding
    quiet = data.replace(b"$max=40", b"")
    assert parse_timetable(quiet, "q").findings == ()
    # trains are found as Open Rails finds them: ignoring case, with the description
    assert tt.find("ic 2 westbound") is ic2 and tt.find("IC 2 WESTBOUND:sampleby generated") is ic2
    assert tt.find("IC 2 Westbound:Other timetable") is None


def test_separator_is_the_first_character():
    # tab-separated with commas and semicolons in the text: Open Rails cuts at the first
    # character's separator, not at the first ';' or ',' it meets
    text = "\tA, the express;\tB\r\n#path\tp1\tp2\r\n#consist\tc\tc\r\n#start\t10:00\t10:05\r\n"
    tt = parse_timetable(text.encode(), "t")
    assert tt.separator == "\t" and [t.name for t in tt.trains] == ["A, the express;", "B"]


def test_blank_first_cell_continues_only_a_station_row():
    rows = [
        ";A",
        "#path;p",
        "#consist;c",
        "#start;10:00",
        "#direction;up",  # no longer used by Open Rails, still accepted
        "#note;$acc=2",
        ";$dec=2",  # after #note: a comment row (Open Rails), not more of the note
        "X;10:10",
        ";$hold",  # after a station: more of that station's cell
        ";$nohold",  # a second blank row: a comment again
    ]
    tt = parse_timetable(("\r\n".join(rows) + "\r\n").encode(), "t")
    (a,) = tt.trains
    assert tt.findings == ()
    assert [c.name for c in a.note] == ["acc"]
    assert [c.name for c in a.stops[0].commands] == ["hold"]


def test_static_train_named_before_its_dollar():
    text = ";Shunter $static;$static;A\r\n#path;p;q;r\r\n#consist;c;c;c\r\n#start;;;10:00\r\n"
    tt = parse_timetable(text.encode(), "t")
    assert [(t.name, t.static) for t in tt.trains] == [("Shunter", True), ("$static", True), ("A", False)]


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("MainWE", "MainWE"),
        ("MainWE.pat", "MainWE"),
        ("MainWE.PAT", "MainWE"),
        ("Sub\\Set", "Sub/Set"),
        ("Sub/Set.pat", "Sub/Set"),
        ("..\\x", None),
        ("a/../b", None),
        ("C:\\x", None),
        ("\\x", None),
        ("", None),
    ],
)
def test_relative_file_names(name, want):
    assert relative_file_name(name, ".pat") == want


def _sample(tmp_path, data: bytes, name: str = "Auto.timetable-or"):
    inst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    folder = inst / "ROUTES" / "SAMPLE"
    f = folder / "ACTIVITIES" / "OpenRails" / name
    f.write_bytes(data)
    return folder, f


def test_plan_matches_names_as_open_rails_does(tmp_path):
    folder, f = _sample(tmp_path, autotable_like(station="SAMPLEBY"))
    plan = plan_timetable(f)
    runs = {r.name: r for r in plan.runs}
    assert runs["IC 1 Eastbound"].disposal == "forms IC 2 Westbound"
    assert runs["IC 2 Westbound"].formed_by == "IC 1 Eastbound"
    assert runs["IC 2 Westbound"].path == "MainEW"  # "MainEW.pat" names the same file
    # the station row's spelling is the route's once the route is known
    route = load_route(folder, cache=False)
    stations = {it.station for it in route.tdb.items if getattr(it, "station", None)}
    fixed = with_route_stations(plan, stations)
    assert {s.station for r in fixed.runs for s in r.stops} == {"Sampleby"}
    assert plan.defects == ()
    # a reference to a train that is not there is ignored, as Open Rails does, and said
    _folder2, f2 = _sample(tmp_path / "b", autotable_like(forms="IC 9"))
    plan2 = plan_timetable(f2)
    assert plan2.defects == (
        "train 'IC 1 Eastbound': $forms names no train of the timetable: 'IC 9' (ignored)",
    )
    assert {r.name: r for r in plan2.runs}["IC 1 Eastbound"].disposal == "removed"


def test_trains_that_cannot_run_are_left_out_and_said(tmp_path):
    data = autotable_like().replace(b"	7:45	", b"	7h45	").replace(b"MainEW.pat", b"..\\x")
    _folder, f = _sample(tmp_path, data)
    plan = plan_timetable(f)
    assert [r.name for r in plan.runs] == ["G 1 Freight"]
    assert any("7h45" in d for d in plan.defects)  # the cell, located
    assert "train 'IC 1 Eastbound' is left out: no start time in #start" in plan.defects
    assert any(d.startswith("train 'IC 2 Westbound' is left out: path") for d in plan.defects)
    with pytest.raises(TimetableReplayError, match="cannot run"):
        plan_timetable(f, player="IC 1 Eastbound")


def test_audit_of_an_autotable_timetable(tmp_path):
    folder, _f = _sample(tmp_path, autotable_like(station="sampleby"))
    codes = [
        f.code for f in audit_route(load_route(folder, cache=False)).findings if f.code.startswith("TT_")
    ]
    # the station (another case) and the lower-case $forms reference are found
    assert codes == ["TT_SPEED_ROWS"]


@pytest.mark.slow
def test_autotable_timetable_replays(tmp_path):
    folder, f = _sample(tmp_path, autotable_like(station="sampleby"))
    res = replay_timetable(f, route=load_route(folder, cache=False), stand_in=True)
    assert not res.failed
    out = res.replay.summary["timetable"]["outcomes"]
    assert out["IC 1 Eastbound"] == "forms IC 2 Westbound" and out["G 1 Freight"] == "removed"
    rows = {r["train"]: r for r in res.timetable}
    # the passing freight makes no stop; the two passenger trains stop at Sampleby
    assert set(rows) == {"IC 1 Eastbound", "IC 2 Westbound"}
    assert rows["IC 1 Eastbound"]["actual_arr"] < 7 * 3600 + 45 * 60 + 40  # (test_restart_delays)
    assert rows["IC 1 Eastbound"]["actual_dep"] >= 7 * 3600 + 47 * 60 - 1e-6
    assert rows["IC 2 Westbound"]["actual_dep"] >= 8 * 3600 + 3 * 60 + 30 - 1e-6


@pytest.mark.slow
def test_a_run_with_parts_left_out_fails_honestly(tmp_path):
    data = autotable_like(station="sampleby").replace(b"\t7:45\t", b"\t7h45\t")
    folder, f = _sample(tmp_path, data)
    res = replay_timetable(f, route=load_route(folder, cache=False), stand_in=True)
    assert res.failed and res.replay.summary["not_at_end"] == []  # the trains that run are fine
    assert res.replay.summary["timetable"]["defects"] == list(res.defects) and len(res.defects) >= 2
    said = [e.message for e in res.replay.events if e.kind == "warning"]
    assert any("left out of the timetable: train 'IC 1 Eastbound'" in m for m in said)


def test_list_as_autotable_writes_it(tmp_path):
    # "#Name" without a blank, no line ending after the last name
    f = tmp_path / "All.timetablelist-or"
    data = b"#All services - Fri\nA - Fri.timetable-or\nB - Fri.timetable-or"
    f.write_bytes(data)
    tl = read_timetable_list(f)
    assert tl.name == "All services - Fri" and tl.files == ("A - Fri.timetable-or", "B - Fri.timetable-or")
    assert timetable_list_bytes(tl) == data


def test_path_cell_with_a_path_command():
    text = ";A;B\r\n#path;MainWE $endatlastsignal /reverse;Sub\\Main WE.pat\r\n#consist;c;c\r\n#start;10:00;10:01\r\n"
    tt = parse_timetable(text.encode(), "t")
    a, b = tt.trains
    assert a.path == "MainWE" and a.path_qualifiers == (("endatlastsignal", ("reverse",)),)
    assert b.path == "Sub\\Main WE.pat" and relative_file_name(b.path, ".pat") == "Sub/Main WE"
    assert tt.findings == ()


def test_command_cells_read_as_open_rails_cuts_them():
    # Open Rails cuts #note/#dispose/#speed cells at every '$' and reads the first piece
    # as a command too; free text is a command it does not know (ignored, said)
    text = (
        ";A;B\r\n#path;p;p\r\n#consist;c;c\r\n#start;10:00;10:05\r\n"
        "#note;acc=2 $dec=0.5;runs daily except Sundays\r\n#dispose;forms=B /runround=p;\r\n"
    )
    tt = parse_timetable(text.encode(), "t")
    a, b = tt.trains
    assert [(c.name, c.values) for c in a.note] == [("acc", ("2",)), ("dec", ("0.5",))]
    assert [(c.name, c.value, c.qualifier("runround")) for c in a.dispose] == [("forms", "B", ("p",))]
    assert [f.code for f in tt.findings] == ["TT_UNKNOWN_COMMAND"] and "runs daily" in tt.findings[0].message


def _list_files(tmp_path):
    morning = (
        ";RB;IC 1;#comment\r\n#comment;;;Morning\r\n#path;MainEW;MainWE\r\n#consist;sample_passenger;sample_passenger\r\n"
        "#start;07:40;08:00\r\nSampleby $hold;07:43-07:44;08:01-08:02\r\n#dispose;;$forms=ic 2:afternoon\r\n"
    )
    afternoon = (
        ";IC 2;RB;#comment\r\n#comment;;;Afternoon\r\n#path;MainEW;MainWE\r\n#consist;sample_freight;sample_passenger\r\n"
        "#start;08:08;08:30\r\nSampleby;08:11-08:12;08:31-08:32\r\n#dispose;$triggers=RB\r\n"
    )
    folder, _f = _sample(tmp_path, morning.encode("utf-8"), "Morning.timetable-or")
    ttdir = folder / "ACTIVITIES" / "OpenRails"
    (ttdir / "Afternoon.timetable-or").write_bytes(afternoon.encode("utf-8"))
    lst = ttdir / "Day.timetablelist-or"
    lst.write_bytes(b"#The day\r\nMorning.timetable-or\r\nafternoon.timetable-or\r\nGone.timetable-or\r\n")
    return folder, lst


def test_a_list_runs_its_timetables_together(tmp_path):
    _folder, lst = _list_files(tmp_path)
    plan = plan_timetable(lst)
    runs = {r.name: r for r in plan.runs}
    # a name two files use is "name:description"; the others keep their own
    assert set(runs) == {"RB:Morning", "IC 1", "IC 2", "RB:Afternoon"}
    # name:description names a train of another file; a plain name one of its own file
    assert runs["IC 1"].disposal == "forms IC 2" and runs["IC 2"].formed_by == "IC 1"
    assert runs["IC 2"].disposal == "triggers RB:Afternoon"
    # station commands stay with their own file's trains
    assert runs["IC 1"].stops[0].hold and not runs["IC 2"].stops[0].hold
    # the file the list names that is not there is said, and fails the run
    assert plan.defects == ("Day.timetablelist-or lists 'Gone.timetable-or', which is not in its folder",)
    assert plan.timetable.description == "The day"


def test_cli_replays_a_list(tmp_path):
    from click.testing import CliRunner

    from tdbtools.cli import main

    _folder, lst = _list_files(tmp_path)
    r = CliRunner().invoke(main, ["replay", str(lst), "--stand-in", "--out", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output  # the missing file
    assert "IC 2: start 08:08:00" in r.output and "Gone.timetable-or" in r.output


def test_timings_with_one_side_empty():
    # Open Rails cuts a timing at its first '-' and reads each side
    text = ";A;B;C\r\n#path;p;p;p\r\n#consist;c;c;c\r\n#start;10:00;10:00;10:00\r\nX;10:05-;-10:07;10:05 - 10:06\r\n"
    tt = parse_timetable(text.encode(), "t")
    got = [
        (s.arrival and s.arrival.seconds, s.depart and s.depart.seconds) for t in tt.trains for s in t.stops
    ]
    assert got == [(36300, None), (None, 36420), (36300, 36360)]
    assert timetable_bytes(tt) == text.encode()


@pytest.mark.parametrize(
    "text",
    [
        "10:05",
        " 7:45 - 8:00 ",
        "P10:05",
        "10x05-10:07",
        "10:05-",
        "$hold",
        "",
        "10:05 $wait=IC 1 /maxdelay=5 $hold",
        "x",
    ],
)
def test_fast_timing_reading_gives_the_grammars_tree(text):
    from tdbtools.formats.timetable_cells import _parse_cell, _parser

    assert _parse_cell("timing_cell", text) == _parser().parse(text, start="timing_cell")


def test_bad_command_after_a_time_is_located_in_the_whole_cell():
    text = ";A\r\n#path;p\r\n#consist;c\r\n#start;10:00\r\nX;10:05 $=\r\n"
    with pytest.raises(TimetableError) as e:
        parse_timetable(text.encode(), "t")
    assert e.value.location.line == 5 and e.value.location.column == 3 + len("10:05 $")


@pytest.mark.slow
def test_restart_delays(tmp_path):
    # IC 1: $new /fix=20 and $station /fix=20 /var=20: its start 20 s later, its departure
    # 20 + 10 s (the mean of the random part) later than it would leave
    data = autotable_like(station="sampleby").replace(
        b"#restartdelay\t\t\t\t", b"#restartdelay\t\t\t$new /fix=20 $station /fix=20 /var=20\t"
    )
    folder, f = _sample(tmp_path, data)
    plan = plan_timetable(f)
    ic1 = {r.name: r for r in plan.runs}["IC 1 Eastbound"]
    assert (ic1.restart_new_s, ic1.restart_station_s) == (20.0, 30.0)
    assert any("#restartdelay" in s for s in plan.simplifications)
    res = replay_timetable(f, route=load_route(folder, cache=False), stand_in=True)
    assert not res.failed
    row = {r["train"]: r for r in res.timetable}["IC 1 Eastbound"]
    assert row["actual_dep"] == pytest.approx(7 * 3600 + 47 * 60 + 30, abs=1.0)
    # without the delays it arrives 34.5 s after 07:45 (test_autotable_timetable_replays);
    # held 20 s at its start, it arrives about 20 s later
    assert row["actual_arr"] >= 7 * 3600 + 45 * 60 + 34.5 + 19.0
