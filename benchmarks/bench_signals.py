"""Signalled replay speed on DK24: 50 trains of 21 cars obeying the route's signals.

    python benchmarks/bench_signals.py [ROUTE_FOLDER] [--seconds S] [--trains N]

The 50 trains (the sample freight consist: a Class 66 and 20 wagons) run two per line on
DK24 lines that share no track with each other (the most signalled first), the follower
starting 1.2 km behind the leader and a minute later: each pair shares its track, and
only the signals keep the follower off the leader. Everything is timed: the physics,
the interlocking (track circuits, reservations, 89 compiled scripts every 0.5 s), the
drivers and the collision checks. Target: >= 50x real time. Reports collisions and SPADs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tdbtools.physics.replay import Replay  # noqa: E402
from tdbtools.physics.scenario import Scenario, TrainSpec  # noqa: E402
from tdbtools.physics.trackline import TrackLine  # noqa: E402
from tdbtools.signals import Interlocking, load_signals  # noqa: E402
from tdbtools.track.paths import resolve_route_paths  # noqa: E402

sys.path.insert(1, str(HERE))
from bench_replay import open_route  # noqa: E402

DEFAULT = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"
CONSIST = HERE.parent / "sample_routes" / "sample" / "TRAINS" / "CONSISTS" / "sample_freight.con"
SPACING = 1200.0
DRIVE = 6000.0


def signalled_paths(route, n: int) -> list[str]:
    """Up to ``n`` paths with room for two trains, on lines that share no track node with each
    other, those passing the most NORMAL signals first."""
    ilk = Interlocking(route, load_signals(route))
    scored = []
    for name, res, _err in resolve_route_paths(route):
        if res is None or not res.ok:
            continue
        line = TrackLine.from_path(route, res, extend=SPACING + DRIVE + 500.0)
        if line.length < SPACING + DRIVE + 400.0:
            continue
        k = ilk.add_train(name, line, 350.0, front=SPACING + 350.0, end_s=SPACING + DRIVE)
        scored.append((len(ilk.trains[k].signals), name, set(line.seg_node.tolist())))
    scored.sort(key=lambda x: (-x[0], x[1]))
    out: list[str] = []
    used: set[int] = set()
    for _nsig, name, nodes in scored:
        if not nodes & used:
            out.append(name)
            used |= nodes
        if len(out) == n:
            break
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--trains", type=int, default=50)
    ap.add_argument("--no-signals", action="store_true", help="the same trains without signals (baseline)")
    args = ap.parse_args()
    route = open_route(args.route)
    if route is None:
        return 2
    paths = signalled_paths(route, (args.trains + 1) // 2)
    per_line = -(-args.trains // max(len(paths), 1))
    trains = tuple(
        TrainSpec(
            name=f"{Path(p).stem}-{k}",
            consist=CONSIST,
            path=Path(p),
            start_offset=SPACING * (per_line - 1 - k),
            beyond_path=SPACING + DRIVE,
            driver="auto",
            depart=60.0 * k,
        )
        for k in range(per_line)
        for p in paths
    )[: args.trains]
    sc = Scenario(Path(route.folder), trains, step=0.1, duration=args.seconds)
    rep = Replay(sc, route=route, trace_every=1.0, signals=False if args.no_signals else None)
    t0, c0 = time.perf_counter(), time.process_time()
    res = rep.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    sim = res.summary["simulated_seconds"]
    # The machine is shared: CPU seconds of this process measure the code, wall seconds the machine.
    factor = sim / cpu
    print(
        f"wall {wall:.2f} s ({sim / wall:.1f}x real time by the wall clock), CPU {cpu:.2f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    kinds = [e.kind for e in res.events]
    waits = sum(1 for e in res.events if e.kind == "signal_wait")
    print(
        f"route {route.name}: {len(trains)} trains x {len(rep.engine.x) // max(len(trains), 1)} cars on "
        f"{len(paths)} lines; {sim:.0f} s simulated in {cpu:.2f} CPU s = {factor:.1f}x real time "
        f"(target >= 50x)"
    )
    print(
        f"  signals {len(rep.signal_set.signals) if rep.signal_set else 0}; aspect events "
        f"{kinds.count('aspect')}; completed signal waits {waits}; collisions "
        f"{kinds.count('collision') + kinds.count('side_collision')}; SPADs {kinds.count('spad')}; "
        f"deadlocks {kinds.count('deadlock')}"
    )
    return 0 if factor >= 50.0 else 1


if __name__ == "__main__":
    sys.exit(main())
