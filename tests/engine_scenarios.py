"""Engine scenarios whose traces are frozen in ``tests/data/engine_golden.npz``.

The golden file holds the traces of the engine as it was before the speed work of issue 16
(``python tests/engine_scenarios.py`` rewrote it then; re-run it only when the physics is
meant to change, and say so in the commit). ``tests/test_engine_golden.py`` replays every
scenario with the current engine and requires the same numbers bit for bit.

Each scenario is a function returning ``(engine, forces)`` where ``forces(k, engine)``
gives ``(drive, resist)`` for step ``k``; forces depend on the speeds, so any change in a
trace feeds back into the next steps.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tdbtools.physics.engine import Bodies, Engine

GOLDEN = Path(__file__).resolve().parent / "data" / "engine_golden.npz"
DT = 0.1
#: x and v are kept every this many steps (every step would make a large file)
EVERY = 20

Forces = Callable[[int, Engine], tuple[np.ndarray, np.ndarray]]


def _davis(v: np.ndarray) -> np.ndarray:
    av = np.abs(v)
    return 834.71 + av * (24.679 + 1.4375 * av)


def _trains(lines: int, cars: int, seed: int, steps: int, loco_every: int = 0) -> tuple[Engine, Forces]:
    """``lines`` lines with one train each: a loco pulls off with buffers compressed (the
    slack runs out), then the second half brakes every car (the slack runs in)."""
    rng = np.random.default_rng(seed)
    mass = rng.uniform(30e3, 70e3, (lines, cars))
    mass[:, 0] = 90e3
    mass = mass.ravel()
    n = mass.size
    brake = mass * 9.81 * rng.uniform(0.06, 0.18, n)
    line = np.repeat(np.arange(lines), cars)
    coupled = np.tile([True] * (cars - 1) + [False], lines)
    bodies = Bodies(mass, np.full(n, 20.0), line, coupled, np.full(n, 0.05))
    x = -np.tile(np.arange(cars) * 20.0, lines)
    lead = np.zeros(n, dtype=bool)
    lead[::cars] = True
    if loco_every:  # distributed power: locos along the train
        lead[::loco_every] = True
    brake_from = steps // 2

    def forces(k: int, eng: Engine) -> tuple[np.ndarray, np.ndarray]:
        av = np.abs(eng.v)
        resist = _davis(eng.v)
        if k < brake_from:
            drive = np.where(lead, np.minimum(250e3, 2.5e6 / np.maximum(av, 1e-3)), 0.0)
        else:
            drive = np.zeros(n)
            resist = resist + brake
        return drive, resist

    return Engine(bodies, x, np.zeros(n)), forces


def one_car() -> tuple[Engine, Forces]:
    return _trains(1, 1, 3, 1300)


def train_21() -> tuple[Engine, Forces]:
    return _trains(1, 21, 1, 900)


def train_300() -> tuple[Engine, Forces]:
    return _trains(1, 300, 5, 1200, loco_every=15)


def many_trains() -> tuple[Engine, Forces]:
    return _trains(40, 21, 7, 450)


def shunting() -> tuple[Engine, Forces]:
    """Line 0: a 6-car cut stands braked; a loco with 3 cars runs into it at 2 m/s, keeps
    pushing, then backs off (couplers of the cut snatch). Line 1: loose cars on a grade
    roll into each other and into a braked car (static friction holds it)."""
    m0 = [30e3, 55e3, 45e3, 35e3, 65e3, 50e3] + [60e3, 40e3, 40e3, 40e3]
    l0 = [15.0] * 6 + [18.0] * 4
    c0 = [True] * 5 + [False] + [True, True, True, False]
    m1 = [20e3, 25e3, 30e3, 22e3]
    l1 = [12.0] * 4
    c1 = [False, False, False, False]
    mass = np.array(m0 + m1)
    length = np.array(l0 + l1)
    line = np.array([0] * 10 + [1] * 4)
    coupled = np.array(c0 + c1)
    slack = np.array([0.08] * 10 + [0.0] * 4)
    # front (larger x) first within a line: the standing cut, then 30 m behind it the loco
    x_line0 = [300.0]
    for i in range(1, 10):
        gap = 30.0 if i == 6 else (0.0 if i % 2 else 0.05)
        x_line0.append(x_line0[-1] - length[i - 1] - gap)
    x1 = [500.0, 470.0, 440.0, 400.0]
    x = np.array(x_line0 + x1)
    v = np.array([0.0] * 6 + [2.0] * 4 + [0.0, -0.5, 1.0, 0.0])
    n = mass.size
    g_force = mass * 9.81 * 0.004  # a 4 per mille grade on line 1 (towards +x)

    def forces(k: int, eng: Engine) -> tuple[np.ndarray, np.ndarray]:
        drive = np.zeros(n)
        resist = np.full(n, 400.0)
        resist[:6] += 0.05 * 9.81 * mass[:6]  # the standing cut is braked
        if k < 250:
            drive[6] = 60e3
        elif k < 500:
            drive[6] = -90e3
        drive[10:] = g_force[10:]
        resist[13] += 0.02 * 9.81 * mass[13]
        return drive, resist

    return Engine(Bodies(mass, length, line, coupled, slack), x, v), forces


SCENARIOS: dict[str, tuple[Callable[[], tuple[Engine, Forces]], int]] = {
    "one_car": (one_car, 1300),
    "train_21": (train_21, 900),
    "train_300": (train_300, 1200),
    "many_trains": (many_trains, 450),
    "shunting": (shunting, 800),
}

EVENT_FIELDS = ("time", "line", "relative_speed", "impulse", "energy_lost")
KINDS = ("impact", "coupler_taut", "stopped", "started")


def trace(name: str) -> dict[str, np.ndarray]:
    """Run one scenario; return its x/v samples and its events as arrays."""
    make, steps = SCENARIOS[name]
    eng, forces = make()
    xs, vs, ev_num, ev_cars = [], [], [], []
    for k in range(steps):
        drive, resist = forces(k, eng)
        for e in eng.step(DT, drive, resist):
            ev_num.append(
                [KINDS.index(e.kind), e.time, e.line, e.relative_speed, e.impulse, e.energy_lost, k]
            )
            c = e.cars
            ev_cars.append([c[0], c[-1], len(c)])
        if k % EVERY == 0 or k == steps - 1:
            xs.append(np.array(eng.x))
            vs.append(np.array(eng.v))
    return {
        "x": np.array(xs),
        "v": np.array(vs),
        "ev": np.array(ev_num, dtype=np.float64).reshape(-1, 7),
        "cars": np.array(ev_cars, dtype=np.int64).reshape(-1, 3),
        "groups": np.array(eng.groups),
    }


def main() -> int:
    out: dict[str, np.ndarray] = {}
    for name in SCENARIOS:
        tr = trace(name)
        for key, arr in tr.items():
            out[f"{name}/{key}"] = arr
        print(f"{name}: {len(tr['ev'])} events", file=sys.stderr)
    np.savez_compressed(GOLDEN, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
