"""Speed of the 1-D multi-train engine (tdbtools.physics.engine) against real time.

    python benchmarks/bench_engine.py [--seconds S] [--dt DT] [--repeat N]

Two configurations, each simulated for ``--seconds`` (default 600) at ``--dt`` (default
0.1 s):

* 1 line × 1 train of 20 cars (target ≥ 1000× real time, i.e. ≥ 10 000 steps/s at 0.1 s);
* 50 lines × 1 train of 20 cars = 1000 cars (target ≥ 50× real time, ≥ 500 steps/s).

Each train is a 90 t locomotive (traction on the first car, 250 kN below 10 m/s, then a
2.5 MW power limit) and 19 wagons of 30–70 t (random, so no two trains are alike and their
events do not coincide), 20 m long, coupled with 0.05 m of slack. It starts from rest on
level track with every buffer compressed, so the slack runs in (one coupler snatch per joint
in the first seconds), then the train accelerates towards the balancing speed. For the last
third the traction is off and every car brakes with 2–6 % of its weight (random per car),
so the slack runs in again (buffer impacts) and the trains stop. Running resistance per
car: Davis ``A + B·|v| + C·v²`` (the 50 t freight values of docs/physics.md §3.2), recomputed every
step from the current speeds.

The timed loop includes computing the forces (a few numpy operations per step, as a replay
would); the ``engine.step alone`` figure counts only the time spent inside
``Engine.step``. Each figure is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from tdbtools.physics.engine import Bodies, Engine  # noqa: E402

N_CARS = 20
LOCO_MASS, CAR_LENGTH, SLACK = 90e3, 20.0, 0.05
MAX_FORCE, MAX_POWER = 250e3, 2.5e6
DAVIS_A, DAVIS_B, DAVIS_C = 834.71, 24.679, 1.4375  # docs/physics.md §3.2 worked example


def make(lines: int, seed: int = 1) -> tuple[Engine, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mass = rng.uniform(30e3, 70e3, (lines, N_CARS))
    mass[:, 0] = LOCO_MASS
    mass = mass.ravel()
    n = mass.size
    brake = mass * 9.81 * rng.uniform(0.02, 0.06, n)
    line = np.repeat(np.arange(lines), N_CARS)
    coupled = np.tile([True] * (N_CARS - 1) + [False], lines)
    bodies = Bodies(mass, np.full(n, CAR_LENGTH), line, coupled, np.full(n, SLACK))
    x = -np.tile(np.arange(N_CARS) * CAR_LENGTH, lines)  # buffers compressed
    lead = np.zeros(n, dtype=bool)
    lead[::N_CARS] = True
    return Engine(bodies, x, np.zeros(n)), lead, brake


def run(lines: int, seconds: float, dt: float) -> dict:
    eng, lead, brake = make(lines)
    steps = int(round(seconds / dt))
    brake_from = int(round(steps * 2 / 3))
    counts: dict[str, int] = {}
    n_events = 0
    in_step = 0.0
    clock = time.perf_counter
    t0 = clock()
    zero = np.zeros(eng.n)
    for k in range(steps):
        v = eng.v
        av = np.abs(v)
        resist = DAVIS_A + av * (DAVIS_B + DAVIS_C * av)
        if k < brake_from:
            drive = np.where(lead, np.minimum(MAX_FORCE, MAX_POWER / np.maximum(av, 1e-3)), 0.0)
        else:
            drive = zero
            resist += brake
        t1 = clock()
        events = eng.step(dt, drive, resist)
        in_step += clock() - t1
        n_events += len(events)
        for e in events:
            counts[e.kind] = counts.get(e.kind, 0) + 1
    wall = clock() - t0
    return {
        "wall": wall,
        "in_step": in_step,
        "steps": steps,
        "events": n_events,
        "kinds": counts,
        "speed": float(eng.v.mean()),
        "sim": steps * dt,
        "truncated": eng.truncated_steps,
        "gap_ok": bool(np.all(eng.gap[eng.bodies.coupled[:-1]] <= SLACK)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--dt", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"engine benchmark: {args.seconds:g} s simulated at dt = {args.dt:g} s, "
        f"best of {args.repeat}; numpy {np.__version__}, Python {sys.version.split()[0]}"
    )
    for lines, target in ((1, 1000.0), (50, 50.0)):
        best = min((run(lines, args.seconds, args.dt) for _ in range(args.repeat)), key=lambda r: r["wall"])
        rt = best["sim"] / best["wall"]
        print(
            f"  {lines:>2} line(s) x {N_CARS} cars = {lines * N_CARS:>4} cars: "
            f"{best['steps'] / best['wall']:7.0f} steps/s, {rt:6.0f}x real time "
            f"(target >= {target:g}x: {'met' if rt >= target else 'NOT met'}); "
            f"engine.step alone {best['steps'] / best['in_step']:7.0f} steps/s, "
            f"{best['sim'] / best['in_step']:6.0f}x"
        )
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(best["kinds"].items()))
        print(
            f"      {best['events']} events ({kinds}); final mean speed "
            f"{best['speed']:.3g} m/s; couplers within slack: {best['gap_ok']}"
        )
        if best["truncated"]:
            print(f"      warning: {best['truncated']} step(s) hit the event cap")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
