"""A DK24 activity on paths made with `tdbtools path`, replayed whole.

DK24 is CC BY-NC-SA and lives outside the repository, and it has no activities: this
script copies the route's files into a temporary install, writes paths, services,
traffic and an activity there, and replays it (stand-in stock: DK24 ships consists
without their .eng/.wag files).

    python benchmarks/bench_activity.py [ROUTE] [--out DIR] [--step S] [--no-signals]

The line from end node 366 through Tommerup to end node 1007 is single track; Tommerup's
three platform tracks are where trains cross. Five services (see dk24_services): the
player's IC3 runs 366 -> 1007 with a stop at Tommerup, an IR4 runs the other way and
crosses it and a second IC3 there, a freight follows the second IC3, and a light engine
follows them all to another line end. The install keeps the world files, so the route's
signals run (docs/activities.md §4.3); --no-signals leaves them out (plain occupancy).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ROUTE = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"


def hms(h: int, m: int, s: int = 0) -> int:
    return h * 3600 + m * 60 + s


def dk24_install(route: Path, tmp: Path, *, world: bool = False) -> Path:
    """A throw-away copy of the DK24 install without its paths and world files (a few
    MB; links would lead outside the install, which tdbtools refuses); ``world`` keeps
    the world files (and so the signals). Returns the route folder."""
    install = tmp / "DK24"
    folder = install / "ROUTES" / route.name
    folder.mkdir(parents=True)
    for f in route.iterdir():
        if f.name.upper() in ("PATHS", "ACTIVITIES", "SERVICES", "TRAFFIC") or (
            f.name.upper() == "WORLD" and not world
        ):
            continue
        if f.is_dir():
            shutil.copytree(f, folder / f.name)
        else:
            shutil.copy2(f, folder / f.name)
    src = route.parent.parent
    for sub in ("GLOBAL", "TRAINS"):
        if (src / sub).is_dir():
            shutil.copytree(src / sub, install / sub)
    return folder


def dk24_services():
    from tdbtools.physics.activity_build import ServiceSpec

    t = "Tommerup"
    return [
        # B -> A, the player: crosses the IR at Tommerup
        ServiceSpec(
            "IC 821",
            "DSB IC3 VIA x2",
            hms(10, 0),
            ("366", "1007", "Tommerup, Spor 2"),
            stops=((t, hms(10, 10), hms(10, 12)),),
            player=True,
        ),
        # A -> B: crosses IC 821 and IC 823 at Tommerup
        ServiceSpec(
            "IR 4520",
            "DSB IR4 VIA x 2",
            hms(9, 52),
            ("1007", "367", "Tommerup, Spor 1"),
            stops=((t, hms(10, 9), hms(10, 16)),),
            efficiency=0.85,
        ),
        # B -> A behind the player
        ServiceSpec(
            "IC 823",
            "DSB IC3 VIA x1",
            hms(10, 4),
            ("367", "1016", "Tommerup, Spor 3"),
            stops=((t, hms(10, 14), hms(10, 17)),),
        ),
        # B -> A freight behind IC 823, no stop
        ServiceSpec(
            "G 7702",
            "START 480-010 + 17 wagons",
            hms(10, 10),
            ("3", "1016", "Tommerup, Spor 3"),
            efficiency=0.8,
        ),
        # B -> A light engine behind everything, to another line end
        ServiceSpec(
            "Lok 1146", "CFL MY 1146 solo", hms(10, 25), ("366", "1377", "Tommerup, Spor 1"), efficiency=0.9
        ),
    ]


def make_dk24_activity(route_folder: Path, route=None) -> Path:  # noqa: ANN001
    """Write the activity into ``route_folder``; ``route``: that folder already loaded
    (writing the files changes the folder, so a cached load would not be reused)."""
    from tdbtools.formats.route import load_route
    from tdbtools.physics.activity_build import write_activity_files

    if route is None:
        route = load_route(route_folder)
    return write_activity_files(
        route, "Fyn morning", dk24_services(), description="crossings at Tommerup", duration=2 * 3600
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=DEFAULT_ROUTE)
    ap.add_argument("--out", type=Path, help="write the replay's files (and spacetime.png) here")
    ap.add_argument("--step", type=float, default=0.5)
    ap.add_argument("--no-signals", action="store_true", help="plain occupancy (no world files copied)")
    args = ap.parse_args()
    if not (args.route / "DK24.tdb").is_file():
        print(f"DK24 not found at {args.route}", file=sys.stderr)
        return 2
    from tdbtools.physics.activity import replay_activity

    with tempfile.TemporaryDirectory() as tmp:
        folder = dk24_install(args.route, Path(tmp), world=not args.no_signals)
        t = time.perf_counter()
        act = make_dk24_activity(folder)
        print(f"activity written in {time.perf_counter() - t:.2f} s: {act}")
        for p in sorted((folder / "PATHS").glob("*.pat")):
            print(f"  path {p.name}")
        t = time.perf_counter()
        res = replay_activity(act, stand_in=True, step=args.step, signals=False if args.no_signals else None)
        wall = time.perf_counter() - t
        s = res.replay.summary
        print(
            f"replayed {s['clock_start']}-{s['clock_end']}: {s['simulated_seconds']:.0f} s simulated, "
            f"replay loop {s['wall_seconds']:.2f} s ({s['realtime_factor']}x real time), "
            f"with setup {wall:.2f} s ({s['simulated_seconds'] / wall:.0f}x)"
        )
        for name, tr in s["trains"].items():
            print(
                f"  {name}: start {tr['start']}, {tr['distance_m'] / 1000:.1f} km, max {tr['max_speed_kmh']:.0f} "
                f"km/h, reached end {tr['reached_end']}, stuck {tr['stuck']}"
            )
        print(res.timetable_csv())
        for e in res.replay.events:
            if e.kind in (
                "deadlock",
                "stuck",
                "collision",
                "side_collision",
                "derailment",
                "start_delayed",
                "not_at_end",
                "warning",
            ):
                print(
                    f"  {getattr(e, 'clock', None) or e.time} {e.kind}: {getattr(e, 'message', None) or ''}"
                )
        if args.out:
            from tdbtools.render.spacetime import plot_space_time

            res.write(args.out)
            plot_space_time(res, args.out / "spacetime.png", reference="IC 821")
            print(f"wrote {args.out}")
        return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
