"""3-D scenes and animations (tdbtools.render.scene / animate).

Image tests render offscreen with a fixed theme and window size and compare with
the references in tests/data/images/ (pyvista.compare_images, error below
IMAGE_THRESHOLD). To remake the references: TDBTOOLS_REGEN_IMAGES=1 pytest tests/test_render.py.
Without pyvista, or without a working OpenGL, those tests skip with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import DK24_ROUTE, REPO, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24, needs_pyvista

from tdbtools import load_route
from tdbtools.errors import TdbToolsError
from tdbtools.formats.tdb import EndNode, JunctionNode, VectorNode
from tdbtools.render import backend as backend_mod
from tdbtools.render import scene as scene_mod
from tdbtools.render import sceneview as view_mod
from tdbtools.render.scene import to_scene, train_boxes

IMAGES = Path(__file__).resolve().parent / "data" / "images"
IMAGE_THRESHOLD = 500.0  # pytest-pyvista's default error threshold
WINDOW = (640, 480)

# (renderer, northsouth: fixtures of conftest.py)


@pytest.fixture(scope="module")
def route():
    return load_route(SAMPLE_ROUTE, cache=False)


@pytest.fixture(scope="module")
def replayed(route):
    from tdbtools.render.animate import load_replay

    return load_replay(SAMPLE_INSTALL / "replay.toml", route=route)


# -- no heavy imports, pure numpy parts ---------------------------------------------------------


def test_import_is_light():
    code = (
        "import sys, tdbtools.render, tdbtools.render.scene, tdbtools.render.animate, tdbtools.render.plots\n"
        "import tdbtools.render.view, tdbtools.render.html\n"
        "heavy = [m for m in ('pyvista', 'vtk', 'vtkmodules', 'imageio', 'matplotlib', 'plotly') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_to_scene_is_right_handed_z_up():
    p = to_scene([100.0, 101.0], [5.0, 6.0], [200.0, 199.0], (100.0, 200.0))
    assert p.tolist() == [[0.0, 0.0, 5.0], [1.0, -1.0, 6.0]]  # x = X−X0 (east), y = Z−Z0 (north), z = Y


def test_train_boxes_oriented_by_bogies():
    front = np.array([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    rear = np.array([[0.0, 0.0, 0.0], [0.0, -10.0, 0.0]])  # car 1 heads north
    pts, faces = train_boxes(front, rear, [20.0, 16.0], 3.0, 4.0, lift=0.5)
    assert pts.shape == (16, 3) and faces.shape == (2 * 6 * 5,)
    a, b = pts[:8], pts[8:]
    assert np.allclose(a.min(axis=0), [-5.0, -1.5, 0.5]) and np.allclose(a.max(axis=0), [15.0, 1.5, 4.5])
    assert np.allclose(b.min(axis=0), [-1.5, -13.0, 0.5]) and np.allclose(b.max(axis=0), [1.5, 3.0, 4.5])
    assert (faces[::5] == 4).all() and faces.reshape(-1, 5)[:, 1:].max() == 15


def test_train_boxes_pitch_follows_grade():
    pts, _ = train_boxes([[10.0, 0.0, 1.0]], [[0.0, 0.0, 0.0]], 20.0, 3.0, 4.0, lift=0.0)
    floor = pts[:4]
    slope = (floor[1, 2] - floor[0, 2]) / (floor[1, 0] - floor[0, 0])
    assert slope == pytest.approx(0.1)


# -- errors ---------------------------------------------------------------------------------------


def test_no_pyvista_is_a_clear_error(monkeypatch, route):
    monkeypatch.setitem(sys.modules, "pyvista", None)
    with pytest.raises(TdbToolsError, match="pip install"):
        scene_mod.build_scene(route)


@needs_pyvista
def test_no_renderer_is_a_clear_error(monkeypatch, route, tmp_path):
    scene = scene_mod.build_scene(route)  # building needs no renderer
    monkeypatch.setattr(backend_mod, "_probe_cache", None)
    monkeypatch.setattr(
        backend_mod, "_probe", lambda timeout=60.0: (False, "a test render failed (signal 11)")
    )
    with pytest.raises(TdbToolsError, match=r"no renderer: .*libegl1 libgl1 libgl1-mesa-dri"):
        view_mod.render_png(scene, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
    from tdbtools.render.animate import render_animation

    with pytest.raises(TdbToolsError, match="no renderer"):
        render_animation(route, object(), tmp_path / "x.gif")


def test_probe_survives_a_crashing_child(monkeypatch):
    monkeypatch.setattr(backend_mod, "_PROBE", "import os; os.abort()")
    ok, detail = backend_mod._probe(timeout=30)
    assert not ok and "signal" in detail


@needs_pyvista
def test_bad_color_by(route):
    with pytest.raises(TdbToolsError, match="color_by"):
        scene_mod.build_scene(route, color_by="rainbow")


@needs_pyvista
def test_bad_animation_suffix(route, tmp_path):
    from tdbtools.render.animate import render_animation

    with pytest.raises(TdbToolsError, match=r"\.gif or an \.mp4"):
        render_animation(route, object(), tmp_path / "x.avi")


# -- scene contents (no rendering) ---------------------------------------------------------------


def _expected_counts(route):
    """Markers per layer, counted from the items' own classes and flags (a speed post
    with neither the warning nor the limit bit is a milepost: docs/formats.md §6.5)."""
    nodes = route.tdb.nodes[1:]
    items = [i for i in route.tdb.items if i.r_data is not None]
    exp = {
        "junction": sum(isinstance(n, JunctionNode) and n.uid is not None for n in nodes),
        "end": sum(isinstance(n, EndNode) and n.uid is not None for n in nodes),
    }
    for k in ("signal", "platform", "siding", "crossover", "levelcr", "soundregion"):
        exp[k] = sum(i.kind == k for i in items)
    exp["speedpost"] = sum(i.kind == "speedpost" and i.flags & 3 != 0 for i in items)
    exp["milepost"] = sum(i.kind == "speedpost" and i.flags & 3 == 0 for i in items)
    road = route.rdb.items if route.rdb is not None else ()
    exp["carspawner"] = sum(i.kind == "carspawner" and i.r_data is not None for i in road)
    return sum(isinstance(n, VectorNode) for n in nodes), exp


@needs_pyvista
@pytest.mark.parametrize("color_by", ["kind", "grade", "speed"])
def test_scene_contents(route, color_by):
    scene = scene_mod.build_scene(route, color_by=color_by)
    n_vector, exp = _expected_counts(route)
    assert scene.track.n_lines == scene.track.n_cells == n_vector == 3
    assert sorted(scene.track.cell_data["node"]) == [
        i for i, n in enumerate(route.tdb.nodes) if isinstance(n, VectorNode)
    ]
    assert {k: len(m) for k, m in scene.markers.items()} == exp
    assert exp == {
        "junction": 1,
        "end": 3,
        "signal": 3,
        "speedpost": 2,
        "milepost": 1,
        "platform": 2,
        "siding": 2,
        "crossover": 0,
        "levelcr": 1,
        "soundregion": 0,
        "carspawner": 2,
    }
    assert scene.markers["milepost"].labels == ("km 12",)  # its distance, not "12" as a speed
    assert scene.markers["speedpost"].labels == ("80", "80")
    assert scene.scalars in scene.track.array_names
    for m in scene.markers.values():
        assert m.glyphs.n_points == len(m)  # one point per marker: drawn at a size in pixels
    assert scene.markers["platform"].labels == ("Sampleby", "")  # a station once, not per platform end
    # the scene frame: x east, y north (Z), z up (Y); near the origin
    b = scene.track.bounds
    assert max(abs(v) for v in b[:4]) < 2 * 2048 and 0 < b[4] < 1000
    assert scene.grid.n_lines == 3 + 2  # tiles −5631…−5630 × 15116: 3 x-lines, 2 z-lines


@needs_pyvista
def test_scene_scalars(route):
    g = scene_mod.build_scene(route, color_by="grade").track.point_data["grade"]
    assert np.isfinite(g).all() and np.abs(g).max() < 50
    sp = scene_mod.build_scene(route, color_by="speed").track.point_data["speed_kmh"]
    assert np.isfinite(sp).all()
    assert set(np.round(np.unique(sp))) <= {80.0, 120.0, 100.0, 60.0, 40.0}, np.unique(sp)
    k = scene_mod.build_scene(route).track.cell_data["kind"]
    assert set(k.tolist()) <= {0, 1, 2}


@needs_pyvista
@needs_dk24
def test_dk24_scene_contents():
    route = load_route(DK24_ROUTE)
    scene = scene_mod.build_scene(route)
    n_vector, exp = _expected_counts(route)
    assert scene.track.n_cells == n_vector == 1381
    assert {k: len(m) for k, m in scene.markers.items()} == exp
    assert exp["junction"] == 819 and exp["end"] == 321
    # DK24 (MilepostUnitsKilometers): 50 of its 102 speed posts are kilometre posts
    # (flags 0x80 and 0x280), none of them drawn or labelled as a speed post
    assert exp["speedpost"] == 52 and exp["milepost"] == 50 and exp["crossover"] == 124
    assert all(t.startswith("km ") for t in scene.markers["milepost"].labels)
    assert not any(t.startswith("km") for t in scene.markers["speedpost"].labels)
    # grade from the sections' pitch: the colour bar within ±25 ‰ (a finite difference
    # across a join read 610,191 ‰ at one point), no point steeper than a section
    g = scene_mod.build_scene(route, color_by="grade")
    assert g.clim[1] == -g.clim[0] and g.clim[1] <= 25.0, g.clim
    from tdbtools.track.geometry import section_geometry

    pitch = np.nanmax(np.abs(np.tan(section_geometry(route).ax))) * 1000.0
    assert np.abs(g.track.point_data["grade"]).max() <= pitch + 1e-9


# -- trains ----------------------------------------------------------------------------------------


def test_cars_sit_on_the_track(route, replayed):
    from tdbtools.render.animate import TrainPlacer
    from tdbtools.track.polylines import sample_route

    result, rp = replayed
    origin = (0.0, 0.0)
    placer = TrainPlacer(result, origin, replay=rp)
    poly = sample_route(route, max_chord_error=0.01)
    track = to_scene(poly.points[:, 0], poly.points[:, 1], poly.points[:, 2], origin)
    a, b = track[:-1], track[1:]
    joins = poly.offsets[1:-1] - 1
    a, b = np.delete(a, joins, axis=0), np.delete(b, joins, axis=0)  # segments inside a node

    def dist(q):  # from q to the nearest track segment
        ab = b - a
        u = np.clip(np.einsum("ij,ij->i", q - a, ab) / np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-12), 0, 1)
        return float(np.min(np.linalg.norm(a + u[:, None] * ab - q, axis=1)))

    t0, t1 = placer.time_range
    for t in (t0, 0.5 * (t0 + t1), t1):
        front, rear, length = placer.bogies(t)
        assert len(front) == placer.n_cars == result.summary["trains"]["passenger"]["cars"]
        spacing = np.linalg.norm(front - rear, axis=1)
        assert np.all(spacing > 0.3 * length) and np.all(spacing <= length)
        for q in np.vstack([front, rear]):
            assert dist(q) < 0.5


def test_cars_from_trace_folder_follow_the_front(route, replayed, tmp_path):
    from tdbtools.render.animate import TrainPlacer, load_replay

    result, rp = replayed
    result.write(tmp_path)
    again, none = load_replay(tmp_path)
    assert none is None and set(again.traces) == {"passenger"}
    exact = TrainPlacer(result, (0.0, 0.0), replay=rp)
    approx = TrainPlacer(again, (0.0, 0.0))
    assert approx.n_cars == exact.n_cars
    t = 0.5 * sum(exact.time_range)
    fe, _, _ = exact.bogies(t)
    fa, _, _ = approx.bogies(t)
    assert np.max(np.linalg.norm(fe - fa, axis=1)) < 15.0  # the rigid fallback is close


def test_load_replay_errors(tmp_path):
    from tdbtools.render.animate import load_replay

    with pytest.raises(TdbToolsError, match="no such"):
        load_replay(tmp_path / "nothing")
    with pytest.raises(TdbToolsError, match="no train traces"):
        load_replay(tmp_path)


def test_frame_times():
    from tdbtools.render.animate import frame_times

    assert len(frame_times(0, 100, fps=10, speedup=10, max_frames=300)) == 101
    assert len(frame_times(0, 1000, fps=10, speedup=10, max_frames=300)) == 300
    assert len(frame_times(0, 0, fps=10, speedup=10, max_frames=300)) == 2
    assert frame_times(5, 9, fps=10, speedup=10, max_frames=300, frames=3).tolist() == [5, 7, 9]


# -- images ----------------------------------------------------------------------------------------


def _compare(img: np.ndarray, name: str) -> float:
    import pyvista as pv

    ref = IMAGES / name
    if os.environ.get("TDBTOOLS_REGEN_IMAGES") or not ref.exists():
        if not os.environ.get("TDBTOOLS_REGEN_IMAGES"):
            pytest.fail(f"no reference image {ref} (make it with TDBTOOLS_REGEN_IMAGES=1)")
        import imageio.v3 as iio

        IMAGES.mkdir(parents=True, exist_ok=True)
        iio.imwrite(ref, img)
    return float(pv.compare_images(img, str(ref)))


@pytest.mark.parametrize("color_by", ["kind", "grade", "speed"])
def test_scene_image(route, renderer, color_by):
    scene = scene_mod.build_scene(route, color_by=color_by)
    img = view_mod.screenshot(scene, window_size=WINDOW)
    assert img.shape == (WINDOW[1], WINDOW[0], 3)
    err = _compare(img, f"sample_{color_by}.png")
    assert err < IMAGE_THRESHOLD, (
        f"image differs from tests/data/images/sample_{color_by}.png: error {err:.0f}"
    )


@pytest.mark.parametrize(
    "fixture, color_by",
    [("short_sections", "grade"), ("with_mileposts", "kind"), ("dense_labels", "kind")],
)
def test_fixture_image(route, renderer, fixture, color_by):
    """References of the sub-metre-section, milepost and dense-label fixtures
    (tests/render_fixtures.py): grey-blue-red grade at ±5 ‰ (not ±1000 ‰), kilometre
    posts as their own layer, and the labels that fit of 50 sidings in 2 km."""
    import render_fixtures

    r = getattr(render_fixtures, fixture)(route)
    scene = scene_mod.build_scene(r, color_by=color_by)
    img = view_mod.screenshot(scene, window_size=WINDOW)
    name = f"fixture_{fixture}.png"
    err = _compare(img, name)
    assert err < IMAGE_THRESHOLD, f"image differs from tests/data/images/{name}: error {err:.0f}"


@pytest.mark.parametrize("which", ["sample", "northsouth"])
@pytest.mark.parametrize("view", ["map", "3d"])
def test_view_image(route, northsouth, renderer, which, view):
    r = route if which == "sample" else northsouth
    scene = scene_mod.build_scene(r, color_by="grade")
    img = view_mod.screenshot(scene, window_size=WINDOW, view=view)
    name = f"{which}_{view}.png"
    err = _compare(img, name)
    assert err < IMAGE_THRESHOLD, f"image differs from tests/data/images/{name}: error {err:.0f}"


def test_scene_image_with_train(route, renderer, replayed):
    from tdbtools.render.animate import TrainPlacer

    result, rp = replayed
    scene = scene_mod.build_scene(route)
    scene.trains = TrainPlacer(result, scene.origin, replay=rp).mesh(60.0)
    img = view_mod.screenshot(scene, window_size=WINDOW)
    scene.trains = None
    bare = view_mod.screenshot(scene, window_size=WINDOW)
    dark = (img.max(axis=2) < 40) & (bare.max(axis=2) >= 40)  # the black car boxes
    assert dark.sum() > 10
    err = _compare(img, "sample_train.png")
    assert err < IMAGE_THRESHOLD, f"image differs from tests/data/images/sample_train.png: error {err:.0f}"


def test_render_png_writes_a_png(route, renderer, tmp_path):
    out = view_mod.render_png(scene_mod.build_scene(route), tmp_path / "route.png", window_size=(320, 240))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["route.png"]


# -- animations ------------------------------------------------------------------------------------


def test_animation_gif(route, renderer, replayed, tmp_path):
    import imageio.v3 as iio

    from tdbtools.render.animate import render_animation

    result, rp = replayed
    out = render_animation(route, result, tmp_path / "run.gif", replay=rp, frames=7, window_size=(320, 240))
    frames = iio.imread(out, index=None)
    assert frames.shape[:3] == (7, 240, 320)
    assert [p.name for p in tmp_path.iterdir()] == ["run.gif"]


def test_animation_mp4(route, renderer, replayed, tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason="imageio-ffmpeg is not installed")
    import imageio.v2 as iio2

    from tdbtools.render.animate import render_animation

    result, rp = replayed
    out = render_animation(
        route, result, tmp_path / "run.mp4", replay=rp, frames=9, window_size=(320, 240), follow=False
    )
    reader = iio2.get_reader(out, format="FFMPEG")
    try:
        n = reader.count_frames()
        shape = reader.get_data(0).shape
    finally:
        reader.close()
    assert n == 9 and shape == (240, 320, 3)


def test_animation_from_trace_folder(route, renderer, replayed, tmp_path):
    import imageio.v3 as iio

    from tdbtools.render.animate import load_replay, render_animation

    replayed[0].write(tmp_path / "trace")
    result, _ = load_replay(tmp_path / "trace")
    out = render_animation(route, result, tmp_path / "t.gif", frames=3, window_size=(160, 128), labels=False)
    assert iio.imread(out, index=None).shape[0] == 3


def test_cli_render_png_and_gif(tmp_path):
    """`tdbtools render` draws a PNG, and animates a replay into a GIF (or says why not)."""
    from click.testing import CliRunner

    from tdbtools.cli import main

    sample = REPO / "sample_routes" / "sample"
    png = tmp_path / "route.png"
    r = CliRunner().invoke(
        main,
        [
            "render",
            str(sample / "ROUTES" / "SAMPLE"),
            "--out",
            str(png),
            "--replay",
            str(sample / "replay.toml"),
        ],
    )
    if r.exit_code == 2 and "renderer" in r.stderr:
        pytest.skip(f"no renderer here: {r.stderr.strip()[:200]}")
    assert r.exit_code == 0, r.output + r.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"
    r = CliRunner().invoke(
        main, ["render", str(sample / "ROUTES" / "SAMPLE"), "--out", str(tmp_path / "x.gif")]
    )
    assert r.exit_code == 2 and "needs --replay" in r.output


def test_animation_follows_a_train_with_clock_speed_colours_and_progress(
    route, renderer, replayed, tmp_path, capsys
):
    import imageio.v3 as iio

    from tdbtools.render.animate import render_animation

    result, rp = replayed
    out = render_animation(
        route,
        result,
        tmp_path / "f.gif",
        replay=rp,
        frames=4,
        window_size=(320, 240),
        follow="passenger",
        view_distance=400.0,
        progress=True,
        labels=False,
    )
    err = capsys.readouterr().err
    assert "4/4 frames" in err and "[" in err
    frames = iio.imread(out, index=None)
    mid = frames[:, 60:180, 100:220].astype(int)  # the followed train stays in the middle
    colourful = (np.ptp(mid, axis=3) > 60).sum(axis=(1, 2))  # cars coloured by speed, not black
    assert (colourful > 20).all(), colourful
    assert not np.array_equal(frames[0][:20], frames[-1][:20])  # the clock at the top changes
    with pytest.raises(TdbToolsError, match="no train 'nobody'"):
        render_animation(route, result, tmp_path / "g.gif", replay=rp, frames=2, follow="nobody")


def test_probe_success_is_remembered(monkeypatch, tmp_path, renderer):
    # The marker lives in the cache folder, wherever the user put it.
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "tdbtools"))
    ok, detail = backend_mod._probe(timeout=60)
    assert ok and "remembered" not in detail
    assert len(list((tmp_path / "tdbtools").glob("renderer-ok-*"))) == 1
    ok, detail = backend_mod._probe(timeout=60)
    assert ok and "remembered" in detail  # no child process the second time
    monkeypatch.setenv("DISPLAY", ":99")  # another display: probe again
    assert backend_mod._probe_marker() != next((tmp_path / "tdbtools").glob("renderer-ok-*"))


@needs_pyvista
def test_cars_follow_the_exaggerated_track(renderer):
    """A car on a 20 ‰ grade drawn ×50: each floor corner on the exaggerated rail under
    it (the body pitched with the drawn slope, its height true), not a level box whose
    ends cut into the track."""
    import pyvista as pv

    route = load_route(SAMPLE_ROUTE, cache=False)
    scene = scene_mod.build_scene(route)
    sv = view_mod.SceneView(scene, (320, 240), view="3d", exaggerate=50.0)
    try:
        base = sv.base
        rear = np.array([[0.0, 0.0, base + 1.0]])
        front = rear + [20.0, 0.0, 0.4]  # 20 ‰ over 20 m
        pts, faces = train_boxes(front, rear, 24.0, 3.0, 4.0, lift=0.3)
        out = sv.set_trains(pv.PolyData(pts, faces), lift=0.3).reshape(8, 3)
        rail = pts[:4, 2] - 0.3  # the true rail under each floor corner
        assert np.allclose(out[:4, 2], base + (rail - base) * 50.0 + 0.3)
        assert np.allclose(out[4:, 2] - out[:4, 2], pts[4:, 2] - pts[:4, 2])  # true height
        slope = (out[1, 2] - out[0, 2]) / (out[1, 0] - out[0, 0])
        assert slope == pytest.approx(0.02 * 50, rel=1e-3)
    finally:
        sv.close()
