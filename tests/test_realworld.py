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
from helpers import needs_dk24  # noqa: E402


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


# -- consists, stand-ins, path length ----------------------------------------------------


def _replay(route: Path, tmp_path: Path, path: str = "line.pat", **extra):
    from tdbtools.physics import replay

    spec = tmp_path / "s.toml"
    spec.write_text(realworld.scenario(route, path, **extra), encoding="utf-8")
    return replay(spec)


def test_route_consists_folder_and_realistic_dmu_stand_ins(rw, tmp_path):
    result = _replay(rw, tmp_path)  # rw_dmu is only in ROUTES/RW/Consists
    t = result.summary["trains"]["dmu"]
    assert t["finished"] and not t["derailed"] and t["mass_t"] == pytest.approx(125.0)
    stand_ins = [e.message for e in result.events if e.kind == "stand_in"]
    assert len(stand_ins) == 3 and sum("diesel multiple-unit power car" in m for m in stand_ins) == 2
    tr = result.traces["dmu"]
    reach = tr["time"][tr["speed"] >= 40 / 3.6]
    # Real DMUs take 15-25 s to 40 km/h (the old 85 t, 300 kN electric stand-in: 3-4 s).
    assert len(reach) and reach[0] > 10.0


def test_consist_max_velocity_is_a_hard_limit(rw, tmp_path):
    con = rw / "Consists" / "rw_dmu.con"
    slow = rw / "Consists" / "rw_slow.con"
    slow.write_bytes(
        realworld.utf16_crlf(con.read_bytes()[2:].decode("utf-16-le").replace("25.00000", "8.00000"))
    )
    from tdbtools.physics import replay

    spec = tmp_path / "slow.toml"
    spec.write_text(
        realworld.scenario(rw).replace('consist = "rw_dmu"', 'consist = "rw_slow"'), encoding="utf-8"
    )
    result = replay(spec)
    assert result.summary["trains"]["dmu"]["max_speed_kmh"] <= 8.0 * 3.6 + 0.5


def test_train_longer_than_its_path_is_a_clear_error(rw, tmp_path):
    from tdbtools.physics.replay import ReplayError

    with pytest.raises(ReplayError, match="beyond_path"):
        _replay(rw, tmp_path, "short.pat")
    result = _replay(rw, tmp_path, "short.pat", beyond_path=100)
    assert result.summary["trains"]["dmu"]["distance_m"] > 50


@pytest.mark.parametrize(
    ("kind", "file", "folder", "others", "expected"),
    [
        ("engine", "mfaVIA", "DSB IC3 VIA", [("wagon", "ffVIA", "DSB IC3 VIA")], "dmu"),
        ("engine", "2030", "DSB IR4", [("wagon", "2230", "DSB IR4")], "emu"),
        ("engine", "DSB_MX1001", "DSB MX 1001", [], "diesel"),
        ("engine", "CFL185", "CFL185", [("wagon", "Eanos", "Goods")], "electric"),
        ("engine", "class66_diesel", "x", [], "diesel"),
    ],
)
def test_stand_in_variant_follows_names_and_consist(kind, file, folder, others, expected):
    from tdbtools.formats.consist import CarEntry, Consist, stand_in_variant

    car = CarEntry(kind, 0, False, file, folder)
    cars = (car, *(CarEntry(k, i + 1, False, f, d) for i, (k, f, d) in enumerate(others)))
    consist = Consist("<t>", "t", "t", 1, None, cars)
    assert stand_in_variant(car, consist) == expected


def test_sample_shunt_does_what_its_comment_says():
    """Walking pace (< 6 km/h), an impact at that speed, the braked freight stays put."""
    from helpers import SAMPLE_INSTALL

    from tdbtools.physics import replay

    result = replay(SAMPLE_INSTALL / "shunt.toml")
    s = result.summary["trains"]
    assert s["engine"]["max_speed_kmh"] < 6.0
    hits = [
        e for e in result.events if e.kind == "impact" and {c[0] for c in e.cars} == {"engine", "standing"}
    ]
    assert hits and max(e.relative_speed for e in hits) < 6.0 / 3.6
    tr = result.traces["standing"]["distance"]
    assert abs(tr).max() < 0.5  # braked: it does not roll away


# -- convert keeps every block ----------------------------------------------------------


def _convert_pairs(route, out, *, converted=False):
    from tdbtools.export import convert_route

    if not converted:
        convert_route(route, out)
    base = route.trk.filename
    folder = Path(route.folder)
    local = folder / "tsection.dat"
    pairs = [
        (folder / f"{base}.trk", out / f"{base}.trk"),
        (folder / f"{base}.tdb", out / f"{base}.tdb"),
        (Path(route.tsection.files[0]), out / "OPENRAILS" / "tsection.dat"),
    ]
    if (folder / f"{base}.rdb").is_file():
        pairs.append((folder / f"{base}.rdb", out / f"{base}.rdb"))
    if local.is_file():
        pairs.append((local, out / "tsection.dat"))
    return pairs


def _assert_same_trees(pairs):
    for orig, conv in pairs:
        a, b = parse_file(orig, strict=False), parse_file(conv)
        assert a == b and a.signature == b.signature, f"{conv.name} differs from {orig}"
        assert conv.read_bytes()[:2] == b"\xff\xfe"


def test_convert_is_lossless_file_by_file_on_the_sample(tmp_path):
    from helpers import SAMPLE_ROUTE

    route = load_route(SAMPLE_ROUTE, cache=False)
    pairs = _convert_pairs(route, tmp_path)
    assert len(pairs) == 5
    _assert_same_trees(pairs)
    trk = parse_file(tmp_path / "SAMPLE.trk").find("Tr_RouteFile")
    assert trk.find("Environment") is not None and trk.find("Graphic") is not None


def test_convert_of_a_changed_model_keeps_the_blocks_it_does_not_interpret(tmp_path):
    import dataclasses

    from helpers import SAMPLE_ROUTE

    from tdbtools.export import convert_route
    from tdbtools.formats.trk import read_trk

    route = load_route(SAMPLE_ROUTE, cache=False)
    changed = dataclasses.replace(route, trk=dataclasses.replace(route.trk, name="Renamed"))
    convert_route(changed, tmp_path)
    orig = parse_file(SAMPLE_ROUTE / "SAMPLE.trk").find("Tr_RouteFile")
    conv = parse_file(tmp_path / "SAMPLE.trk").find("Tr_RouteFile")
    assert read_trk(tmp_path / "SAMPLE.trk").name == "Renamed"
    names = [b.name for b in orig.items if isinstance(b, type(orig))]
    assert [b.name for b in conv.items if isinstance(b, type(conv))] == names  # every block, in place
    assert conv.find("Environment") == orig.find("Environment")


@needs_dk24
@pytest.mark.dk24
@pytest.mark.slow
def test_convert_is_lossless_file_by_file_on_dk24(dk24, dk24_converted):
    pairs = _convert_pairs(dk24, dk24_converted, converted=True)  # convert_route(dk24) made once
    assert len(pairs) == 5
    _assert_same_trees(pairs)


# -- the command line on a route as found ---------------------------------------------------


def _cli(*args):
    from click.testing import CliRunner

    from tdbtools.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def test_every_route_command_tolerates_and_strict_refuses(rw_missing, tmp_path):
    runs = {
        "info": ("info", rw_missing),
        "locate": ("locate", rw_missing, "--tile", *realworld.TILE, "--pos", 0.5, -250),
        "profile": ("profile", rw_missing, "--path", "line"),
        "export": ("export", rw_missing, "--out", tmp_path / "x.csv"),
        "convert": ("convert", rw_missing, "--out", tmp_path / "conv"),
    }
    for name, args in runs.items():
        r = _cli(*args)
        assert r.exit_code == 0, (name, r.output)
        assert r.stderr.count("1 SECTION_UNKNOWN") == 1 and "tdbtools audit" in r.stderr, name
        strict = _cli(*args, "--strict", *(("--overwrite",) if name in ("export", "convert") else ()))
        assert strict.exit_code == 2 and "not in tsection.dat" in strict.stderr, name
    assert (tmp_path / "x.csv").read_text().splitlines()[0].endswith("grade_permille,curvature")


def test_audit_never_refuses_and_follows_linters_exit_codes(rw, rw_missing):
    r = _cli("audit", rw_missing, "--json")
    assert r.exit_code == 1  # an error: the unknown section
    import json

    d = json.loads(r.stdout)
    assert [f["code"] for f in d["findings"]] == ["SECTION_UNKNOWN"]
    assert d["paths"]["counts"]["files"] == 2 and d["paths"]["counts"]["resolved"] == 2
    assert _cli("audit", rw).exit_code == 0


def test_audit_strict_counts_warnings(tmp_path):
    route = realworld.make_route(tmp_path)
    tdb = route / "RW.tdb"
    text = tdb.read_bytes()[2:].decode("utf-16-le").replace("TrPin ( 3 1 )", "TrPin ( 3 0 )")
    tdb.write_bytes(realworld.utf16_crlf(text))  # a pin direction that disagrees: a warning
    assert _cli("audit", route).exit_code == 0
    r = _cli("audit", route, "--strict")
    assert r.exit_code == 1 and "PIN_DIRECTION" in r.stdout


def test_parse_tolerates_a_stray_paren_and_strict_refuses(rw):
    r = _cli("parse", rw / "carspawn.dat")
    assert r.exit_code == 0 and "CarSpawnerList" in r.stdout and "STRAY_PAREN" in r.stderr
    r = _cli("parse", rw / "carspawn.dat", "--strict")
    assert r.exit_code == 2 and ":7:1: unmatched ')'" in r.stderr


def test_replay_prints_stand_ins_readable_events_and_units(rw, tmp_path):
    import json

    r = _cli("replay", "--route", rw, "--consist", "rw_dmu", "--path", "line.pat", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "--stand-in" in r.stderr
    r = _cli(
        "replay",
        "--route",
        rw,
        "--consist",
        "rw_dmu",
        "--path",
        "line.pat",
        "--stand-in",
        "--max-speed",
        30,
        "--out",
        tmp_path / "o",
    )
    assert r.exit_code == 0, r.output
    assert r.stderr.count("diesel multiple-unit power car stand-in") == 2
    assert "[[" not in r.stdout and "['" not in r.stdout  # no Python reprs
    events = json.loads((tmp_path / "o" / "events.json").read_text())
    assert events["units"]["time"] == "s" and events["events"]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["trains"]["rw_dmu"]["max_speed_kmh"] <= 31.0
    r = _cli(
        "replay",
        "--route",
        rw,
        "--consist",
        "rw_dmu",
        "--path",
        "short.pat",
        "--stand-in",
        "--out",
        tmp_path / "o2",
    )
    assert r.exit_code == 2 and "--beyond-path" in r.stderr
    r = _cli(
        "replay",
        "--route",
        rw,
        "--consist",
        "rw_dmu",
        "--path",
        "short.pat",
        "--stand-in",
        "--beyond-path",
        100,
        "--out",
        tmp_path / "o2",
    )
    assert r.exit_code == 0, r.output


def test_smaller_cli_points(rw, tmp_path):
    r = _cli("info", rw / "RW.tdb")  # a file of the route stands for its folder
    assert r.exit_code == 0 and "Realworld defects line" in r.stdout
    r = _cli("parse", tmp_path / "missing.dat")
    assert r.exit_code == 2 and ":1:1" not in r.stderr and "file not found" in r.stderr
    r = _cli("--debug", "parse", tmp_path / "missing.dat")
    assert r.exit_code == 2 and "Traceback" in r.stderr  # --debug shows it, the status stays
    far = _cli("locate", rw, "--tile", *realworld.TILE, "--pos", 4.0, -250)
    assert far.exit_code == 2 and "2.5 m" in far.stderr
    near = _cli("locate", rw, "--tile", *realworld.TILE, "--pos", 4.0, -250, "--tolerance", 5)
    assert near.exit_code == 0 and "+4.000 m right" in near.stdout
    r = _cli("export", rw, "--out", tmp_path / "x.json")
    assert r.exit_code == 0 and (tmp_path / "x.json").read_text().startswith("{")
    r = _cli("export", rw, "--out", tmp_path / "x.json")
    assert r.exit_code == 2 and "--overwrite" in r.stderr
    assert _cli("export", rw).exit_code == 2  # neither --format nor --out


def test_gentle_buffer_impacts_are_not_listed_as_faults():
    from tdbtools.cli.events import _event_lines
    from tdbtools.physics.events import EventLocation, Impact

    gentle = Impact(time=50.0, relative_speed=0.3, cars=(("t", 0), ("t", 1)), impulse=1.0, energy_lost=1.0)
    hard = Impact(
        time=60.0,
        relative_speed=3.0,
        cars=(("a", 2), ("b", 0)),
        impulse=1.0,
        energy_lost=1.0,
        location=EventLocation(node=4, tile_x=0, tile_z=0, x=0.0, y=0.0, z=0.0),
    )
    lines = _event_lines([gentle, gentle, hard])
    assert lines[0] == "  impact at 60.0 s: 10.8 km/h between a car 2 and b car 0 (node 4)"
    assert "2 gentle buffer impact(s)" in lines[1] and "normal" in lines[1]


def test_geojson_of_a_route_off_the_globe_reports_what_it_leaves_out(rw, tmp_path):
    # Tile (-3, 7) is ~16,000 km south of the South Pole in the MSTS tile grid: the IGH
    # inverse has no point there, so every feature is left out, and that must be said.
    from tdbtools.export import ExportError, route_geojson, write_geojson

    route = load_route(rw)
    with pytest.raises(ExportError, match="3 of 3 features") as err:
        route_geojson(route)  # the Python API refuses by default, as load_route does
    assert "south of the South Pole" in str(err.value) and "tile (-3, 7)" in str(err.value)
    d = Diagnostics(strict=False)
    assert route_geojson(route, diagnostics=d)["features"] == []
    (f,) = d.findings
    assert (f.code, f.severity, f.count) == ("OUTSIDE_PROJECTION", "warning", 1)
    assert "1 vector node" in f.message and "2 junction/end nodes" in f.message
    with pytest.raises(ExportError):
        write_geojson(route, tmp_path / "lib.geojson")
    assert list(tmp_path.iterdir()) == []  # no half-written file, no temporary left
    r = _cli("export", rw, "--out", tmp_path / "x.geojson")
    assert r.exit_code == 0 and "OUTSIDE_PROJECTION" in r.stderr and "3 of 3 features" in r.stderr
    assert (tmp_path / "x.geojson").is_file()
    r = _cli("export", rw, "--out", tmp_path / "y.geojson", "--strict")
    assert r.exit_code == 2 and "3 of 3 features" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "y.geojson").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "x.geojson"
    ]


def test_csv_of_a_route_off_the_globe_says_its_points_have_no_lon_lat(rw, tmp_path):
    # The CSV keeps every point (node, offset, tile, x, y, z are known) but cannot give
    # their lon/lat: empty cells and one OUTSIDE_PROJECTION finding, strict refuses.
    from tdbtools.export import ExportError, csv_text, write_csv

    route = load_route(rw)
    with pytest.raises(ExportError, match="sample points lie where") as err:
        csv_text(route)
    assert "south of the South Pole" in str(err.value)
    d = Diagnostics(strict=False)
    rows = csv_text(route, diagnostics=d).splitlines()
    (f,) = d.findings
    assert (f.code, f.severity) == ("OUTSIDE_PROJECTION", "warning")
    assert f.message.startswith(f"{len(rows) - 1} of {len(rows) - 1} sample points")
    lon, lat = rows[0].split(",").index("lon"), rows[0].split(",").index("lat")
    assert all(r.split(",")[lon] == "" == r.split(",")[lat] for r in rows[1:])
    assert csv_text(route, lonlat=False)  # no lon/lat asked for: nothing to report
    with pytest.raises(ExportError):
        write_csv(route, tmp_path / "lib.csv")
    assert list(tmp_path.iterdir()) == []
    r = _cli("export", rw, "--out", tmp_path / "x.csv")
    assert r.exit_code == 0 and "OUTSIDE_PROJECTION" in r.stderr and "sample points" in r.stderr
    r = _cli("export", rw, "--out", tmp_path / "y.csv", "--strict")
    assert r.exit_code == 2 and "sample points" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]
