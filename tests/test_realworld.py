"""Routes as found in the wild (issue 10): defects Open Rails tolerates, typed findings."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tdbtools.errors import MAX_PER_CODE, Diagnostics, Finding, FormatError, StfSyntaxError
from tdbtools.formats.route import load_route
from tdbtools.stf import parse_file

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import realworld  # noqa: E402


@pytest.fixture(scope="module")
def rw(tmp_path_factory) -> Path:
    return realworld.make_route(tmp_path_factory.mktemp("rw"))


@pytest.fixture(scope="module")
def rw_missing(tmp_path_factory) -> Path:
    return realworld.make_route(tmp_path_factory.mktemp("rwm"), missing_section=True)


def test_fixture_files_are_utf16_bom_crlf(rw):
    data = (rw / "RW.tdb").read_bytes()
    assert data[:2] == b"\xff\xfe" and "\r\n" in data[2:].decode("utf-16-le")
    assert (rw / "Consists" / "rw_dmu.con").is_file() and (rw / "OpenRails" / "sigcfg.dat").is_file()


def test_stray_paren_is_refused_strictly_and_skipped_leniently(rw):
    with pytest.raises(StfSyntaxError, match="unmatched"):
        parse_file(rw / "carspawn.dat")
    d = Diagnostics(strict=False)
    doc = parse_file(rw / "carspawn.dat", diagnostics=d)
    assert [f.code for f in d.findings] == ["STRAY_PAREN"]
    assert d.findings[0].location is not None and d.findings[0].location.line == 7
    assert len(doc.find("CarSpawnerList").items) == 3


def test_missing_section_id_is_a_typed_finding(rw_missing):
    with pytest.raises(FormatError, match="not in tsection.dat"):
        load_route(rw_missing, cache=False)
    r = load_route(rw_missing, cache=False, strict=False)
    (f,) = r.warnings
    assert (f.code, f.severity, f.section, f.node) == ("SECTION_UNKNOWN", "error", realworld.MISSING_ID, 2)
    assert r.track_km == pytest.approx(0.5)


def test_repeats_are_capped_with_a_count():
    d = Diagnostics(strict=False)
    for i in range(MAX_PER_CODE + 30):
        d.note(f"n{i}", code="X")
    d.note("other", code="Y")
    assert len(d.findings) == MAX_PER_CODE + 1
    assert sum(f.count for f in d.findings if f.code == "X") == MAX_PER_CODE + 30
    assert d.findings[MAX_PER_CODE - 1].count == 31 and "30 more" in str(d.findings[MAX_PER_CODE - 1])


def test_finding_is_a_frozen_slotted_record():
    f = Finding("m", code="STRAY_PAREN")
    with pytest.raises(AttributeError):
        f.code = "X"  # type: ignore[misc]
    assert not hasattr(f, "__dict__")
    assert f.to_json()["code"] == "STRAY_PAREN"


def test_every_code_is_documented():
    from tdbtools.errors import _CODE_OF_ERROR
    from tdbtools.track.audit import CODES

    doc = (Path(__file__).resolve().parent.parent / "docs" / "findings.md").read_text(encoding="utf-8")
    codes = {*CODES, *_CODE_OF_ERROR.values(), "STRAY_PAREN", "SECTION_UNKNOWN", "IGNORED"}
    assert not [c for c in codes if f"`{c}`" not in doc]
