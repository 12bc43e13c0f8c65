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
    from tdbtools.render.scene import SceneView

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
        assert max(np.ptp(px[:, 0]) / size[0], np.ptp(px[:, 1]) / size[1]) > 0.7
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
        "from tdbtools import load_route\nfrom tdbtools.render.scene import build_scene, render_png\n"
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
