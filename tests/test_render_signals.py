"""`render --replay` colours signals by the aspect they show (docs/render.md §8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import HAVE_PYVISTA, NO_PYVISTA, SAMPLE_INSTALL

from tdbtools import load_route
from tdbtools.render import scene as scene_mod
from tdbtools.render import sceneview as view_mod

SIGNALS_ROUTE = SAMPLE_INSTALL / "ROUTES" / "SIGNALS"


@pytest.fixture(scope="module")
def route():
    return load_route(SIGNALS_ROUTE, cache=False)


@pytest.fixture(scope="module")
def follow(route):
    """The following-train scenario run with signals, and its scene."""
    if not HAVE_PYVISTA:
        pytest.skip(NO_PYVISTA)
    from tdbtools.render.animate import load_replay

    result, rp = load_replay(SAMPLE_INSTALL / "signals_follow.toml", route=route)
    return result, rp, scene_mod.build_scene(route)


# (renderer: a fixture of conftest.py)


def test_marker_codes_follow_the_aspect_events(route, follow):
    from tdbtools.render.animate import signal_aspects

    result, _rp, scene = follow
    sa = signal_aspects(route, result, scene)
    assert sa is not None and (sa.rows >= 0).all()
    # The follower waits at a red: its signal shows stop (code 1) while it waits.
    waits = [e for e in result.events if e.kind == "signal_wait"]
    assert waits, "the follower is held at a signal in signals_follow"
    w = max(waits, key=lambda e: e.seconds)  # the hold at the red (the first: before departure)
    mid = 0.5 * (w.time + w.until)
    codes = sa.at(mid)
    rows = np.flatnonzero(sa.rows == w.signal)
    assert len(rows) and (codes[rows] == 1).all()
    # Every marker's code is the category of its signal's last event at or before the time.
    code = {"STOP": 1, "CLEAR_1": 3, "CLEAR_2": 3}
    for j, k in enumerate(sa.rows.tolist()):
        last = [e for e in result.events if e.kind == "signal" and e.signal == k and e.time <= mid]
        assert last
        assert codes[j] == code.get(last[-1].aspect, 2)
    # The signals change over the replay: not one colour all along.
    assert len({tuple(sa.at(t).tolist()) for t in np.linspace(0, 400, 41)}) > 2
    assert set(sa.used) >= {1, 3}


def test_trace_folder_reads_the_aspects(route, follow, tmp_path):
    from tdbtools.render.animate import load_replay, signal_aspects

    result, _rp, scene = follow
    result.write(tmp_path / "out")
    folder, none = load_replay(tmp_path / "out", route=route)
    assert none is None
    a, b = signal_aspects(route, result, scene), signal_aspects(route, folder, scene)
    assert a is not None and b is not None
    for t in (10.0, 100.0, 250.0):
        assert a.at(t).tolist() == b.at(t).tolist()
    # A folder written before events.json had its units: the bare list of events.
    ej = tmp_path / "out" / "events.json"
    ej.write_text(json.dumps(json.loads(ej.read_text())["events"]))
    old, _ = load_replay(tmp_path / "out", route=route)
    c = signal_aspects(route, old, scene)
    assert c is not None and c.at(100.0).tolist() == a.at(100.0).tolist()


def test_replay_without_signals_keeps_plain_markers(route, follow):
    from tdbtools.render.animate import signal_aspects

    result, _rp, scene = follow
    plain = type(result)(
        result.scenario,
        result.traces,
        {},
        tuple(e for e in result.events if e.kind != "signal"),
        result.summary,
        0.0,
    )
    assert signal_aspects(route, plain, scene) is None


def _count(img: np.ndarray, color: str) -> int:
    rgb = np.array(view_mod._rgb(color)) * 255
    return int((np.abs(img[..., :3].astype(float) - rgb).max(axis=-1) < 12).sum())


def test_glyphs_are_drawn_in_the_aspect_colours(route, follow, renderer):
    from tdbtools.render.animate import signal_aspects

    result, _rp, scene = follow
    sa = signal_aspects(route, result, scene)
    assert sa is not None
    n = len(sa.rows)
    scene.extra["signal_aspect"] = np.full(n, 1)
    scene.extra["signal_aspect_used"] = [1, 2, 3]
    sv = view_mod.SceneView(scene, (640, 480), view="map", labels=False)
    try:
        red_all = _count(sv.screenshot(), scene_mod.ASPECT_COLORS[1])
        sv.set_signal_aspects(np.full(n, 3))
        img = sv.screenshot()
        red_none, green = _count(img, scene_mod.ASPECT_COLORS[1]), _count(img, scene_mod.ASPECT_COLORS[3])
    finally:
        sv.close()
        scene.extra.pop("signal_aspect")
        scene.extra.pop("signal_aspect_used")
    # The legend keeps one swatch of each colour; the glyphs move from red to green.
    assert red_all > red_none + 20 * n
    assert green > red_none


_RUN = [sys.executable, "-c", "import sys; from tdbtools.cli import main; sys.argv[0] = 'tdbtools'; main()"]


@pytest.fixture(scope="module")
def crossing_out(tmp_path_factory):
    """`replay --out` of signals_crossing (in process: the render commands below run as
    subprocesses); made once for the PNG and the GIF test."""
    from click.testing import CliRunner

    from tdbtools.cli import main

    out = tmp_path_factory.mktemp("crossing") / "rep"
    r = CliRunner().invoke(main, ["replay", str(SAMPLE_INSTALL / "signals_crossing.toml"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert any(e.get("kind") == "signal" for e in json.loads((out / "events.json").read_text())["events"])
    return out


def _render(replay_out: Path, out: Path, size: str, *more: str) -> None:
    """`tdbtools render SIGNALS --replay <folder> --out <out>` in a subprocess."""
    args = [
        "render",
        str(SIGNALS_ROUTE),
        "--replay",
        str(replay_out),
        "--out",
        str(out),
        "--size",
        size,
        *more,
    ]
    p = subprocess.run(_RUN + args, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_render_cli_png(tmp_path, renderer, crossing_out):
    png = tmp_path / "x.png"
    _render(crossing_out, png, "640x480")
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB"))
    # The legend names the aspects; at the end both trains have passed: some glyph shows a colour.
    assert sum(_count(img, c) for c in scene_mod.ASPECT_COLORS[1:]) > 100


def test_render_cli_gif(tmp_path, renderer, crossing_out):
    # The default (300 frames for this 900 s replay) is frame_times' (test_render.py);
    # what the command adds is the wiring, which a few frames show as well.
    gif = tmp_path / "x.gif"
    _render(crossing_out, gif, "320x240", "--frames", "6")
    import imageio.v3 as iio

    frames = iio.imread(gif, index=None)
    assert frames.shape[:3] == (6, 240, 320)
    assert not np.array_equal(frames[0], frames[-1])  # the trains (and the clock) move
