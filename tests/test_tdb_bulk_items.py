"""The bulk reader of the TrItemTable (formats/tdb.py read_bulk_items, grammars/tdb_items.lark,
the lexer hook of stf/parser.py) gives exactly the items, findings and errors of the tree path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import DK24_ROUTE, REPO, SAMPLE_ROUTE, needs_dk24, read_tdb_spying

from tdbtools.errors import Diagnostics, TdbToolsError
from tdbtools.formats import tdb_bulk_items as tdb_mod
from tdbtools.formats.tdb import parse_tdb, tdb_from_document
from tdbtools.stf import parse_file, parse_text, prescan
from tdbtools.stf import parser as stf_parser
from tdbtools.stf.source import Source
from tdbtools.stf.tree import Block

DATA = REPO / "tests" / "data"
TDB_FILES = sorted(
    p
    for folder in (DATA / "valid", DATA / "invalid", SAMPLE_ROUTE, SAMPLE_ROUTE.parent / "SIGNALS")
    for p in folder.iterdir()
    # (deep_nesting.tdb has no item table; its nesting is the STF parser's test)
    if p.suffix.lower() in (".tdb", ".rdb") and p.name != "deep_nesting.tdb"
)
#: tiny.tdb: one item of every type, platforms and sidings with quoted names.
GOOD = (DATA / "valid" / "tiny.tdb").read_bytes().decode("utf-16").replace("\r\n", "\n")


def _read(path: Path, mode: str, strict: bool, monkeypatch):
    """(model or None, error, findings, whether the bulk item reader gave the items).
    ``mode``: "bulk" (bulk parse and reader), "raw-tree" (bulk parse, the tree path for
    the items: the raw table split on demand), "plain" (no bulk parse)."""
    return read_tdb_spying(
        path,
        "read_bulk_items",
        use=mode == "bulk",
        plain=mode == "plain",
        strict=strict,
        monkeypatch=monkeypatch,
    )


def _same(path: Path, monkeypatch, strict: bool) -> bool:
    a, ea, fa, used = _read(path, "bulk", strict, monkeypatch)
    for mode in ("raw-tree", "plain"):
        b, eb, fb, _ = _read(path, mode, strict, monkeypatch)
        assert ea == eb, mode
        assert fa == fb, mode
        assert (a is None) == (b is None), mode
        if a is not None:
            assert a == b, mode
            assert a.items == b.items, mode  # field by field
            assert [type(i) for i in a.items] == [type(i) for i in b.items]
    return used


def _positions(blk: Block) -> list:
    """Every block's name, offset and item count, depth first (Block == ignores offsets)."""
    out = []
    stack = [blk]
    while stack:
        b = stack.pop()
        out.append((b.key, b.pos, len(b.items)))
        stack.extend(reversed([i for i in b.items if i.__class__ is Block]))
    return out


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("path", TDB_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bulk_items_give_the_tree_readers_model(path, strict, monkeypatch):
    _same(path, monkeypatch, strict)


def test_bulk_items_are_used_on_the_sample_and_utf16_fixtures(monkeypatch):
    for path in (
        SAMPLE_ROUTE / "SAMPLE.tdb",
        SAMPLE_ROUTE.parent / "SIGNALS" / "SIGNALS.tdb",
        DATA / "valid" / "tiny.tdb",
    ):
        assert _same(path, monkeypatch, True), path


_ITEMS = "\tTrItemTable ( 17\n"
# Each variant changes one thing in tiny.tdb's item table: the bulk reader must either
# read it exactly as the tree path does, or leave it to the tree path. The last value
# says whether the bulk reader takes it (None: not checked).
VARIANTS: dict[str, tuple[str, str, bool | None]] = {
    "good": ("", "", True),
    "count_too_big": ("TrItemTable ( 17", "TrItemTable ( 18", False),
    "count_too_small": ("TrItemTable ( 17", "TrItemTable ( 3", False),
    "count_word": ("TrItemTable ( 17", "TrItemTable ( x17", False),
    "count_ten_digits": ("TrItemTable ( 17", "TrItemTable ( 0000000017", False),
    "no_count": ("TrItemTable ( 17", "TrItemTable (", False),
    "unknown_item": ("\t\tEmptyItem (", "\t\tFooItem ( TrItemId ( 9 ) )\n\t\tEmptyItem (", False),
    "lower_case_item": ("\t\tHazzardItem (", "\t\thazzardItem (", False),
    "lower_case_block": ("TrSignalType ( 00000001", "trSignalType ( 00000001", False),
    "unknown_block": ("\t\t\tTrItemId ( 15 )", "\t\t\tTrItemId ( 15 )\n\t\t\tExtra ( 1 )", False),
    "foreign_block": ("\t\t\tTrItemId ( 15 )", "\t\t\tTrItemId ( 15 )\n\t\t\tTrItemSRData ( 1 2 3 )", False),
    "comment_block": ("\t\t\tTrItemId ( 15 )", "\t\t\tTrItemId ( 15 )\n\t\t\t_note ( 1 )", False),
    "comment_item": ("\t\tEmptyItem (", "\t\t_note ( 1 )\n\t\tEmptyItem (", False),
    "stray_value_in_item": ("\t\t\tTrItemId ( 15 )", "\t\t\tTrItemId ( 15 ) x", False),
    "stray_value_in_table": ("\t\tEmptyItem (", "\t\tx EmptyItem (", False),
    # (the head's blocks in any order, a repeated one keeping its last: as the tree path)
    "repeated_block": ("\t\t\tTrItemId ( 15 )", "\t\t\tTrItemId ( 15 )\n\t\t\tTrItemId ( 3 )", True),
    "swapped_blocks": (
        "\t\t\tTrItemSData ( 18 00000002 )\n\t\t\tTrItemRData ( 218.5 42 -306.75 -5631 15116 )",
        "\t\t\tTrItemRData ( 218.5 42 -306.75 -5631 15116 )\n\t\t\tTrItemSData ( 18 00000002 )",
        True,
    ),
    "id_not_position": ("TrItemId ( 15 )", "TrItemId ( 4000 )", True),
    "id_ten_digits": ("TrItemId ( 15 )", "TrItemId ( 4294967296 )", False),
    "id_negative": ("TrItemId ( 15 )", "TrItemId ( -1 )", False),
    "id_quoted": ("TrItemId ( 15 )", 'TrItemId ( "15" )', False),
    "id_two_values": ("TrItemId ( 15 )", "TrItemId ( 15 16 )", False),
    "id_empty": ("TrItemId ( 15 )", "TrItemId ( )", False),
    "sdata_missing_flags": ("TrItemSData ( 18 00000002 )", "TrItemSData ( 18 )", False),
    "sdata_comma": ("TrItemSData ( 18 00000002 )", "TrItemSData ( 18, 00000002 )", False),
    "sdata_thousands": ("TrItemSData ( 18 00000002 )", "TrItemSData ( 1,800 00000002 )", False),
    "sdata_plus": ("TrItemSData ( 18 00000002 )", "TrItemSData ( +18 00000002 )", False),
    "sdata_underscore": ("TrItemSData ( 18 00000002 )", "TrItemSData ( 1_8 00000002 )", False),
    "sdata_exponent": ("TrItemSData ( 18 00000002 )", "TrItemSData ( 1.8E+01 00000002 )", True),
    "sdata_point_first": ("TrItemSData ( 18 00000002 )", "TrItemSData ( .5 00000002 )", True),
    "sdata_point_last": ("TrItemSData ( 18 00000002 )", "TrItemSData ( -5. 00000002 )", True),
    "sdata_inf": ("TrItemSData ( 18 00000002 )", "TrItemSData ( 1e999 00000002 )", False),
    "sdata_long": ("TrItemSData ( 18 00000002 )", "TrItemSData ( " + "9" * 400 + " 00000002 )", False),
    "sdata_nan": ("TrItemSData ( 18 00000002 )", "TrItemSData ( nan 00000002 )", False),
    "sdata_fullwidth": ("TrItemSData ( 18 00000002 )", "TrItemSData ( \uff11\uff18 00000002 )", False),
    "rdata_word": ("( 218.5 42 -306.75 -5631 15116 )", "( 218.5 x -306.75 -5631 15116 )", False),
    "rdata_big_tile": ("( 218.5 42 -306.75 -5631 15116 )", "( 218.5 42 -306.75 -5631 5000000000 )", False),
    "rdata_float_tile": ("( 218.5 42 -306.75 -5631 15116 )", "( 218.5 42 -306.75 -5631 15116.5 )", False),
    "rdata_short": ("( 218.5 42 -306.75 -5631 15116 )", "( 218.5 42 -306.75 -5631 )", False),
    "pdata": (
        "TrItemPData ( 214.5 -307.25 -5631 15116 )",
        "TrItemPData ( 214.5 -307.25 -5631 -15116 )",
        True,
    ),
    "pdata_after_rdata": (
        "\t\t\tTrItemPData ( 214.5 -307.25 -5631 15116 )\n\t\t\tTrItemRData ( 214.5 42 -307.25 -5631 15116 )",
        "\t\t\tTrItemRData ( 214.5 42 -307.25 -5631 15116 )\n\t\t\tTrItemPData ( 214.5 -307.25 -5631 15116 )",
        True,
    ),
    "id_last": (
        "\t\t\tTrItemId ( 15 )\n\t\t\tTrItemSData ( 18 00000002 )",
        "\t\t\tTrItemSData ( 18 00000002 )\n\t\t\tTrItemId ( 15 )",
        True,
    ),
    "rdata_twice_around_pdata": (
        "\t\t\tTrItemPData ( 214.5 -307.25 -5631 15116 )\n\t\t\tTrItemRData ( 214.5 42 -307.25 -5631 15116 )",
        "\t\t\tTrItemRData ( 1 2 3 4 5 )\n\t\t\tTrItemPData ( 214.5 -307.25 -5631 15116 )"
        "\n\t\t\tTrItemRData ( 214.5 42 -307.25 -5631 15116 )",
        True,
    ),
    "type_block_before_head_block": (
        "TrItemId ( 15 )\n",
        "TrItemId ( 15 )\n\t\t\tTrItemSRData ( 1 2 3 )\n",
        False,
    ),
    "signal_dirs_count": ("TrSignalDirs ( 1", "TrSignalDirs ( 2", False),
    "signal_dirs_two": ("TrSignalDir ( 3 1 0 0 )", "TrSignalDir ( 3 1 0 0 ) TrSignalDir ( 2 0 1 0 )", None),
    "signal_dirs_stray": ("TrSignalDir ( 3 1 0 0 )", "TrSignalDir ( 3 1 0 0 ) x", False),
    "signal_dir_short": ("TrSignalDir ( 3 1 0 0 )", "TrSignalDir ( 3 1 0 )", False),
    "signal_type_quoted": ("-1.75 DK3Ind )", '-1.75 "DK3Ind" )', False),
    "signal_type_short": ("( 00000001 1 -1.75 DK3Ind )", "( 00000001 1 -1.75 )", False),
    "signal_type_negative_dir": ("( 00000001 1 -1.75 DK3Ind )", "( 00000001 -1 -1.75 DK3Ind )", False),
    "speedpost_missing_angle": ("SpeedpostTrItemData ( 2 80 1.5 )", "SpeedpostTrItemData ( 2 80 )", False),
    "speedpost_extra": ("SpeedpostTrItemData ( 2 80 1.5 )", "SpeedpostTrItemData ( 2 80 1.5 7 )", False),
    "speedpost_resume": ("SpeedpostTrItemData ( 2 80 1.5 )", "SpeedpostTrItemData ( 3 1.5 )", True),
    "speedpost_resume_with_value": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 3 80 1.5 )",
        False,
    ),
    "speedpost_number_missing": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 18 80 1.5 )",
        False,
    ),
    "speedpost_number": ("SpeedpostTrItemData ( 2 80 1.5 )", "SpeedpostTrItemData ( 18 80 -7 1.5 )", True),
    "speedpost_number_float": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 18 80 7.5 1.5 )",
        False,
    ),
    "speedpost_flags_float": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 2.0 80 1.5 )",
        False,
    ),
    "speedpost_flags_huge": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 99999999999 80 1.5 )",
        False,
    ),
    "speedpost_flags_negative": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( -2 80 1.5 )",
        False,
    ),
    "speedpost_word": ("SpeedpostTrItemData ( 2 80 1.5 )", "SpeedpostTrItemData ( 2 x 1.5 )", False),
    "speedpost_empty": ("SpeedpostTrItemData ( 2 80 1.5 )", "SpeedpostTrItemData ( )", False),
    "speedpost_milepost_mph": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 256 12.7 40 )",
        True,
    ),
    "speedpost_milepost_decimal": (
        "SpeedpostTrItemData ( 2 80 1.5 )",
        "SpeedpostTrItemData ( 512 12.7 40 )",
        True,
    ),
    "platform_name_plain": ('PlatformName ( "Sampleby, Spor 1" )', "PlatformName ( Spor1 )", True),
    "platform_name_empty": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "" )', True),
    "platform_name_parens": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor (1) )(" )', True),
    "platform_name_newline": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor\n1" )', True),
    "platform_name_escape": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor \\"1\\"" )', False),
    "platform_name_backslash": ('PlatformName ( "Sampleby, Spor 1" )', "PlatformName ( Spor\\1 )", False),
    "platform_name_joined": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor" + " 1" )', False),
    "platform_name_plus": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor 1" + )', False),
    "platform_name_two": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor" "1" )', False),
    "platform_name_glued": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( Spor"1" )', False),
    "platform_name_unterminated": (
        'Station ( "Sampleby" )\n\t\t\tPlatformMin',
        'Station ( "Sampleby )\n\t\t\tPlatformMin',
        False,
    ),
    "platform_name_include": (
        'PlatformName ( "Sampleby, Spor 1" )',
        'PlatformName ( "Spor include ( x )" )',
        None,
    ),
    "platform_name_comment": ('PlatformName ( "Sampleby, Spor 1" )', 'PlatformName ( "Spor #1" )', None),
    "platform_no_station": ('\t\t\tStation ( "Sampleby" )\n', "", True),
    "platform_waiting_word": ("PlatformMinWaitingTime ( 60 )", "PlatformMinWaitingTime ( 1m )", False),
    "siding_name_plain": ('SidingName ( "Sampleby Sidespor" )', "SidingName ( Sidespor )", True),
    "siding_flags_missing": ("SidingTrItemData ( 00000000 10 )", "SidingTrItemData ( 10 )", False),
    "soundregion_float": ("TrItemSRData ( 1 2 3.5 )", "TrItemSRData ( 1 2.5 3.5 )", False),
    "crossover_short": ("CrossoverTrItemData ( 5 71 )", "CrossoverTrItemData ( 5 )", False),
    "empty_item_bare": ("\t\tEmptyItem (\n\t\t\tTrItemId ( 16 )\n\t\t)", "\t\tEmptyItem ( )", True),
    "one_line": (
        "\t\tCrossoverItem (\n\t\t\tTrItemId ( 11 )\n\t\t\tTrItemSData ( 10 00000002 )",
        "\t\tCrossoverItem(TrItemId(11)TrItemSData(10 00000002)",
        None,
    ),
    "no_space_between_items": ("\t\t)\n\t\tEmptyItem (", "\t\t)EmptyItem (", False),
    "tabs_only": (
        "TrItemRData ( 216.5 42 -307 -5631 15116 )",
        "TrItemRData\t(\t216.5\t42\t-307\t-5631\t15116\t)",
        True,
    ),
    "stray_paren": ("\t\tEmptyItem (", "\t\t)\n\t\tEmptyItem (", False),
    "unclosed_item": (
        "\t\tEmptyItem (\n\t\t\tTrItemId ( 16 )\n\t\t)",
        "\t\tEmptyItem (\n\t\t\tTrItemId ( 16 )",
        False,
    ),
    "two_tables": ("\tTrItemTable ( 17", "\tTrItemTable ( 1 EmptyItem ( ) )\n\tTrItemTable ( 17", True),
    "empty_table": ("", "", None),  # replaced below
    "table_glued_name": (
        "\tTrItemTable ( 17",
        "\txTrItemTable ( 1 EmptyItem ( ) )\n\tTrItemTable ( 17",
        True,
    ),
    "table_in_comment": (
        "\tTrItemTable ( 17",
        "\t_x ( TrItemTable ( 1 EmptyItem ( ) ) )\n\tTrItemTable ( 17",
        True,
    ),
    "stray_paren_after_table": ("\t)\n)\n", "\t)\n)\n)\n", None),  # (an error when strict)
    "unclosed_file": ("\t)\n)\n", "\t)\n", None),
    "error_after_table": ("\t)\n)\n", '\t)\n\tx"\n)\n', None),
    "unicode_space": ("TrItemId ( 15 )", "TrItemId (\u00a015 )", False),
    "control_character": ("TrItemId ( 15 )", "TrItemId (\x0315 )", False),
}


def _variant(name: str) -> str:
    if name == "empty_table":
        start = GOOD.index(_ITEMS)
        return GOOD[:start] + "\tTrItemTable ( 0 )\n)\n"
    old, new, _ = VARIANTS[name]
    text = GOOD.replace(old, new, 1) if old else GOOD
    assert text != GOOD or name == "good", name
    return text


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_bulk_items_on_defects(name, strict, tmp_path, monkeypatch):
    text = _variant(name)
    for enc, newline in (("utf-8", "\n"), ("utf-16", "\r\n")):
        path = tmp_path / f"{name}-{enc}.tdb"
        path.write_bytes(text.replace("\n", newline).encode(enc))
        used = _same(path, monkeypatch, strict)
        expect = VARIANTS[name][2]
        if expect is not None and strict:
            assert used == expect, (name, enc)


def test_bulk_items_when_a_stray_paren_follows_the_table(tmp_path, monkeypatch):
    # Lenient: the stray ")" is reported and skipped; the table is still read in bulk.
    path = tmp_path / "stray.tdb"
    path.write_bytes(_variant("stray_paren_after_table").encode("utf-8"))
    assert _same(path, monkeypatch, False)


def test_item_table_is_kept_raw_and_split_on_demand():
    # With quoted names: the lexer's one token for the table, kept as a span of the source.
    for text in (GOOD, _variant("platform_name_parens"), _variant("platform_name_newline")):
        src = Source("<bulk>", text, "str")
        doc = stf_parser.parse_source(src, bulk=True)
        table = doc.find("TrackDB").find("TrItemTable")
        span = table.raw_span()
        assert span is not None and span[0] is src.text and '"' in span[0][span[1] : span[2]]
        assert table.leaf_view() != [] and table.values_text is None  # never the raw text
        plain = parse_text(text)
        assert doc == plain
        assert _positions(doc) == _positions(plain)  # same offsets: same error locations


def _data_regex():
    lark = stf_parser._POOL.bulk
    return re.compile(next(t for t in lark.terminals if t.name.endswith("DATA")).pattern.to_regexp())


def test_item_table_run_end():
    # Without a quote, the run is the lexer regex's own; with one, the whole content.
    data = _data_regex()
    texts = [_variant(n) for n in VARIANTS]
    texts.append(
        GOOD.replace('"', "").replace("Sampleby, Spor 1", "Spor1").replace("Sampleby Sidespor", "Side")
    )
    texts += [p.read_text("utf-8", errors="replace") for p in TDB_FILES if p.read_bytes()[:2] != b"\xff\xfe"]
    quoted = plain = 0
    for text in texts:
        blank = prescan._blank_first_line(text)
        for pos, end in stf_parser._table_run_hints(blank, "tdb").items():
            if blank.rfind("TrItemTable", 0, pos) < blank.rfind("TrackNodes", 0, pos):
                continue  # a TrackNodes table (test_tdb_bulk.py)
            m = data.match(blank, pos)
            if '"' in blank[pos:end]:
                quoted += 1
                assert m is None or m.end() < end
                assert tdb_mod._RUN_CLOSE.match(blank, end) is not None
            else:
                plain += 1
                assert m is not None and m.end() == end
    assert quoted >= len(VARIANTS) // 3 and plain >= 2


def test_item_walk_refuses_what_the_reader_refuses():
    # The walk for the lexer accepts exactly the shapes the reader matches (values aside).
    for name in VARIANTS:
        blank = prescan._blank_first_line(_variant(name))
        i = blank.rfind("TrItemTable (")
        pos = stf_parser._TABLE_OPEN.match(blank, i + 11).end()
        end = tdb_mod._item_table_run_end(blank, pos)
        doc = parse_tdb_text(_variant(name))
        if doc is None:
            continue  # (a stray ")" in the table ends it where the walk ends it too)
        table = [b for b in doc.find("TrackDB").blocks("TrItemTable")][-1]
        if end is None:
            assert tdb_mod.read_bulk_items(table) is None, name


def parse_tdb_text(text: str):
    try:
        return stf_parser.parse_source(Source("<t>", text, "str"), bulk=True)
    except TdbToolsError:
        return None


def test_items_of_a_quoted_run_are_made_only_when_asked_for(monkeypatch):
    calls = []
    real = stf_parser.split_quoted

    def spy(*args):  # noqa: ANN002, ANN202
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr(stf_parser, "split_quoted", spy)
    monkeypatch.setattr("tdbtools.stf.tree.QUOTED_SPLIT", [spy])
    db = tdb_from_document(parse_tdb_doc(GOOD), Diagnostics())
    assert len(db.items) == 17 and calls == []  # the bulk reader read the raw text
    assert db.items[7].platform_name == "Sampleby, Spor 1" and db.items[9].siding_name == "Sampleby Sidespor"


def parse_tdb_doc(text: str):
    return stf_parser.parse_source(Source("<t>", text, "str"), bulk=True)


@needs_dk24
def test_bulk_items_on_dk24(monkeypatch):
    path = DK24_ROUTE / "DK24.tdb"
    assert _same(path, monkeypatch, True)
    doc = parse_tdb(path, Diagnostics())
    assert doc.find("TrackDB").find("TrItemTable").raw_span() is not None
    plain = parse_file(path)
    assert doc == plain and _positions(doc) == _positions(plain)


def test_the_lexers_walk_gives_the_reader_its_items(monkeypatch):
    walks = []
    real = tdb_mod._walk_items

    def spy(*args):  # noqa: ANN002, ANN202
        walks.append(args[1])
        return real(*args)

    monkeypatch.setattr(tdb_mod, "_walk_items", spy)
    doc = parse_tdb_doc(GOOD)
    assert len(walks) == 1  # the lexer's pre-pass
    table = doc.find("TrackDB").find("TrItemTable")
    items = tdb_mod.read_bulk_items(table)
    assert len(walks) == 1 and items is not None and len(items) == 17  # ... reused once
    assert tdb_mod.read_bulk_items(table) == items and len(walks) == 2  # then walked anew
    # Another text at the same offsets is walked anew.
    other = GOOD.replace("TrItemId ( 15 )", "TrItemId ( 51 )")
    parse_tdb_doc(GOOD)
    table = parse_tdb_doc(other).find("TrackDB").find("TrItemTable")
    parse_tdb_doc(GOOD)  # (the last walk is GOOD's)
    assert tdb_mod.read_bulk_items(table)[15].item_id == 51


def _mutants(n: int, seed: int) -> list[str]:
    """Random one-character edits of tiny.tdb's item table."""
    import random

    rng = random.Random(seed)
    start = GOOD.index(_ITEMS) + len("\tTrItemTable (")
    end = GOOD.rindex("\t)")
    pieces = ["(", ")", '"', "\\", "+", ",", "x", "1", "9", "e", "-", ".", " ", "\n", "_", "#", "\u00e9", "0"]
    out = []
    for _ in range(n):
        at = rng.randrange(start, end)
        op = rng.randrange(3)
        if op == 0:
            text = GOOD[:at] + GOOD[at + 1 :]
        elif op == 1:
            text = GOOD[:at] + rng.choice(pieces) + GOOD[at:]
        else:
            text = GOOD[:at] + rng.choice(pieces) + GOOD[at + 1 :]
        out.append(text)
    return out


@pytest.mark.parametrize("strict", [True, False])
def test_bulk_items_on_random_edits(strict, tmp_path, monkeypatch):
    for i, text in enumerate(_mutants(40, 7)):
        path = tmp_path / f"m{i}.tdb"
        path.write_bytes(text.encode("utf-8"))
        _same(path, monkeypatch, strict)
