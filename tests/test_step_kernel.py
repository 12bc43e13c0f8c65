"""The replay step's compiled per-car arithmetic (tdbtools.physics._step_kernel) gives the
numbers of the numpy and Python code it stands for, bit for bit, on awkward values."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL, needs_kernels

from tdbtools.physics import forces
from tdbtools.physics.driver import Controls
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import read_scenario
from tdbtools.physics.stages.forces import car_types

pytest.importorskip("numba", reason="the kernels need numba")
pytestmark = needs_kernels  # (compares the kernels with the reference: none under the switch)


def _shunt(name: str = "shunt.toml") -> Replay:
    rep = Replay(read_scenario(SAMPLE_INSTALL / name))
    assert rep.forces.ck is not None
    return rep


def _ro(a: np.ndarray) -> np.ndarray:
    """Read-only, as the engine's x and v reach the kernels (one compiled signature)."""
    a = a.copy()
    a.flags.writeable = False
    return a


def _bits(*arrays: np.ndarray) -> list[bytes]:
    return [np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays]


@pytest.mark.parametrize("seed", range(3))
def test_car_forces_are_the_numpy_lookups(seed):
    """Cars' bogies and middles wander over random elevation and curvature tables of two
    lines (points on table rows, repeated piece ends, past either end of their own line
    by a little or a lot, next to the other line's part of the table, NaN), with speeds
    of both signs, ±0 and NaN, and starting resistance on some cars: gravity, Davis,
    curve resistance and their sum are the numpy code's, call after call (rows kept)."""
    rep = _shunt("signals_crossing.toml")  # (two lines: the second's table starts past 0)
    assert rep.lines.base[1] > 0.0
    rng = np.random.default_rng(seed)
    n = len(rep.engine.x)
    ln = rep.lines
    ends = np.sort(rng.uniform(0.0, ln.S[-1], 80))
    ends[10] = ends[11]  # a piece of no length
    ln.P1 = ends
    ln.PC = rng.choice([0.0, -0.0, 1e-3, -2e-3, 4e-3], len(ends))
    ln.P1_lo = np.concatenate(([-np.inf], ends))
    ln.P1_hi = np.concatenate((ends, [np.inf]))
    ln.Y = rng.normal(size=ln.S.size) * 5.0
    f0 = np.where(rng.random(n) < 0.5, 4000.0, np.nan)
    model = dataclasses.replace(
        rep.model, starting_resistance=f0, merge_speed=np.where(rng.random(n) < 0.2, np.nan, 1.5)
    )
    rep.forces.prepared = rep.forces.curves.prepared = forces.Prepared(model)
    rep.forces.ck = rep.forces.step_kernel_args(n)
    assert rep.forces.ck is not None
    kernel = rep.forces.ck
    x = np.asarray(rep.engine.x).copy()
    length = float(ln.S[-1])
    blended = 0
    for _ in range(200):
        x = x + rng.choice([0.0, 0.4, 3.0, 40.0], n) * rng.choice([-1.0, 1.0], n)
        if rng.random() < 0.3:
            x[rng.integers(n)] = ends[rng.integers(len(ends))] + rep.layout.half_length[0]
        if rng.random() < 0.1:
            x[rng.integers(n)] = rng.choice([-50.0, length + 80.0])
        v = rng.choice([0.0, -0.0, 0.7, 1.5, -1.2, 12.0, -30.0, np.nan], n)
        rep.layout.fb[:] = x - rep.layout.front_bogie + rng.choice([0.0, 1e-3, -5.0], n)
        rep.layout.rb[:] = rep.layout.fb - model.bogie_spacing
        if rng.random() < 0.3:  # a car just past either end of its own line
            k = rng.integers(n)
            over = rep.layout.car_line_len[k] + rng.choice([0.3, 2.0])
            x[k] = rng.choice([-0.4, over + rep.layout.half_length[k]])
            rep.layout.fb[k] = rng.choice([over, -0.2])
            rep.layout.rb[k] = rng.choice([-0.4, over - 1.0])
        if rng.random() < 0.1:
            rep.layout.fb[rng.integers(n)] = np.nan
        x, v = _ro(x), _ro(v)
        rep.forces.ck = None
        want = rep.forces.car_forces(x, v)
        rep.forces.ck = kernel
        got = rep.forces.car_forces(x, v)
        assert _bits(*got[:3]) == _bits(*want[:3])
        assert _bits(got[3]) == _bits(want[1] + want[2])
        blended += bool(np.any(np.abs(v) < 1.5))
    assert blended > 50


@pytest.mark.parametrize("seed", range(4))
def test_few_train_forces_are_the_numpy_and_scalar_code(seed):
    """Random controls (speed targets, NaN targets, throttles, brakes, decelerations,
    emergencies), positions and speeds of both signs, trains in force and in deceleration
    mode, with and without adhesion, traction in the kernel or given to it: the compiled
    few-train forces are _car_forces' and _traction_and_brakes' traction, brakes, scale
    and applied brake fractions, and the engine's drive and opposing forces."""
    rep = _shunt()
    rng = np.random.default_rng(seed)
    n = len(rep.engine.x)
    T = len(rep.trains)
    rep.lines.Y = rng.normal(size=rep.lines.S.size) * 3.0
    length = float(rep.lines.S[-1])
    decel = 0
    for it in range(300):
        if it % 50 == 0:  # new brake modes and adhesion (the kernel takes them at set-up)
            mode = rng.random(T) < 0.5
            rep.forces.per_train.decel_mode = mode
            rep.forces.per_train.decel_mode_l = mode.tolist()
            rep.forces.per_train.any_decel_mode = bool(mode.any())
            rep.forces.adhesion = [None, "dry"][it // 50 % 2]
            rep.forces.adhesive_g_eng_l = (
                None if rep.forces.adhesion is None else rep.forces.adhesive_g_eng.tolist()
            )
            rep.forces.ck = rep.forces.step_kernel_args(n)
            assert rep.forces.ck is not None and rep.forces.ck.trains is not None
            rep.forces.ck.consts[1] = it // 100 % 2 == 0  # traction in the kernel, or given to it
        ctrl = []
        for _k in range(T):
            tgt = rng.choice([None, 0.0, 1.0, 5.0, 30.0, float("nan")])
            ctrl.append(
                Controls(
                    throttle=float(rng.choice([0.0, 0.3, 1.0, 1.4])),
                    brake=float(rng.choice([0.0, 0.5, 1.0])),
                    deceleration=float(rng.choice([0.0, 0.4, -0.1])),
                    speed_target=tgt,
                    emergency=bool(rng.random() < 0.1),
                )
            )
        x = _ro(np.sort(rng.uniform(-20.0, length + 20.0, n))[::-1])
        v = rng.normal(size=n) * rng.choice([0.0, 1.0, 10.0, 40.0])
        v[rng.integers(n)] = rng.choice([0.0, -0.0, 25.0])
        v = _ro(v)
        rep.layout.fb[:] = x - rep.layout.front_bogie
        rep.layout.rb[:] = rep.layout.fb - rep.model.bogie_spacing
        dt = float(rng.choice([0.05, 0.1, 0.5]))
        applied0 = rng.choice([0.0, 0.2, 1.0, 1.15], T)
        kernel, rep.forces.ck = rep.forces.ck, None
        grav, dav, crv, _ = rep.forces.car_forces(x, v)
        rep.forces.ck = kernel
        rep.forces.brake_applied = applied0.copy()
        speeds = v[rep.train_start].tolist()
        trac, brk, scale, applied = rep.forces.traction_and_brakes(ctrl, x, v, speeds, grav, dav, crv, dt)
        want = _bits(trac, brk, scale, applied, trac + grav, dav + crv + brk)
        rep.forces.brake_applied = applied0.copy()
        got = rep.forces.few_train_forces(ctrl, x, v, dt)
        assert _bits(got[0], got[1], rep.forces.scale, rep.forces.brake_applied, got[2], got[3]) == want
        assert _bits(*rep.forces.last_forces) == _bits(grav, dav + crv)
        decel += bool(np.any(rep.forces.per_train.decel_mode[rep.car_train] & (brk > 0)))  # the hourly brake
    assert decel > 20


def test_after_step_is_the_numpy_sums():
    """Energy and top-speed sums and bogie measures after a step: the numpy code's, with
    traction against the motion, NaN speeds and bogies past either line end."""
    from tdbtools.physics import _step_kernel as K

    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        x0 = rng.normal(size=n) * 100.0
        x1 = x0 + rng.choice([0.0, -0.0, 0.5, -0.5, 3.0], n)
        v1 = rng.choice([0.0, -0.0, 4.0, -7.0, np.nan], n)
        trac = rng.choice([0.0, 1e5, -2e4], n)
        brk = rng.choice([0.0, 3e4], n)
        sums = np.array(
            [rng.choice([0.0, 1e6], n), rng.choice([0.0, 1e6], n), rng.choice([0.0, 5.0, np.nan], n)]
        )
        cars = np.ones((K.N_CAR_ROWS, n))
        front, spacing, tol = rng.uniform(1, 3, n), rng.uniform(5, 15, n), rng.uniform(-50, 150, n)
        cars[K.C_FRONT_BOGIE], cars[K.C_SPACING], cars[K.C_LEN_TOL] = front, spacing, tol
        want = sums.copy()
        dx = x1 - x0
        want[0] += np.maximum(trac * dx, 0.0)
        want[1] += brk * np.abs(dx)
        np.maximum(want[2], np.abs(v1), out=want[2])
        fb = x1 - front
        rb = fb - spacing
        pair = np.empty((n, 2))
        x0, x1, v1 = _ro(x0), _ro(x1), _ro(v1)
        got = K.after_step(x0, x1, v1, trac, brk, sums, pair, *car_types(cars))
        assert _bits(*sums, pair[:, 0], pair[:, 1]) == _bits(*want, fb, rb)
        assert got == (bool((fb > tol).any()), bool((rb < -1e-9).any()))


def test_car_types_give_back_every_column_bit_for_bit():
    """``car_types``: the table's column of each car is that car's column of ``cars``, bit
    for bit (−0.0 and 0.0, NaNs of other payloads are other columns), and each distinct
    column is in the table once."""
    rng = np.random.default_rng(4)
    pool = np.array([[1.0, 0.0, 2.5], [1.0, -0.0, 2.5], [np.nan, 3.0, 1.0], [7.0, 3.0, 1.0]]).T
    odd_nan = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]
    pool = np.concatenate((pool, np.array([[odd_nan, 3.0, 1.0]]).T), axis=1)
    for n in (1, 2, 50, 1000):
        cars = pool[:, rng.integers(0, pool.shape[1], n)]
        ctab, ctype = car_types(cars)
        assert ctype.dtype == np.int64 and ctab.flags.c_contiguous
        assert np.array_equal(ctab[:, ctype].view(np.uint64), cars.view(np.uint64))
        distinct = {cars[:, k].tobytes() for k in range(n)}
        assert ctab.shape[1] == len(distinct)
