"""The replay's compiled parts (numba, ``pip install "tdbtools[fast]"``; docs/physics.md §1.1).

Four kernels give the numbers of the numpy code they stand for, bit for bit: the
engine's step, the batch drivers' arithmetic, the line-table lookups and the per-car
arithmetic of a replay step around the engine. numba compiles
each on its first use on a machine (about 25 s in all) and caches the machine code beside
the modules; :func:`compile_kernels` does that now, by running each once on a tiny case
with the argument types the replay gives it, so that a first replay, a test run or a
worker of a sweep does not pay it (the CI does it after installing).
"""

from __future__ import annotations

import time

import numpy as np

from .engine import compiled_available

__all__ = ["compile_kernels", "compiled_available"]


def compile_kernels() -> dict[str, float]:
    """Compile (or load from numba's cache) every kernel; seconds per kernel. Does
    nothing (an empty dict) when numba is not installed."""
    if not compiled_available():
        return {}
    from .driver import AutoDriver, DriverBatch, Stop
    from .engine import Bodies, Engine

    took: dict[str, float] = {}
    t = time.perf_counter()
    eng = Engine(Bodies.trains([[80e3, 40e3, 40e3]], [[20.0] * 3]), [0.0, -20.0, -40.0], [0.0] * 3)
    eng.step(0.1, np.array([1e5, 0.0, 0.0]), np.full(3, 500.0))
    # and its building blocks on their own, as tests/test_engine_kernel.py calls them
    from . import _engine_kernel as K

    w = np.array([40e3, 50e3, 60e3])
    f = np.array([1e3, -2e3, 5e2])
    types = np.array([1, 2], dtype=np.int64)
    y, cuts = np.empty(3), np.empty(3, dtype=np.int64)
    K._seg_sum(f, 0, 3)
    K._fsum(f, 0, 3)
    K._solve_chain(w, f, types, 1e-9, y, cuts)
    K._solve_static(w, f, np.abs(f), types, 1e-9, y, cuts)
    took["engine"] = time.perf_counter() - t

    t = time.perf_counter()
    drivers = []
    for k in range(2):
        d = AutoDriver([0.0, 500.0], [20.0, 10.0], 900.0, max_speed=None, deceleration=0.5)
        d.stops.append(Stop(700.0 + k, 0.0, "waiting point"))
        drivers.append(d)
    batch = DriverBatch(drivers, [None, None], [None, None], 1.0)
    front = np.array([100.0, 150.0])
    batch.drive(0.0, 0.1, front, np.array([5.0, 6.0]), front - 60.0, np.ones(2, dtype=bool))
    took["drivers"] = time.perf_counter() - t

    t = time.perf_counter()
    from ._lookup_kernel import interp

    xp = np.linspace(0.0, 100.0, 11)
    x = np.array([5.0, 50.0])
    out1, out2 = np.empty(2), np.empty(2)
    interp(x, xp, xp * 2.0, xp * 3.0, out1, out2, np.full(2, -1, dtype=np.int64), True)
    took["lookups"] = time.perf_counter() - t

    t = time.perf_counter()
    _step_kernels()
    took["step"] = time.perf_counter() - t
    return took


def _step_kernels() -> None:
    """The replay step's kernels on two cars, with the array kinds the replay gives them:
    the engine's x and v read-only, the bogie measures one (n, 2) array."""
    from . import _step_kernel as K

    n = 2

    def ro(a: np.ndarray) -> np.ndarray:
        a.flags.writeable = False
        return a

    x, v = ro(np.array([0.0, -20.0])), ro(np.array([5.0, 5.0]))
    fbrb = np.array([[-2.0, -12.0], [-22.0, -32.0]])
    f = np.full(n, 1.0)
    table = np.array([-100.0, 0.0, 100.0])
    rows = np.full(2 * n, -1, dtype=np.int64)
    out = [np.empty(n) for _ in range(4)]
    K.car_forces(
        x, v, fbrb, f * 500.0, f * 100.0, f * 10.0, table, table * 0.01, rows, np.empty(2 * n),
        np.empty(2 * n), table, table * 1e-3, rows[:n].copy(), f * -1e5, f * 14.0, f * 900.0, f * 20.0,
        f * 4.0, True, f * 5e3, f * 1.0, f * 10.0, f * 2e3, *out,
    )  # fmt: skip
    grav, dav, crv, resist = out
    trac, brk = np.empty(n), np.empty(n)
    K.after_step(x, x, v, grav, dav, resist.copy(), crv.copy(), f.copy(), fbrb, f, f * 14.0, f * 500.0)
    ctl = np.array([[1.0, 10.0, 1.0, 0.0, 0.0, 0.0]])
    K.train_forces(
        ctl, 0.1, f * 1e5, grav, resist, dav, crv, v, np.zeros(1, dtype=np.int64),
        np.full(1, n, dtype=np.int64), f[:1] * 2e5, f[:1] * 1e5, np.zeros(1, dtype=np.bool_),
        f[:1] * 20.0, f[:1] * 10.0, f[:1] * 30.0, f[:1] * 0.5, f * 5e4, f * 1e5, 1.15, 0.05,
        np.zeros(1), trac, brk, np.empty(n), np.empty(n), np.empty(1),
    )  # fmt: skip
