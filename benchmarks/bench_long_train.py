"""A 1,000-car train through the command line (issue 32): `tdbtools replay` on DK24.

    python benchmarks/bench_long_train.py OUT_DIR [--cars 1000] [--seconds 200] [--repeat 3]
                                          [--keep] [--cars-trace] [--physics P]

Writes into OUT_DIR an install with DK24's route (no world files: no signals), the sample
stock and a consist of one Class 66 and ``cars - 1`` Eanos wagons, and a scenario that runs
it from the start of DK24's 1514.pat with the automatic driver for ``--seconds`` at
dt = 0.1 s, then does what ``tdbtools replay SCENARIO --out ...`` does (read the scenario, build the
replay, run it, write its files) in this process, timing each in CPU seconds (the machine
is shared). Reported: simulated seconds over the loop's CPU seconds (what the CLI prints as
"x real time", by the wall clock), and with the writing of the files. Median of
``--repeat`` after one warm-up run. Target (issue 32): >= 300x real time. ``--keep``: keep
the last run's output folder (``OUT_DIR/out``) for comparing two checkouts. BENCH_SRC:
another checkout to measure. ``--physics engineering|openrails``: the scenario's physics
profile (default: none given, so the replay chooses by the stock: Open Rails' laws, since
every car comes from its .eng/.wag file; docs/physics.md §7).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# BENCH_SRC: another checkout whose tdbtools to measure (old and new code side by side)
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))
DK24 = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"
SAMPLE = HERE.parent / "sample_routes" / "sample" / "TRAINS"
PATH = "1514.pat"
ENGINE_EVERY = 25


def consist(cars: int) -> str:
    """A Class 66 at the head and every ENGINE_EVERY cars (distributed power: one engine
    does not keep 1,000 loaded wagons on the rails), Eanos wagons between."""
    engine = "\t\tEngine (\n\t\t\tUiD ( {k} )\n\t\t\tEngineData ( SAMPLE_DL66 SAMPLE_DL )\n\t\t)\n"
    wagon = "\t\tWagon (\n\t\t\tUiD ( {k} )\n\t\t\tWagonData ( Sample_Eanos SAMPLE_FREIGHT )\n\t\t)\n"
    wagons = "".join((engine if k % ENGINE_EVERY == 0 else wagon).format(k=k) for k in range(1, cars))
    return (
        'SIMISA@@@@@@@@@@JINX0D0t______\n\nTrain (\n\tTrainCfg ( "long"\n'
        f'\t\tName ( "{cars} cars, DL 66 every {ENGINE_EVERY}" )\n\t\tSerial ( 1 )\n'
        "\t\tMaxVelocity ( 27.77778 0.00100 )\n"
        f"\t\tNextWagonUID ( {cars} )\n\t\tDurability ( 1.00000 )\n"
        f"{engine.format(k=0)}{wagons}\t)\n)\n"
    )


def make_install(out: Path, cars: int, seconds: float, physics: str | None = None) -> Path:
    """The install under ``out`` (reused); returns the scenario file."""
    install = out / "DK24L"
    folder = install / "ROUTES" / "OR_DK24"
    if not folder.is_dir():
        folder.mkdir(parents=True)
        for f in DK24.iterdir():
            if f.name.upper() in ("WORLD", "ACTIVITIES", "SERVICES", "TRAFFIC"):
                continue
            (shutil.copytree if f.is_dir() else shutil.copy2)(f, folder / f.name)
        shutil.copytree(DK24.parent.parent / "GLOBAL", install / "GLOBAL")
        shutil.copytree(SAMPLE, install / "TRAINS")
    con = install / "TRAINS" / "CONSISTS" / f"long{cars}.con"
    con.write_text(consist(cars), encoding="ascii")
    scen = install / (f"long{cars}.toml" if physics is None else f"long{cars}_{physics}.toml")
    profile = "" if physics is None else f'physics = "{physics}"\n'
    scen.write_text(
        f'route = "ROUTES/OR_DK24"\nstep = 0.1\nduration = {seconds:g}\n{profile}\n[[train]]\nname = "long"\n'
        f'consist = "long{cars}"\npath = "{PATH}"\ndriver = "auto"\nbeyond_path = 40000\n',
        encoding="ascii",
    )
    return scen


def run_once(scen: Path, out: Path, cars_trace: bool) -> dict:
    """What ``tdbtools replay SCENARIO --out OUT`` does (cli.py: read the scenario, build
    the Replay, run it, write its files), timed in CPU seconds of this process."""
    from tdbtools.formats import load_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import read_scenario

    if out.exists():
        shutil.rmtree(out)
    c0 = time.process_time()
    sc = read_scenario(scen)
    rep = Replay(sc, route=load_route(Path(sc.route)), cars_trace=cars_trace)
    c1 = time.process_time()
    res = rep.run()
    c2 = time.process_time()
    res.write(out)
    c3 = time.process_time()
    return {
        "setup": c1 - c0,
        "loop": c2 - c1,
        "write": c3 - c2,
        "simulated": float(res.summary["simulated_seconds"]),
        "events": len(res.events),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--cars", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=200.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--cars-trace", action="store_true", help="also write the per-car trace (--cars)")
    ap.add_argument("--physics", choices=("engineering", "openrails"), help="the scenario's physics profile")
    args = ap.parse_args()
    if not (DK24 / "DK24.tdb").is_file():
        print(f"DK24 not found at {DK24}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    scen = make_install(args.out, args.cars, args.seconds, args.physics)
    run_once(scen, args.out / "out", args.cars_trace)  # (the route cache and compiled kernels warm)
    rows = [run_once(scen, args.out / "out", args.cars_trace) for _ in range(args.repeat)]
    if not args.keep:
        shutil.rmtree(args.out / "out")
    med = sorted(rows, key=lambda r: r["loop"])[len(rows) // 2]
    sim = med["simulated"]
    each = ", ".join(f"{sim / r['loop']:.0f}" for r in rows)
    print(
        f"{args.cars} cars, {args.physics or 'default'} physics, {sim:.0f} s simulated, {med['events']} events: loop {med['loop']:.3f} CPU s = "
        f"{sim / med['loop']:.0f}x real time (median of {args.repeat}: "
        f"{each}); loop + writing {sim / (med['loop'] + med['write']):.0f}x; "
        f"setup {med['setup']:.2f} s; load average {os.getloadavg()[0]:.2f} (target: >= 300x)"
    )
    return 0 if sim / med["loop"] >= 300.0 else 1


if __name__ == "__main__":
    sys.exit(main())
