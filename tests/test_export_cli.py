"""The export and convert commands: formats, atomic files, no overwriting, round trips."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from helpers import SAMPLE_ROUTE

from tdbtools.cli import main
from tdbtools.formats import load_route


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_export_each_format(tmp_path):
    pytest.importorskip("pyproj")
    for fmt, check in (
        ("geojson", lambda t: json.loads(t)["type"] == "FeatureCollection"),
        ("json", lambda t: "tdb" in json.loads(t)),
        ("csv", lambda t: t.splitlines()[0].startswith("node,offset")),
        ("vtk", lambda t: t.lstrip().startswith("<?xml") or "<VTKFile" in t),
    ):
        out = tmp_path / f"sample.{'vtp' if fmt == 'vtk' else fmt}"
        r = run("export", SAMPLE_ROUTE, "--format", fmt, "--out", out)
        assert r.exit_code == 0, r.output
        assert check(out.read_text(encoding="utf-8")), fmt
        again = run("export", SAMPLE_ROUTE, "--format", fmt, "--out", out)
        assert again.exit_code == 2 and "not overwritten" in again.stderr


def test_convert_round_trip_through_json(tmp_path):
    src = load_route(SAMPLE_ROUTE, cache=False)
    assert run("export", SAMPLE_ROUTE, "--format", "json", "--out", tmp_path / "m.json").exit_code == 0
    dst = tmp_path / "ROUTES" / "COPY"
    r = run("convert", tmp_path / "m.json", "--out", dst)
    assert r.exit_code == 0, r.output
    back = load_route(dst, cache=False)
    assert back == src
    assert (dst / "SAMPLE.tdb").read_bytes()[:2] == b"\xff\xfe"
    # A second convert into the same folder refuses to overwrite anything.
    before = {p: p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    r = run("convert", SAMPLE_ROUTE, "--out", dst)
    assert r.exit_code == 2 and "not overwritten" in r.stderr
    assert {p: p.read_bytes() for p in dst.rglob("*") if p.is_file()} == before


def test_convert_refuses_its_own_folder():
    r = run("convert", SAMPLE_ROUTE, "--out", SAMPLE_ROUTE)
    assert r.exit_code == 2


def test_a_vtk_name_is_refused_with_the_right_one_named(tmp_path):
    # VTK reads .vtk as its legacy format; the export is XML PolyData (.vtp).
    for args in (("--out", tmp_path / "x.vtk"), ("--format", "vtk", "--out", tmp_path / "x.vtk")):
        r = run("export", SAMPLE_ROUTE, *args)
        assert r.exit_code == 2 and ".vtp" in r.stderr, r.output
        assert not (tmp_path / "x.vtk").exists()
    from tdbtools.export import ExportError, export_route

    with pytest.raises(ExportError, match=r"\.vtp"):
        export_route(load_route(SAMPLE_ROUTE), "vtk", tmp_path / "y.vtk")
    assert not (tmp_path / "y.vtk").exists()
