"""The engine step alone on bench_long_train.py's 1,000-car train (issue 32).

    python benchmarks/bench_engine_long.py OUT_DIR [--cars 1000] [--seconds 200] [--repeat 3]
                                          [--physics engineering|openrails] [--old CHECKOUT] [--reuse]

Runs bench_long_train.py's replay (a Class 66 every 25 cars, DK24's 1514.pat, the automatic
driver, dt 0.1 s) once and records what the engine is given: the arguments it was made with
(its cars, positions, speeds), then every step's dt, drive and resist (to
OUT_DIR/engine_steps.pkl). Then it makes the same engine again and replays those steps on
``Engine.step`` alone, timed in CPU seconds, each repeat in a process of its own that
imports tdbtools as usual: ``step`` is the whole public call (the checks, the Python
wrapper, the compiled kernel and the event records), ``kernel`` the compiled call inside it
(its dispatch included). The replayed engine's last positions and speeds must be the
recorded run's (so nothing outside the engine moved it).

With ``--old CHECKOUT`` the same steps also run on that checkout's engine (the same public
call), alternating with this one's, and the two trajectories (every step's speeds,
accelerations, groups, positions, gaps and events) must be equal bit for bit, unless
``--bits-may-differ`` (two engines whose numerics differ in the last bits on purpose: the old
one then only has to run the steps; its end is not checked against the recording). (A kernel
loaded from its file under another module name in the same process measured differently
from the same source imported as usual, so each checkout gets its own process.) Reported:
microseconds per step (median of ``--repeat``) and the load average. ``--reuse``: replay the
steps recorded in OUT_DIR before instead of recording them again.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# BENCH_SRC: the checkout whose tdbtools to import (set for the timing processes)
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))
sys.path.insert(1, str(HERE))

import bench_long_train as L  # noqa: E402
import numpy as np  # noqa: E402

from tdbtools.physics import engine as E  # noqa: E402


def record(out: Path, cars: int, seconds: float, physics: str | None) -> dict:
    """The engine's inputs during one replay of the long train."""
    rec: dict = {"init": None, "steps": [], "quiet": 0.0, "final": None}
    orig_init, orig_step = E.Engine.__init__, E.Engine.step
    engines: list = []

    def init_spy(eng, bodies, x, v, **kw):
        orig_init(eng, bodies, x, v, **kw)
        if eng.compiled and rec["init"] is None:
            rec["init"] = (bodies, np.array(x, dtype=np.float64), np.array(v, dtype=np.float64), kw)
            engines.append(eng)

    def step_spy(eng, dt, drive, resist):
        if engines and eng is engines[0]:
            rec["quiet"] = eng.quiet_contact_speed
            rec["steps"].append((dt, np.array(drive, dtype=np.float64), np.array(resist, dtype=np.float64)))
        return orig_step(eng, dt, drive, resist)

    E.Engine.__init__, E.Engine.step = init_spy, step_spy
    try:
        scen = L.make_install(out, cars, seconds, physics)
        L.run_once(scen, out / "out", False)
    finally:
        E.Engine.__init__, E.Engine.step = orig_init, orig_step
    if rec["init"] is None:
        raise SystemExit("the replay made no compiled engine (is numba installed?)")
    rec["final"] = (np.array(engines[0].x), np.array(engines[0].v))
    return rec


def run(rec: dict, check_end: bool = True) -> tuple[float, float, str, int]:
    """Every recorded step on a new engine: CPU seconds in ``Engine.step`` and in its
    compiled call, the trajectory's digest. ``check_end``: the engine must end where the
    recorded one did (the recording checkout's engine must)."""
    bodies, x0, v0, kw = rec["init"]
    eng = E.Engine(bodies, x0, v0, **dict(kw, compiled=True))
    eng.quiet_contact_speed = rec["quiet"]
    inner = eng._kernel_step
    kcpu = [0.0]
    clock = time.process_time

    def timed_kernel(*args):
        c0 = clock()
        r = inner(*args)
        kcpu[0] += clock() - c0
        return r

    eng._kernel_step = timed_kernel
    h = hashlib.sha256()
    cpu = 0.0
    for dt, drive, resist in rec["steps"]:
        c0 = clock()
        events = eng.step(dt, drive, resist)
        cpu += clock() - c0
        for arr in (eng.v, eng.a, eng.groups, eng.x, eng.gap):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(repr(events).encode())
    fx, fv = rec["final"]
    if check_end and not (np.array_equal(eng.x, fx) and np.array_equal(eng.v, fv)):
        raise SystemExit("the replayed engine did not end where the recorded one did")
    return cpu, kcpu[0], h.hexdigest(), len(rec["steps"])


def timed(checkout: Path, steps_file: Path, check_end: bool) -> tuple[float, float, str, int]:
    """One timing of the recorded steps in a process importing ``checkout``'s tdbtools."""
    env = dict(os.environ, BENCH_SRC=str(checkout), PYTHONPATH=str(checkout))
    code = (
        "import pickle, sys; sys.path.insert(0, sys.argv[1]); import bench_engine_long as B; "
        "assert B.E.__file__.startswith(sys.argv[3]); rec = pickle.load(open(sys.argv[2], 'rb')); "
        "B.run(rec, sys.argv[4] == '1'); print(*B.run(rec, sys.argv[4] == '1'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(HERE), str(steps_file), str(checkout), "1" if check_end else "0"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1]), out[2], int(out[3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--cars", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=200.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--physics", choices=("engineering", "openrails"), default="engineering")
    ap.add_argument("--old", type=Path, help="another checkout whose engine runs the same steps")
    ap.add_argument(
        "--bits-may-differ",
        action="store_true",
        help="the old engine's numerics differ in the last bits on purpose: time it, do not compare",
    )
    ap.add_argument("--reuse", action="store_true", help="replay OUT_DIR/engine_steps.pkl as recorded before")
    args = ap.parse_args()
    if not (L.DK24 / "DK24.tdb").is_file():
        print(f"DK24 not found at {L.DK24}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    steps_file = args.out / "engine_steps.pkl"
    if not (args.reuse and steps_file.is_file()):
        with open(steps_file, "wb") as f:
            pickle.dump(record(args.out, args.cars, args.seconds, args.physics), f)
    kernels = [("this", HERE.parent)] + ([("old", args.old.resolve())] if args.old else [])
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in kernels}
    digests = set()
    steps = 0
    for _ in range(args.repeat):
        for name, checkout in kernels:
            strict = name == "this" or not args.bits_may_differ
            cpu, kcpu, dg, steps = timed(checkout, steps_file, strict)
            times[name].append((cpu, kcpu))
            digests.add((name, dg) if args.bits_may_differ else dg)
    for name, ts in times.items():
        for col, label in ((0, "step"), (1, "kernel")):
            vals = sorted(t[col] for t in ts)
            each = ", ".join(f"{t[col] / steps * 1e6:.0f}" for t in ts)
            med = vals[len(vals) // 2]
            print(
                f"{name} {label}: {med / steps * 1e6:.0f} us/step ({each}) over {steps} steps of {args.cars} cars"
            )
    # with --bits-may-differ, each checkout's own runs must still agree with each other
    equal = len(digests) == len(kernels) if args.bits_may_differ else len(digests) == 1
    what = "each checkout's runs equal" if args.bits_may_differ else "trajectories equal bit for bit"
    print(f"load average {os.getloadavg()[0]:.2f}; {what}: {equal}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
