"""The signalling cycle alone: CPU per ``Interlocking.update`` with many trains on DK24.

    python benchmarks/bench_interlocking.py [ROUTE_FOLDER] [--setup replay|signals] [--seconds S]

A replay of ``bench_replay.py`` (50 trains × 21 cars, two per line on lines that share no
track; ``--setup replay``) or of ``bench_signals.py`` (50 trains following each other in
pairs through signals; ``--setup signals``) runs once while the fronts and speeds handed
to the interlocking each cycle are recorded. Then a fresh interlocking of the same trains
is fed the recorded cycles, timed in this process's CPU seconds (best of ``--repeat``).
``--dump FILE`` writes the state after every cycle (to compare two checkouts);
``--check`` compares, after every cycle, the whole interlocking with one that works
every cycle out afresh (``Interlocking.incremental = False``, when the code has it).
``BENCH_SRC``: another checkout whose tdbtools to measure (old and new side by side).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))

from tdbtools.physics.replay import Replay  # noqa: E402
from tdbtools.physics.scenario import Scenario, TrainSpec  # noqa: E402
from tdbtools.physics.signalling import ReplaySignals  # noqa: E402
from tdbtools.signals import runtime  # noqa: E402

sys.path.insert(1, str(HERE))
import bench_replay  # noqa: E402
import bench_signals  # noqa: E402


def scenario(route, setup: str, seconds: float) -> Scenario:  # noqa: ANN001
    if setup == "replay":
        paths = bench_replay.long_paths(route, 25, 5300.0)
        trains = bench_replay.specs(paths, per_line=2)
    else:
        paths = bench_signals.signalled_paths(route, 25)
        trains = tuple(
            TrainSpec(
                name=f"{Path(p).stem}-{k}",
                consist=bench_signals.CONSIST,
                path=Path(p),
                start_offset=bench_signals.SPACING * (1 - k),
                beyond_path=bench_signals.SPACING + bench_signals.DRIVE,
                driver="auto",
                depart=60.0 * k,
            )
            for k in range(2)
            for p in paths
        )
    return Scenario(Path(route.folder), trains, step=0.1, duration=seconds)


def state(ilk: runtime.Interlocking) -> tuple:
    """What a cycle leaves behind (as tests/test_signal_cycle.py compares it)."""
    return (
        [repr(e) for e in ilk.events],
        [
            (t.stop_s, t.creep_at, list(t.limits), t.next_signal, t.waiting_since, t.last_seen)
            for t in ilk.trains
        ],
        [sorted(t.extents.items()) for t in ilk.trains],
        list(ilk.block),
        list(ilk.enabled_train),
        list(ilk.next_normal),
        [None if r is None else [dataclasses.astuple(e) for e in r] for r in ilk.route_of],
        [(h.state, h.draw_state) for h in ilk.heads],
        [
            (k, s.reserved, list(s.occupants.items()))
            for k, s in enumerate(ilk.sections)
            if s.reserved >= 0 or s.occupants
        ],
        sorted(ilk.switches.items()),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=bench_replay.DEFAULT)
    ap.add_argument("--setup", choices=("replay", "signals"), default="replay")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="compare with the plain computation every cycle")
    ap.add_argument(
        "--dump", type=Path, help="write the state after every cycle (pickle) to compare two checkouts"
    )
    args = ap.parse_args()
    route = bench_replay.open_route(args.route)
    if route is None:
        return 2
    rep = Replay(scenario(route, args.setup, args.seconds), route=route, trace_every=1.0)
    if rep.signals is None:
        print("the route has no signals", file=sys.stderr)
        return 2

    def fresh(incremental: bool = True) -> runtime.Interlocking:
        ilk = ReplaySignals(rep, rep.signal_set).ilk  # (before the run: its trains and switches at the start)
        ilk.switch_setter = None  # the recorded run threw the replay's switches
        if not incremental:
            ilk.incremental = False
        return ilk

    timed = [fresh() for _ in range(args.repeat)]
    dumped = fresh() if args.dump else None
    pair = (fresh(), fresh(incremental=False)) if args.check and hasattr(timed[0], "incremental") else None
    cycles: list[tuple[float, list[float], list[float]]] = []
    update = runtime.Interlocking.update

    def recorded(self, time_, fronts, speeds):  # noqa: ANN001, ANN202
        cycles.append((time_, list(fronts), list(speeds)))
        return update(self, time_, fronts, speeds)

    runtime.Interlocking.update = recorded  # type: ignore[method-assign]
    sim = rep.run().summary["simulated_seconds"]
    runtime.Interlocking.update = update  # type: ignore[method-assign]
    best = float("inf")
    for ilk in timed:
        t0 = time.process_time()
        for c in cycles:
            ilk.update(*c)
            ilk.events.clear()
        best = min(best, time.process_time() - t0)
    n = len(rep.trains)
    print(
        f"{args.setup}: {n} trains, {len(cycles)} cycles ({sim:.0f} s simulated), "
        f"{len(ilk.objects)} signals: {best * 1e3:.1f} ms CPU = {best / len(cycles) * 1e3:.3f} ms per cycle "
        f"(best of {args.repeat}; load average {os.getloadavg()[0]:.1f})"
    )
    if dumped is not None:
        import pickle

        states = []
        for c in cycles:
            dumped.update(*c)
            states.append(state(dumped))
            dumped.events.clear()
        args.dump.write_bytes(pickle.dumps(states))
    if args.check:
        if pair is None:
            print("this code has no plain computation to compare with", file=sys.stderr)
            return 2
        a, b = pair
        for k, c in enumerate(cycles):
            a.update(*c)
            b.update(*c)
            if state(a) != state(b):
                print(f"cycle {k} differs", file=sys.stderr)
                return 1
            a.events.clear()
            b.events.clear()
        print(f"  all {len(cycles)} cycles the same as worked out afresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
