"""The bulk reading of tsection.dat's tables (formats/tsection.py table_entries,
grammars/tsection_bulk.lark) gives exactly the model, the findings and the errors of
the tree path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import DK24_ROUTE, REPO, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24

from tdbtools.errors import Diagnostics, TdbToolsError
from tdbtools.formats import tsection as ts_mod
from tdbtools.formats.tsection import read_tsection, read_tsection_file
from tdbtools.stf import parse_file, parse_text
from tdbtools.stf import parser as stf_parser
from tdbtools.stf.source import Source

DATA = REPO / "tests" / "data"
FILES = sorted(
    [
        *(p for p in (DATA / "valid").iterdir() if p.name.endswith("tsection.dat")),
        *(p for p in (DATA / "invalid").iterdir() if p.name.startswith("tsection")),
        DATA / "invalid" / "install" / "GLOBAL" / "tsection.dat",
        SAMPLE_INSTALL / "GLOBAL" / "tsection.dat",
        SAMPLE_ROUTE / "tsection.dat",
    ]
)

_REAL_PARSE = ts_mod.parse_file


def _read(
    path: Path, *, bulk: bool, strict: bool, monkeypatch, local: bool | None = None, docs: list | None = None
):
    """(model or None, error or None, findings, whether a table was read from raw text);
    ``docs`` gets the documents parsed."""
    raw = []

    def parse(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        if not bulk:
            kw.pop("bulk", None)
        doc = _REAL_PARSE(*args, **kw)
        raw.extend(b.raw() is not None for b in doc.blocks() if b.key in ("tracksections", "trackshapes"))
        if docs is not None:
            docs.append(doc)
        return doc

    monkeypatch.setattr(ts_mod, "parse_file", parse)
    diags = Diagnostics(strict=strict)
    try:
        if local is None:
            model = read_tsection_file(path, diagnostics=diags)
        else:
            model = read_tsection([] if local else [path], path if local else None, diagnostics=diags)
        err = None
    except TdbToolsError as exc:
        model, err = None, (type(exc).__name__, str(exc))
    return model, err, [(f.message, f.location, f.code) for f in diags.findings], any(raw)


def _same(path: Path, monkeypatch, strict: bool, local: bool | None = None, docs: dict | None = None) -> bool:
    """Bulk and tree reads agree; ``docs`` gets their documents (keys True: bulk, False: tree)."""
    if docs is not None:
        docs.update({True: [], False: []})
    got = (None, None) if docs is None else (docs[True], docs[False])
    a, ea, fa, used = _read(path, bulk=True, strict=strict, monkeypatch=monkeypatch, local=local, docs=got[0])
    b, eb, fb, _ = _read(path, bulk=False, strict=strict, monkeypatch=monkeypatch, local=local, docs=got[1])
    assert ea == eb
    assert fa == fb
    assert (a is None) == (b is None)
    if a is not None:
        assert a == b
        assert a.files == b.files
    return used


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bulk_tables_give_the_tree_readers_model(path, strict, monkeypatch):
    _same(path, monkeypatch, strict)


def test_bulk_tables_on_the_sample_and_realworld_route(tmp_path, monkeypatch):
    assert _same(SAMPLE_INSTALL / "GLOBAL" / "tsection.dat", monkeypatch, True)
    sys.path.insert(0, str(DATA))
    import realworld

    route = realworld.make_route(tmp_path)  # UTF-16 + CRLF
    assert _same(route.parent.parent / "GLOBAL" / "tsection.dat", monkeypatch, True)


_GOOD = """SIMISA@@@@@@@@@@JINX0T0t______

_INFO ( a global tsection for the bulk tests )
TrackSections ( 40000
\t_INFO(Straight sections for "A" track)
\tTrackSection ( 1
\t\tSectionSize ( 1.5 50 )
\t)
\t_Skip ( Sections 2-3 by someone ( see notes ) )
\tTrackSection ( 2
\t\tSectionSize ( 1.5 0 )
\t\tSectionCurve ( 500 -5 )
\t)
\tTrackSection ( 3 SectionSize ( 1.5 10 ) )
)
TrackShapes ( 40000
\t_INFO( ScaleRail 30" Narrow Gauge )
\tTrackShape ( 7
\t\tFileName ( A1t50m.s )
\t\tNumPaths ( 1 )
\t\tSectionIdx ( 1 0 0 0 0 1 )
\t)
\tTrackShape ( 8
\t\tFileName ( A1tPnt5dLft.s )
\t\tNumPaths ( 2 )
\t\tMainRoute ( 0 )
\t\tClearanceDist ( 15 )
\t\tSectionIdx ( 1 0 0 0 0 1 )
\t\tSectionIdx ( 2 0 0 0 0 2 1 )
\t\tRoadShape ( )
\t)
\tTrackShape ( 9
\t\tFileName ( A1tXover.s )
\t\tNumPaths ( 1 )
\t\tSectionIdx ( 1 0 0 0 0 3 )
\t\tCrossoverShape ( )
\t\tXoverPts ( 1
\t\t\tXoverPt ( 0 0 50 )
\t\t)
\t)
)
"""

# Each variant changes one thing: the bulk path must read it exactly as the tree path.
VARIANTS = {
    "good": ("", ""),
    "lower_case_names": ("TrackSection ( 2", "tracksection ( 2"),
    "redefined": ("TrackSection ( 3 ", "TrackSection ( 1 "),
    "redefined_same": ("TrackSection ( 3 SectionSize ( 1.5 10 )", "TrackSection ( 1 SectionSize ( 1.5 50 )"),
    "negative_length": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 -50 )"),
    "huge_length": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 1e12 )"),
    "angle_beyond_turn": ("SectionCurve ( 500 -5 )", "SectionCurve ( 500 -400 )"),
    "zero_radius": ("SectionCurve ( 500 -5 )", "SectionCurve ( 0 -5 )"),
    "unit": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 50m )"),
    "bad_unit": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 50furlong )"),
    "nan_length": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 nan )"),
    "word_length": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 abc )"),
    "three_sizes": ("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 50 3 )"),
    "ten_digit_id": ("TrackSection ( 3 ", "TrackSection ( 4294967296 "),
    "negative_id": ("TrackSection ( 3 ", "TrackSection ( -3 "),
    "local_layout_section": (
        "TrackSection ( 3 SectionSize ( 1.5 10 ) )",
        "TrackSection ( SectionCurve ( 1 ) 3 10 0 )",
    ),
    "stray_value": ("\tTrackSection ( 2", "\tx TrackSection ( 2"),
    "comment_in_entry": ("\t\tSectionSize ( 1.5 0 )", "\t\t_c ( x ) SectionSize ( 1.5 0 )"),
    "quoted_filename": ("FileName ( A1t50m.s )", 'FileName ( "A1t 50m.s" )'),
    "numpaths_wrong": ("NumPaths ( 2 )", "NumPaths ( 3 )"),
    "sectionidx_count": ("SectionIdx ( 2 0 0 0 0 2 1 )", "SectionIdx ( 3 0 0 0 0 2 1 )"),
    "sectionidx_negative": ("SectionIdx ( 1 0 0 0 0 1 )", "SectionIdx ( -4 )"),
    "sectionidx_empty": ("SectionIdx ( 1 0 0 0 0 1 )", "SectionIdx ( 0 0 0 0 0 )"),
    "sectionidx_word": ("SectionIdx ( 2 0 0 0 0 2 1 )", "SectionIdx ( 2 0 0 x 0 2 1 )"),
    "shape_id_word": ("TrackShape ( 8", "TrackShape ( eight"),
    "two_filenames": ("FileName ( A1t50m.s )", "FileName ( A1t50m.s b.s )"),
    "clearance_inf": ("ClearanceDist ( 15 )", "ClearanceDist ( inf )"),
    "unknown_leaf": ("\t\tRoadShape ( )", "\t\tRoadShape ( )\n\t\tWaterScoop ( 1 2 )"),
    "skip_word_block": ("\t\tRoadShape ( )", "\t\tskip ( 1 2 )"),
    "unicode_word": ("FileName ( A1t50m.s )", "FileName ( Aé.s )"),
    "tabs": ("SectionIdx ( 1 0 0 0 0 1 )", "SectionIdx (\t1\t0 0 0 0\t1 )"),
    "nothing_but_comments": ("\tTrackSection ( 3 SectionSize ( 1.5 10 ) )\n", ""),
    "unbalanced": (
        "\tTrackSection ( 3 SectionSize ( 1.5 10 ) )\n",
        "\tTrackSection ( 3 SectionSize ( 1.5 10 )\n",
    ),
    "stray_close": (
        "\tTrackSection ( 3 SectionSize ( 1.5 10 ) )\n",
        "\tTrackSection ( 3 SectionSize ( 1.5 10 ) ) )\n",
    ),
}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_bulk_tables_on_defects(name, strict, tmp_path, monkeypatch):
    old, new = VARIANTS[name]
    text = _GOOD.replace(old, new, 1) if old else _GOOD
    assert text != _GOOD or name == "good"
    for enc, newline in (("utf-8", "\n"), ("utf-16", "\r\n")):
        path = tmp_path / f"{name}-{enc}.dat"
        path.write_bytes(text.replace("\n", newline).encode(enc))
        used = _same(path, monkeypatch, strict, local=False)
        if name in ("good", "redefined", "negative_length", "unit", "quoted_filename"):
            assert used


def test_dropped_sections_are_the_same():
    # A section dropped for its geometry, then defined again (route.py uses the list).
    text = _GOOD.replace(
        "TrackSection ( 3 SectionSize ( 1.5 10 ) )", "TrackSection ( 2 SectionSize ( 1.5 -1 ) )"
    )
    text = text.replace(
        "\tTrackSection ( 2\n", "\tTrackSection ( 2 SectionSize ( 1.5 -1 ) )\n\tTrackSection ( 2\n", 1
    )
    text += "TrackSections ( 1 TrackSection ( 2 SectionSize ( 1.5 0 ) SectionCurve ( 500 5 ) ) )\n"
    out = []
    for bulk in ("tsection", False):
        b = ts_mod._Builder(Diagnostics(strict=False))
        b.add_global(stf_parser.parse_source(Source("<t>", text, "str"), bulk=bulk, diagnostics=b.diags))
        out.append((b.bad_sections, b.sections, [f.message for f in b.diags.findings]))
    assert out[0] == out[1]
    assert out[0][1][2][2] == 500


def test_bulk_grammar_gives_the_same_tree():
    text = _GOOD.replace("TrackShapes ( 40000", "Extra ( trackShapes ( 1 ) ) TrackShapes ( 40000", 1)
    head, _, body = _GOOD.partition("\n")
    for t in (_GOOD, text, head + "\n" + body.replace("\n", " ")):
        plain = parse_text(t)
        bulk = stf_parser.parse_source(Source("<bulk>", t, "str"), bulk="tsection")
        assert all(b.raw() is not None for b in bulk.blocks() if b.key in ("tracksections", "trackshapes"))
        assert bulk == plain


def test_include_blocks_are_never_kept_raw(tmp_path):
    (tmp_path / "more.dat").write_text(
        "SIMISA@@@@@@@@@@JINX0T0t______\nTrackSection ( 5 SectionSize ( 1.5 5 ) )\n"
    )
    text = _GOOD.replace("\tTrackSection ( 2", "\tinclude ( more.dat )\n\tTrackSection ( 2", 1)
    path = tmp_path / "tsection.dat"
    path.write_text(text)
    doc = parse_file(path, bulk="tsection")
    assert doc.find("TrackSections").raw() is None
    assert doc.find("TrackShapes").raw() is not None
    assert doc == parse_file(path)
    assert read_tsection_file(path).section(5) is not None


@needs_dk24
@pytest.mark.parametrize(
    "rel",
    ["GLOBAL/tsection.dat", "ROUTES/OR_DK24/tsection.dat", "ROUTES/OR_DK24/OPENRAILS/tsection.dat"],
)
def test_bulk_tables_on_dk24(rel, monkeypatch):
    path = DK24_ROUTE.parent.parent / rel
    local = rel == "ROUTES/OR_DK24/tsection.dat"
    docs: dict = {}
    assert _same(path, monkeypatch, True, local=local, docs=docs)
    assert _same(path, monkeypatch, False, local=local)
    # The documents of the strict reads, not two more parses of a 3 MB file.
    (bulk,), (tree,) = docs[True], docs[False]
    assert bulk == tree


@pytest.mark.parametrize("strict", [True, False])
def test_the_route_loader_reads_tsection_in_bulk(strict, monkeypatch):
    """load_route parses both tsection.dat files in bulk, as read_tsection does, with the
    same route model and findings as the tree path."""
    import pickle

    from tdbtools.formats import route as route_mod

    kinds: list = []
    plain = route_mod.parse_file

    def spy(path, *, bulk=False, **kw):  # noqa: ANN001, ANN202
        kinds.append((Path(path).name.lower(), bulk))
        return plain(path, bulk=bulk, **kw)

    monkeypatch.setattr(route_mod, "parse_file", spy)
    got = route_mod.load_route(SAMPLE_ROUTE, cache=False, strict=strict)
    assert [k for k in kinds if k[0] == "tsection.dat"] == [("tsection.dat", "tsection")] * 2
    monkeypatch.setattr(route_mod, "parse_file", lambda path, *, bulk=False, **kw: plain(path, **kw))
    want = route_mod.load_route(SAMPLE_ROUTE, cache=False, strict=strict)
    assert pickle.dumps(got) == pickle.dumps(want)
