"""Replay speed on DK24: 1 train and 50 trains of 20 cars at dt = 0.1 s.

    python benchmarks/bench_replay.py [ROUTE_FOLDER] [--seconds S]

The whole replay loop is timed (drivers, forces, the 1-D engine, bogies, collision
checks, traces), not only the engine. Targets (issue 16): 1 × 21 cars ≥ 2,000× real
time, 50 × 21 cars ≥ 150× real time. Each train is the sample freight consist (a Class 66
and 20 wagons: 21 cars) under the automatic driver. DK24 has only ~25 independent
lines of several km (its paths are 10 m stubs at end nodes), so the 50 trains run two
per line, 2.3 km apart, each driving 2.6 km, on 25 lines that share no track node: no
train runs into another. Collision checks still run every interval.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# BENCH_SRC: another checkout whose tdbtools to measure (old and new code side by side)
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))

from tdbtools.formats import load_route  # noqa: E402
from tdbtools.physics.replay import Replay  # noqa: E402
from tdbtools.physics.scenario import Scenario, TrainSpec  # noqa: E402
from tdbtools.physics.trackline import TrackLine  # noqa: E402
from tdbtools.track.paths import resolve_route_paths  # noqa: E402

DEFAULT = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"
CONSIST = HERE.parent / "sample_routes" / "sample" / "TRAINS" / "CONSISTS" / "sample_freight.con"


def long_paths(route, n: int, need: float) -> list[str]:
    """Up to ``n`` paths with ``need`` metres of track beyond them, whose lines share
    no track node with each other (so the trains do not run into each other)."""
    out: list[str] = []
    used: set[int] = set()
    for name, res, _err in resolve_route_paths(route):
        if res is None or not res.ok:
            continue
        line = TrackLine.from_path(route, res, extend=need)
        nodes = set(line.seg_node.tolist())
        if line.length >= need and not nodes & used:
            out.append(name)
            used |= nodes
            if len(out) == n:
                break
    return out


def specs(paths: list[str], per_line: int = 1, drive: float = 2600.0) -> tuple[TrainSpec, ...]:
    """``per_line`` trains follow each other on every path, 2.3 km apart, each driving
    ``drive`` metres: no train reaches the one ahead."""
    return tuple(
        TrainSpec(
            name=f"t{i}-{k}",
            consist=CONSIST,
            path=Path(p),
            start_offset=2300.0 * k,
            beyond_path=2300.0 * k + drive,
            driver="auto",
        )
        for i, p in enumerate(paths)
        for k in range(per_line)
    )


def run(
    route, paths: list[str], seconds: float, per_line: int = 1, drive: float = 2600.0, cpu: bool = False
) -> tuple[float, float, int, int]:
    """:func:`specs` replayed for ``seconds``: (simulated s, wall or CPU s, cars, trains)."""
    trains = specs(paths, per_line, drive)
    sc = Scenario(Path(route.folder), trains, step=0.1, duration=seconds)
    rep = Replay(sc, route=route, trace_every=1.0)
    clock = time.process_time if cpu else time.perf_counter
    t0 = clock()
    res = rep.run()
    wall = clock() - t0
    return res.summary["simulated_seconds"], wall, len(rep.engine.x), len(trains)


def open_route(folder: Path):  # noqa: ANN201
    """The route in ``folder`` for a benchmark, loaded with a cache folder of its own (unless
    TDBTOOLS_CACHE_DIR is set); None, said on stderr, when the folder is not there."""
    if not folder.is_dir():
        print(f"route folder not found: {folder}", file=sys.stderr)
        return None
    os.environ.setdefault("TDBTOOLS_CACHE_DIR", tempfile.mkdtemp(prefix="tdbtools-bench-"))
    return load_route(folder)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument(
        "--cpu", action="store_true", help="time with this process's CPU seconds (a loaded machine)"
    )
    args = ap.parse_args()
    route = open_route(args.route)
    if route is None:
        return 2
    paths = long_paths(route, 25, 5300.0)
    long = long_paths(route, 1, 14000.0)
    print(
        f"route {route.name}; {len(paths)} paths with 5.3 km of track beyond, on lines that share "
        f"no track; at most {args.seconds:.0f} s simulated"
    )
    ok = True
    for lines, per_line, drive, target in ((long, 1, 12000.0, 2000.0), (paths, 2, 2600.0, 150.0)):
        sim, wall, cars, n = run(route, lines, args.seconds, per_line, drive, args.cpu)
        factor = sim / wall
        ok &= factor >= target
        print(
            f"  {n:3d} train(s), {cars:5d} cars: {sim:6.0f} s in {wall:6.2f} s = {factor:7.1f}x real time "
            f"(target >= {target:.0f}x)"
        )
    print("targets met" if ok else "TARGETS NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
