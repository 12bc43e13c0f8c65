"""Framing, exaggeration, colour limits, labels, picking, focus and audit markers of
route pictures (tdbtools.render.view and scene.SceneView); docs/render.md."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from helpers import DK24_ROUTE, REPO, SAMPLE_ROUTE, needs_dk24

from tdbtools import load_route
from tdbtools.errors import TdbToolsError
from tdbtools.render import view as V

SHAPES = [(640, 480), (480, 640), (1000, 300), (300, 1000)]

# (renderer, northsouth: fixtures of conftest.py)


@pytest.fixture(scope="module")
def route():
    return load_route(SAMPLE_ROUTE, cache=False)


# -- pure numpy --------------------------------------------------------------------------------


def test_nice_length_and_limits():
    assert [V.nice_length(x) for x in (0.7, 1, 3.3, 7, 18, 260, 45000)] == [0.5, 1, 2, 5, 10, 200, 20000]
    g = np.concatenate([np.linspace(-14.0, 15.0, 1000), [80.0, -90.0]])  # two outliers
    assert V.robust_limits(g, symmetric=True) == (-20.0, 20.0)  # not ±90, not ±40 fixed
    lo, hi = V.robust_limits(np.linspace(60, 160, 100))
    assert lo <= 62 and hi >= 158 and hi - lo <= 120
    assert V.robust_limits([], symmetric=True) == (-1.0, 1.0)


def test_auto_exaggeration_makes_heights_visible():
    x = np.linspace(0, 200_000, 500)
    pts = np.column_stack([x, 0 * x, 10 + 100 * x / x[-1]])  # 100 m over 200 km
    e = V.auto_exaggeration(pts)
    assert 100 <= e <= 200
    assert V.auto_exaggeration(np.column_stack([x, 0 * x, 0 * x])) == 1.0  # flat: nothing to stretch
    hill = np.column_stack([x[:50] / 100, 0 * x[:50], np.linspace(0, 200, 50)])  # already steep: 1
    assert V.auto_exaggeration(hill) == 1.0


def _inside(px, size, margin):
    w, h = size
    return (
        np.isfinite(px).all()
        and px[:, 0].min() >= margin * w
        and px[:, 0].max() <= (1 - margin) * w
        and px[:, 1].min() >= margin * h
        and px[:, 1].max() <= (1 - margin) * h
    )


@pytest.mark.parametrize("view", V.VIEWS)
@pytest.mark.parametrize("size", SHAPES)
@pytest.mark.parametrize("axis", ["ew", "ns", "diag"])
def test_frame_fills_the_window_with_a_margin(view, size, axis):
    t = np.linspace(0, 1, 300)
    along = 5000 * t
    wiggle = 200 * np.sin(6 * t)
    xy = {"ew": (along, wiggle), "ns": (wiggle, along), "diag": (along, along + wiggle)}[axis]
    pts = np.column_stack([xy[0], xy[1], 40 + 30 * t])
    cam = V.frame(pts, view, size)
    px = V.project(cam, pts, size)
    assert _inside(px, size, 0.04)
    # ... and fills it: the extent reaches the margins in at least one direction
    span = (np.ptp(px[:, 0]) / size[0], np.ptp(px[:, 1]) / size[1])
    assert max(span) > 0.7, span
    if view == "map":  # north up: a point north of another is higher on the screen
        q = V.project(cam, np.array([[0, 0, 0], [0, 100, 0]]), size)
        assert q[1, 1] > q[0, 1] and abs(q[1, 0] - q[0, 0]) < 1e-6


def test_place_labels_never_overlap_and_keep_priority():
    rng = np.random.default_rng(1)
    anchors = rng.uniform(100, 300, size=(200, 2))  # crowded: 200 labels in 200×200 px
    texts = [f"label{i}" for i in range(200)]
    prio = [3 if i == 150 else 1 for i in range(200)]
    placed = V.place_labels(anchors, texts, prio, (640, 480), font_px=12, max_labels=1000)
    assert placed[0][0] == 150  # the station first
    assert 3 < len(placed) < 60  # crowded: far fewer than asked
    boxes = [(x, y, x + 0.62 * 12 * len(texts[i]), y + 15) for i, x, y in placed]
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            A, B = boxes[a], boxes[b]
            assert A[2] <= B[0] or B[2] <= A[0] or A[3] <= B[1] or B[3] <= A[1], (A, B)
    # far apart: all placed
    spread = np.column_stack([np.arange(10) * 60 + 20, np.full(10, 240)])
    assert len(V.place_labels(spread, ["ab"] * 10, [1] * 10, (640, 480))) == 10


# -- with VTK ---------------------------------------------------------------------------------


def _view(scene, view, size, **kw):
    from tdbtools.render.sceneview import SceneView

    return SceneView(scene, size, view=view, **kw)


@pytest.mark.parametrize("which", ["sample", "northsouth"])
@pytest.mark.parametrize("view", V.VIEWS)
@pytest.mark.parametrize("size", SHAPES[:3])
def test_route_projected_inside_frame(route, northsouth, renderer, which, view, size):
    """Through VTK's own camera matrix: every track point inside the window with a margin
    (the north-south route was cut off at both ends before)."""
    from tdbtools.render.scene import build_scene

    sv = _view(build_scene(route if which == "sample" else northsouth), view, size)
    try:
        px = sv.project(sv.track_points)
        assert _inside(px, size, 0.03), (px.min(axis=0), px.max(axis=0))
        # what is framed (the track and every marker, the car spawners off the track
        # too) fills the window in one direction
        fp = sv.project(sv._frame_points())
        assert max(np.ptp(fp[:, 0]) / size[0], np.ptp(fp[:, 1]) / size[1]) > 0.7
        img = sv.screenshot()
        dark = img.min(axis=2) < 200
        # nothing of the route touches the window's edge rows/columns beyond the overlays
        assert dark.any()
    finally:
        sv.close()


def test_3d_view_is_exaggerated_and_reports_it(route, renderer):
    from tdbtools.render.scene import build_scene

    scene = build_scene(route, color_by="grade")
    sv = _view(scene, "3d", (640, 480))
    try:
        assert sv.exaggeration > 5
        z = sv.track_points[:, 2]
        true = np.asarray(scene.track.points)[:, 2]
        assert np.ptp(z) == pytest.approx(np.ptp(true) * sv.exaggeration)
    finally:
        sv.close()
    sv = _view(scene, "3d", (640, 480), exaggerate=3.0)
    assert sv.exaggeration == 3.0
    sv.close()
    with pytest.raises(TdbToolsError, match="exaggerate"):
        _view(scene, "3d", (64, 48), exaggerate=-1.0)


def test_colour_scales_follow_the_data(route, renderer):
    from tdbtools.render.scene import build_scene

    g = build_scene(route, color_by="grade")
    lo, hi = g.clim
    assert lo == -hi and hi <= 10  # symmetric, from the data (sample grades ≈ ±5 ‰), not ±40
    k = build_scene(route, color_by="kind")
    sv = _view(k, "map", (320, 240))
    try:
        assert not sv.plotter.scalar_bars  # categories: a legend, not a 0–2 colour bar
    finally:
        sv.close()


def test_labels_do_not_overlap_and_station_first(route, northsouth, renderer):
    from tdbtools.render.scene import build_scene

    for r in (route, northsouth):
        sv = _view(build_scene(r), "map", (640, 480))
        try:
            placed = sv.placed_labels()
            assert placed and placed[0][:2] == ("platform", "Sampleby")
            for a in range(len(placed)):
                for b in range(a + 1, len(placed)):
                    A, B = placed[a][2:], placed[b][2:]
                    assert A[2] <= B[0] or B[2] <= A[0] or A[3] <= B[1] or B[3] <= A[1]
            sv.toggle("labels")
            assert sv.placed_labels() == []
        finally:
            sv.close()


def test_pick_track_item_and_nothing(route, renderer):
    from tdbtools.render.scene import build_scene

    scene = build_scene(route, color_by="speed")
    sv = _view(scene, "map", (640, 480))
    try:
        pd = scene.track.point_data
        k = int(np.argmax(pd["offset_m"]))
        same = np.flatnonzero(pd["node"] == pd["node"][k])
        j = int(same[np.argmin(np.abs(pd["offset_m"][same] - 0.45 * pd["offset_m"][k]))])  # mid-node
        x, y = sv.project(sv.track_points[j : j + 1])[0]
        info = sv.pick(x, y)
        assert info["kind"] == "track" and info["node"] == int(pd["node"][j])
        assert {
            "section",
            "section_id",
            "offset_m",
            "grade_permille",
            "curvature_per_km",
            "speed_limit_kmh",
        } <= info.keys()
        m = scene.markers["platform"]
        x, y = sv.project(sv.marker_points["platform"][:1])[0]
        info = sv.pick(x, y)
        assert info["kind"] == "platform" and info["item"] == int(m.ids[0])
        assert info["station"] == "Sampleby"
        assert sv.pick(2, 2) is None
        assert (
            sv.click(x, y)["kind"] == "platform" and "station: Sampleby" in sv.info_text
        )  # as a click shows it
        assert sv.click(2, 2) is None and sv.info_text == "nothing here"
        assert sv.key("3") is False and sv.key("3") is True and sv.key("x") is None  # audit layer off, on
        assert sv.key("1") is False
        assert all(not a.GetVisibility() for a in sv.actors["markers"])
        assert (sv.pick(x, y) or {}).get("kind") != "platform"  # hidden markers are not picked
    finally:
        sv.close()


def test_focus_specs(route, renderer):
    from tdbtools.render.scene import build_scene, resolve_focus

    scene = build_scene(route)
    pts, label = resolve_focus(route, scene, "node:2")
    assert label == "node 2" and len(pts) > 4
    assert resolve_focus(route, scene, "3")[1] == "node 3"
    pts, label = resolve_focus(route, scene, "sampleby")
    assert label == "sampleby"
    item = int(scene.markers["signal"].ids[0])
    assert resolve_focus(route, scene, f"item:{item}")[1] == f"item {item}"
    pts, _ = resolve_focus(route, scene, "-5631,15116,200,-310")
    assert np.ptp(pts[:, 0]) == pytest.approx(2 * 150.0)
    for bad, msg in (
        ("node:999", "no track node"),
        ("nowhere", "not a node"),
        ("GAP_IN_NODE", "finds no"),
        ("item:x", "needs a number"),
    ):
        with pytest.raises(TdbToolsError, match=msg):
            resolve_focus(route, scene, bad)
    sv = _view(build_scene(route, focus="node:2"), "map", (640, 480))
    try:
        full = _view(scene, "map", (640, 480))
        assert sv.current_camera().parallel_scale < full.current_camera().parallel_scale
        full.close()
    finally:
        sv.close()


@pytest.mark.dk24
@needs_dk24
def test_dk24_audit_markers_and_gap_focus(renderer):
    from tdbtools.render.scene import build_scene
    from tdbtools.track.audit import audit_route

    r = load_route(DK24_ROUTE)
    report = audit_route(r)
    scene = build_scene(r, color_by="grade", audit=report, focus="GAP_IN_NODE")
    f = scene.markers["finding"]
    assert len(f) == len([x for x in report.findings if x.location is not None]) > 0
    assert {lab.split(" ")[0] for lab in f.labels} == set(report.counts)
    assert "GAP_IN_NODE (node 660, 100.0 m)" in f.labels
    assert scene.gaps.n_lines == len(report.by_code("GAP_IN_NODE")) == 2
    sv = _view(scene, "map", (800, 600))
    try:
        assert sv.current_camera().metres_per_pixel(600) < 2.0  # a place, not the whole route
        placed = [p for p in sv.placed_labels() if p[0] == "finding"]
        assert placed and placed[0][1] == "GAP_IN_NODE (node 660, 100.0 m)"
        gx, gy = sv.project(sv.marker_points["finding"])[
            list(f.labels).index("GAP_IN_NODE (node 660, 100.0 m)")
        ]
        info = sv.pick(gx, gy)
        assert info["kind"] == "finding" and info["code"] == "GAP_IN_NODE" and 660 in info["nodes"]
    finally:
        sv.close()


def test_headless_render_prints_no_x_warning(tmp_path, renderer):
    out = tmp_path / "x.png"
    code = (
        "from tdbtools import load_route\nfrom tdbtools.render import build_scene, render_png\n"
        f"render_png(build_scene(load_route({str(SAMPLE_ROUTE)!r})), {str(out)!r}, window_size=(160, 120))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "DISPLAY"}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "bad X server" not in r.stderr and "WARN" not in r.stderr, r.stderr
    assert out.is_file()


def test_frame_rejects_unknown_view():
    with pytest.raises(ValueError):
        V.frame(np.zeros((3, 3)), "side", (10, 10))
    assert math.isclose(V.Camera((0, 0, 10), (0, 0, 0), (0, 1, 0), True, 5.0).metres_per_pixel(100), 0.1)


def test_cli_render_views_focus_audit_html(tmp_path, renderer):
    from click.testing import CliRunner

    from tdbtools.cli import main

    run = CliRunner().invoke
    png = tmp_path / "r.png"
    r = run(
        main,
        [
            "render",
            str(SAMPLE_ROUTE),
            "--out",
            str(png),
            "--view",
            "3d",
            "--exaggerate",
            "20",
            "--size",
            "400x300",
            "--focus",
            "Sampleby",
            "--audit",
            "--color-by",
            "grade",
        ],
    )
    assert r.exit_code == 0, r.output + r.stderr
    import imageio.v3 as iio

    assert iio.imread(png).shape[:2] == (300, 400)
    pytest.importorskip("plotly")
    page = tmp_path / "r.html"
    r = run(main, ["render", str(SAMPLE_ROUTE), "--out", str(page)])
    assert r.exit_code == 0 and "<title>tdbtools sample route" in page.read_text(encoding="utf-8")
    for args, msg in (
        (["--focus", "nowhere"], "not a node"),
        (["--size", "12"], "WIDTHxHEIGHT"),
        (["--out", str(tmp_path / "x.svg")], ".png, .html"),
        (["--exaggerate", "-2"], "exaggerate"),
    ):
        fresh = tmp_path / "fresh.png"  # never written: every case fails before writing
        r = run(
            main, ["render", str(SAMPLE_ROUTE), *args] + ([] if "--out" in args else ["--out", str(fresh)])
        )
        assert r.exit_code == 2 and msg in r.output + r.stderr, (args, r.output + r.stderr)
        assert "Traceback" not in r.output + r.stderr
    assert not list(tmp_path.glob(".*")) and not (tmp_path / "fresh.png").exists()
    r = run(main, ["render", str(SAMPLE_ROUTE), "--out", str(png)])
    assert r.exit_code == 2 and "--overwrite" in r.output + r.stderr  # an existing picture is kept
    r = run(main, ["render", str(SAMPLE_ROUTE), "--out", str(png), "--overwrite", "--size", "200x100"])
    assert r.exit_code == 0 and iio.imread(png).shape[:2] == (100, 200)
    # --path: a name in the route's PATHS folder; a missing one is bad input; a path that
    # does not resolve to its end is drawn as far as it goes, said on stderr, exit 1
    r = run(main, ["render", str(SAMPLE_ROUTE), "--out", str(png), "--overwrite", "--path", "MainWE"])
    assert r.exit_code == 0, r.output + r.stderr
    r = run(main, ["render", str(SAMPLE_ROUTE), "--out", str(png), "--overwrite", "--path", "nothing.pat"])
    assert r.exit_code == 2 and "no such file" in r.output + r.stderr
    text = (SAMPLE_ROUTE / "PATHS" / "MainWE.pat").read_text(encoding="utf-16")
    bad = tmp_path / "bad.pat"
    bad.write_text(text.replace("-760.357921", "-1760.357921"), encoding="utf-16")  # last point off the track
    r = run(main, ["render", str(SAMPLE_ROUTE), "--out", str(png), "--overwrite", "--path", str(bad)])
    assert r.exit_code == 1 and "warning: path" in r.stderr, r.output + r.stderr


# -- grades, item layers, paths, lat/lon (issue 30) -------------------------------------------


def test_grade_limits_use_the_98th_percentile_of_magnitude():
    g = np.r_[np.full(198, 3.0), [-800.0, 610191.0]]  # 1 % freak points do not set the scale
    assert V.grade_limits(g) == (-5.0, 5.0)
    assert V.grade_limits(-np.abs(g)) == (-5.0, 5.0)  # symmetric whichever way the data lean
    assert V.grade_limits(np.full(10, 5.00004)) == (-5.0, 5.0)  # a float32 pitch's 5 ‰ is 5
    assert V.grade_limits([]) == (-1.0, 1.0)


def test_exaggeration_keeps_a_flat_route_legible():
    # 50 km with 60 m of rise, grades up to 11 ‰: the old rule gave ×100, drawing 11 ‰ at 1.1
    x = np.linspace(0, 50_000, 501)
    pts = np.column_stack([x, np.zeros_like(x), 60.0 * np.sin(x / 8000.0) ** 2])
    old = V.auto_exaggeration(pts)
    e = V.auto_exaggeration(pts, grades=np.full(len(x), 11.0))
    assert old > 90 and e == pytest.approx(0.35 / 0.011)
    assert V.auto_exaggeration(pts, grades=np.zeros(len(x))) == pytest.approx(old)  # level: no cap


@pytest.mark.usefixtures("renderer")
def test_grade_from_pitch_on_sub_metre_sections(route):
    """Sections of 0.4 m whose next start is recorded 2 cm higher (as real routes round
    them): a difference between sample points a millimetre apart read 10⁴ ‰ there; the
    section's own pitch is the route's ±5 ‰."""
    from render_fixtures import short_sections

    from tdbtools.render.scene import build_scene
    from tdbtools.track.geometry import section_geometry
    from tdbtools.track.polylines import sample_route

    short = short_sections(route)
    assert (np.asarray(short.section_length) < 1.0).sum() >= 5
    poly = sample_route(section_geometry(short), 0.5)
    P = np.asarray(poly.points)
    d = np.diff(P, axis=0)
    h = np.hypot(d[:, 0], d[:, 2])
    naive = np.abs(np.divide(d[:, 1], h, out=np.zeros_like(h), where=h > 1e-6)) * 1000.0
    assert naive.max() > 1000  # the fixture has what broke the old grade
    scene = build_scene(short, color_by="grade")
    g = np.asarray(scene.track.point_data["grade"])
    pitch = np.abs(np.tan(section_geometry(short).ax)).max() * 1000.0
    assert np.abs(g).max() <= pitch + 1e-9 and pitch == pytest.approx(5.0, abs=0.01)
    assert scene.clim == (-5.0, 5.0)
    sv = _view(scene, "map", (640, 480))
    try:
        for j in np.linspace(0, len(sv.track_points) - 1, 40).astype(int):
            x, y = sv.project(sv.track_points[j : j + 1])[0]
            info = sv.pick(x, y)
            if info and info["kind"] == "track":
                assert abs(info["grade_permille"]) <= 5.01
    finally:
        sv.close()


@pytest.mark.usefixtures("renderer")
def test_mileposts_are_their_own_layer(route):
    from render_fixtures import with_mileposts

    from tdbtools.render.scene import build_scene

    scene = build_scene(with_mileposts(route))
    mp, sp = scene.markers["milepost"], scene.markers["speedpost"]
    assert len(mp) == 1 + 10 and len(sp) == 2 + 10
    assert all(t.startswith("km ") for t in mp.labels) and not any(t.startswith("km") for t in sp.labels)
    assert "km 120" in mp.labels and "60" in sp.labels
    sv = _view(scene, "map", (640, 480))
    try:
        x, y = sv.project(sv.marker_points["milepost"][1:2])[0]
        info = sv.pick(x, y, radius=3)
        assert info["kind"] == "milepost" and info["type"] == "milepost" and info["milepost"] == 120.0
        assert "speed_kmh" not in info
    finally:
        sv.close()


@pytest.mark.usefixtures("renderer")
def test_path_drawn_with_direction_points_and_stops(route):
    from tdbtools.render.scene import build_scene
    from tdbtools.track.paths import resolve_path

    folder = SAMPLE_ROUTE
    scene = build_scene(route, paths=["MainWE.pat", "Siding"])
    main, siding = scene.paths
    res = resolve_path(route, folder / "PATHS" / "MainWE.pat")
    assert main.name == res.name and main.color != siding.color and not main.problems
    kinds = [k for k, _p, _t in main.points]
    assert kinds[0] == "start" and kinds[-1] == "end"
    line = main.line[np.isfinite(main.line[:, 0])]
    # the drawn line is as long as the path, from its start point to its end point
    seg = np.hypot(*np.diff(line[:, :2], axis=0).T)
    assert seg.sum() == pytest.approx(res.length, rel=0.02)
    start, end = main.points[0][1], main.points[-1][1]
    assert np.hypot(*(line[0, :2] - start[:2])) < 1.0 and np.hypot(*(line[-1, :2] - end[:2])) < 1.0
    # every arrow points the way the path is driven: towards the end
    for _p, u in main.arrows:
        assert np.dot(u[:2], end[:2] - start[:2]) > 0
    # an activity: every service's path, with its booked stops
    act = build_scene(route, paths=[str(folder / "ACTIVITIES" / "Morning.act")])
    assert len(act.paths) >= 2
    stops = [t for ov in act.paths for k, _p, t in ov.points if k == "station"]
    assert stops and all("Sampleby" in t for t in stops)
    assert any(k == "wait" for ov in act.paths for k, _p, _t in ov.points)
    sv = _view(scene, "map", (640, 480))
    try:
        assert sv.actors["paths"] and sv._path_arrows
        assert {"path: " + main.name, "path: " + siding.name} <= {t for k, t, *_ in sv.placed_labels()} | {
            f"path: {ov.name}" for ov in scene.paths
        }
        assert sv.toggle("paths") is False and not any(a.GetVisibility() for a in sv.actors["paths"])
    finally:
        sv.close()
    with pytest.raises(TdbToolsError, match="no such file"):
        build_scene(route, paths=["nothing.pat"])
    with pytest.raises(TdbToolsError, match="no such file"):
        build_scene(route, paths=["../PATHS/MainWE.pat"])  # only plain names are looked up


@pytest.mark.usefixtures("renderer")
def test_pick_gives_lat_lon_and_keeps_clear_of_the_north_arrow(route):
    pytest.importorskip("pyproj")
    from tdbtools.export.geo import world_to_lonlat
    from tdbtools.render.scene import build_scene

    scene = build_scene(route, lonlat=world_to_lonlat)
    sv = _view(scene, "map", (640, 480))
    try:
        j = len(sv.track_points) // 2
        x, y = sv.project(sv.track_points[j : j + 1])[0]
        info = sv.click(x, y)
        P = np.asarray(scene.track.points)[j]
        lon, lat = world_to_lonlat(P[0] + scene.origin[0], P[1] + scene.origin[1])
        assert info["lat"] == pytest.approx(float(lat), abs=1e-6) and info["lon"] == pytest.approx(
            float(lon), abs=1e-6
        )
        assert 54 < info["lat"] < 58 and 8 < info["lon"] < 13  # the sample lies on Funen
        # the pick text hangs from the upper left, below the title: not over the north
        # arrow (lower right) nor the scale bar (lower left)
        px, py = sv._pick_actor.GetPosition()
        assert px < 0.2 * 640 and py > 0.8 * 480
    finally:
        sv.close()
