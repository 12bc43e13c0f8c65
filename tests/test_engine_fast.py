"""The engine's faster code paths (issue 16) compute the same numbers as the general ones:
chain solves on Python lists and on arrays, the moving groups' stopping times, the joint
times with the coupler's A and B negated."""

from __future__ import annotations

import random

import numpy as np

import tdbtools.physics.joints as joints_mod
from tdbtools.physics.engine import _EQ, _GE, _LE, _solve_chain, _stop_times
from tdbtools.physics.interaction import clash_times, clash_times_ab, stopping_times


def _chains(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        k = rng.randint(1, 70)
        w = [rng.uniform(20e3, 90e3) for _ in range(k)]
        f = [rng.uniform(-2.0, 2.0) * wi for wi in w]
        if rng.random() < 0.2:
            f[rng.randrange(k)] = -0.0  # fsum never gives -0.0: the one-car shortcut must not either
        types = [rng.choice([_GE, _LE, _EQ]) for _ in range(k - 1)]
        yield w, f, types, 1e-9 * sum(abs(x) for x in f) + 1e-300


def test_chain_solver_gives_the_same_bits_on_lists_and_arrays(monkeypatch):
    for w, f, types, tol in _chains(3, 400):
        ref = _solve_chain(np.array(w), np.array(f), np.array(types, dtype=np.int64), tol)
        got = _solve_chain(list(w), list(f), list(types), tol)
        assert got[1] == ref[1]
        assert [float(x).hex() for x in got[0]] == [float(x).hex() for x in ref[0]]
    # and with every run checked by the cumulative-sum path
    monkeypatch.setattr(joints_mod, "_CHAIN_NUMPY", 0)
    for w, f, types, tol in _chains(4, 200):
        ref = _solve_chain(np.array(w), np.array(f), np.array(types, dtype=np.int64), tol)
        got = _solve_chain(list(w), list(f), list(types), tol)
        assert got[1] == ref[1]
        assert [float(x).hex() for x in got[0]] == [float(x).hex() for x in ref[0]]


def test_one_car_piece_is_the_pooled_mean():
    y, cuts = _solve_chain([3.0], [-0.0], [], 1e-12)
    assert cuts == [] and y == [0.0] and np.copysign(1.0, y[0]) == 1.0
    y, _ = _solve_chain([7.0], [1.0], [], 1e-12)
    assert y == [1.0 / 7.0]


def test_stop_times_of_moving_groups_equal_stopping_times():
    rng = np.random.default_rng(5)
    n = 5000
    v = rng.choice([-1.0, 1.0], n) * rng.uniform(1e-9, 30.0, n)
    fr = rng.uniform(0.0, 1.0, n)
    oth = rng.uniform(-1.0, 1.0, n)
    oth[::7] = np.sign(v[::7]) * fr[::7]  # net acceleration 0: never
    assert np.array_equal(_stop_times(fr, oth, v), stopping_times(fr, oth, v))


def test_coupler_times_from_negated_a_and_b_equal_the_swapped_call():
    rng = np.random.default_rng(6)
    n = 5000
    vf, vr = rng.uniform(-3, 3, n), rng.uniform(-3, 3, n)
    af, ar = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    vr[::5] = vf[::5]  # B = 0: the sign of the zero picks the root formula
    ar[::3] = af[::3]
    s = rng.uniform(0.0, 0.05, n)
    A = (ar - af) * 0.5
    B = vr - vf
    got = clash_times_ab(s, 0.0 - A, 0.0 - B)
    ref = clash_times(s, vf, vr, af, ar)
    assert np.array_equal(got, ref)
    assert np.array_equal(np.signbit(got), np.signbit(ref))
