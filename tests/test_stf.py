"""The STF layer: decoding, the Lark grammar and tree builder, includes, errors, the writer."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from helpers import DK24, force_full_grammar, needs_dk24
from hypothesis import given, settings
from hypothesis import strategies as st

from tdbtools.errors import DecodeError, IncludeError, StfSyntaxError, TdbToolsError
from tdbtools.stf import Block, QStr, decode_bytes, parse_file, parse_text, prescan
from tdbtools.stf.writer import format_stf, write_text_atomic

SIG = "SIMISA@@@@@@@@@@JINX0T0t______"


def items(text: str) -> list:
    return parse_text(f"{SIG}\n{text}\n").to_json()["items"]


def both_grammars(text: str, monkeypatch) -> tuple:
    """Parse with the grammar the prescan picks, and forced onto the full grammar."""
    a = parse_text(f"{SIG}\n{text}\n")
    full = force_full_grammar(monkeypatch)
    b = parse_text(f"{SIG}\n{text}\n")
    assert full, "the full grammar was not used"
    monkeypatch.undo()
    return a, b


# -- the grammar ------------------------------------------------------------------------


def test_blocks_values_and_nesting():
    assert items("A ( 1 2 B ( x ) 3 ) C ( )") == [
        {"name": "A", "items": ["1", "2", {"name": "B", "items": ["x"]}, "3"]},
        {"name": "C", "items": []},
    ]


def test_parentheses_need_no_spaces():
    assert items("Mass(100)Size( 1 2 )") == [
        {"name": "Mass", "items": ["100"]},
        {"name": "Size", "items": ["1", "2"]},
    ]


def test_words_keep_plus_minus_dot():
    assert items("EngineData ( SNCF_TGV-IZI+4551 a.b -1.5e-3 )")[0]["items"] == [
        "SNCF_TGV-IZI+4551",
        "a.b",
        "-1.5e-3",
    ]


def test_quoted_strings_escapes_and_joining():
    got = items(r'Name ( "a \"q\" b\n\tc" ) D ( "ab" + "cd"   +  "e" )')
    assert got[0]["items"] == [{"quoted": 'a "q" b\n\tc'}]
    assert got[1]["items"] == [{"quoted": "abcde"}]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A ( #x 1 2 )", ["2"]),  # a marker drops exactly one item
        ("A ( _x 1 2 )", ["2"]),
        ("A ( comment 1 2 )", ["2"]),
        ("A ( SKIP 1 2 )", ["2"]),
        ("A ( 1 #x ( 2 3 ) 4 )", ["1", "4"]),  # ... or one block
        ("A ( 1 _INFO ( x y ) 4 )", ["1", "4"]),
        ('A ( 1 _Skip ( x ( y ) "s" ) 4 )', ["1", "4"]),
        ("A ( 1 comment ( x ) 4 )", ["1", "4"]),
        ("A ( #note B ( 2 ) 3 )", ["3"]),  # a named block after a marker goes whole
        ('A ( 1 #x "str" 2 )', ["1", "2"]),
        ("A ( 1 2 #x )", ["1", "2"]),  # a marker with nothing after it
    ],
)
def test_comments_drop_the_next_item(text, expected, monkeypatch):
    a, b = both_grammars(text, monkeypatch)
    assert a == b
    assert a.to_json()["items"][0]["items"] == expected


def test_comment_is_not_a_line_comment():
    assert items("#note foo bar") == ["bar"]


def test_block_names_compare_case_insensitively():
    doc = parse_text(f"{SIG}\nTrackDB ( TRACKNODES ( 1 ) )\n")
    assert doc.find("trackdb").find("TrackNodes").items == ["1"]
    assert doc.find("TRACKDB").key == "trackdb"


def test_first_line_is_the_signature_and_is_dropped():
    doc = parse_text("A ( 1 )\nB ( 2 )\n")
    assert [b.name for b in doc.blocks()] == ["B"]
    assert doc.signature == "A ( 1 )"


def test_fast_and_full_grammar_agree_on_a_mixed_text(monkeypatch):
    text = (
        "TrackDB ( Serial ( 0 ) TrackNodes ( 2 TrackNode ( 1 TrVectorNode ( TrVectorSections ( 1 "
        "1 2 3 4 5 0 1 00 6 7 1.5 2.5 3.5 0.1 0.2 0 ) ) TrPins ( 1 1 TrPin ( 2 1 ) TrPin ( 2 0 ) ) ) "
        "TrackNode ( 2 TrEndNode ( 0 ) UiD ( 1 2 3 4 5 6 7 8 9 10 11 12 ) TrPins ( 1 0 TrPin ( 1 1 ) ) ) ) "
        'TrItemTable ( 1 PlatformItem ( TrItemId ( 0 ) PlatformName ( "A b" ) ) ) )'
    )
    a, b = both_grammars(text, monkeypatch)
    assert a == b
    assert not prescan.needs_full_grammar(text)


@pytest.mark.parametrize(
    "text, full",
    [
        ("A ( 1 2 )", False),
        ("A ( _INFO ( x #y comment ) 1 )", False),  # markers only as or inside comment blocks
        ("A ( SNCF_TGV 1 )", False),  # '_' inside a word is no marker
        ("A ( #x 1 )", True),
        ("A ( skip 1 )", True),
        ("include foo.dat", True),
        ("A ( skipper 1 )", False),
    ],
)
def test_prescan_picks_the_grammar(text, full):
    assert prescan.needs_full_grammar(text) is full


@needs_dk24
@pytest.mark.parametrize(
    "rel",
    [
        "ROUTES/OR_DK24/DK24.tdb",
        "ROUTES/OR_DK24/DK24.rdb",
        "ROUTES/OR_DK24/tsection.dat",
        "GLOBAL/tsection.dat",
        "ROUTES/OR_DK24/DK24.trk",
        "ROUTES/OR_DK24TEST/DK24TEST.tdb",
    ],
)
def test_both_grammars_give_the_same_tree_on_dk24(rel, monkeypatch):
    path = DK24 / rel
    fast = parse_file(path)
    used = force_full_grammar(monkeypatch)
    full = parse_file(path)
    assert used and fast == full


# -- decoding -----------------------------------------------------------------------------


def test_utf16_bom_crlf_and_utf8_and_cp1252_decode_alike():
    text = f'{SIG}\r\nName ( "Østende" )\r\n'
    variants = [
        b"\xff\xfe" + text.encode("utf-16-le"),
        text.encode("utf-8"),
        b"\xef\xbb\xbf" + text.encode("utf-8"),
        text.encode("cp1252"),
        text.replace("\r\n", "\n").encode("utf-8"),
    ]
    trees = [parse_text(decode_bytes(v).text) for v in variants]
    assert all(t == trees[0] for t in trees)
    assert trees[0].find("Name").items == ["Østende"]
    assert decode_bytes(variants[3]).encoding == "cp1252"


def test_compressed_file_is_inflated(tmp_path: Path):
    body = b"JINX0T0t______\r\nA ( 1 2 )\r\n"
    data = b"SIMISA@F" + len(body).to_bytes(4, "little") + b"@@@@" + zlib.compress(body)
    p = tmp_path / "c.dat"
    p.write_bytes(data)
    doc = parse_file(p)
    assert doc.find("A").items == ["1", "2"]
    assert doc.source.compressed


def test_compressed_bomb_is_refused(tmp_path: Path, monkeypatch):
    from tdbtools.stf import source

    monkeypatch.setattr(source, "MAX_INFLATED_BYTES", 1000)
    body = b"JINX0T0t______\r\n" + b" " * 5000
    p = tmp_path / "bomb.dat"
    p.write_bytes(b"SIMISA@F" + b"\0\0\0\0@@@@" + zlib.compress(body))
    with pytest.raises(DecodeError, match="inflates to more than"):
        parse_file(p)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"SIMISA@@@@@@@@@@JINX0T0b______\r\n\x00\x01", "binary STF body"),
        (b"\xff\xfeS\x00I\x00M", "odd number of bytes"),
        (b"SIMISA@@@@@@@@@@JINX0T0t______\r\nA ( \x00 )", "NUL character"),
        (b"SIMISA@F\0\0\0\0@@@@not zlib at all", "corrupt compressed"),
    ],
)
def test_undecodable_files(tmp_path: Path, data: bytes, message: str):
    p = tmp_path / "bad.dat"
    p.write_bytes(data)
    with pytest.raises(DecodeError, match=message):
        parse_file(p)


def test_missing_file_is_a_tdbtools_error(tmp_path: Path):
    with pytest.raises(TdbToolsError, match="file not found"):
        parse_file(tmp_path / "nope.dat")


# -- syntax errors --------------------------------------------------------------------------


def test_unclosed_block_names_where_it_opened():
    with pytest.raises(StfSyntaxError) as ei:
        parse_text(f"{SIG}\nA ( 1\n  B ( 2 )\n")
    e = ei.value
    assert (e.line, e.column) == (2, 3)
    assert "block 'A' opened here is not closed" in e.message
    assert "^" in e.snippet and str(e).startswith("<text>:2:3:")


def test_stray_close_paren():
    with pytest.raises(StfSyntaxError) as ei:
        parse_text(f"{SIG}\nA ( 1 ) )\n")
    assert (ei.value.line, ei.value.column) == (2, 9)
    assert "unmatched ')'" in ei.value.message


def test_unterminated_string():
    with pytest.raises(StfSyntaxError) as ei:
        parse_text(f'{SIG}\nA ( "abc )\n')
    assert "unterminated quoted string" in ei.value.message
    assert (ei.value.line, ei.value.column) == (2, 5)


def test_deep_nesting_does_not_recurse():
    depth = 20000
    doc = parse_text(SIG + "\n" + "A ( " * depth + "1" + " )" * depth + "\n")
    node, n = doc, 0
    while node.items and isinstance(node.items[0], Block):
        node, n = node.items[0], n + 1
    assert n == depth
    assert format_stf(doc).count("(") == depth
    assert doc == doc


# -- include --------------------------------------------------------------------------------


def make_install(tmp_path: Path) -> Path:
    (tmp_path / "ROUTES" / "R" / "OPENRAILS").mkdir(parents=True)
    (tmp_path / "GLOBAL").mkdir()
    return tmp_path


def test_include_relative_to_the_including_file(tmp_path: Path):
    root = make_install(tmp_path)
    (root / "GLOBAL" / "tsection.dat").write_text(f"{SIG}\nA ( 1 )\n")
    main = root / "ROUTES" / "R" / "OPENRAILS" / "tsection.dat"
    main.write_text('\ninclude ( "../../../GLOBAL/tsection.dat" )\nB ( 2 )\n')
    doc = parse_file(main)
    assert [b.name for b in doc.blocks()] == ["A", "B"]
    assert doc.includes == (str((root / "GLOBAL" / "tsection.dat").resolve()),)


def test_include_is_case_insensitive_on_disk(tmp_path: Path):
    root = make_install(tmp_path)
    (root / "GLOBAL" / "TSECTION.DAT").write_text(f"{SIG}\nA ( 1 )\n")
    main = root / "ROUTES" / "R" / "x.dat"
    main.write_text(f"{SIG}\ninclude ( ../../global/tsection.dat )\n")
    assert parse_file(main).find("A").items == ["1"]


def test_include_cycle_and_escape_and_missing(tmp_path: Path):
    root = make_install(tmp_path)
    a, b = root / "ROUTES" / "a.inc", root / "ROUTES" / "b.inc"
    a.write_text(f"{SIG}\ninclude ( b.inc )\n")
    b.write_text(f"{SIG}\ninclude ( a.inc )\n")
    with pytest.raises(IncludeError, match="include cycle"):
        parse_file(a)
    esc = root / "ROUTES" / "esc.dat"
    esc.write_text(f"{SIG}\ninclude ( ../../outside.dat )\n")
    (tmp_path.parent / "outside.dat").write_text(f"{SIG}\nX ( 1 )\n")
    with pytest.raises(IncludeError, match="outside the install root"):
        parse_file(esc)
    miss = root / "ROUTES" / "miss.dat"
    miss.write_text(f"{SIG}\nA ( 1 )\ninclude ( nothere.dat )\n")
    with pytest.raises(IncludeError) as ei:
        parse_file(miss)
    assert ei.value.line == 3 and "nothere.dat" in ei.value.message
    # Lenient mode goes on without the missing file and says so.
    from tdbtools.errors import Diagnostics

    d = Diagnostics(strict=False)
    doc = parse_file(miss, diagnostics=d)
    assert doc.find("A").items == ["1"] and len(d.findings) == 1


# -- the writer -------------------------------------------------------------------------------


def test_writer_quotes_what_must_be_quoted():
    doc = parse_text(f'{SIG}\nA ( "" "a b" "#x" "comment" "(" plain "q\\"" )\n')
    again = parse_text(format_stf(doc))
    assert again == doc
    assert again.find("A").items == ["", "a b", "#x", "comment", "(", "plain", 'q"']
    assert isinstance(again.find("A").items[1], QStr)


_word = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=8)
_name = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True)
_tree = st.recursive(
    st.lists(st.one_of(_word, _word.map(QStr)), max_size=4),
    lambda children: st.lists(st.one_of(_word, st.tuples(_name, children)), max_size=4),
    max_leaves=20,
)


def _to_block(name: str, spec) -> Block:
    out = []
    for it in spec:
        out.append(_to_block(*it) if isinstance(it, tuple) else it)
    return Block(name, out)


@settings(max_examples=150, deadline=None)
@given(_tree)
def test_any_tree_written_parses_back_equal(spec):
    from tdbtools.stf.source import Source
    from tdbtools.stf.tree import Document

    doc = Document(_to_block("", spec).items, Source("<gen>", SIG + "\n", "str"))
    text = format_stf(doc)
    assert parse_text(text) == doc


def test_atomic_write_leaves_no_partial_file(tmp_path: Path, monkeypatch):
    target = tmp_path / "out.dat"
    target.write_bytes(b"old")

    class Boom(Exception):
        pass

    import os

    def fail(*a, **k):
        raise Boom

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(Boom):
        write_text_atomic(target, "SIG\nA ( 1 )\n")
    assert target.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [target]
    monkeypatch.undo()
    write_text_atomic(target, "SIG\nA ( 1 )\n")
    assert target.read_bytes().startswith(b"\xff\xfeS\x00") and b"\r\x00\n\x00" in target.read_bytes()
