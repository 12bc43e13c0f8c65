"""Golden-file tests over the fixture corpus in tests/data.

* ``tests/data/valid``: every fixture parses to its golden generic tree
  (``<stem>.json``) and, for typed fixtures, its golden typed values
  (``<stem>.typed.json``). Fixture bytes: ``tests/data/make_fixtures.py``; goldens:
  ``tests/data/make_golden.py`` (checked by eye against the spec).
* ``tests/data/invalid``: one defect per file; ``invalid/expected.json`` gives the reader
  (an STF reader, or ``scenario`` for a TOML scenario), the exact exception class, line,
  column and a message substring. Lenient readers
  must turn recoverable defects into warnings, and ``tdbtools parse`` must fail
  cleanly (exit 2, ``error:``, no traceback).
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

import tdbtools.errors as errors
from tdbtools.cli import main as cli_main
from tdbtools.errors import Diagnostics, SourceError, TdbToolsError
from tdbtools.formats import (
    read_consist,
    read_pat,
    read_stock,
    read_tdb,
    read_trk,
    read_tsection,
    read_tsection_file,
)
from tdbtools.physics import scenario as scenario_module
from tdbtools.physics.scenario import read_scenario
from tdbtools.stf import parse_file, parse_text
from tdbtools.stf.writer import format_stf

DATA = Path(__file__).resolve().parent / "data"
VALID = DATA / "valid"
INVALID = DATA / "invalid"


def _load_golden_module():
    spec = importlib.util.spec_from_file_location("_tdbtools_make_golden", DATA / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


golden = _load_golden_module()
FIXTURES: dict[str, str] = golden.FIXTURES
TYPED = {k: v for k, v in FIXTURES.items() if v != "stf"}
EXPECTED: dict[str, dict] = json.loads((INVALID / "expected.json").read_text(encoding="utf-8"))


def _json(obj):
    """What ``obj`` looks like after a trip through JSON (tuples become lists, ...)."""
    return json.loads(json.dumps(obj, ensure_ascii=False))


def _assert_same(actual, expected, where: str = "$") -> None:
    """Deep equality; floats compared with a tight relative tolerance."""
    if isinstance(expected, float) or isinstance(actual, float):
        assert isinstance(actual, (int, float)) and isinstance(expected, (int, float)), (
            f"{where}: {actual!r} != {expected!r}"
        )
        assert math.isclose(actual, expected, rel_tol=1e-12, abs_tol=1e-12), (
            f"{where}: {actual!r} != {expected!r}"
        )
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        assert sorted(actual) == sorted(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for k in expected:
            _assert_same(actual[k], expected[k], f"{where}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: expected a list, got {actual!r}"
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_same(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def _golden(name: str, typed: bool = False):
    return json.loads(golden.golden_path(name, typed).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------
# valid fixtures
# ---------------------------------------------------------------------------------------


def test_every_valid_fixture_has_goldens():
    for name, reader in FIXTURES.items():
        assert (VALID / name).is_file(), name
        assert golden.golden_path(name).is_file(), f"missing golden for {name}"
        assert golden.golden_path(name, typed=True).is_file() == (reader != "stf"), name


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_valid_generic_tree_matches_golden(name):
    doc = parse_file(VALID / name)
    tree = doc.to_json()
    assert Path(tree.pop("path")).resolve() == (VALID / name).resolve()
    assert tree == _golden(name)


@pytest.mark.parametrize("name", sorted(TYPED))
def test_valid_typed_values_match_golden(name):
    _assert_same(_json(golden.typed_summary(name, TYPED[name])), _golden(name, typed=True))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_valid_fixture_round_trips_through_writer(name):
    doc = parse_file(VALID / name)
    again = parse_text(format_stf(doc))
    # Equal trees (values compare as text: a plain word holding a tab may come back quoted).
    assert again == doc


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_valid_fixture_cli_parse_json(name):
    result = _cli("parse", str(VALID / name), "--json")
    assert result.exit_code == 0, result.output
    tree = json.loads(result.stdout)
    assert next(iter(tree)) == "schema" and tree.pop("schema") == "tdbtools.parse/1"
    tree.pop("path")
    assert tree == _golden(name)


# -- checks written straight from the spec (independent of the goldens) ------------------


def test_encodings_are_detected():
    assert parse_file(VALID / "utf16_crlf.dat").source.encoding == "utf-16-le"
    assert parse_file(VALID / "utf8_lf.dat").source.encoding == "utf-8"
    assert parse_file(VALID / "utf8_bom.dat").source.encoding == "utf-8"
    doc = parse_file(VALID / "cp1252.dat")
    assert doc.source.encoding == "cp1252"
    assert doc.find("station").values == ["Østerport", "Nørreport"]
    assert doc.find("Price").values == ["5 €"]
    # The raw file really is 8-bit: 0xF8 is 'ø' in cp1252.
    assert b"N\xf8rreport" in (VALID / "cp1252.dat").read_bytes()
    assert (VALID / "utf16_crlf.dat").read_bytes()[:4] == b"\xff\xfeS\x00"
    assert b"\r\x00\n\x00" in (VALID / "utf16_crlf.dat").read_bytes()


def test_comments_drop_exactly_one_item_or_block():
    doc = parse_file(VALID / "comments.dat")
    items = doc.items
    assert items[0] == "bar"  # '#note foo bar' drops #note and foo only
    assert [b.name for b in doc.blocks()] == list("ABCDEFGHIJK")
    assert doc.find("A").values == ["1", "3"]
    assert doc.find("K").values == ["13"]


def test_strings_escapes_and_joining():
    doc = parse_file(VALID / "strings.dat")
    assert doc.find("S").values == ["tab\there", "new\nline", 'a "quoted" word', "back\\slash", "x"]
    assert doc.find("J").values == ["abcd", "abc"]
    assert doc.find("E").values[0] == ""


def test_words_and_blocks_without_spaces():
    doc = parse_file(VALID / "words.dat")
    assert doc.find("Names").values[0] == "SNCF_TGV-IZI+4551"
    assert doc.find("mass").values == ["100"]
    assert [b.name for b in doc.find("Nested").blocks()] == ["A", "B"]
    assert doc.find("Esc").values == ["a\tb", "c\nd", "e\\f"]


def test_block_names_compare_case_insensitively():
    doc = parse_file(VALID / "case.dat")
    assert [b.find("serial").values for b in doc.blocks("trackdb")] == [["1"], ["2"], ["3"]]
    assert doc.find("TrackDB").name == "TRACKDB"


def test_include_is_relative_to_the_including_file_and_drops_its_header():
    doc = parse_file(VALID / "include_main.dat")
    names = [b.name for b in doc.blocks()]
    assert names == ["Before", "FromOther", "FromNested", "Outer", "FromNested", "Last"]
    assert "Dropped" not in json.dumps(doc.to_json())
    included = {Path(p).name for p in doc.includes}
    assert included == {"other.inc", "nested.inc"}


def test_compressed_file_equals_its_text():
    doc = parse_file(VALID / "compressed.dat")
    assert doc.source.compressed
    raw = (VALID / "compressed.dat").read_bytes()
    assert raw[:8] == b"SIMISA@F" and raw[12:16] == b"@@@@"
    inflated = zlib.decompress(raw[16:])
    assert struct.unpack("<I", raw[8:12])[0] == len(inflated)
    assert inflated.startswith(b"JINX0T0t______\r\n")
    plain = parse_text("SIMISA@@@@@@@@@@JINX0T0t______\n" + inflated[16:].decode("ascii"))
    assert doc == plain


def test_tiny_tdb_key_values():
    db = read_tdb(VALID / "tiny.tdb")
    assert db.nodes[0] is None and db.node_count == 7
    assert db.counts() == {"vector": 3, "junction": 1, "end": 3, "total": 7}
    j = db.nodes[3]
    assert j.kind == "junction" and j.shape_index == 71
    assert [(p.link, p.direction) for p in j.pins] == [(2, 0), (4, 1), (5, 1)]
    v = db.nodes[2]
    secs = db.node_sections(v)
    assert list(secs["section_index"]) == [1, 5] and list(secs["shape_index"]) == [2, 20]
    assert float(secs["az"][1]) == 0.001
    items = {i.index: i for i in db.items}
    assert len(items) == 17 and items[16].kind == "empty"
    assert items[2].is_limit and items[2].speed_ms == pytest.approx(80 / 3.6)
    assert items[3].is_warning and items[3].in_mph and items[3].display_number == 6
    assert items[3].speed_ms == pytest.approx(60 * 0.44704)
    assert items[4].is_milepost and items[4].value == 12.0  # no bit 9: truncated
    assert items[4].angle == pytest.approx(4.0 - 2 * math.pi)  # wrapped to -pi..pi
    assert items[5].is_resume and items[5].value is None
    assert items[6].value == pytest.approx(12.7)
    assert items[1].signal_type == "dk3ind"  # lower-cased
    assert items[13].r_data.tile_x == -5631 and items[13].r_data.x == 214.5  # X Y Z then tile


def test_tsection_key_values():
    ts = read_tsection_file(VALID / "global_tsection.dat")
    assert ts.section(1).length == 60  # the later TrackSections block replaces id 1
    s5 = ts.section(5)
    assert s5.is_curved and s5.radius == 500 and s5.angle == -5
    assert s5.arc_length == pytest.approx(500 * math.radians(5))
    assert ts.section(7).radius == pytest.approx(500)  # 0.5km
    assert ts.section(20).width == pytest.approx(1.524) and ts.section(20).length == pytest.approx(30.48)
    sh = ts.shape(71)
    assert sh.num_paths == 2 and [p.sections for p in sh.paths] == [(180,), (182, 174)]
    assert ts.shape(300).tunnel and ts.shape(14050).road

    local = read_tsection_file(VALID / "local_tsection.dat")  # layout guessed from the file
    assert local == read_tsection_file(VALID / "local_tsection.dat", local=True)
    c = local.section(40001)
    assert c.radius == 1200 and c.angle == pytest.approx(math.degrees(-0.05))
    assert c.arc_length == pytest.approx(60)
    assert local.section(40000).length == 60 and not local.section(40000).is_curved
    assert local.track_paths == {40000: (40000, 40001, 40002)}


def test_trk_key_values():
    trk = read_trk(VALID / "route.trk")
    assert trk.route_id == "TINY" and trk.name == "Tiny fixture route" and trk.filename == "tiny"
    assert trk.speed_limit == pytest.approx(100 * 0.27777778)
    assert (trk.route_start.tile_x, trk.route_start.tile_z) == (-5631, 15116)  # first wins
    assert trk.milepost_units_km and not trk.electrified
    assert trk.overhead_wire_height == pytest.approx(18 * 0.3048)
    assert trk.max_line_voltage == 25000 and trk.track_gauge == pytest.approx(1.435)


# ---------------------------------------------------------------------------------------
# invalid corpus
# ---------------------------------------------------------------------------------------


def _strict(reader: str, path: Path):
    if reader == "stf":
        return parse_file(path)
    if reader == "tdb":
        return read_tdb(path)
    if reader == "tsection":
        return read_tsection_file(path)
    if reader == "tsection_local":
        return read_tsection_file(path, local=True)
    if reader == "trk":
        return read_trk(path)
    if reader == "pat":
        return read_pat(path)
    if reader == "con":
        return read_consist(path)
    if reader == "eng":
        return read_stock(path)
    if reader == "scenario":
        return read_scenario(path)
    raise AssertionError(reader)


def _lenient(reader: str, path: Path, diags: Diagnostics):
    if reader == "stf":
        return parse_file(path, diagnostics=diags)
    if reader == "tdb":
        return read_tdb(path, diagnostics=diags)
    if reader == "tsection":
        return read_tsection([path], diagnostics=diags)
    if reader == "tsection_local":
        return read_tsection((), path, diagnostics=diags)
    if reader == "trk":
        return read_trk(path, diagnostics=diags)
    if reader == "pat":
        return read_pat(path, diagnostics=diags)
    if reader == "con":
        return read_consist(path, diagnostics=diags)
    if reader == "eng":
        return read_stock(path, diagnostics=diags)
    if reader == "scenario":
        return read_scenario(path)  # TOML: no lenient mode (every defect raises)
    raise AssertionError(reader)


#: The readers of the corpus: STF readers, and the scenario TOML reader.
READERS = ("stf", "tdb", "tsection", "tsection_local", "trk", "pat", "con", "eng", "scenario")


def _error_class(name: str) -> type:
    """An error class by name: tdbtools.errors, or ScenarioError of the scenario reader."""
    return getattr(errors, name, None) or getattr(scenario_module, name)


#: Invalid files whose check fails because of a known tdbtools bug (see the report):
#: (test, file) -> reason. Strict xfail, so a fix makes the suite say so.
KNOWN_BUGS: dict[tuple[str, str], str] = {}


def _cases(test: str) -> list:
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[(test, n)]))
        if (test, n) in KNOWN_BUGS
        else n
        for n in sorted(EXPECTED)
    ]


def _raise_expected(name: str) -> tuple[dict, TdbToolsError]:
    exp = EXPECTED[name]
    with pytest.raises(TdbToolsError) as info:  # never a bare Python exception
        _strict(exp["reader"], INVALID / name)
    return exp, info.value


def test_expected_json_is_complete():
    on_disk = {p.relative_to(INVALID).as_posix() for p in INVALID.rglob("*") if p.is_file()}
    helpers = {"expected.json", "include_cycle_b.inc", "outside.inc", "install/GLOBAL/tsection.dat"}
    assert on_disk - helpers == set(EXPECTED)
    for name, exp in EXPECTED.items():
        assert exp["reader"] in READERS, name
        assert issubclass(_error_class(exp["error"]), SourceError), name
        assert exp["lenient"] in ("warn", "raise"), name


@pytest.mark.parametrize("name", _cases("class"))
def test_invalid_raises_the_exact_class(name):
    exp, exc = _raise_expected(name)
    assert type(exc).__name__ == exp["error"], f"{type(exc).__name__}: {exc}"
    assert exp["message"] in exc.message, exc.message
    assert exp["message"] in str(exc)


@pytest.mark.parametrize("name", _cases("location"))
def test_invalid_error_location_and_snippet(name):
    exp, exc = _raise_expected(name)
    assert isinstance(exc, SourceError)
    where = INVALID / exp.get("path", name)
    # Every error names the file it is about, even without a line.
    assert exc.path is not None and Path(exc.path).resolve() == where.resolve(), str(exc)
    if exp["line"] is None:
        return
    assert (exc.line, exc.column) == (exp["line"], exp["column"]), str(exc)
    head = f"{exc.path}:{exc.line}:{exc.column}: {exc.message}"
    assert str(exc).startswith(head)
    if exp["error"] == "DecodeError" and (exp["line"], exp["column"]) == (1, 1):
        return  # about the file as a whole (header, compression, size): no source line
    # The offending source line, and a caret under the column.
    assert exc.snippet, str(exc)
    src_line, caret = exc.snippet.split("\n")[:2]
    assert caret.strip() == "^"
    assert caret.index("^") - 4 == exp["column"] - 1 or "…" in src_line
    shown = src_line[4:].strip("…").strip()
    assert shown and shown in _file_line(where, exp["line"]), (shown, _file_line(where, exp["line"]))


def _file_line(path: Path, line: int) -> str:
    """Line ``line`` (1-based, lines end at LF as in Open Rails) of a text file, decoded
    independently of tdbtools."""
    data = path.read_bytes()
    if data[:2] == b"\xff\xfe":
        text = data[2:].decode("utf-16-le", errors="replace")
    else:
        if data[:3] == b"\xef\xbb\xbf":
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("cp1252", errors="replace")
    return text.split("\n")[line - 1].rstrip("\r").replace("\t", " ")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_invalid_in_lenient_mode(name):
    exp = EXPECTED[name]
    path = INVALID / name
    diags = Diagnostics(strict=False)
    if exp["lenient"] == "raise":
        with pytest.raises(_error_class(exp["error"])):
            _lenient(exp["reader"], path, diags)
        return
    _lenient(exp["reader"], path, diags)
    assert diags.findings, "a recoverable defect must leave a warning"
    assert any(exp["message"] in f.message for f in diags.findings), [str(f) for f in diags.findings]
    # The public strict=False switches tolerate it too.
    reader = exp["reader"]
    if reader == "stf":
        parse_file(path, strict=False)
    elif reader == "tdb":
        read_tdb(path, strict=False)
    elif reader == "trk":
        read_trk(path, strict=False)
    elif reader == "pat":
        read_pat(path, strict=False)
    elif reader == "con":
        read_consist(path, strict=False)
    elif reader == "eng":
        read_stock(path, strict=False)
    else:
        read_tsection_file(path, strict=False, local=(reader == "tsection_local"))


def _cli(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli_main, list(args))


# `tdbtools parse` reads STF files: the TOML scenarios of the corpus are not for it.
@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e["reader"] != "scenario"))
def test_cli_parse_on_invalid_file(name):
    exp = EXPECTED[name]
    result = _cli("parse", "--strict", str(INVALID / name))
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    if exp["reader"] == "stf":
        assert result.exit_code == 2, (result.exit_code, result.stderr, result.exception)
        assert isinstance(result.exception, SystemExit)
        assert result.stderr.startswith("error: "), result.stderr
        assert exp["message"] in result.stderr
        assert "internal error" not in result.stderr
        # Without --strict, parse reads as Open Rails does: what it can tolerate is a
        # warning on stderr (docs/findings.md §1).
        lenient = _cli("parse", str(INVALID / name))
        assert lenient.exit_code == (0 if exp["lenient"] == "warn" else 2), lenient.stderr
        assert "Traceback" not in lenient.stderr
        if exp["lenient"] == "warn":
            assert lenient.stderr.startswith("warning: ") and exp["message"] in lenient.stderr
    else:
        # A defect of the file type, not of STF: the generic parse succeeds.
        assert result.exit_code == 0, (result.exit_code, result.stderr, result.exception)


# ---------------------------------------------------------------------------------------
# the corner cases of docs/formats.md (§2.1 quotes and '+', §3 unknown units) and include errors
# ---------------------------------------------------------------------------------------


def test_spec_quote_inside_plain_item_ends_it():
    doc = parse_text('SIG\nName ( abc" def )\n')
    assert doc.find("Name").values == ["abc", "def"]


def test_spec_plus_without_a_following_string_is_eaten():
    doc = parse_text('SIG\nA ( "ab" + cd )\n')
    assert doc.find("A").values == ["ab", "cd"]


def test_spec_unknown_unit_in_lenient_mode_uses_factor_one():
    diags = Diagnostics(strict=False)
    trk = read_trk(INVALID / "trk_unknown_unit.trk", diagnostics=diags)
    assert diags.findings
    assert trk.speed_limit == pytest.approx(10.0)


def test_include_without_file_name_points_at_the_include():
    with pytest.raises(errors.IncludeError) as info:
        parse_text("SIMISA@@@@@@@@@@JINX0T0t______\nA ( 1 )\n  include\n")
    assert (info.value.line, info.value.column) == (3, 3), str(info.value)
