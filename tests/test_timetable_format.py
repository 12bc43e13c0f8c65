"""Open Rails timetables: the reader, the cell grammar, located errors and the lossless
writer (docs/timetables.md §1-§4)."""

from __future__ import annotations

import codecs

import pytest
from helpers import REPO, SAMPLE_ROUTE

from tdbtools.errors import Diagnostics, SourceError
from tdbtools.formats import timetable as ttmod
from tdbtools.formats.timetable import (
    TimetableError,
    make_timetable,
    parse_timetable,
    read_timetable,
    timetable_bytes,
    with_cells,
    write_timetable,
)
from tdbtools.formats.timetable_list import read_timetable_list, timetable_list_bytes

SAMPLE_TT = SAMPLE_ROUTE / "ACTIVITIES" / "OpenRails" / "Sampleby day.timetable-or"
SAMPLE_LIST = SAMPLE_ROUTE / "ACTIVITIES" / "OpenRails" / "Sampleby.timetablelist-or"
DK24_TT = REPO / "tests" / "data" / "timetables" / "Fyn day.timetable-or"

#: The commands the issue asks every own timetable to use at least once.
REQUIRED = {
    "create",
    "pool",
    "hold",
    "forcehold",
    "nowaitsignal",
    "terminal",
    "wait",
    "follow",
    "connect",
    "forms",
    "triggers",
    "static",
    "stable",
    "remove",
}

SMALL = ";A;;B\r\n#path;pa;;pb\r\n#consist;ca;;cb\r\n#start;10:00;;10:05\r\nX;10:10-10:12;$hold;10:20\r\n"


def _used(tt) -> set[str]:  # noqa: ANN001
    names = {c.name for s in tt.stations for c in s.commands}
    for t in tt.trains:
        for group in (t.start_commands, t.note, t.dispose, t.speed, *(s.commands for s in t.stops)):
            names |= {c.name for c in group}
        if t.static:
            names.add("static")
    return names


@pytest.mark.parametrize("path", [SAMPLE_TT, DK24_TT], ids=["sample", "dk24"])
def test_own_timetables_round_trip_and_use_every_command(path, tmp_path):
    tt = read_timetable(path)
    assert tt.findings == ()
    data = path.read_bytes()
    assert timetable_bytes(tt) == data  # nothing changed: the same bytes
    out = write_timetable(tt, tmp_path / path.name)
    again = read_timetable(out)
    assert again == tt and out.read_bytes() == data
    assert REQUIRED <= _used(tt), REQUIRED - _used(tt)
    moving = [t for t in tt.trains if not t.static]
    assert len(tt.trains) >= 10 and len(moving) >= 9


def test_sample_timetable_as_spreadsheets_save_it():
    data = SAMPLE_TT.read_bytes()
    assert data.startswith(codecs.BOM_UTF16_LE) and b"\r\x00\n\x00" in data
    tt = read_timetable(SAMPLE_TT)
    assert tt.encoding == "utf-16-le" and tt.separator == "\t"
    assert tt.description == "Sampleby day"
    g = tt.train("G 1")
    assert g is not None
    # the blank column after G 1 extends it: its $nowaitsignal belongs to G 1 at Sampleby
    assert [c.name for c in g.stops[0].commands] == ["nowaitsignal"] and g.stops[0].depart is None
    assert [c.name for c in g.note] == ["follow"] and g.note[0].value == "IC 3"
    assert g.start is not None and g.start.seconds == 8 * 3600 + 24 * 60
    assert g.start_commands[0].name == "create" and g.start_commands[0].value == "08:20"
    assert g.speed_unit == "km/h" and g.speed[0].value == "60"
    l2 = tt.train("L 2")
    assert l2 is not None and l2.stops[0].arrival is not None
    assert (l2.stops[0].arrival.seconds, l2.stops[0].depart.seconds) == (32010, 32070)  # hh:mm:ss
    stable = l2.dispose[0]
    assert stable.name == "stable" and stable.qualifier("out_path") == ("MainWE",) and stable.has("static")
    ic3 = tt.train("IC 3")
    assert [(p.name, p.reverse) for p in ic3.consist] == [
        ("sample_double", False),
        ("sample_passenger", False),
    ]
    st = [t for t in tt.trains if t.static]
    assert len(st) == 1 and st[0].name == "$static" and st[0].path == "SidingStore"
    assert tt.stations[0].name == "Sampleby" and [c.name for c in tt.stations[0].commands] == ["hold"]


def test_dk24_timetable_consist_strings():
    tt = read_timetable(DK24_TT)
    assert tt.encoding == "utf-8-sig" and tt.separator == ";"
    assert [(p.name, p.reverse) for p in tt.train("RB 4504").consist] == [
        ("DSB IC3 VIA x1", False),
        ("DSB IC3 VIA x1", True),
    ]
    # a name holding '+' is written in < >
    assert [p.name for p in tt.train("G 7001").consist] == ["START 480-010 + 17 wagons"]
    lok = tt.train("Lok 1146")
    assert lok.static and lok.start_commands[0].qualifier("pool") == ("Depot",)
    c = tt.train("RE 4507").stops[0].commands[0]
    assert (c.name, c.value, c.qualifier("maxdelay"), c.qualifier("hold")) == (
        "connect",
        "IR 4506",
        ("10",),
        ("3",),
    )


@pytest.mark.parametrize("sep", [",", ";", "\t"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be"])
def test_separators_and_encodings_round_trip(sep, encoding):
    text = SMALL.replace(";", sep)
    tt = make_timetable([r.split(";") for r in SMALL.strip().split("\r\n")], separator=sep, encoding=encoding)
    assert tt.separator == sep and tt.encoding == encoding
    data = timetable_bytes(tt)
    if encoding == "utf-16-le":
        assert data == codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    elif encoding == "utf-16-be":
        assert data == codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    elif encoding == "utf-8-sig":
        assert data == codecs.BOM_UTF8 + text.encode()
    else:
        assert data == text.encode()
    back = parse_timetable(data)
    assert back == tt
    a = back.train("A")
    assert a.stops[0].arrival.seconds == 36600 and a.stops[0].depart.seconds == 36720
    assert [c.name for c in a.stops[0].commands] == ["hold"]  # from the blank column


def test_mixed_line_endings_quotes_and_empty_columns_kept():
    data = (
        b';"A";;\'B\'\r\n#path;" pa ";;pb\n#consist;ca;;cb\r#start;10:00;;"10:05"\r\n'
        b'#comment;;;;\r\nX;"10:10-10:12";;10:20\r\n;;;\r\nY;;;\n'
    )
    tt = parse_timetable(data)
    assert timetable_bytes(tt) == data
    assert [r.eol for r in tt.rows] == ["\r\n", "\n", "\r", "\r\n", "\r\n", "\r\n", "\r\n", "\n"]
    assert [t.name for t in tt.trains] == ["A", "B"]
    a, b = tt.trains
    assert a.path == "pa" and b.start.seconds == 36300
    assert a.stops[0].depart.seconds == 36720 and b.stops[0].depart.seconds == 37200
    assert tt.grid()[0] == ["", "A", "", "B"]


def test_doubled_quotes_inside_a_quoted_cell():
    tt = parse_timetable(b';"A ""x""";\r\n#path;p;\r\n')
    assert tt.trains[0].name == 'A "x"'


def test_edit_one_cell_keeps_the_rest():
    tt = read_timetable(DK24_TT)
    row = next(i for i, r in enumerate(tt.rows) if r.cells[0].text == "#start")
    col = tt.train("IC 801").column
    edited = with_cells(tt, {(row, col): "10:01"})
    assert edited.train("IC 801").start.seconds == 36060
    old, new = timetable_bytes(tt).decode("utf-8-sig"), timetable_bytes(edited).decode("utf-8-sig")
    assert old.replace("#start;10:00;", "#start;10:01;", 1) == new
    with pytest.raises(TimetableError):
        with_cells(tt, {(row, col): "10:01;x"})


def test_timetable_list_round_trip(tmp_path):
    tl = read_timetable_list(SAMPLE_LIST)
    assert tl.name == "Sampleby, all day" and tl.files == ("Sampleby day.timetable-or",)
    assert timetable_list_bytes(tl) == SAMPLE_LIST.read_bytes()
    bad = tmp_path / "x.timetablelist-or"
    bad.write_text("#x\n../../evil.timetable-or\n")
    with pytest.raises(TimetableError, match="own folder"):
        read_timetable_list(bad)


# -- errors: located, with a caret ---------------------------------------------------------


def test_bad_time_is_located_with_a_caret():
    with pytest.raises(TimetableError) as ei:
        parse_timetable(b";A\r\n#start;10:00\r\nX;10:7x\r\n", "t.timetable-or")
    e = ei.value
    assert (e.path, e.line, e.column) == ("t.timetable-or", 3, 3)
    assert "10:7x" in str(e) and "^" in e.snippet
    assert isinstance(e, SourceError)


def test_minutes_out_of_range_and_second_timing():
    with pytest.raises(TimetableError, match="out of range"):
        parse_timetable(b";A\r\nX;10:75\r\n")
    with pytest.raises(TimetableError, match="second timing"):
        parse_timetable(b";A;\r\nX;10:10;10:20\r\n")


def test_bad_command_syntax_is_located():
    with pytest.raises(TimetableError) as ei:
        parse_timetable(b";A\r\n#dispose;$forms=B /=x\r\n")
    assert ei.value.line == 2 and ei.value.column > 2


def test_first_cell_and_separator_rules():
    with pytest.raises(TimetableError, match="must be empty"):
        parse_timetable(b"x;A\r\n")
    with pytest.raises(TimetableError, match="no separator"):
        parse_timetable(b"just text\r\n")


def test_unknown_commands_and_rows_are_findings():
    tt = parse_timetable(b";A\r\n#start;10:00 $teleport\r\n#colour;red\r\nX;10:10 $sing=loud\r\n")
    codes = sorted(f.code for f in tt.findings)
    assert codes == ["TT_UNKNOWN_COMMAND", "TT_UNKNOWN_COMMAND", "TT_UNKNOWN_ROW"]
    f = next(f for f in tt.findings if "sing" in f.message)
    assert f.location.line == 4


def test_lenient_reading_collects_problems():
    diags = Diagnostics(strict=False)
    tt = parse_timetable(b";A;B\r\n#start;10:00;9x9\r\nX;10:10;\r\n", strict=False, diagnostics=diags)
    assert tt.train("A").start.seconds == 36000 and tt.train("B").start is None
    assert [f.code for f in tt.findings] == ["FORMAT"] and tt.findings[0].location.line == 2


def test_duplicate_train_names_are_findings():
    tt = parse_timetable(b";A;A\r\n#start;10:00;10:01\r\n")
    assert [f.code for f in tt.findings] == ["TT_DUPLICATE_TRAIN"]


# -- hostile input ------------------------------------------------------------------------


def test_size_limits(monkeypatch, tmp_path):
    monkeypatch.setattr(ttmod, "MAX_TIMETABLE_BYTES", 100)
    p = tmp_path / "big.timetable-or"
    p.write_bytes(b";A\r\n" + b"X;10:00\r\n" * 50)
    with pytest.raises(TimetableError, match="at most 100"):
        read_timetable(p)
    monkeypatch.setattr(ttmod, "MAX_COLUMNS", 10)
    with pytest.raises(TimetableError, match="more than 10 cells"):
        parse_timetable(b";" * 20 + b"\r\n")
    monkeypatch.setattr(ttmod, "MAX_CELL_CHARS", 50)
    with pytest.raises(TimetableError, match="a cell of"):
        parse_timetable(b";" + b"A" * 60 + b"\r\n")
    monkeypatch.setattr(ttmod, "MAX_ROWS", 5)
    with pytest.raises(TimetableError, match="more than 5 rows"):
        parse_timetable(b";A\r\n" * 10)


def test_undecodable_bytes_and_binary_noise():
    with pytest.raises(SourceError):
        parse_timetable(codecs.BOM_UTF16_LE + b"\x00\xd8;\x00")  # a lone surrogate
    tt = parse_timetable(b";\xe9t\xe9\r\n#start;10:00\r\n")  # cp1252 from a spreadsheet
    assert tt.encoding == "cp1252" and tt.trains[0].name == "été"
    assert timetable_bytes(tt) == b";\xe9t\xe9\r\n#start;10:00\r\n"
