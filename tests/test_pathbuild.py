"""Building .pat paths (tdbtools path): shortest way, file structure, round trip
through resolve_path."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from helpers import DK24_ROUTE, SAMPLE_ROUTE, needs_dk24

from tdbtools.cli import main
from tdbtools.formats.pat import read_pat
from tdbtools.formats.route import load_route
from tdbtools.stf.source import read_source
from tdbtools.track.pathbuild import PathBuildError, build_path, locate, write_path
from tdbtools.track.paths import resolve_path


@pytest.fixture(scope="module")
def sample():
    return load_route(SAMPLE_ROUTE)


def test_places(sample):
    # end node 1 is the west buffer stop at the far end of V_a (node 2, walked backward)
    spot = locate(sample, "1")
    (p,) = spot.candidates
    assert p.node == 2 and p.offset == pytest.approx(sample.node_length(2) - 5.0)
    plat = locate(sample, "sampleby")  # station name, any case
    assert plat.candidates[0].node == 2 and 40.0 < plat.candidates[0].offset < 200.0
    assert locate(sample, "Sampleby, Spor 1").candidates == plat.candidates
    assert locate(sample, "4@100").candidates[0].offset == 100.0
    for bad in ("Nowhere", "99", "4@99999", "", "1e300 1 2 3"):
        with pytest.raises(PathBuildError):
            locate(sample, bad)


def test_build_and_round_trip(sample, tmp_path):
    built = build_path(sample, "Sampleby", "7", name="to the siding")
    # platform on V_a, through J1 from the trunk onto the siding branch (route 1)
    assert built.node_sequence() == [(2, 0), (6, 1)] and built.junctions == (3,)
    out = write_path(sample, built, tmp_path / "Siding2.pat")
    raw = out.read_bytes()
    assert raw[:2] == b"\xff\xfe" and "\r\n".encode("utf-16-le") in raw  # UTF-16LE with BOM, CRLF, like MSTS
    assert read_source(out).signature.startswith("SIMISA@@@@@@@@@@JINX0P0t")
    pat = read_pat(out)  # strict: a well-formed path file
    assert [(p.junction_flag, p.invalid_flag) for p in pat.pdps] == [(1, 1), (2, 0), (1, 1)]
    assert pat.path_id == "Siding2" and pat.name == "to the siding" and len(pat.main_chain()) == 3
    res = resolve_path(sample, out)
    assert res.ok and res.node_sequence() == built.node_sequence()
    assert res.length == pytest.approx(built.length, abs=0.01)
    assert res.switches == ((3, 1),)


def test_direction_and_reversals(sample, tmp_path):
    # From the east end to the siding end needs a turn at the far side of J1.
    with pytest.raises(PathBuildError, match="reversals"):
        build_path(sample, "5", "7")
    with pytest.raises(PathBuildError):
        build_path(sample, "5", "7", ["2@300"])  # via, but no turning allowed
    built = build_path(sample, "5", "7", ["2@300"], reversals=True)
    assert built.reversals == (1,)
    assert built.node_sequence() == [(4, 0), (2, 1), (2, 0), (6, 1)]  # V_a starts at J1
    out = write_path(sample, built, tmp_path / "Rev.pat")
    pat = read_pat(out)
    assert [n.is_reversal for n in pat.nodes] == [False, False, True, False, False]
    res = resolve_path(sample, out)
    assert res.ok and res.reversals == (2,) and res.node_sequence() == built.node_sequence()


def test_cli(tmp_path):
    out = tmp_path / "p.pat"
    r = CliRunner().invoke(
        main, ["path", str(SAMPLE_ROUTE), "--from", "Sampleby", "--to", "5", "--out", str(out), "--json"]
    )
    assert r.exit_code == 0, r.output
    assert '"junctions": 1' in r.output and out.is_file()
    r = CliRunner().invoke(
        main, ["path", str(SAMPLE_ROUTE), "--from", "Nowhere", "--to", "5", "--out", str(tmp_path / "q.pat")]
    )
    assert r.exit_code == 2 and "Nowhere" in r.output and not (tmp_path / "q.pat").exists()
    r = CliRunner().invoke(
        main, ["path", str(SAMPLE_ROUTE), "--from", "1", "--to", "5", "--out", str(tmp_path / "q.txt")]
    )
    assert r.exit_code == 2 and ".pat" in r.output


@pytest.mark.dk24
@needs_dk24
def test_dk24_multi_km_paths(tmp_path):
    route = load_route(DK24_ROUTE)
    # line end 366 -> Tommerup -> line end 1007, through a named platform
    built = build_path(route, "366", "1007", ["Tommerup, Spor 2"])
    assert built.length > 50_000 and len(built.junctions) > 30
    out = write_path(route, built, tmp_path / "through.pat")
    res = resolve_path(route, out)
    assert res.ok and res.node_sequence() == built.node_sequence()
    assert res.length == pytest.approx(built.length, abs=0.05)
    # the station picks the platform on the shortest way; both directions exist
    a = build_path(route, "Tommerup", "1007")
    b = build_path(route, "1007", "Tommerup")
    assert a.length > 30_000 and b.length > 30_000
