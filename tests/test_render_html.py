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

    return build_scene(load_route(SAMPLE_ROUTE, cache=False), color_by="grade")


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
