"""The DK24 timetable of tests/data/timetables/Fyn day.timetable-or, replayed whole.

DK24 has no timetables: this script copies the route into a temporary install (as
bench_activity.py does, world files kept so the signals run), builds the timetable's
paths there with ``tdbtools path`` (build_path), installs the timetable in
ACTIVITIES/OpenRails and replays it (stand-in stock).

    python benchmarks/bench_timetable.py [ROUTE] [--out DIR] [--step S]

The line: W is a point 3 km west of Tommerup on the single line (node 902), E1 and E2
points about 4 km east of it on the two lines towards node 892 (920 and 889). Every
train runs between W and E1 or E2 through one of Tommerup's three platform tracks,
where trains cross (docs/timetables.md §7).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ROUTE = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"
TIMETABLE = HERE.parent / "tests" / "data" / "timetables" / "Fyn day.timetable-or"

W, E1, E2 = "902@3000", "920@4000", "889@3800"
#: name -> (from, to, via...) for build_path
PATHS = {
    "TT_W_E1_S1": (W, E1, "Tommerup, Spor 1"),
    "TT_W_E1_S2": (W, E1, "Tommerup, Spor 2"),
    "TT_W_E2_S3": (W, E2, "Tommerup, Spor 3"),
    "TT_E1_W_S2": (E1, W, "Tommerup, Spor 2"),
    "TT_E2_W_S1": (E2, W, "Tommerup, Spor 1"),
    "TT_E2_W_S2": (E2, W, "Tommerup, Spor 2"),  # (tests: $hold)
    "TT_E1_STABLE": (E1, "920@2500"),
    "TT_STATIC": ("366", "584@8000"),
}


def _bench_activity():
    spec = importlib.util.spec_from_file_location("bench_activity", HERE / "bench_activity.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def install_timetable(route: Path, tmp: Path, timetable: Path = TIMETABLE) -> Path:
    """A throw-away DK24 install with the timetable's paths and the timetable; returns
    the installed timetable file."""
    from tdbtools.formats.route import load_route
    from tdbtools.track.pathbuild import build_path, write_path

    folder = _bench_activity().dk24_install(route, tmp, world=True)
    r = load_route(folder, cache=False)
    (folder / "PATHS").mkdir(exist_ok=True)
    for name, (a, b, *via) in PATHS.items():
        write_path(r, build_path(r, a, b, list(via), name=name), folder / "PATHS" / f"{name}.pat")
    target = folder / "ACTIVITIES" / "OpenRails"
    target.mkdir(parents=True)
    shutil.copy2(timetable, target / timetable.name)
    # the pool files beside it (Open Rails reads every one of the folder)
    for pool in sorted(timetable.parent.glob("*.pool-or")):
        shutil.copy2(pool, target / pool.name)
    return target / timetable.name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=DEFAULT_ROUTE)
    ap.add_argument("--out", type=Path, help="write the replay's files (and spacetime.png) here")
    ap.add_argument("--step", type=float, default=0.5)
    args = ap.parse_args()
    if not (args.route / "DK24.tdb").is_file():
        print(f"DK24 not found at {args.route}", file=sys.stderr)
        return 2
    from tdbtools.formats.route import load_route
    from tdbtools.physics.timetable import replay_timetable

    with tempfile.TemporaryDirectory() as tmp:
        tt = install_timetable(args.route, Path(tmp))
        route = load_route(tt.parent.parent.parent, cache=False)
        t = time.perf_counter()
        res = replay_timetable(tt, route=route, stand_in=True, step=args.step)
        wall = time.perf_counter() - t
        s = res.replay.summary
        print(
            f"replayed {s['clock_start']}-{s['clock_end']}: {s['simulated_seconds']:.0f} s simulated, "
            f"replay loop {s['wall_seconds']:.2f} s ({s['realtime_factor']}x real time), "
            f"with setup {wall:.2f} s ({s['simulated_seconds'] / wall:.0f}x)"
        )
        for name, o in s["timetable"]["outcomes"].items():
            tr = s["trains"].get(name)
            km = f"{tr['distance_m'] / 1000:.1f} km, " if tr else ""
            print(f"  {name}: {km}{o}")
        print(res.timetable_csv())
        for e in res.replay.events:
            if e.kind in ("formed", "pool", "held", "stuck", "deadlock", "not_at_end", "start_delayed"):
                print(" ", e)
        if args.out is not None:
            res.write(args.out)
            from tdbtools.render.spacetime import plot_space_time

            plot_space_time(res.activity, args.out / "spacetime.png")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
