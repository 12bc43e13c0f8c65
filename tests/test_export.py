"""Exports (GeoJSON, JSON, CSV, VTK) and conversion back to MSTS files."""

from __future__ import annotations

import csv
import io
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24

from tdbtools.errors import TdbToolsError
from tdbtools.export import (
    CSV_COLUMNS,
    IGH_X0,
    IGH_Y0,
    convert_route,
    csv_text,
    geojson_text,
    route_from_json,
    route_geojson,
    route_to_json,
    tdb_text,
    tile_to_lonlat,
    vtp_text,
    write_geojson,
    write_tdb,
    write_tsection,
)
from tdbtools.export import msts as msts_mod
from tdbtools.formats.route import load_route
from tdbtools.formats.tdb import read_tdb
from tdbtools.formats.tsection import read_tsection, read_tsection_file

pytest.importorskip("pyproj")


@pytest.fixture(scope="module")
def sample():
    return load_route(SAMPLE_ROUTE, cache=False)


def _km(lon1, lat1, lon2, lat2) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dl = math.radians(lon2 - lon1)
    c = math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(dl)
    return 6371.0 * math.acos(min(1.0, c))


# -- IGH ---------------------------------------------------------------------------------


def _or_goode_inverse_north_lobe(gx: float, gy: float) -> tuple[float, float]:
    """Open Rails' WorldLatLon.Goode_Inverse for region 2 (north of 40°44', east of
    −40°: Mollweide lobe centred on 30° E), written out independently of pyproj."""
    r = 6370997.0
    gx -= r * 0.523598775598
    theta = math.asin((gy + 0.0528035274542 * r) / (1.4142135623731 * r))
    lon = 0.523598775598 + gx / (0.900316316158 * r * math.cos(theta))
    lat = math.asin((2 * theta + math.sin(2 * theta)) / math.pi)
    return math.degrees(lon), math.degrees(lat)


def test_igh_constants_match_open_rails_formula():
    # WorldLatLon.ConvertWTC: X = ul_x + (tileX + 16385 − 1)·2048 + x, Y = ul_y − (16385 − tileZ − 1)·2048 + z
    for tx, tz in ((-5631, 15116), (0, 0), (1000, -2000)):
        assert tx * 2048 + 5.5 + IGH_X0 == -20013965 + (tx + 16385 - 1) * 2048 + 5.5
        assert tz * 2048 - 7.25 + IGH_Y0 == 8674008 - (16385 - tz - 1) * 2048 - 7.25


def test_pyproj_igh_agrees_with_open_rails_inverse():
    for tx, tz, x, z in (
        (-5575, 15130, -330.4, 438.4),
        (-5680, 15126, 899.2, 106.9),
        (-5663, 15116, -44.0, 943.7),
    ):
        lon, lat = tile_to_lonlat(tx, tz, x, z)
        elon, elat = _or_goode_inverse_north_lobe(tx * 2048 + x + IGH_X0, tz * 2048 + z + IGH_Y0)
        assert float(lon) == pytest.approx(elon, abs=1e-7)
        assert float(lat) == pytest.approx(elat, abs=1e-7)


# -- GeoJSON -----------------------------------------------------------------------------


def _check_geojson(g: dict) -> None:
    assert g["type"] == "FeatureCollection"
    kinds = set()
    for f in g["features"]:
        assert f["type"] == "Feature" and isinstance(f["properties"], dict)
        geom = f["geometry"]
        coords = geom["coordinates"] if geom["type"] == "LineString" else [geom["coordinates"]]
        if geom["type"] == "LineString":
            assert len(coords) >= 2
        else:
            assert geom["type"] == "Point"
        for c in coords:
            assert len(c) in (2, 3) and all(isinstance(v, (int, float)) and math.isfinite(v) for v in c)
            assert -180 <= c[0] <= 180 and -90 <= c[1] <= 90
        kinds.add(f["properties"]["kind"])
    json.dumps(g, allow_nan=False)  # strict JSON
    assert {"vector", "junction", "end"} <= kinds


def test_geojson_sample(sample, tmp_path):
    g = route_geojson(sample)
    _check_geojson(g)
    lines = [f for f in g["features"] if f["geometry"]["type"] == "LineString"]
    assert {f["properties"]["node"] for f in lines} == {
        n.index for n in sample.tdb.nodes[1:] if n.kind == "vector"
    }
    for f in lines:
        assert f["properties"]["length"] == pytest.approx(
            sample.node_length(f["properties"]["node"]), abs=1e-3
        )
    items = [f for f in g["features"] if f["properties"].get("type")]
    assert len(items) == len(sample.tdb.items)
    sig = next(f for f in items if f["properties"]["kind"] == "signal")
    assert "signal_type" in sig["properties"] and "s_data" in sig["properties"]
    out = write_geojson(sample, tmp_path / "s.geojson")
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(json.dumps(g))
    # Written feature by feature, the file is byte for byte the one-document text.
    assert out.read_bytes() == geojson_text(sample).encode("utf-8")
    assert write_geojson(sample, tmp_path / "n.geojson", items=False).read_bytes() == geojson_text(
        sample, items=False
    ).encode("utf-8")
    # The sample route uses DK24's tiles (-5631, 15116): Funen, Denmark.
    lon, lat = lines[0]["geometry"]["coordinates"][0][:2]
    assert 54.5 < lat < 57.8 and 8 < lon < 13


@needs_dk24
def test_geojson_dk24_in_denmark(dk24):
    g = route_geojson(dk24, max_chord_error=2.0)
    _check_geojson(g)
    pts = np.array(
        [
            c[:2]
            for f in g["features"]
            if f["geometry"]["type"] == "LineString"
            for c in f["geometry"]["coordinates"]
        ]
    )
    assert (pts[:, 1] > 54.5).all() and (pts[:, 1] < 57.8).all()
    assert (pts[:, 0] > 8).all() and (pts[:, 0] < 13).all()
    # The eastern end (tile −5575) is at Copenhagen (airport/Kastrup, 55.63 N 12.65 E),
    # the western end near Fredericia (55.57 N 9.75 E; the line runs on to Taulov).
    east = pts[np.argmax(pts[:, 0])]
    west = pts[np.argmin(pts[:, 0])]
    assert _km(*east, 12.65, 55.63) < 5
    assert _km(*west, 9.75, 55.565) < 10


@needs_dk24
def test_dk24_station_platform_at_tommerup(dk24):
    # The platform items are named "Tommerup, Spor 1..3" (station "Tommerup"):
    # Tommerup station on Funen is at about 55.350 N, 10.182 E.
    g = route_geojson(dk24, max_chord_error=5.0)
    plats = [f for f in g["features"] if f["properties"].get("kind") == "platform"]
    assert plats and all(f["properties"]["station"] == "Tommerup" for f in plats)
    for f in plats:
        lon, lat = f["geometry"]["coordinates"][:2]
        assert _km(lon, lat, 10.182, 55.350) < 2


# -- JSON --------------------------------------------------------------------------------


def test_json_round_trip_sample(sample):
    text = route_to_json(sample)
    back = route_from_json(text)
    assert back == sample
    assert back.tdb == sample.tdb and back.rdb == sample.rdb and back.tsection == sample.tsection
    assert back.trk == sample.trk and back.warnings == sample.warnings
    assert route_to_json(back) == text


def test_json_bad_input():
    with pytest.raises(TdbToolsError):
        route_from_json('{"format": "other"}')
    with pytest.raises(TdbToolsError):
        route_from_json("{nope")


@needs_dk24
def test_json_round_trip_dk24(dk24):
    back = route_from_json(json.loads(route_to_json(dk24)))
    assert back == dk24
    assert back.tdb == dk24.tdb and back.rdb == dk24.rdb and back.tsection == dk24.tsection


def test_json_back_to_msts(sample, tmp_path):
    r = route_from_json(route_to_json(sample))
    write_tdb(r.tdb, tmp_path / "x.tdb")
    assert read_tdb(tmp_path / "x.tdb") == sample.tdb


# -- CSV and VTK ---------------------------------------------------------------------------


def test_csv_columns(sample):
    text = csv_text(sample, step=5.0)
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    body = rows[1:]
    assert body and all(len(r) == len(CSV_COLUMNS) for r in body)
    nodes = {int(r[0]) for r in body}
    assert nodes == {n.index for n in sample.tdb.nodes[1:] if n.kind == "vector"}
    for r in body:
        assert -1024 <= float(r[4]) <= 1024 and -1024 <= float(r[6]) <= 1024
        assert 8 < float(r[7]) < 13 and 54.5 < float(r[8]) < 57.8
    # the last offset of every node is its length
    last = {}
    for r in body:
        last[int(r[0])] = float(r[1])
    for n, off in last.items():
        assert off == pytest.approx(sample.node_length(n), abs=1e-3)


@pytest.mark.parametrize("binary", [False, True])
def test_vtp(sample, binary):
    text = vtp_text(sample, step=10.0, binary=binary)
    root = ET.fromstring(text)
    assert root.tag == "VTKFile" and root.get("type") == "PolyData"
    piece = root.find("PolyData/Piece")
    npts, nlines = int(piece.get("NumberOfPoints")), int(piece.get("NumberOfLines"))
    n_vec = sum(1 for n in sample.tdb.nodes[1:] if n.kind == "vector")
    assert nlines == n_vec
    rows = csv_text(sample, step=10.0, lonlat=False).count("\n") - 1
    assert npts == rows
    names = {a.get("Name") for a in piece.find("PointData")}
    assert {"node", "grade_permille", "curvature"} <= names
    if not binary:
        pts = piece.find("Points/DataArray").text.split()
        assert len(pts) == 3 * npts
        offsets = [int(v) for v in piece.find("Lines/DataArray[@Name='offsets']").text.split()]
        assert offsets[-1] == npts and len(offsets) == nlines


# -- MSTS files ----------------------------------------------------------------------------


def _roundtrip_tdb(src: Path, tmp_path: Path) -> None:
    a = read_tdb(src)
    out = write_tdb(a, tmp_path / src.name)
    raw = out.read_bytes()
    assert raw.startswith(b"\xff\xfe" + "SIMISA@@@@@@@@@@JINX0T0t______\r\n".encode("utf-16-le"))
    assert b"\n\x00" not in raw.replace(b"\r\x00\n\x00", b"")
    assert read_tdb(out) == a


@pytest.mark.parametrize("name", ["SAMPLE.tdb", "SAMPLE.rdb"])
def test_tdb_round_trip_sample(name, tmp_path):
    _roundtrip_tdb(SAMPLE_ROUTE / name, tmp_path)


def test_tsection_round_trip_sample(sample, tmp_path):
    g = read_tsection_file(SAMPLE_INSTALL / "GLOBAL" / "tsection.dat", local=False)
    loc = read_tsection_file(SAMPLE_ROUTE / "tsection.dat", local=True)
    assert len(g.shapes) and loc.track_paths
    write_tsection(g, tmp_path / "g.dat", layout="global")
    write_tsection(loc, tmp_path / "l.dat", layout="local")
    assert read_tsection_file(tmp_path / "g.dat", local=False) == g
    assert read_tsection_file(tmp_path / "l.dat") == loc  # the signature makes it local
    assert read_tsection([tmp_path / "g.dat"], tmp_path / "l.dat") == sample.tsection


def test_convert_route_loads_back(sample, tmp_path):
    paths = convert_route(sample, tmp_path)
    assert {p.name for p in paths} == {"SAMPLE.trk", "SAMPLE.tdb", "SAMPLE.rdb", "tsection.dat"}
    assert read_tdb(tmp_path / "SAMPLE.tdb") == sample.tdb
    assert read_tdb(tmp_path / "SAMPLE.rdb") == sample.rdb
    ts = read_tsection([tmp_path / "OPENRAILS" / "tsection.dat"], tmp_path / "tsection.dat")
    assert ts == sample.tsection
    with pytest.raises(TdbToolsError, match="exists"):
        convert_route(sample, tmp_path)


@needs_dk24
@pytest.mark.parametrize("name", ["DK24.tdb", "DK24.rdb"])
def test_tdb_round_trip_dk24(name, tmp_path):
    _roundtrip_tdb(DK24_ROUTE / name, tmp_path)


@needs_dk24
@pytest.mark.slow  # ~6 s on its own (the global tsection.dat read four times, DK24 converted)
def test_tsection_round_trip_dk24(dk24, dk24_converted, tmp_path):
    g = read_tsection_file(DK24_ROUTE / "OPENRAILS" / "tsection.dat", local=False)
    loc = read_tsection_file(DK24_ROUTE / "tsection.dat", local=True)
    write_tsection(g, tmp_path / "g.dat")
    write_tsection(loc, tmp_path / "l.dat", layout="local")
    assert read_tsection_file(tmp_path / "g.dat", local=False) == g
    assert read_tsection_file(tmp_path / "l.dat", local=True) == loc
    assert read_tsection([tmp_path / "g.dat"], tmp_path / "l.dat") == dk24.tsection
    # the merged tables, split again into a global and a route-local file (by convert_route)
    out = dk24_converted
    assert read_tsection([out / "OPENRAILS" / "tsection.dat"], out / "tsection.dat") == dk24.tsection


def test_overwrite_refused(sample, tmp_path):
    target = tmp_path / "SAMPLE.tdb"
    target.write_bytes(b"original")
    with pytest.raises(TdbToolsError, match="exists"):
        write_tdb(sample.tdb, target)
    with pytest.raises(TdbToolsError, match="exists"):
        write_tsection(sample.tsection, target)
    assert target.read_bytes() == b"original"
    write_tdb(sample.tdb, target, overwrite=True)
    assert read_tdb(target) == sample.tdb


def test_atomic_no_partial_file(sample, tmp_path, monkeypatch):
    target = tmp_path / "SAMPLE.tdb"
    target.write_bytes(b"original")
    import os

    real_write = os.fdopen

    class Boom:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: Boom(real_write(fd, mode, *a, **k)))
    with pytest.raises(OSError):
        write_tdb(sample.tdb, target, overwrite=True)
    with pytest.raises(OSError):
        write_tdb(sample.tdb, tmp_path / "new.tdb")
    monkeypatch.undo()
    assert target.read_bytes() == b"original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SAMPLE.tdb"]


def test_exact_floats(sample):
    assert msts_mod.fmt_float(0.1 + 0.2) == repr(0.1 + 0.2)
    assert msts_mod.fmt_float(200.0) == "200" and msts_mod.fmt_float(-0.0) == "-0"
    with pytest.raises(TdbToolsError):
        msts_mod.fmt_float(math.nan)
    assert "00000001" in tdb_text(sample.rdb)  # hex flags kept as their text


@pytest.mark.parametrize("rows", [1, 7, 50, 1 << 17])
def test_route_sampled_in_runs_is_the_whole_route_sampled(sample, rows):
    from tdbtools.track.polylines import sample_route, sample_route_chunks

    whole = sample_route(sample, 0.5)
    runs = list(sample_route_chunks(sample, 0.5, rows=rows))
    assert np.array_equal(np.concatenate([p.points for p in runs]), whole.points)
    assert np.array_equal(np.concatenate([p.nodes for p in runs]), whole.nodes)
    sizes = np.concatenate([np.diff(p.offsets) for p in runs])
    assert np.array_equal(sizes, np.diff(whole.offsets))


@needs_dk24
def test_dk24_route_sampled_in_runs_is_the_whole_route_sampled(dk24):
    from tdbtools.track.polylines import sample_route, sample_route_chunks

    whole = sample_route(dk24, 0.5)
    runs = list(sample_route_chunks(dk24, 0.5, rows=100))
    assert len(runs) > 10
    assert np.array_equal(np.concatenate([p.points for p in runs]), whole.points)
    assert np.array_equal(np.concatenate([p.nodes for p in runs]), whole.nodes)
