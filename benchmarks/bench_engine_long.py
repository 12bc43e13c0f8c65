"""The compiled engine step alone on bench_long_train.py's 1,000-car train (issue 32).

    python benchmarks/bench_engine_long.py OUT_DIR [--cars 1000] [--seconds 200] [--repeat 3]
                                          [--physics engineering|openrails] [--old CHECKOUT]

Runs bench_long_train.py's replay (a Class 66 every 25 cars, DK24's 1514.pat, the automatic
driver, dt 0.1 s) once and records what the engine is given at each step (its state before
the first step, then every step's dt, drive and resist, to OUT_DIR/engine_steps.pkl), then
replays those steps on the compiled step (``tdbtools.physics._engine_kernel.step``) alone,
timed in CPU seconds, each repeat in a process of its own that imports tdbtools as usual.
With ``--old CHECKOUT`` the same steps also run on that checkout's kernel, alternating with
this one's, and the two trajectories (every step's speeds, accelerations, groups, positions,
gaps, limits and events) must be equal bit for bit. (A kernel loaded from its file under
another module name in the same process measured differently from the same source imported
as usual, so each checkout gets its own process.) Reported: microseconds per step (median of
``--repeat``) and the load average.
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
    rec: dict = {"init": None, "steps": []}
    orig = E.Engine._step_compiled

    def spy(eng, dt, drive, resist):
        if rec["init"] is None:
            rec["init"] = dict(
                m=eng._mk, same=eng._same, hi=eng._hi, line=eng._line_arr,
                line_first=np.array(eng._line_first, dtype=np.int64), atz=eng._atz, att=eng._att,
                gap=eng._gap, v=eng._v, xlead=eng._xlead, gid=eng._gid, rest=eng.rest_speed,
                time=eng._time, dirty=eng._contacts_dirty, cap=eng._cap, length=eng._length,
                first_of_car=eng._first_of_car, line_index=eng._line_index,
            )  # fmt: skip
            rec["init"] = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in rec["init"].items()}
        rec["steps"].append((dt, np.array(drive, dtype=np.float64), np.array(resist, dtype=np.float64)))
        return orig(eng, dt, drive, resist)

    E.Engine._step_compiled = spy
    try:
        scen = L.make_install(out, cars, seconds, physics)
        L.run_once(scen, out / "out", False)
    finally:
        E.Engine._step_compiled = orig
    if rec["init"] is None:
        raise SystemExit("the replay ran no compiled engine step (is numba installed?)")
    return rec


def run(kernel, rec: dict) -> tuple[float, str, int]:
    """Every recorded step on ``kernel``: CPU seconds inside its step, the trajectory's digest."""
    s = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in rec["init"].items()}
    n = s["m"].size
    work = kernel.work_arrays(n)
    t, dirty = s["time"], s["dirty"]
    h = hashlib.sha256()
    cpu = 0.0
    for dt, drive, resist in rec["steps"]:
        v, a, gid, x = s["v"].copy(), np.empty(n), s["gid"].copy(), np.empty(n)
        c0 = time.process_time()
        bad, dirty, trunc, moved, table, cnt = kernel.step(
            s["m"], s["same"], s["hi"], s["line"], s["line_first"], s["atz"], s["att"], s["gap"], v, a,
            s["xlead"], gid, drive, resist, dt, s["rest"], t, dirty, s["cap"], *work,
            s["length"], s["first_of_car"], s["line_index"], x,
        )  # fmt: skip
        cpu += time.process_time() - c0
        t += dt
        s["v"], s["gid"] = v, gid
        for arr in (v, a, gid, x, s["gap"], s["atz"], s["att"], s["xlead"], table[:cnt]):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(bytes([bool(dirty), bool(trunc), bool(moved)]))
    return cpu, h.hexdigest(), len(rec["steps"])


def timed(checkout: Path, steps_file: Path) -> tuple[float, str, int]:
    """One timing of the recorded steps in a process importing ``checkout``'s tdbtools."""
    env = dict(os.environ, BENCH_SRC=str(checkout), PYTHONPATH=str(checkout))
    code = (
        "import pickle, sys; sys.path.insert(0, sys.argv[1]); import bench_engine_long as B; "
        "from tdbtools.physics import _engine_kernel as k; assert k.__file__.startswith(sys.argv[3]); rec = pickle.load(open(sys.argv[2], 'rb')); "
        "B.run(k, rec); print(*B.run(k, rec))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(HERE), str(steps_file), str(checkout)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), out[1], int(out[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--cars", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=200.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--physics", choices=("engineering", "openrails"), default="engineering")
    ap.add_argument("--old", type=Path, help="another checkout whose kernel runs the same steps")
    args = ap.parse_args()
    if not (L.DK24 / "DK24.tdb").is_file():
        print(f"DK24 not found at {L.DK24}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    steps_file = args.out / "engine_steps.pkl"
    with open(steps_file, "wb") as f:
        pickle.dump(record(args.out, args.cars, args.seconds, args.physics), f)
    kernels = [("this", HERE.parent)] + ([("old", args.old.resolve())] if args.old else [])
    times: dict[str, list[float]] = {name: [] for name, _ in kernels}
    digests = set()
    steps = 0
    for _ in range(args.repeat):
        for name, checkout in kernels:
            cpu, dg, steps = timed(checkout, steps_file)
            times[name].append(cpu)
            digests.add(dg)
    for name, ts in times.items():
        med = sorted(ts)[len(ts) // 2]
        each = ", ".join(f"{t / steps * 1e6:.0f}" for t in ts)
        print(f"{name}: {med / steps * 1e6:.0f} us/step ({each}) over {steps} steps of {args.cars} cars")
    print(f"load average {os.getloadavg()[0]:.2f}; trajectories equal bit for bit: {len(digests) == 1}")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
