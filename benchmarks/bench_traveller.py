"""Traveller speed on a real route: placing world points, and walking the whole track.

    python benchmarks/bench_traveller.py [ROUTE_FOLDER] [--points N] [--repeat N] [--seed N]

* Locate: N random on-track points (a random vector node, a random offset along it,
  up to ±0.5 m lateral noise) placed with ``Traveller.locate_many`` (one vectorised
  call; target ≥ 10 000 points/s and 100 % found), and a sample placed one at a time
  with ``Traveller.at``. The first call also builds the route's spatial index.
* Walk: every vector node, both directions, in 10 m steps with the full pose
  (location, heading, pitch, grade, curvature) read after every step.

Each timed figure is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from tdbtools.formats import load_route  # noqa: E402
from tdbtools.formats.tdb import VectorNode  # noqa: E402
from tdbtools.track import Traveller, point_at  # noqa: E402
from tdbtools.track.spatial import clear_route_cache, track_geometry  # noqa: E402

DEFAULT = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def random_points(route, n: int, seed: int):
    """(tile_x, tile_z, x, z, node, offset) of n random track points with lateral noise."""
    rng = np.random.default_rng(seed)
    nodes = [
        v
        for v in route.tdb.nodes[1:]
        if isinstance(v, VectorNode) and v.section_count and route.node_length(v.index) > 0
    ]
    geom = track_geometry(route)
    pick = rng.integers(0, len(nodes), n)
    node = np.array([nodes[k].index for k in pick])
    offset = rng.uniform(0.0, 1.0, n) * np.array([route.node_length(i) for i in node])
    rows = np.empty(n, dtype=np.int64)
    soff = np.empty(n)
    for k, (i, o) in enumerate(zip(node.tolist(), offset.tolist())):
        t = Traveller(route, i, o)
        rows[k], soff[k] = t.section_row, t.section_offset
    p = point_at(geom, rows, soff, rng.uniform(-0.5, 0.5, n))
    return p.tile_x, p.tile_z, p.x, p.z, node, offset


def walk(route, step: float = 10.0) -> tuple[float, int]:
    metres, steps = 0.0, 0
    for v in route.tdb.nodes[1:]:
        if not isinstance(v, VectorNode) or not v.section_count:
            continue
        length = route.node_length(v.index)
        for d in (1, 0):
            t = Traveller(route, v.index, 0.0 if d else length, d)
            left = length
            while left > 1e-9:
                s = step if step < left else left
                rest = t.move(s)
                t.pose()
                metres += s - rest
                left -= s
                steps += 1
    return metres, steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if not args.route.is_dir():
        print(f"route folder not found: {args.route}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    route = load_route(args.route, cache=False)
    load = time.perf_counter() - t0
    tx, tz, x, z, node, offset = random_points(route, args.points, args.seed)
    n = len(x)

    clear_route_cache()
    cold, _ = best(lambda: Traveller.locate_many(route, tx, tz, x, z), 1)
    warm, loc = best(lambda: Traveller.locate_many(route, tx, tz, x, z), args.repeat)
    found = float(loc.found.mean())
    same = loc.node == node
    exact = same & (np.abs(loc.offset - offset) <= 0.01)
    k = min(n, 1000)
    single, _ = best(
        lambda: [Traveller.at(route, int(tx[i]), int(tz[i]), float(x[i]), float(z[i])) for i in range(k)],
        max(1, args.repeat // 2),
    )
    walk_t, (metres, steps) = best(lambda: walk(route), max(1, args.repeat // 2))

    rows = [
        ("route load (no cache)", f"{load * 1000:9.1f} ms", ""),
        (
            f"locate_many {n} points, cold (builds the grid)",
            f"{cold * 1000:9.1f} ms",
            f"{n / cold:12,.0f} points/s",
        ),
        (
            f"locate_many {n} points, warm",
            f"{warm * 1000:9.1f} ms",
            f"{n / warm:12,.0f} points/s (target >= 10,000)",
        ),
        ("  found", f"{100 * found:9.2f} %", "(target 100 %)"),
        (
            "  same node / same node and offset within 1 cm",
            f"{100 * same.mean():9.2f} %",
            f"{100 * exact.mean():.2f} % (others: a coincident or nearer track)",
        ),
        (f"Traveller.at one by one, {k} points", f"{single * 1000:9.1f} ms", f"{k / single:12,.0f} points/s"),
        (
            f"walk every vector node both ways, 10 m steps ({steps} steps)",
            f"{walk_t:9.3f} s",
            f"{metres / walk_t:12,.0f} m/s ({metres / 1000:.1f} km walked)",
        ),
    ]
    print(
        f"route {route.name} ({route.folder}); best of {args.repeat} runs; "
        f"Python {sys.version.split()[0]}, numpy {np.__version__}"
    )
    w = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        print(f"  {a:<{w}}  {b:>12}  {c}")
    ok = n / warm >= 10_000 and found == 1.0
    print("targets met" if ok else "TARGETS NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
