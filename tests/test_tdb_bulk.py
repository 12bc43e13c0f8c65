"""The bulk reader of TrackNodes (formats/tdb.py, grammars/stf_bulk.lark, tdb_nodes.lark)
gives exactly the model, the findings and the errors of the tree path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import DK24_ROUTE, REPO, SAMPLE_ROUTE, needs_dk24, read_tdb_spying

from tdbtools.errors import Diagnostics
from tdbtools.formats import tdb_bulk_nodes as tdb_mod
from tdbtools.formats.tdb import parse_tdb, tdb_from_document
from tdbtools.stf import parse_file, parse_text, prescan
from tdbtools.stf import parser as stf_parser
from tdbtools.stf.source import Source

DATA = REPO / "tests" / "data"
TDB_FILES = sorted(
    p
    for folder in (DATA / "valid", DATA / "invalid", SAMPLE_ROUTE, SAMPLE_ROUTE.parent / "SIGNALS")
    for p in folder.iterdir()
    if p.suffix.lower() in (".tdb", ".rdb")
)


def _read(path: Path, *, bulk: bool, strict: bool, monkeypatch):
    """(model or None, error text or None, findings, whether the bulk reader was used)."""
    return read_tdb_spying(
        path, "read_bulk_nodes", use=bulk, plain=not bulk, strict=strict, monkeypatch=monkeypatch
    )


def _same(path: Path, monkeypatch, strict: bool) -> bool:
    a, ea, fa, used = _read(path, bulk=True, strict=strict, monkeypatch=monkeypatch)
    b, eb, fb, _ = _read(path, bulk=False, strict=strict, monkeypatch=monkeypatch)
    assert ea == eb
    assert fa == fb
    assert (a is None) == (b is None)
    if a is not None:
        assert a == b
        assert a.nodes == b.nodes  # field by field, incl. each node's section rows
        assert a.sections.flag3.tolist() == b.sections.flag3.tolist()
    return used


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("path", TDB_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bulk_reader_gives_the_tree_readers_model(path, strict, monkeypatch):
    _same(path, monkeypatch, strict)


def test_bulk_reader_is_used_on_the_sample_and_utf16_fixtures(monkeypatch):
    # The sample route's files and the UTF-16 + CRLF fixture take the fast path.
    for path in (SAMPLE_ROUTE / "SAMPLE.tdb", SAMPLE_ROUTE / "SAMPLE.rdb", DATA / "valid" / "tiny.tdb"):
        assert _same(path, monkeypatch, True), path


def test_bulk_reader_on_the_realworld_route(tmp_path, monkeypatch):
    sys.path.insert(0, str(DATA))
    import realworld

    route = realworld.make_route(tmp_path)
    tdb = next(route.glob("*.tdb"))
    assert _same(tdb, monkeypatch, True)
    bad = realworld.make_route(tmp_path / "bad", missing_section=True)
    _same(next(bad.glob("*.tdb")), monkeypatch, False)


_GOOD = """SIMISA@@@@@@@@@@JINX0T0t______

TrackDB (
	Serial ( 3 )
	TrackNodes ( 4
		TrackNode ( 1
			TrEndNode ( 0 )
			UiD ( 1 2 3 0 1 2 10.5 0 -20.25 0 3.1 0 )
			TrPins ( 1 0
				TrPin ( 2 1 )
			)
		)
		TrackNode ( 2
			TrVectorNode (
				TrVectorSections ( 2 5 6 1 2 7 0 1 00 1 2 10.5 0 -20.25 0.001 -3 0 5 6 1 2 8 1 0 00 1 2 12 1e-05 -25.5 0 2.5 0 )
				TrItemRefs ( 2
					TrItemRef ( 0 )
					TrItemRef ( 1 )
				)
			)
			TrPins ( 1 1
				TrPin ( 1 1 )
				TrPin ( 3 1 )
			)
		)
		TrackNode ( 3
			TrJunctionNode ( 0 71 0 )
			UiD ( 1 2 4 0 1 2 13 0 -30 0 3.2 0 )
			TrPins ( 1 2
				TrPin ( 2 0 )
				TrPin ( 4 1 )
				TrPin ( 4 0 )
			)
		)
		TrackNode ( 4
			TrVectorNode (
				TrVectorSections ( 1 5 6 1 2 9 0 1 00 1 2 13 0 -30 0 0 0 )
			)
			TrPins ( 1 1
				TrPin ( 3 1 )
				TrPin ( 3 2 )
			)
		)
	)
	TrItemTable ( 2
		SpeedPostItem (
			TrItemId ( 0 )
			TrItemSData ( 10 00000000 )
			SpeedpostTrItemData ( 2 80 0.5 )
		)
		SpeedPostItem (
			TrItemId ( 1 )
			TrItemSData ( 20 00000000 )
			SpeedpostTrItemData ( 2 60 0.5 )
		)
	)
)
"""

# Each variant changes one thing: the bulk reader must either read it exactly as the
# tree path does, or leave it to the tree path (same model, findings and errors).
VARIANTS = {
    "good": ("", ""),
    "lower_case_name": (
        "TrVectorNode (\n\t\t\t\tTrVectorSections ( 1",
        "trvectornode (\n\t\t\t\tTrVectorSections ( 1",
    ),
    "one_line_node": ("TrPins ( 1 2\n\t\t\t\tTrPin ( 2 0 )", "TrPins ( 1 2 TrPin ( 2 0 )"),
    "index_out_of_order": ("TrackNode ( 3", "TrackNode ( 7"),
    "count_too_big": ("TrackNodes ( 4", "TrackNodes ( 5"),
    "ten_digit_link": ("TrPin ( 3 2 )", "TrPin ( 3000000000 2 )"),
    "huge_link": ("TrPin ( 3 2 )", "TrPin ( 99999999999999999999 2 )"),
    "section_count": ("TrVectorSections ( 1 5", "TrVectorSections ( 2 5"),
    "section_word": ("13 0 -30 0 0 0 )", "13 0 -30 abc 0 0 )"),
    "section_nan": ("13 0 -30 0 0 0 )", "13 0 -30 nan 0 0 )"),
    "section_hex": ("13 0 -30 0 0 0 )", "13 0 -30 0x10 0 0 )"),
    "flag3_text": ("9 0 1 00 1 2", "9 0 1 0a 1 2"),
    "flag3_number": ("9 0 1 00 1 2", "9 0 1 07 1 2"),
    "tile_too_big": ("9 0 1 00 1 2 13", "9 0 1 00 1 2000000 13"),
    "angle_too_big": ("13 0 -30 0 0 0 )", "13 0 -30 0 9 0 )"),
    "fractional_count": ("TrVectorSections ( 1 5", "TrVectorSections ( 1.6 5"),
    "fractional_id": ("TrVectorSections ( 1 5 6", "TrVectorSections ( 1 5.5 6"),
    "empty_sections": ("TrVectorSections ( 1 5 6 1 2 9 0 1 00 1 2 13 0 -30 0 0 0 )", "TrVectorSections ( )"),
    "refs_count": ("TrItemRefs ( 2", "TrItemRefs ( 3"),
    "uid_inf": ("10.5 0 -20.25 0 3.1 0 )", "10.5 0 -20.25 0 inf 0 )"),
    "uid_word": ("10.5 0 -20.25 0 3.1 0 )", "10.5 0 -20.25 0 x 0 )"),
    "uid_short": ("UiD ( 1 2 4 0 1 2 13 0 -30 0 3.2 0 )", "UiD ( 1 2 4 0 1 2 13 0 -30 0 3.2 )"),
    "junction_shape_word": ("TrJunctionNode ( 0 71 0 )", "TrJunctionNode ( 0 x 0 )"),
    "junction_one_value": ("TrJunctionNode ( 0 71 0 )", "TrJunctionNode ( 0 )"),
    "end_two_pins": (
        "TrPins ( 1 0\n\t\t\t\tTrPin ( 2 1 )",
        "TrPins ( 1 1\n\t\t\t\tTrPin ( 2 1 ) TrPin ( 2 0 )",
    ),
    "vector_three_pins": (
        "TrPins ( 1 1\n\t\t\t\tTrPin ( 3 1 )",
        "TrPins ( 1 2\n\t\t\t\tTrPin ( 3 1 ) TrPin ( 3 0 )",
    ),
    "vector_extra_pin": ("TrPin ( 3 2 )", "TrPin ( 3 2 ) TrPin ( 3 2 )"),
    "junction_extra_pin": ("TrPin ( 4 0 )", "TrPin ( 4 0 )\n\t\t\t\tTrPin ( 1 0 )"),
    "end_extra_pin": ("TrPin ( 2 1 )", "TrPin ( 2 1 ) TrPin ( 2 1 )"),
    "extra_ref": ("TrItemRef ( 1 )", "TrItemRef ( 1 ) TrItemRef ( 1 )"),
    "uid_extra_value": ("3.1 0 )", "3.1 0 0 )"),
    "junction_extra_uid_value": ("13 0 -30 0 3.2 0 )", "13 0 -30 0 3.2 0 7 )"),
    "stray_value": ("TrackNode ( 4", "x TrackNode ( 4"),
    "unknown_block": ("TrackNode ( 4", "Extra ( 1 ) TrackNode ( 4"),
    "comment_block": ("TrackNode ( 4", "_note ( 1 ) TrackNode ( 4"),
    "unicode_word": ("TrJunctionNode ( 0 71 0 )", "TrJunctionNode ( 0 71 é )"),
    "tab_separated": ("TrVectorSections ( 1 5 6", "TrVectorSections (\t1\t5\t6"),
    "two_tables": ("\tTrItemTable ( 2", "\tTrackNodes ( 0 )\n\tTrItemTable ( 2"),
}


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_bulk_reader_on_defects(name, strict, compiled, tmp_path, monkeypatch):
    """Each defect read by the bulk reader gives the tree path's model and findings,
    with numpy's number reader and with the compiled one (threshold 0: the counts
    checked on the compiled reader's values)."""
    if compiled:
        monkeypatch.setattr(tdb_mod, "NUMBERS_COMPILED_MIN_CHARS", 0)
    old, new = VARIANTS[name]
    text = _GOOD.replace(old, new, 1) if old else _GOOD
    assert text != _GOOD or name == "good"
    for enc, newline in (("utf-8", "\n"), ("utf-16", "\r\n")):
        path = tmp_path / f"{name}-{enc}.tdb"
        path.write_bytes(text.replace("\n", newline).encode(enc))
        used = _same(path, monkeypatch, strict)
        if name in ("good", "one_line_node", "tab_separated", "lower_case_name"):
            assert used == (name != "lower_case_name")


def test_bulk_grammar_gives_the_same_tree():
    text = _GOOD.replace("TrackNodes ( 4", "Extra ( trackNodes ( 1 ) ) TrackNodes ( 4", 1)
    head, _, body = _GOOD.partition("\n")
    for t in (_GOOD, text, head + "\n" + body.replace("\n", " ")):
        plain = parse_text(t)
        src = Source("<bulk>", t, "str")
        bulk = stf_parser.parse_source(src, bulk=True)
        assert bulk.find("TrackDB").find("TrackNodes").raw() is not None  # kept raw ...
        assert bulk == plain  # ... and split on demand


def _data_regex():
    import re

    lark = stf_parser._POOL.bulk
    return re.compile(next(t for t in lark.terminals if t.name.endswith("DATA")).pattern.to_regexp())


def test_table_run_end_is_where_the_lexers_regex_ends():
    # The lexer takes a table's content without its regex where _table_run_end knows the
    # end: it must be the regex's own end on every fixture and defect variant.
    data = _data_regex()
    texts = [_GOOD.replace(old, new, 1) if old else _GOOD for old, new in VARIANTS.values()]
    texts += [p.read_text("utf-8", errors="replace") for p in TDB_FILES if p.read_bytes()[:2] != b"\xff\xfe"]
    texts.append(_GOOD.replace("TrackNodes ( 4", 'TrackNodes ( 4 " "', 1))
    texts.append(_GOOD.replace("TrackNodes ( 4", "TrackNodes (4", 1).replace("\n", " "))
    hinted = 0
    for text in texts:
        blank = prescan._blank_first_line(text)
        for pos, end in stf_parser._table_run_hints(blank, "tdb").items():
            m = data.match(blank, pos)
            assert m is not None and m.end() == end
            hinted += 1
        i = blank.find("TrackNodes")
        if i >= 0:  # where no end is given, the walk must not have claimed one
            pos = stf_parser._TABLE_OPEN.match(blank, i + 10).end()
            got = tdb_mod._table_run_end(blank, pos)
            assert got is None or got == data.match(blank, pos).end()
    assert hinted >= len(VARIANTS) // 2  # the fast path is taken on most of them


def test_bulk_table_is_a_span_of_the_source_text_not_a_copy():
    # A 200 MB table held as a second string was ~190 MB of the cold load's peak.
    src = Source("<bulk>", _GOOD, "str")
    table = stf_parser.parse_source(src, bulk=True).find("TrackDB").find("TrackNodes")
    span = table.raw_span()
    assert span is not None and span[0] is src.text
    text, start, end = span
    raw = table.raw()
    assert raw == (text[start:end], start)
    assert raw[0].lstrip().startswith("4") and raw[0].rstrip().endswith(")")
    items = parse_text(_GOOD).find("TrackDB").find("TrackNodes").items
    assert table.items == items and table.raw_span() is None  # split on demand, as before


@needs_dk24
@pytest.mark.parametrize("name", ["DK24.tdb", "DK24.rdb"])
def test_bulk_reader_on_dk24(name, monkeypatch):
    path = DK24_ROUTE / name
    assert _same(path, monkeypatch, True)
    assert parse_tdb(path, Diagnostics()) == parse_file(path)


def test_one_node_walk_serves_the_bulk_reader_and_the_lexer_hook():
    # read_bulk_nodes and _table_run_end walked the nodes with two copies of one loop;
    # scan_track_nodes is that walk: its kinds are the model's nodes, its end the run's.
    blank = prescan._blank_first_line(_GOOD)
    pos = stf_parser._TABLE_OPEN.match(blank, blank.find("TrackNodes") + 10).end()
    after_count = tdb_mod._patterns().count.match(blank, pos).end()
    walk = list(tdb_mod.scan_track_nodes(blank, after_count))
    kinds = {tdb_mod.VECTOR_NODE: "vector", tdb_mod.JUNCTION_NODE: "junction", tdb_mod.END_NODE: "end"}
    db = tdb_from_document(parse_text(_GOOD), Diagnostics())
    assert [kinds[k] for k, *_ in walk] == [n.kind for n in db.nodes[1:]]
    k, m, tail, _a, _b = walk[-1]
    assert tdb_mod._table_run_end(blank, pos) == (tail or m).end()
    bad = blank[:after_count] + blank[after_count:].replace("TrVectorSections ( ", "TrVectorSections ( (", 1)
    assert [k for k, *_ in tdb_mod.scan_track_nodes(bad, after_count)][-1] == tdb_mod.BAD_NODE
    assert tdb_mod._table_run_end(bad, pos) is None
