"""Path resolution, profiles, and the locate/profile/audit commands."""

from __future__ import annotations

import csv
import json
import math

import pytest
from click.testing import CliRunner
from helpers import DK24_ROUTE, SAMPLE_ROUTE

from tdbtools.cli import main
from tdbtools.formats import load_route, read_pat
from tdbtools.stf import parse_text
from tdbtools.stf.writer import format_stf, write_text_atomic
from tdbtools.track import Traveller, profile_from, profile_path, resolve_path


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def sample():
    return load_route(SAMPLE_ROUTE, cache=False)


PATHS = SAMPLE_ROUTE / "PATHS"


@pytest.mark.parametrize(
    "name, length, nodes, switches",
    [
        # V_a is listed from the junction westwards (420 m in), V_main from the junction eastwards.
        ("MainWE.pat", 420 + 1130, [(2, 0), (4, 1)], [(3, 0)]),
        ("MainEW.pat", 1130 + 410, [(4, 0), (2, 1)], [(3, 0)]),
        ("Siding.pat", 420 + 450, [(2, 0), (6, 1)], [(3, 1)]),
    ],
)
def test_sample_paths_resolve_exactly(sample, name, length, nodes, switches):
    res = resolve_path(sample, PATHS / name)
    assert res.ok, res.problems
    assert math.isclose(res.length, length, abs_tol=0.01)
    assert res.node_sequence() == nodes
    assert list(res.switches) == switches
    # The rear of the train starts at the first point, facing the second.
    assert res.start_direction == nodes[0][1]


def _pdp_at(route, node, offset):
    p = Traveller(route, node, offset).pose()
    return f"TrackPDP ( {p.tile_x} {p.tile_z} {p.x:.6f} {p.y:.6f} {p.z:.6f} 1 1 )"


def _write_pat(tmp_path, route, points, flags):
    """A .pat through (node, offset) points with the given TrPathNode flags."""
    pdps = " ".join(_pdp_at(route, n, o) for n, o in points)
    nodes = []
    for i, f in enumerate(flags):
        nxt = i + 1 if i + 1 < len(flags) else 4294967295
        nodes.append(f"TrPathNode ( {f} {nxt} 4294967295 {i} )")
    text = (
        f"SIMISA@@@@@@@@@@JINX0P0t______\nSerial ( 1 ) TrackPDPs ( {pdps} ) TrackPath ( "
        f"TrPathName ( T ) Name ( T ) TrPathStart ( a ) TrPathEnd ( b ) "
        f"TrPathNodes ( {len(flags)} {' '.join(nodes)} ) )\n"
    )
    p = tmp_path / "T.pat"
    write_text_atomic(p, format_stf(parse_text(text)))
    return p


def test_reversal_path_throws_the_switch_between_passes(sample, tmp_path):
    # From the main line, back into V_a beyond the junction, reverse, then into the siding.
    pat = _write_pat(
        tmp_path, sample, [(4, 100.0), (2, 50.0), (6, 100.0)], ["00000000", "00000001", "00000000"]
    )
    res = resolve_path(sample, pat)
    assert res.ok, res.problems
    assert res.reversals == (1,)
    assert res.node_sequence() == [(4, 0), (2, 1), (2, 0), (6, 1)]
    assert math.isclose(res.length, 100 + 50 + 50 + 100, abs_tol=0.01)
    assert list(res.switches) == [(3, 0), (3, 1)]  # trailing through on route 0, facing into 1
    prof = profile_path(sample, res, step=5.0)
    assert math.isclose(prof.length, res.length, abs_tol=0.01)
    assert any(text == "reversal" for _, text in prof.events)


def test_unreachable_point_is_explained(sample, tmp_path):
    far = tmp_path / "far.pat"
    text = (
        "SIMISA@@@@@@@@@@JINX0P0t______\nTrackPDPs ( TrackPDP ( -5600 15100 0 0 0 1 1 ) "
        + _pdp_at(sample, 2, 10.0)
        + " ) TrackPath ( TrPathName ( F ) Name ( F ) TrPathNodes ( 2 "
        "TrPathNode ( 00000000 1 4294967295 0 ) TrPathNode ( 00000000 4294967295 4294967295 1 ) ) )\n"
    )
    far.write_text(text)
    res = resolve_path(sample, far)
    assert not res.ok and "not on the track" in res.problems[0]


def test_profile_follows_the_track(sample):
    prof = profile_path(sample, PATHS / "MainWE.pat", step=10.0)
    c = prof.columns
    assert math.isclose(prof.length, 1550.0, abs_tol=0.01)
    assert (abs(c["grade_permille"]) <= 5.001).all() and c["grade_permille"].max() > 3.9
    # Elevation agrees with the grade: the integral of the grade over distance.
    import numpy as np

    rise = np.trapezoid(c["grade_permille"] / 1000.0, c["distance_m"])
    assert math.isclose(rise, c["elevation_m"][-1] - c["elevation_m"][0], abs_tol=0.05)
    assert set(np.round(c["speed_limit_kmh"])) >= {80.0}
    assert (np.diff(c["distance_m"]) > 0).all()


def test_profile_limits_follow_the_direction_of_travel(sample):
    # The 80 km/h post governs eastbound trains only; westbound it is passed from behind.
    east = profile_path(sample, PATHS / "MainWE.pat", step=10.0, category="freight")
    west = profile_path(sample, PATHS / "MainEW.pat", step=10.0)
    assert set(east.columns["speed_limit_kmh"].round()) == {120.0, 80.0}
    assert set(west.columns["speed_limit_kmh"].round()) == {120.0}
    assert any("other direction" in text for _at, text in west.events)
    assert any(text == "speed limit 80 km/h" for _at, text in east.events)


def test_profile_from_a_point_stops_at_a_track_end(sample):
    p = Traveller(sample, 4, 1000.0).pose()
    prof = profile_from(sample, p.tile_x, p.tile_z, p.x, p.z, 5000.0)
    assert math.isclose(prof.length, sample.node_length(4) - 1000.0, abs_tol=0.01)
    assert prof.events[-1][1] == "end of track"


def test_cli_profile_csv_and_plot(tmp_path):
    out_csv, out_png = tmp_path / "p.csv", tmp_path / "p.png"  # --plot: beside --out
    r = CliRunner().invoke(
        main,
        [
            "profile",
            str(SAMPLE_ROUTE),
            "--path",
            str(PATHS / "Siding.pat"),
            "--out",
            str(out_csv),
            "--plot",
        ],
    )
    assert r.exit_code == 0, r.output
    assert r.stderr == ""  # the new spellings: no deprecation warning
    with out_csv.open() as fh:
        rows = list(csv.DictReader(fh))
    assert math.isclose(float(rows[-1]["distance_m"]), 870.0, abs_tol=0.01)
    assert {"elevation_m", "grade_permille", "curvature_per_m", "speed_limit_kmh"} <= rows[0].keys()
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*tmp*"))


def test_cli_profile_needs_a_way():
    r = CliRunner().invoke(main, ["profile", str(SAMPLE_ROUTE)])
    assert r.exit_code == 2 and "--path" in r.output


def test_cli_locate(sample):
    p = Traveller(sample, 4, 333.0).pose()
    r = CliRunner().invoke(
        main,
        [
            "locate",
            str(SAMPLE_ROUTE),
            "--at",
            f"{p.tile_x},{p.tile_z},{p.x},{p.z}",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d.pop("schema") == "tdbtools.locate/1"
    assert d["node"] == 4 and math.isclose(d["offset"], 333.0, abs_tol=0.01)
    r = CliRunner().invoke(
        main,
        [
            "locate",
            str(SAMPLE_ROUTE),
            "--tile",
            str(p.tile_x),
            str(p.tile_z),
            "--pos",
            str(p.x + 40),
            str(p.z + 40),
        ],
    )
    assert r.exit_code == 2 and "no track within 2.5 m" in r.stderr


def test_cli_audit_sample_is_clean_and_json_has_closure():
    r = CliRunner().invoke(main, ["audit", str(SAMPLE_ROUTE), "--json", "--fail-on", "warning"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["findings"] == [] and d["closure"]["joins"] == 14 and d["closure"]["max"] < 0.001
    assert d["paths"]["counts"]["resolved"] == 4 and d["paths"]["counts"]["read_ok"] == 4


def test_dk24_paths_and_audit(dk24_audit):
    # Every path resolved once for the run (conftest.py), as `tdbtools audit` does.
    results = dk24_audit.path_resolution
    assert results is not None
    pats = sorted(p.name for p in (DK24_ROUTE / "PATHS").glob("*.pat"))
    assert [p.file for p in results] == pats and len(pats) == 313
    bad = {p.file: (list(p.problems) or [p.error]) for p in results if not p.ok}
    # 58.pat's two points lie 4.1 m beside the track, beyond Open Rails' 2.5 m.
    assert list(bad) == ["58.pat"] and "4.08 m away" in bad["58.pat"][0]
    for p in results:
        if p.ok:
            assert p.length_m > 0 and read_pat(DK24_ROUTE / "PATHS" / p.file).nodes
    # The command prints the same report (its path part is checked on the sample route).
    r = CliRunner().invoke(main, ["audit", str(DK24_ROUTE), "--json", "--fail-on", "warning", "--no-paths"])
    assert r.exit_code == 1  # findings exist
    d = json.loads(r.stdout)
    assert d.pop("schema") == "tdbtools.audit/1"
    want = {k: v for k, v in dk24_audit.to_json().items() if k not in ("paths", "path_resolution")}
    # Paths that do not resolve are findings of the audit with paths only.
    assert [f["message"][:7] for f in want["findings"] if f["code"] == "PATH_UNRESOLVED"] == ["58.pat:"]
    want["findings"] = [f for f in want["findings"] if f["code"] != "PATH_UNRESOLVED"]
    want["counts"] = {k: n for k, n in want["counts"].items() if k != "PATH_UNRESOLVED"}
    assert d == json.loads(json.dumps(want))
    gaps = sorted(f["value"] for f in d["findings"] if f["code"] == "GAP_IN_NODE")
    assert len(gaps) == 2 and abs(gaps[0] - 25.73) < 0.5 and abs(gaps[1] - 100.0) < 0.5
    assert d["closure"]["p99"] < 0.01
