"""How tdbtools scales: cars per train, trains per replay, route size.

    python benchmarks/bench_scale.py cars   [--cars 100 300 1000] [--seconds 200] [--repeat 3]
    python benchmarks/bench_scale.py trains [--trains 50 200 1000] [--copies 16] [--seconds 60]
    python benchmarks/bench_scale.py route  [--copies 1 4 16 64 92]
    python benchmarks/bench_scale.py all --json out.json
    python benchmarks/bench_scale.py plot --plot old=old.json new=new.json [--out benchmarks/img]

* ``cars``: the 1-D engine alone, one train of N cars for ``--seconds`` at dt 0.1 s: a
  90 t locomotive every 15 cars (distributed power, 250 kN / 2.5 MW each) and wagons of
  30–70 t, starting with every buffer compressed (the slack runs out), braking every car
  with 6–18 % of its weight for the second half (the slack runs in): thousands of coupler
  and buffer events, the worst case for the event-driven engine. Davis resistance per car.
* ``trains``: whole replays (drivers, forces, engine, bogies, collision checks, traces) of
  N trains of 21 cars (the sample freight consist, automatic driver) on a route made of
  ``--copies`` copies of DK24 (big_route.py, in a temporary folder): the 25 long DK24 lines
  that share no track node (as in bench_replay.py) on every copy, several trains per line
  800 m apart. Setup (building the Replay) and stepping are timed apart.
* ``route``: a .tdb of N copies of DK24: cold load, warm (cached) load, audit, locating
  10,000 points, GeoJSON export; time and peak resident memory (each size in a fresh
  process, so the peaks do not mix).

Each figure is the best of ``--repeat`` runs; run with the machine's ``uptime`` beside it.
Exponents are least-squares slopes of log(time) against log(size).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# BENCH_SRC: another checkout whose tdbtools to measure (old and new code side by side)
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))

import big_route  # noqa: E402
import numpy as np  # noqa: E402

CONSIST = HERE.parent / "sample_routes" / "sample" / "TRAINS" / "CONSISTS" / "sample_freight.con"
WORK = Path(os.environ.get("TDBTOOLS_BENCH_DIR", Path(tempfile.gettempdir()) / "tdbtools-bench-scale"))


def exponent(sizes: list[float], times: list[float]) -> float:
    """Slope of log(time) over log(size) (least squares)."""
    if len(sizes) < 2:
        return float("nan")
    x, y = np.log(sizes), np.log(times)
    return float(np.polyfit(x, y, 1)[0])


# -- cars -------------------------------------------------------------------------------


def long_train(cars: int, seconds: float, dt: float = 0.1, seed: int = 5) -> dict:
    from tdbtools.physics.engine import Bodies, Engine

    rng = np.random.default_rng(seed)
    mass = rng.uniform(30e3, 70e3, cars)
    lead = np.zeros(cars, dtype=bool)
    lead[::15] = True
    mass[lead] = 90e3
    brake = mass * 9.81 * rng.uniform(0.06, 0.18, cars)
    coupled = np.ones(cars, dtype=bool)
    coupled[-1] = False
    eng = Engine(
        Bodies(mass, np.full(cars, 20.0), np.zeros(cars, np.int64), coupled, np.full(cars, 0.05)),
        -np.arange(cars) * 20.0,
        np.zeros(cars),
    )
    steps = int(round(seconds / dt))
    events = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    for k in range(steps):
        v = eng.v
        av = np.abs(v)
        resist = 834.71 + av * (24.679 + 1.4375 * av)
        if k < steps // 2:
            drive = np.where(lead, np.minimum(250e3, 2.5e6 / np.maximum(av, 1e-3)), 0.0)
        else:
            drive = np.zeros(cars)
            resist = resist + brake
        events += len(eng.step(dt, drive, resist))
    wall = time.perf_counter() - t0
    return {
        "cars": cars,
        "wall_s": wall,
        "cpu_s": time.process_time() - c0,  # less disturbed than wall time on a busy machine
        "realtime": steps * dt / wall,
        "events": events,
        "us_per_car_step": wall / steps / cars * 1e6,
    }


def bench_cars(sizes: list[int], seconds: float, repeat: int) -> dict:
    rows = []
    for n in sizes:
        best = min((long_train(n, seconds) for _ in range(repeat)), key=lambda r: r["wall_s"])
        rows.append(best)
        print(
            f"  {n:5d} cars: {best['wall_s']:7.2f} s for {seconds:g} s = {best['realtime']:7.1f}x real "
            f"time, {best['events']} events, {best['us_per_car_step']:.2f} us per car-step",
            flush=True,
        )
    exp = exponent([r["cars"] for r in rows], [r["wall_s"] for r in rows])
    print(f"  exponent {exp:.2f}", flush=True)
    return {"rows": rows, "exponent": exp}


# -- trains -----------------------------------------------------------------------------


def _lines_of(route, n: int = 25, need: float = 5300.0) -> list[str]:
    sys.path.insert(0, str(HERE))
    from bench_replay import long_paths

    return long_paths(route, n, need)


def many_trains(n: int, copies: int, seconds: float) -> dict:
    from tdbtools.formats import load_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Scenario, TrainSpec

    dk24 = load_route(big_route.ROUTE)
    base = _lines_of(dk24)
    folder = big_route.make_route(copies, WORK / f"r{copies}", base)
    route = load_route(folder)
    lines = [f"c{k}_{p}" for k in range(copies) for p in base]
    per_line = math.ceil(n / len(lines))
    specs = []
    for i in range(n):
        line, slot = lines[i % len(lines)], i // len(lines)
        specs.append(
            TrainSpec(
                name=f"t{i}",
                consist=CONSIST,
                path=Path(line),
                start_offset=800.0 * (per_line - 1 - slot),
                beyond_path=800.0 * per_line + 600.0,
                driver="auto",
            )
        )
    sc = Scenario(Path(route.folder), tuple(specs), step=0.1, duration=seconds)
    t0 = time.perf_counter()
    rep = Replay(sc, route=route, trace_every=1.0)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = rep.run()
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0
    sim = res.summary["simulated_seconds"]
    return {
        "trains": n,
        "cpu_s": cpu,  # less disturbed than wall time on a busy machine
        "realtime_cpu": sim / cpu,
        "cars": len(rep.engine.x),
        "setup_s": setup,
        "wall_s": wall,
        "realtime": sim / wall,
        "events": len(res.events),
        "engine_events": rep.engine.event_count,
    }


def bench_trains(sizes: list[int], copies: int, seconds: float, repeat: int) -> dict:
    rows = []
    for n in sizes:
        best = min((many_trains(n, copies, seconds) for _ in range(repeat)), key=lambda r: r["wall_s"])
        rows.append(best)
        print(
            f"  {n:5d} trains ({best['cars']} cars) on {copies}x DK24: setup {best['setup_s']:6.2f} s, "
            f"{seconds:g} s in {best['wall_s']:7.2f} s = {best['realtime']:7.1f}x real time, "
            f"{best['engine_events']} engine events",
            flush=True,
        )
    exp = exponent([r["trains"] for r in rows], [r["wall_s"] for r in rows])
    print(f"  stepping exponent {exp:.2f}", flush=True)
    return {"rows": rows, "exponent": exp, "copies": copies}


# -- route size -------------------------------------------------------------------------

_ROUTE_CHILD = r"""
import gc, json, os, resource, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[2])
from tdbtools.formats import load_route
folder, out = Path(sys.argv[1]), {}
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
base = rss()
c = time.process_time(); t = time.perf_counter(); route = load_route(folder, cache=(sys.argv[3] == "warm"))
out["load_s"] = time.perf_counter() - t; out["load_cpu_s"] = time.process_time() - c
out["load_peak_mb"] = rss() - base
if sys.argv[3] == "warm":
    print(json.dumps(out)); raise SystemExit
from tdbtools.track.audit import audit_route
t = time.perf_counter(); audit_route(route); out["audit_s"] = time.perf_counter() - t
from tdbtools.track import Traveller
s = route.tdb.sections
rng = np.random.default_rng(0); i = rng.integers(0, len(s), 10000)
t = time.perf_counter(); Traveller.locate_many(route, s.tile_x[i], s.tile_z[i], s.x[i], s.z[i])
out["locate_s"] = time.perf_counter() - t
from tdbtools.export.geo import write_geojson
t = time.perf_counter(); write_geojson(route, Path(sys.argv[4]) / "route.geojson")
out["geojson_s"] = time.perf_counter() - t
out["peak_mb"] = rss() - base
print(json.dumps(out))
"""


def route_size(copies: int) -> dict:
    folder = big_route.make_route(copies, WORK / f"r{copies}")
    mb = (folder / "DK24.tdb").stat().st_size / 1e6
    env = dict(os.environ, TDBTOOLS_CACHE_DIR=str(WORK / "cache"))
    with tempfile.TemporaryDirectory() as tmp:

        def child(mode: str) -> dict:
            src = os.environ.get("BENCH_SRC", str(HERE.parent))
            p = subprocess.run(
                [sys.executable, "-c", _ROUTE_CHILD, str(folder), src, mode, tmp],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if p.returncode:
                raise RuntimeError(p.stderr[-2000:])
            return json.loads(p.stdout.strip().splitlines()[-1])

        cold = child("cold")
        child("warm")  # write the cache
        warm = min((child("warm") for _ in range(3)), key=lambda r: r["load_s"])
    return {
        "copies": copies,
        "tdb_mb": mb,
        "cold_s": cold["load_s"],
        "cold_cpu_s": cold["load_cpu_s"],
        "warm_s": warm["load_s"],
        "cold_peak_mb": cold["load_peak_mb"],
        "audit_s": cold["audit_s"],
        "locate_s": cold["locate_s"],
        "geojson_s": cold["geojson_s"],
        "peak_mb": cold["peak_mb"],
    }


def bench_route(sizes: list[int]) -> dict:
    rows = []
    for c in sizes:
        r = route_size(c)
        rows.append(r)
        print(
            f"  {c:3d}x DK24 ({r['tdb_mb']:6.1f} MB .tdb): cold {r['cold_s']:6.2f} s ({r['cold_cpu_s']:.2f} s CPU), "
            f"warm {r['warm_s']:5.2f} s, "
            f"audit {r['audit_s']:5.2f} s, locate 10k {r['locate_s']:5.2f} s, GeoJSON {r['geojson_s']:5.2f} s, "
            f"peak +{r['peak_mb']:.0f} MB",
            flush=True,
        )
    exp = (
        exponent([r["tdb_mb"] for r in rows], [r["cold_s"] for r in rows]) if len(rows) > 1 else float("nan")
    )
    print(f"  cold-load exponent {exp:.2f}", flush=True)
    return {"rows": rows, "exponent": exp}


def plot(results: dict[str, dict], out: Path) -> list[Path]:
    """PNG plots (log-log) of one or more bench_scale JSON results, labelled by their keys
    (e.g. {"old": ..., "new": ...})."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    panels = (
        ("cars", "cars", "wall_s", "cars in one train", "wall time for 200 s simulated (s)"),
        ("trains", "trains", "wall_s", "trains of 21 cars", "stepping wall time for 60 s (s)"),
        ("route", "tdb_mb", "cold_s", ".tdb size (MB)", "cold load (s)"),
    )
    for key, xk, yk, xl, yl in panels:
        series = {label: r[key] for label, r in results.items() if key in r}
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.6), dpi=100)
        for label, data in series.items():
            xs = [row[xk] for row in data["rows"]]
            ys = [row[yk] for row in data["rows"]]
            ax.loglog(xs, ys, "o-", label=f"{label} (exponent {data['exponent']:.2f})")
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / f"scale_{key}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("cars", "trains", "route", "all", "plot"))
    ap.add_argument(
        "--plot",
        nargs="+",
        metavar="LABEL=JSON",
        default=[],
        help="with 'plot': the JSON results to draw, e.g. old=old.json new=new.json",
    )
    ap.add_argument("--out", type=Path, default=HERE / "img")
    ap.add_argument("--cars", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--trains", type=int, nargs="+", default=[50, 200, 1000])
    ap.add_argument("--copies", type=int, nargs="+", default=None)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.what == "plot":
        res = {}
        for item in args.plot:
            label, _, path = item.partition("=")
            res[label] = json.loads(Path(path).read_text())
        for p in plot(res, args.out):
            print(p)
        return 0
    if not (big_route.ROUTE / "DK24.tdb").is_file() and args.what != "cars":
        print(f"DK24 not found at {big_route.ROUTE}", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TDBTOOLS_CACHE_DIR", str(WORK / "cache"))
    print(f"uptime: {os.getloadavg()}; numpy {np.__version__}, Python {sys.version.split()[0]}", flush=True)
    out = {}
    if args.what in ("cars", "all"):
        print(f"one train, engine alone, {args.seconds or 200:g} s simulated:", flush=True)
        out["cars"] = bench_cars(args.cars, args.seconds or 200.0, args.repeat)
    if args.what in ("trains", "all"):
        copies = (args.copies or [16])[0]
        print(f"trains of 21 cars, whole replays, {args.seconds or 60:g} s simulated:", flush=True)
        out["trains"] = bench_trains(args.trains, copies, args.seconds or 60.0, args.repeat)
    if args.what in ("route", "all"):
        print("route size (each in a fresh process):", flush=True)
        out["route"] = bench_route(args.copies or [1, 4, 16, 64, 92])
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
