"""The interactive HTML page (tdbtools.render.html) in a real headless browser:
Debian's chromium driven by Playwright (never a browser downloaded by Playwright's
own installer). Skips with the reason when either is missing."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_ROUTE, needs_dk24

from tdbtools import load_route

CHROMIUM = next(
    (
        p
        for p in ("/usr/bin/chromium", shutil.which("chromium") or "", shutil.which("chromium-browser") or "")
        if p and Path(p).is_file()
    ),
    None,
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]
VIEWPORT = {"width": 1280, "height": 800}
READY = (
    "() => { const gd = document.querySelector('.js-plotly-plot'); return gd && gd.dataset.fitted === '1'; }"
)


@pytest.fixture(scope="module")
def sample_scene():
    from tdbtools.render.scene import build_scene

    try:
        from tdbtools.export.geo import world_to_lonlat

        world_to_lonlat([0.0], [0.0])  # raises without pyproj
    except Exception:  # no pyproj: no lat/lon in the hover
        world_to_lonlat = None
    return build_scene(load_route(SAMPLE_ROUTE, cache=False), color_by="grade", lonlat=world_to_lonlat)


@pytest.fixture(scope="module")
def sample_html(tmp_path_factory, sample_scene):
    pytest.importorskip("plotly", reason="plotly is not installed (pip install 'tdbtools[render]')")
    from tdbtools.render.html import write_html

    out = tmp_path_factory.mktemp("html") / "sample.html"
    return write_html(sample_scene, out)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
    )
    if CHROMIUM is None:
        pytest.skip("no chromium here (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _open(browser, path: Path):
    page = browser.new_page(viewport=VIEWPORT)
    outside: list[str] = []
    page.on(
        "request",
        lambda r: None if r.url.startswith(("file:", "data:", "blob:", "about:")) else outside.append(r.url),
    )
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_function(READY, timeout=60_000)
    return page, time.perf_counter() - t0, outside


def test_page_is_self_contained(sample_html):
    from html.parser import HTMLParser

    text = sample_html.read_text(encoding="utf-8")
    external: list[str] = []

    class Tags(HTMLParser):  # script bodies are not parsed as tags, so strings in plotly.js do not count
        def handle_starttag(self, tag, attrs):
            external.extend(
                v or "" for k, v in attrs if k in ("src", "href") and tag in ("script", "link", "img")
            )

    Tags().feed(text)
    assert external == []  # plotly.js is inside the file
    assert "plotly.js (gl3d - minified) v" in text[:5000]  # the 3-D bundle, in the head
    assert sample_html.stat().st_size < 2_500_000
    assert "Plotly.newPlot" in text and "tdbFit" in text
    assert not list(sample_html.parent.glob(".*tmp*"))


def test_vendored_bundle_matches_plotly(monkeypatch):
    pytest.importorskip("plotly")
    from tdbtools.render import html as H

    assert H._vendored_plotlyjs() is not None
    import plotly.offline

    monkeypatch.setattr(plotly.offline, "get_plotlyjs_version", lambda: "0.0.1")
    assert H._vendored_plotlyjs() is None  # another plotly.js: embed plotly's own full bundle instead


@pytest.mark.slow
def test_page_in_browser_draws_fills_and_hovers(browser, sample_html, sample_scene, tmp_path):
    page, seconds, outside = _open(browser, sample_html)
    try:
        assert outside == []  # no network needed
        shot = tmp_path / "page.png"
        page.screenshot(path=str(shot))
        import imageio.v3 as iio

        img = iio.imread(shot)[..., :3].astype(int)
        box = page.locator(".gl-container canvas").bounding_box()
        x0, y0 = int(box["x"]), int(box["y"])
        plot = img[y0 : y0 + int(box["height"]), x0 : x0 + int(box["width"])]
        inked = (plot.min(axis=2) < 200).mean()
        assert inked > 0.002, inked  # the scene is drawn, not a blank canvas
        # the route fills the plot with a margin
        scene = sample_scene  # the scene the page was written from
        pts = np.asarray(scene.track.points)
        px = np.array(page.evaluate("pts => pts.map(p => window.tdbProject(p))", pts.tolist()))
        w, h = box["width"], box["height"]
        assert px[:, 0].min() > x0 + 0.02 * w and px[:, 0].max() < x0 + 0.98 * w
        assert px[:, 1].min() > y0 + 0.02 * h and px[:, 1].max() < y0 + 0.98 * h
        assert max(np.ptp(px[:, 0]) / w, np.ptp(px[:, 1]) / h) > 0.7
        # hover a track point in the middle of a node: its data appears
        pd = scene.track.point_data
        k = int(np.argmax(pd["offset_m"]))
        same = np.flatnonzero(pd["node"] == pd["node"][k])
        j = int(same[np.argmin(np.abs(pd["offset_m"][same] - 0.45 * pd["offset_m"][k]))])
        x, y = page.evaluate("p => window.tdbProject(p)", pts[j].tolist())
        page.mouse.move(x - 30, y - 30)
        page.mouse.move(x, y, steps=4)
        page.wait_for_selector(".hovertext", timeout=10_000)
        text = page.evaluate("() => document.querySelector('.hovertext').textContent")
        assert "node" in text and "grade" in text and "offset" in text, text
        if "lat" in pd:  # the point's latitude and longitude (the sample lies on Funen)
            import re

            m = re.search(r"lat (\d+\.\d{6}), lon (\d+\.\d{6})", text)
            assert m and abs(float(m[1]) - pd["lat"][j]) < 1e-5 and abs(float(m[2]) - pd["lon"][j]) < 1e-5, (
                text
            )
        # layer toggle: a click on a legend entry hides that layer
        page.mouse.move(5, 5)
        before = page.evaluate("() => document.querySelector('.js-plotly-plot').data.map(t => t.visible)")
        lb = page.locator(".legendtext", has_text="signals").bounding_box()
        page.mouse.click(lb["x"] + lb["width"] / 2, lb["y"] + lb["height"] / 2)  # as a user clicks it
        # plotly waits out its double-click delay before it toggles
        page.wait_for_function(
            "() => document.querySelector('.js-plotly-plot').data"
            ".some(t => t.name === 'signals' && t.visible === 'legendonly')",
            timeout=10_000,
        )
        after = page.evaluate("() => document.querySelector('.js-plotly-plot').data.map(t => t.visible)")
        names = page.evaluate("() => document.querySelector('.js-plotly-plot').data.map(t => t.name)")
        i = names.index("signals")
        assert before[i] is True and after[i] == "legendonly"
        # the 3-D button turns the camera into a perspective view, framed again
        bb = page.locator(".updatemenu-button", has_text="3-D").bounding_box()
        page.mouse.click(bb["x"] + bb["width"] / 2, bb["y"] + bb["height"] / 2)
        page.wait_for_function(READY, timeout=30_000)
        proj = page.evaluate(
            "() => document.querySelector('.js-plotly-plot')._fullLayout.scene.camera.projection.type"
        )
        assert proj == "perspective"
        px = np.array(page.evaluate("pts => pts.map(p => window.tdbProject(p))", pts.tolist()))
        assert (
            px[:, 0].min() > x0
            and px[:, 0].max() < x0 + w
            and px[:, 1].min() > y0
            and px[:, 1].max() < y0 + h
        )
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.dk24
@needs_dk24
def test_dk24_page_opens(browser, dk24, tmp_path):
    from tdbtools.render.html import write_html
    from tdbtools.render.scene import build_scene

    out = write_html(build_scene(dk24, color_by="grade", audit=True), tmp_path / "dk24.html")
    page, seconds, outside = _open(browser, out)
    try:
        assert outside == []
        # Under 5 s on an idle 2-core machine (docs/render.md §7); no wall-clock bound
        # here (the browser runs in another process): _open's 60 s wait catches a hang.
        names = page.evaluate("() => document.querySelector('.js-plotly-plot').data.map(t => t.name)")
        assert "audit findings" in names and "gaps in nodes" in names
    finally:
        page.close()


def _label_boxes(page):
    """Pixel boxes (x0, y0, x1, y1) and texts of the labels drawn now."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.annotation-scene')].map(e => {"
        " const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom, e.textContent]; })"
    )


def _overlaps(boxes):
    return [
        (a[4], b[4])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    ]


@pytest.fixture(scope="module")
def dense_html(tmp_path_factory):
    pytest.importorskip("plotly", reason="plotly is not installed (pip install 'tdbtools[render]')")
    from render_fixtures import dense_labels

    from tdbtools.render.html import write_html
    from tdbtools.render.scene import build_scene

    route = dense_labels(load_route(SAMPLE_ROUTE, cache=False))
    scene = build_scene(route)
    assert len(scene.markers["siding"]) == 2 + 50  # the sample's two and 50 more in 2 km
    return write_html(scene, tmp_path_factory.mktemp("dense") / "dense.html")


@pytest.mark.slow
def test_dense_labels_never_overlap_and_show_more_when_zoomed(browser, dense_html):
    page, _s, outside = _open(browser, dense_html)
    try:
        assert outside == []
        boxes = _label_boxes(page)
        names = [b[4] for b in boxes if b[4].startswith("Siding ")]
        assert 15 <= len(names) < 50, names  # many shown, not all: they would pile up
        assert _overlaps(boxes) == []
        # every label stays inside the plot
        c = page.locator(".gl-container canvas").bounding_box()
        assert all(b[0] >= c["x"] - 1 and b[2] <= c["x"] + c["width"] + 1 for b in boxes)
        # zoomed in 3 times about the middle of the view (as plotly zooms a top-down
        # view: by the aspect ratio): more names of the place in view, without overlap
        page.evaluate(
            "() => { const gd = document.querySelector('.js-plotly-plot'); gd.dataset.fitted = '';"
            " const s = gd._fullLayout.scene, a = s.aspectratio, c = s.camera.center, e = s.camera.eye;"
            " Plotly.relayout(gd, {'scene.aspectratio': {x: a.x * 3, y: a.y * 3, z: a.z * 3},"
            " 'scene.camera.center': {x: c.x * 3, y: c.y * 3, z: c.z * 3},"
            " 'scene.camera.eye': {x: c.x * 3, y: c.y * 3, z: c.z * 3 + (e.z - c.z)}}); }"
        )
        page.wait_for_function(READY, timeout=30_000)
        zoomed = _label_boxes(page)
        assert _overlaps(zoomed) == []
        assert any(b[4] not in names for b in zoomed if b[4].startswith("Siding ")), names
        # hiding the sidings layer takes their names away
        page.evaluate(
            "() => { const gd = document.querySelector('.js-plotly-plot'); gd.dataset.fitted = '';"
            " Plotly.restyle(gd, {visible: 'legendonly'}, [gd.data.findIndex(t => t.name === 'sidings')]); }"
        )
        page.wait_for_function(READY, timeout=30_000)
        assert not [b for b in _label_boxes(page) if b[4].startswith("Siding ")]
    finally:
        page.close()


@pytest.mark.slow
def test_focus_page_frames_the_place_and_pans_to_the_route(browser, tmp_path):
    pytest.importorskip("plotly")
    from tdbtools.render.html import write_html
    from tdbtools.render.scene import build_scene

    scene = build_scene(load_route(SAMPLE_ROUTE, cache=False), focus="Sampleby")
    out = write_html(scene, tmp_path / "focus.html")
    page, _s, _o = _open(browser, out)
    try:
        c = page.locator(".gl-container canvas").bounding_box()
        x0, y0, w, h = c["x"], c["y"], c["width"], c["height"]
        # the focus fills the plot
        px = np.array(page.evaluate("pts => pts.map(p => window.tdbProject(p))", scene.focus.tolist()))
        assert (
            px[:, 0].min() > x0
            and px[:, 0].max() < x0 + w
            and px[:, 1].min() > y0
            and px[:, 1].max() < y0 + h
        )
        assert max(np.ptp(px[:, 0]) / w, np.ptp(px[:, 1]) / h) > 0.6
        # scale bar and north arrow in view
        for name in ("scale bar", "north arrow"):
            pts = page.evaluate(
                "n => { const t = document.querySelector('.js-plotly-plot').data.find(t => t.name === n);"
                " return t.x.map((x, i) => [x, t.y[i], t.z[i]]); }",
                name,
            )
            q = np.array(page.evaluate("pts => pts.map(p => window.tdbProject(p))", pts))
            assert (q[:, 0] > x0).all() and (q[:, 0] < x0 + w).all(), name
            assert (q[:, 1] > y0).all() and (q[:, 1] < y0 + h).all(), name
        texts = [b[4] for b in _label_boxes(page)]
        assert "N" in texts and any(t.endswith(" m") for t in texts)
        # the whole route is in the page (not clipped to the focus): part of it is outside
        # the view now, to pan to; the axes span all of it
        track = np.asarray(scene.track.points)
        q = np.array(page.evaluate("pts => pts.map(p => window.tdbProject(p))", track.tolist()))
        assert ((q[:, 0] < x0) | (q[:, 0] > x0 + w)).any()
        rng = page.evaluate(
            "() => { const s = document.querySelector('.js-plotly-plot')._fullLayout.scene;"
            " return [s.xaxis.range, s.yaxis.range]; }"
        )
        assert rng[0][0] <= track[:, 0].min() + 1 and rng[0][1] >= track[:, 0].max() - 1
        assert rng[1][0] <= track[:, 1].min() + 1 and rng[1][1] >= track[:, 1].max() - 1
    finally:
        page.close()


def test_a_path_name_is_text_not_markup(tmp_path):
    pytest.importorskip("plotly")
    from tdbtools.render.html import write_html
    from tdbtools.render.scene import build_scene

    text = (SAMPLE_ROUTE / "PATHS" / "MainWE.pat").read_text(encoding="utf-16")
    evil = tmp_path / "evil.pat"
    evil.write_text(text.replace("Main line west - east", "<img src=x onerror=alert(1)>"), encoding="utf-16")
    scene = build_scene(load_route(SAMPLE_ROUTE, cache=False), paths=[str(evil)])
    assert scene.paths[0].name == "<img src=x onerror=alert(1)>"
    from tdbtools.render.html import figure

    fig = figure(scene)  # plotly draws trace names and annotations as its own HTML subset
    shown = [t.name or "" for t in fig.data] + [a.text or "" for a in fig.layout.scene.annotations]
    assert not [t for t in shown if "<img" in t]
    assert "path: &lt;img src=x onerror=alert(1)&gt;" in shown
    page = write_html(scene, tmp_path / "p.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page
