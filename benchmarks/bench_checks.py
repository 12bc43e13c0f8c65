"""What the replay's collision checks cost, inside whole replays (CPU seconds).

    python benchmarks/bench_checks.py dk24            # bench_replay.py's 50 trains on DK24
    python benchmarks/bench_checks.py scale [--trains 1000] [--seconds 60]   # bench_scale.py trains

Runs the replay with ``Replay.check_collisions`` timed by ``time.process_time`` and
prints the replay's CPU time, the checks' share and cost per check, and a digest of the
events (old and new code must give the same). ``BENCH_SRC`` picks the checkout to
measure, as for the other benchmarks.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))


def _dk24(seconds: float):  # noqa: ANN202
    import bench_replay as br

    from tdbtools.formats import load_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Scenario

    route = load_route(br.DEFAULT)
    paths = br.long_paths(route, 25, 5300.0)
    trains = br.specs(paths, per_line=2)
    sc = Scenario(Path(route.folder), trains, step=0.1, duration=seconds)
    return Replay(sc, route=route, trace_every=1.0)


def _scale(n: int, seconds: float, copies: int = 16):  # noqa: ANN202
    import big_route
    from bench_scale import CONSIST, WORK, _lines_of

    from tdbtools.formats import load_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Scenario, TrainSpec

    base = _lines_of(load_route(big_route.ROUTE))
    route = load_route(big_route.make_route(copies, WORK / f"r{copies}", base))
    lines = [f"c{k}_{p}" for k in range(copies) for p in base]
    per_line = math.ceil(n / len(lines))
    specs = tuple(
        TrainSpec(
            name=f"t{i}",
            consist=CONSIST,
            path=Path(lines[i % len(lines)]),
            start_offset=800.0 * (per_line - 1 - i // len(lines)),
            beyond_path=800.0 * per_line + 600.0,
            driver="auto",
        )
        for i in range(n)
    )
    return Replay(
        Scenario(Path(route.folder), specs, step=0.1, duration=seconds), route=route, trace_every=1.0
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("dk24", "scale"))
    ap.add_argument("--trains", type=int, default=1000)
    ap.add_argument("--seconds", type=float)
    args = ap.parse_args()
    rep = _dk24(args.seconds or 600.0) if args.what == "dk24" else _scale(args.trains, args.seconds or 60.0)
    check = rep.check_collisions
    spent = [0.0, 0]

    def timed() -> None:
        c = time.process_time()
        check()
        spent[0] += time.process_time() - c
        spent[1] += 1

    rep.check_collisions = timed  # type: ignore[method-assign]
    c0 = time.process_time()
    res = rep.run()
    cpu = time.process_time() - c0
    sim = res.summary["simulated_seconds"]
    print(
        f"{len(rep.trains)} trains, {sim:.0f} s: {cpu:.2f} s CPU ({sim / cpu:.1f}x real time); "
        f"{spent[1]} checks {spent[0]:.3f} s = {1000 * spent[0] / max(spent[1], 1):.2f} ms each; "
        f"{len(res.events)} events, digest {hashlib.md5(repr(list(res.events)).encode()).hexdigest()[:12]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
