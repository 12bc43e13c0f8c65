"""Benchmark: build the DK24 3-D scene (≤ 5 s) and render one offscreen screenshot (≤ 10 s).

    python benchmarks/bench_render.py [ROUTE] [--out FILE.png]

Prints the route load time (cached), the scene build time and the screenshot time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tdbtools import load_route  # noqa: E402
from tdbtools.render.backend import check_renderer  # noqa: E402
from tdbtools.render.scene import build_scene  # noqa: E402
from tdbtools.render.sceneview import render_png  # noqa: E402

DK24 = HERE.parent.parent / "shared/routes/DK24/ROUTES/OR_DK24"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("route", nargs="?", default=str(DK24))
    ap.add_argument("--out", default="/tmp/bench_render.png")
    ap.add_argument("--color-by", default="kind")
    a = ap.parse_args()
    if not Path(a.route).exists():
        print(f"route not found: {a.route}")
        return 2
    t = time.perf_counter()
    route = load_route(a.route)
    print(f"load (cached)    {time.perf_counter() - t:6.2f} s")
    t = time.perf_counter()
    check_renderer()
    print(f"renderer check   {time.perf_counter() - t:6.2f} s (once per process, not counted)")
    t = time.perf_counter()
    scene = build_scene(route, color_by=a.color_by)
    build = time.perf_counter() - t
    print(
        f"scene build      {build:6.2f} s  (limit 5 s)   {scene.track.n_cells} line cells, "
        f"{scene.track.n_points} points, " + ", ".join(f"{k} {len(m)}" for k, m in scene.markers.items())
    )
    t = time.perf_counter()
    render_png(scene, a.out, window_size=(1280, 960))
    shot = time.perf_counter() - t
    print(f"screenshot       {shot:6.2f} s  (limit 10 s)  -> {a.out}")
    return 0 if build <= 5.0 and shot <= 10.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
