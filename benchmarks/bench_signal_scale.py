"""Signalling cost against the route's signals (issue 32): one train on a route with ~1,000 signals.

    python benchmarks/bench_signal_scale.py OUT_DIR [--copies 11] [--seconds 600] [--repeat 3]
                                           [--events FILE]

The route is ``copies`` copies of DK24 with its world files and signal scripts on every
copy (``big_route.py --world``; 11 copies: 935 signals, 814 NORMAL, 1,045 heads). One
21-car train (the sample freight consist under the automatic driver) runs DK24's most
signalled path on the first copy, once with the signals and once without; both replays
are built first and only ``Replay.run`` is timed, in CPU seconds of this process (the
machine is shared). Target: the signalled replay within 2x of the plain one. With
``--events`` the signalled replay's events and trace are written to FILE (JSON) so that
two checkouts' runs can be compared bit for bit. BENCH_SRC: another checkout to measure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))
sys.path.insert(1, str(HERE))

from big_route import ROUTE, make_route  # noqa: E402

from tdbtools.formats import load_route  # noqa: E402
from tdbtools.physics.replay import Replay  # noqa: E402
from tdbtools.physics.scenario import Scenario, TrainSpec  # noqa: E402
from tdbtools.physics.trackline import TrackLine  # noqa: E402
from tdbtools.signals import Interlocking, load_signals  # noqa: E402
from tdbtools.track.paths import resolve_route_paths  # noqa: E402

CONSIST = HERE.parent / "sample_routes" / "sample" / "TRAINS" / "CONSISTS" / "sample_freight.con"
DRIVE = 8000.0


def best_path(route) -> str:
    """DK24's path passing the most NORMAL signals within DRIVE metres (ties: by name)."""
    ilk = Interlocking(route, load_signals(route))
    best: tuple[int, str] = (1, "")
    for name, res, _err in resolve_route_paths(route):
        if res is None or not res.ok:
            continue
        line = TrackLine.from_path(route, res, extend=DRIVE + 500.0)
        if line.length < DRIVE:
            continue
        k = ilk.add_train(name, line, 350.0, front=400.0, end_s=DRIVE)
        n = len(ilk.trains[k].signals)
        best = min(best, (-n, name))
    return best[1]


def run(route, path: Path, seconds: float, signals: bool) -> tuple[float, Replay, object]:
    spec = TrainSpec(name="t", consist=CONSIST, path=path, beyond_path=DRIVE, driver="auto")
    sc = Scenario(Path(route.folder), (spec,), step=0.1, duration=seconds)
    rep = Replay(sc, route=route, trace_every=1.0, signals=None if signals else False)
    c0 = time.process_time()
    res = rep.run()
    return time.process_time() - c0, rep, res


def digest(res) -> dict:
    events = [json.dumps(e.to_dict(), sort_keys=True) for e in res.events]
    h = hashlib.sha256()
    for train in sorted(res.traces):
        for col in sorted(res.traces[train]):
            h.update(f"{train}/{col}".encode())
            h.update(res.traces[train][col].tobytes())
    return {"events": events, "trace_sha256": h.hexdigest()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the generated route (reused)")
    ap.add_argument("--copies", type=int, default=11)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--events", type=Path)
    args = ap.parse_args()
    dk24 = load_route(ROUTE)
    name = Path(best_path(dk24)).name
    folder = make_route(args.copies, args.out, [name], world=True)
    route = load_route(folder)
    path = folder / "PATHS" / f"c0_{name}"
    nsig = len(load_signals(route).signals)
    sig_t, plain_t = [], []
    for _ in range(args.repeat):  # (taking turns: the machine's load hits both alike)
        cpu, rep, res = run(route, path, args.seconds, True)
        sig_t.append(cpu)
        plain_t.append(run(route, path, args.seconds, False)[0])
    sim = res.summary["simulated_seconds"]
    kinds = [e.kind for e in res.events]
    sig, plain = sorted(sig_t)[len(sig_t) // 2], sorted(plain_t)[len(plain_t) // 2]
    print(
        f"route {folder.name}: {nsig} signals; path {name}; {sim:.0f} s simulated; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"  signals: median {sig:.3f} CPU s = {sim / sig:.0f}x real time; without: {plain:.3f} s = "
        f"{sim / plain:.0f}x; ratio {sig / plain:.2f} (target <= 2); aspect events {kinds.count('aspect')}, "
        f"SPADs {kinds.count('spad')}"
    )
    if args.events:
        args.events.write_text(json.dumps(digest(res), indent=0))
    return 0 if sig <= 2.0 * plain else 1


if __name__ == "__main__":
    sys.exit(main())
