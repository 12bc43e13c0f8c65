"""The 1-D interaction engine (docs/physics.md §1): ClashTime/StoppingTime and Engine, against closed
forms and invariants (momentum, energy, gaps within [0, slack])."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from helpers import CONSISTS

from tdbtools.errors import TdbToolsError
from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.physics import forces as F
from tdbtools.physics.engine import (
    _EQ,
    _GE,
    _LE,
    Bodies,
    Engine,
    EngineError,
    Event,
    _solve_chain,
    _solve_static,
)
from tdbtools.physics.interaction import (
    LINEAR_EPS,
    STOP_EPS,
    clash_time,
    clash_times,
    stopping_time,
    stopping_times,
)

INF = math.inf


# --------------------------------------------------------------------------- clash_time


@pytest.mark.parametrize(
    "args, expected",
    [
        # |A| < 1e-6 and |B| < 1e-6: they keep their distance
        ((5.0, 1.0, 1.0, 0.5, 0.5), INF),
        ((5.0, 1.0, 1.0 + 5e-7, 0.0, 0.0), INF),
        # linear: s / B
        ((10.0, 3.0, 1.0, 0.0, 0.0), 5.0),
        ((10.0, 3.0, 1.0, 1.5e-6, 0.0), 5.0),  # A = 7.5e-7 < 1e-6: still linear
        ((-4.0, -1.0, 1.0, 0.0, 0.0), 2.0),  # car 1 moving left, car 2 right, s < 0
        # linear, negative time (moving apart): never (the article's ClashTime would return -5)
        ((10.0, 1.0, 3.0, 0.0, 0.0), INF),
        # quadratic, D < 0: decelerates before reaching
        ((10.0, 1.0, 0.0, -1.0, 0.0), INF),  # A=-0.5, B=1, D=1-20
        # quadratic, both roots >= 0: the smaller (2 - sqrt 2)
        ((1.0, 2.0, 0.0, -1.0, 0.0), 2.0 - math.sqrt(2.0)),
        # quadratic, one root >= 0
        ((10.0, 0.0, 0.0, 2.0, 0.0), math.sqrt(10.0)),  # from rest, A=1: t² = 10
        ((1.0, 0.0, 2.0, 2.0, 0.0), 1.0 + math.sqrt(2.0)),  # first apart, then back
        ((10.0, 0.0, 0.0, 0.0, -2.0), math.sqrt(10.0)),  # car 2 accelerating towards car 1
        # quadratic, no root >= 0
        ((-1.0, 3.0, 0.0, 2.0, 0.0), INF),  # t² + 3t + 1 = 0: both negative
        ((1.0, 0.0, 3.0, -2.0, 0.0), INF),  # opening speed and acceleration
        # double root at 0
        ((0.0, 0.0, 0.0, 1.0, 0.0), 0.0),
    ],
)
def test_clash_time_branches(args, expected):
    got = clash_time(*args)
    if expected == INF:
        assert got == INF
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert clash_times(*[np.array([a]) for a in args])[0] == got


def test_clash_time_is_the_seed_quadratic_where_that_is_accurate():
    # the article's own expressions (pB ± pD) give the same root on a well-conditioned case
    s, v1, v2, a1, a2 = 7.0, 2.0, 0.5, 0.8, -0.3
    A, B = (a1 - a2) / 2, v1 - v2
    pD, pB = math.sqrt(B * B + 4 * A * s) / (2 * A), -B / (2 * A)
    seed = min(t for t in (pB + pD, pB - pD) if t >= 0)
    assert clash_time(s, v1, v2, a1, a2) == pytest.approx(seed, rel=1e-14)
    # and the root solves the equation of motion
    t = clash_time(s, v1, v2, a1, a2)
    assert (v1 - v2) * t + (a1 - a2) * t * t / 2 == pytest.approx(s, rel=1e-13)


def test_clash_times_equals_scalar_on_random_inputs():
    rng = np.random.default_rng(7)
    n = 4000
    cols = [rng.normal(0, 3, n) for _ in range(5)]
    # sprinkle the degenerate cases: zero distance, equal speeds, equal accelerations
    for c in cols:
        c[rng.random(n) < 0.15] = 0.0
    eq = rng.random(n) < 0.2
    cols[2][eq] = cols[1][eq]
    eq = rng.random(n) < 0.2
    cols[4][eq] = cols[3][eq] + rng.uniform(-1e-6, 1e-6, eq.sum())
    vec = clash_times(*cols)
    scal = np.array([clash_time(*map(float, row)) for row in zip(*cols)])
    np.testing.assert_array_equal(vec, scal)
    assert np.all((vec >= 0) | np.isinf(vec))
    # the roots solve the equation of motion (except where the article drops a tiny A term)
    A = (cols[3] - cols[4]) / 2
    fin = np.isfinite(vec) & ((np.abs(A) >= 1e-6) | (A == 0))
    s, v1, v2, a1, a2 = (c[fin] for c in cols)
    t = vec[fin]
    np.testing.assert_allclose((v1 - v2) * t + (a1 - a2) * t * t / 2, s, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- stopping_time


@pytest.mark.parametrize(
    "args, expected",
    [
        ((2.0, 0.5, 0.0), 0.0),  # V == 0
        ((1.0, 1.0, 5.0), INF),  # a = 1 - 1 = 0
        ((1.0, 1.0 + 5e-8, 5.0), INF),  # |a| < 1e-7
        ((1.0, 3.0, 5.0), INF),  # a = +2 along the motion
        ((1.0, -3.0, -5.0), INF),  # a = -2 along the (negative) motion
        ((2.0, 0.5, 3.0), 2.0),  # -3 / (0.5 - 2)
        ((-2.0, 0.5, 3.0), 2.0),  # friction's sign is ignored
        ((2.0, -0.5, -3.0), 2.0),  # moving left: a = -0.5 + 2
        ((0.0, -1.5, 3.0), 2.0),  # no friction, other forces brake
    ],
)
def test_stopping_time_branches(args, expected):
    assert (
        stopping_time(*args) == pytest.approx(expected, rel=1e-15)
        if expected != INF
        else stopping_time(*args) == INF
    )
    assert stopping_times(*[np.array([a]) for a in args])[0] == stopping_time(*args)


def test_stopping_times_equals_scalar_on_random_inputs():
    rng = np.random.default_rng(3)
    n = 3000
    fr, oth, v = rng.normal(0, 2, n), rng.normal(0, 2, n), rng.normal(0, 5, n)
    v[rng.random(n) < 0.1] = 0.0
    eq = rng.random(n) < 0.1
    oth[eq] = np.abs(fr[eq]) * np.sign(v[eq])
    vec = stopping_times(fr, oth, v)
    scal = np.array([stopping_time(*map(float, r)) for r in zip(fr, oth, v)])
    np.testing.assert_array_equal(vec, scal)


# --------------------------------------------------------------------------- block solver


def _brute(w, f, r, types):
    """Exact optimum by enumerating every split of the chain into runs."""
    k = len(w)
    best = None
    for mask in range(1 << (k - 1)):
        bounds = [0] + [j + 1 for j in range(k - 1) if mask >> j & 1] + [k]
        y = [0.0] * k
        for s, e in zip(bounds, bounds[1:]):
            W, F, R = sum(w[s:e]), sum(f[s:e]), sum(r[s:e])
            y[s:e] = [(F - R) / W if F > R else (F + R) / W if F < -R else 0.0] * (e - s)
        ok = all(
            (t != _GE or y[j] >= y[j + 1] - 1e-12)
            and (t != _LE or y[j] <= y[j + 1] + 1e-12)
            and (t != _EQ or abs(y[j] - y[j + 1]) <= 1e-12)
            for j, t in enumerate(types)
        )
        if ok:
            o = sum(0.5 * wi * yi * yi - fi * yi + ri * abs(yi) for wi, fi, ri, yi in zip(w, f, r, y))
            if best is None or o < best[0] - 1e-12:
                best = (o, y)
    return best[1]


@pytest.mark.parametrize("static", [False, True])
def test_block_solver_matches_brute_force(static):
    rng = random.Random(11 + static)
    for _ in range(700):
        k = rng.randint(1, 7)
        w = [rng.uniform(0.5, 3.0) for _ in range(k)]
        f = [rng.uniform(-5.0, 5.0) for _ in range(k)]
        types = [rng.choice([_GE, _LE, _EQ]) for _ in range(k - 1)]
        if static:
            r = [rng.uniform(0.0, 4.0) for _ in range(k)]
            y, cuts = _solve_static(w, f, r, types, 1e-12)
        else:
            r = [0.0] * k
            y, cuts = _solve_chain(w, f, types, 1e-12)
        assert y == pytest.approx(_brute(w, f, r, types), abs=1e-9)
        # the groups are runs of equal values
        for j in range(k - 1):
            if j not in cuts:
                assert y[j] == pytest.approx(y[j + 1], abs=1e-12)


# --------------------------------------------------------------------------- helpers


def one_line(masses, lengths, gaps, coupled, slack, v, line=0):
    """Bodies and front x for one line, cars front first, x of the first car = 0."""
    n = len(masses)
    x = [0.0]
    for i in range(1, n):
        x.append(x[-1] - lengths[i - 1] - gaps[i - 1])
    b = Bodies(
        np.array(masses, float),
        np.array(lengths, float),
        np.full(n, line),
        np.array(list(coupled) + [False] * (n - len(coupled)), bool),
        np.broadcast_to(np.asarray(slack, float), (n,)).copy(),
    )
    return b, np.array(x), np.array(v, float)


def run(eng, steps, dt, drive=0.0, resist=0.0, check=None):
    events = []
    for _ in range(steps):
        ev = eng.step(
            dt, drive(eng) if callable(drive) else drive, resist(eng) if callable(resist) else resist
        )
        events += ev
        if check:
            check(eng, ev)
    return events


def gaps_ok(eng):
    b = eng.bodies
    g = eng.gap
    same = b.line[:-1] == b.line[1:]
    cpl = same & b.coupled[:-1]
    assert np.all(g[same] >= 0.0)
    assert np.all(g[cpl] <= b.slack[:-1][cpl])
    x = eng.x
    np.testing.assert_allclose((x[:-1] - b.length[:-1] - x[1:])[same], g[same], atol=1e-9)


# --------------------------------------------------------------------------- kinematics


def test_one_car_constant_force_is_exact():
    F, m = 1500.0, 20e3
    b, x, v = one_line([m], [15.0], [], [], 0.05, [0.0])
    eng = Engine(b, x, v)
    ev = run(eng, 100, 0.1, drive=[F])
    t = 10.0
    assert eng.x[0] == pytest.approx(F * t * t / (2 * m), rel=1e-6)
    assert eng.v[0] == pytest.approx(F * t / m, rel=1e-9)
    assert eng.time == pytest.approx(t, rel=1e-12)
    assert [e.kind for e in ev] == ["started"]


def test_taut_coupled_train_moves_as_one_mass():
    n, F = 20, 2e5
    masses = [80e3] + [45e3 + 1e3 * i for i in range(n - 1)]
    b, x, v = one_line(masses, [18.0] * n, [0.08] * (n - 1), [True] * (n - 1), 0.08, [0.0] * n)
    eng = Engine(b, x, v)
    drive = np.zeros(n)
    drive[0] = F
    ev = run(eng, 100, 0.1, drive=drive, check=lambda e, _: gaps_ok(e))
    M, t = sum(masses), 10.0
    np.testing.assert_allclose(eng.x - x, F * t * t / (2 * M), rtol=1e-6)
    np.testing.assert_allclose(eng.v, F * t / M, rtol=1e-9)
    assert np.all(eng.groups == 0)
    np.testing.assert_array_equal(eng.gap, 0.08)
    assert [e.kind for e in ev] == ["started"]


def test_davis_terminal_speed_first_order_in_dt():
    m, F, A, B, C = 4e5, 1.2e5, 4000.0, 300.0, 12.0
    vp = (-B + math.sqrt(B * B + 4 * C * (F - A))) / (2 * C)  # F = A + Bv + Cv²
    vm = (-B - math.sqrt(B * B + 4 * C * (F - A))) / (2 * C)

    def exact(t):  # m dv/dt = -C (v - vp)(v - vm), v(0) = 0
        k = (0 - vp) / (0 - vm) * math.exp(-C * (vp - vm) * t / m)
        return (vp - k * vm) / (1 - k)

    def simulate(dt, T):
        b, x, v = one_line([m], [20.0], [], [], 0.0, [0.0])
        eng = Engine(b, x, v)
        run(eng, int(round(T / dt)), dt, drive=[F], resist=lambda e: A + B * np.abs(e.v) + C * e.v * e.v)
        return float(eng.v[0])

    T = 120.0
    errs = [abs(simulate(dt, T) - exact(T)) for dt in (1.0, 0.5, 0.25)]
    assert errs[0] > errs[1] > errs[2] > 0
    for e1, e2 in zip(errs, errs[1:]):
        assert 1.8 < e1 / e2 < 2.2  # first order: halving dt halves the error
    assert simulate(1.0, 3000.0) == pytest.approx(vp, rel=1e-6)


def test_braking_distance_and_stays_stopped():
    m, v0, ab = 60e3, 22.0, 0.65
    b, x, v = one_line([m], [20.0], [], [], 0.0, [v0])
    eng = Engine(b, x, v)
    events = run(eng, 400, 0.1, resist=[m * ab])  # 40 s > v0/ab = 33.8 s
    assert eng.x[0] == pytest.approx(v0 * v0 / (2 * ab), rel=1e-6)
    assert eng.v[0] == 0.0
    assert [e.kind for e in events] == ["stopped"]
    assert events[0].time == pytest.approx(v0 / ab, rel=1e-9)
    x_stop = eng.x[0]
    # a drive weaker than the brake, either way, does not move it
    for d in (0.9 * m * ab, -0.9 * m * ab):
        assert run(eng, 50, 0.1, drive=[d], resist=[m * ab]) == []
        assert eng.x[0] == x_stop and eng.v[0] == 0.0


def test_braking_backwards_is_symmetric():
    m, v0, ab = 60e3, -12.0, 0.5
    b, x, v = one_line([m], [20.0], [], [], 0.0, [v0])
    eng = Engine(b, x, v)
    run(eng, 300, 0.1, resist=[m * ab])
    assert eng.x[0] == pytest.approx(-v0 * v0 / (2 * ab), rel=1e-6)
    assert eng.v[0] == 0.0


# --------------------------------------------------------------------------- impacts


def test_two_car_impact():
    m1, m2, v1, v2 = 30e3, 70e3, 0.4, 2.9  # car 2 behind and faster
    b, x, v = one_line([m1, m2], [15.0, 15.0], [5.0], [False], 0.0, [v1, v2])
    eng = Engine(b, x, v)
    p0 = eng.momentum()
    ke0 = eng.kinetic_energy()
    ev = run(eng, 40, 0.1)
    assert eng.momentum() == pytest.approx(p0, rel=1e-12)
    assert len(ev) == 1 and ev[0].kind == "impact" and ev[0].cars == (0, 1)
    assert ev[0].time == pytest.approx(5.0 / (v2 - v1), rel=1e-12)
    vc = (m1 * v1 + m2 * v2) / (m1 + m2)
    np.testing.assert_allclose(eng.v, vc, rtol=1e-12)
    mu = m1 * m2 / (m1 + m2)
    assert ev[0].energy_lost == pytest.approx(0.5 * mu * (v2 - v1) ** 2, rel=1e-9)
    assert ke0 - eng.kinetic_energy() == pytest.approx(ev[0].energy_lost, rel=1e-9)
    assert ev[0].relative_speed == pytest.approx(v2 - v1, rel=1e-12)
    assert ev[0].impulse == pytest.approx(m1 * (vc - v1), rel=1e-9)
    assert eng.gap[0] == 0.0 and np.all(eng.groups == 0)


def test_an_impact_with_a_car_further_back_resolves_both_cars():
    """Two cars collide while a third stands far behind them on the same line: the run of
    cars the impulse resolves ends at the rear car of the impact (a run one car short
    leaves the impact unresolved, round after round)."""
    m1, m2, v1, v2 = 30e3, 70e3, 0.4, 2.9
    b, x, v = one_line([m1, m2, 50e3], [15.0] * 3, [5.0, 500.0], [False, False], 0.0, [v1, v2, 0.0])
    eng = Engine(b, x, v)
    ev = run(eng, 40, 0.1)
    np.testing.assert_allclose(eng.v[:2], (m1 * v1 + m2 * v2) / (m1 + m2), rtol=1e-12)
    assert eng.v[2] == 0.0 and [e.cars for e in ev if e.kind == "impact"] == [(0, 1)]


def test_car_hits_stretched_rake_slack_runs_in_car_by_car():
    """A wagon runs into a standing coupled rake whose couplers are stretched: each impact
    only involves the next car (a taut coupler cannot push), the rake's cars start one after
    another as each slack closes."""
    m, n, s, g0, v0 = 25e3, 6, 0.1, 3.0, 1.2
    b, x, v = one_line([m] * n, [14.0] * n, [s] * 4 + [g0], [True] * 4 + [False], s, [0.0] * 5 + [v0])
    eng = Engine(b, x, v)
    p0 = eng.momentum()

    def check(e, ev):
        gaps_ok(e)
        assert e.momentum() == pytest.approx(p0, rel=1e-12)

    ev = run(eng, 150, 0.1, check=check)
    assert [(e.kind, e.cars) for e in ev] == [("impact", (4 - k, 5 - k)) for k in range(5)]
    t = g0 / v0
    for k, e in enumerate(ev):  # k + 1 cars hit the next at v0/(k+1)
        assert e.time == pytest.approx(t, rel=1e-9)
        assert e.relative_speed == pytest.approx(v0 / (k + 1), rel=1e-9)
        assert e.energy_lost == pytest.approx(0.5 * m * v0**2 / ((k + 1) * (k + 2)), rel=1e-9)
        t += s * (k + 2) / v0
    np.testing.assert_allclose(eng.v, v0 / n, rtol=1e-12)


def test_loco_pulls_compressed_rake_couplers_snatch_one_after_another():
    m, n, s, v0 = 40e3, 6, 0.07, 0.9
    b, x, v = one_line([m] * n, [16.0] * n, [0.0] * (n - 1), [True] * (n - 1), s, [v0] + [0.0] * (n - 1))
    eng = Engine(b, x, v)
    p0 = eng.momentum()

    def check(e, ev):
        gaps_ok(e)
        assert e.momentum() == pytest.approx(p0, rel=1e-12)

    ev = run(eng, 40, 0.1, check=check)
    assert [(e.kind, e.cars) for e in ev] == [("coupler_taut", (k, k + 1)) for k in range(5)]
    for k, e in enumerate(ev, start=1):  # snatch k: k cars at v0/k pick up one
        assert e.time == pytest.approx(s * k * (k + 1) / (2 * v0), rel=1e-9)
        assert e.relative_speed == pytest.approx(v0 / k, rel=1e-9)
        assert e.impulse == pytest.approx(m * v0 / (k + 1), rel=1e-9)
        assert e.energy_lost == pytest.approx(m * v0**2 / (2 * k * (k + 1)), rel=1e-9)
    np.testing.assert_allclose(eng.v, v0 / n, rtol=1e-12)
    np.testing.assert_array_equal(eng.gap, s)


def test_stretched_group_hitting_a_body_splits():
    """The seed: a group with stretched couplers that hits another body is split again; the
    cars behind the front one keep their speed and close up."""
    m, s = 30e3, 0.1
    # car 0 standing; cars 1-3 a coupled group, taut, at 1 m/s, 2 m behind car 0
    b, x, v = one_line([m] * 4, [15.0] * 4, [2.0, s, s], [False, True, True], s, [0.0, 1.0, 1.0, 1.0])
    eng = Engine(b, x, v)
    ev = eng.step(2.0 + 1e-6, 0.0, 0.0)
    assert [(e.kind, e.cars) for e in ev] == [("impact", (0, 1))]
    np.testing.assert_allclose(eng.v, [0.5, 0.5, 1.0, 1.0], rtol=1e-9)
    assert eng.gap[1] < s


def test_two_trains_on_one_line_collide():
    ma, mb = [50e3, 40e3, 40e3], [80e3, 40e3, 30e3]
    L, s, S0 = 15.0, 0.06, 12.0
    # train A (cars 0-2) standing, train B (cars 3-5) behind, buffers compressed,
    # pushed from its last car
    b, x, v = one_line(
        ma + mb, [L] * 6, [0.0, 0.0, S0, 0.0, 0.0], [True, True, False, True, True], s, [0.0] * 3 + [1.5] * 3
    )
    eng = Engine(b, x, v)
    F = 3e4
    drive = np.array([0, 0, 0, 0, 0, F], float)
    p0 = eng.momentum()
    ev = run(eng, 200, 0.1, drive=drive, check=lambda e, _: gaps_ok(e))
    assert eng.momentum() == pytest.approx(p0 + F * 20.0, rel=1e-12)  # only F·t added
    impacts = [e for e in ev if e.kind == "impact"]
    assert len(impacts) == 1 and impacts[0].cars == (2, 3) and impacts[0].line == 0
    t_hit = clash_time(S0, 1.5, 0.0, F / sum(mb), 0.0)
    assert impacts[0].time == pytest.approx(t_hit, rel=1e-9)
    vb = 1.5 + F / sum(mb) * t_hit
    assert impacts[0].relative_speed == pytest.approx(vb, rel=1e-9)
    assert impacts[0].energy_lost == pytest.approx(
        0.5 * sum(ma) * sum(mb) / (sum(ma) + sum(mb)) * vb * vb, rel=1e-9
    )
    assert np.all(eng.groups == 0)  # after the hit one pushed rake


def test_car_between_buffer_and_taut_coupler_settles():
    """Car 1 brakes least: it runs into car 0 (impact), which leaves the taut coupler to car 2
    slack, which snatches taut again... Each bounce halves the speed (a Zeno sequence whose
    limit is the three cars locked); rest_speed ends it after a few events."""
    m, s = 40e3, 0.05
    resist = np.array([0.08, 0.02, 0.08]) * m

    def make(rest_speed):
        b, x, v = one_line([m] * 3, [15.0] * 3, [0.02, s], [True, True], s, [10.0] * 3)
        return Engine(b, x, v, rest_speed=rest_speed)

    eng = make(1e-3)
    p0 = eng.momentum()
    ev = run(eng, 50, 0.1, resist=resist, check=lambda e, _: gaps_ok(e))
    kinds = [e.kind for e in ev]
    assert 2 <= len(ev) <= 8
    assert kinds == ["impact", "coupler_taut"] * (len(ev) // 2)
    speeds = [e.relative_speed for e in ev]
    assert all(a > b for a, b in zip(speeds, speeds[1:]))
    assert speeds[-1] < 2e-3
    assert np.all(eng.groups == 0) and eng.gap[0] == 0.0 and eng.gap[1] == s
    assert eng.momentum() == pytest.approx(p0 - resist.sum() * 5.0, rel=1e-12)
    # without the threshold the sequence runs down to the speed resolution
    eng = make(0.0)
    ev = run(eng, 50, 0.1, resist=resist)
    assert len(ev) > 20 and np.all(eng.groups == 0)


def test_momentum_conserved_without_external_forces_random():
    for seed in range(6):
        eng, _ = random_engine(seed)
        p = [eng.momentum(line) for line in range(3)]
        scale = float(np.dot(eng.bodies.mass, np.abs(eng.v)))
        run(eng, 60, 0.1, check=lambda e, _: gaps_ok(e))
        for line in range(3):
            assert eng.momentum(line) == pytest.approx(p[line], abs=1e-12 * scale)
        assert eng.truncated_steps == 0


def random_engine(seed):
    rng = np.random.default_rng(seed)
    masses, lengths, lines, coupled, slack, gaps, vs = [], [], [], [], [], [], []
    for line in range(3):
        k = int(rng.integers(2, 9))
        for i in range(k):
            masses.append(rng.uniform(15e3, 90e3))
            lengths.append(rng.uniform(8.0, 25.0))
            lines.append(line)
            c = bool(rng.random() < 0.7) and i < k - 1
            coupled.append(c)
            sl = float(rng.choice([0.0, 0.03, 0.12]))
            slack.append(sl)
            if i < k - 1:
                hi = sl if c else 4.0
                gaps.append(float(rng.choice([0.0, hi, rng.uniform(0, hi)])))
            vs.append(rng.uniform(-3.0, 3.0))
    n = len(masses)
    x = np.zeros(n)
    gi = 0
    for i in range(1, n):
        if lines[i] == lines[i - 1]:
            x[i] = x[i - 1] - lengths[i - 1] - gaps[gi]
            gi += 1
        else:
            x[i] = rng.uniform(-50, 50)
    b = Bodies(np.array(masses), np.array(lengths), np.array(lines), np.array(coupled), np.array(slack))
    return Engine(b, x, np.array(vs)), rng


def test_energy_never_rises_without_drive():
    for seed in range(10):
        eng, rng = random_engine(100 + seed)
        resist = rng.uniform(0.0, 3e4, eng.n) * (rng.random(eng.n) < 0.7)
        ke = [eng.kinetic_energy()]

        def check(e, ev, ke=ke):
            gaps_ok(e)
            ke.append(e.kinetic_energy())
            assert ke[-1] <= ke[-2] * (1 + 1e-12) + 1e-9
            assert all(x.energy_lost >= 0 for x in ev)

        run(eng, 80, 0.1, resist=resist, check=check)
        assert eng.truncated_steps == 0


def test_static_friction_holds_a_taut_train_but_not_a_compressed_one():
    m, R, F, s = 40e3, 1000.0, 2500.0, 0.05
    drive = [F, 0.0, 0.0]
    # taut: the loco (F > its own R) cannot move 3·R > F
    b, x, v = one_line([m] * 3, [15.0] * 3, [s, s], [True, True], s, [0.0] * 3)
    eng = Engine(b, x, v)
    assert run(eng, 30, 0.1, drive=drive, resist=R) == []
    np.testing.assert_array_equal(eng.x, x)
    # compressed: the loco breaks away, snatches car 1, the pair (2·R < F) snatches car 2,
    # then 3·R > F stops the three
    b, x, v = one_line([m] * 3, [15.0] * 3, [0.0, 0.0], [True, True], s, [0.0] * 3)
    eng = Engine(b, x, v)
    ev = run(eng, 100, 0.1, drive=drive, resist=R, check=lambda e, _: gaps_ok(e))
    assert [(e.kind, e.cars) for e in ev] == [
        ("started", (0,)),
        ("coupler_taut", (0, 1)),
        ("coupler_taut", (1, 2)),
        ("stopped", (0, 2)),
    ]
    a1 = (F - R) / m
    t1 = math.sqrt(2 * s / a1)
    v1 = a1 * t1 / 2  # common speed after snatch 1
    a2 = (F - 2 * R) / (2 * m)
    tau = (-v1 + math.sqrt(v1 * v1 + 2 * a2 * s)) / a2
    v2 = (v1 + a2 * tau) * 2 / 3  # after snatch 2
    a3 = (F - 3 * R) / (3 * m)
    assert ev[0].time == 0.0
    assert ev[1].time == pytest.approx(t1, rel=1e-9)
    assert ev[2].time == pytest.approx(t1 + tau, rel=1e-9)
    assert ev[3].time == pytest.approx(t1 + tau - v2 / a3, rel=1e-9)
    np.testing.assert_array_equal(eng.gap, s)
    assert np.all(eng.v == 0.0)
    x_end = eng.x.copy()
    assert run(eng, 20, 0.1, drive=drive, resist=R) == []  # and stays
    np.testing.assert_array_equal(eng.x, x_end)


def test_cars_on_different_lines_never_interact():
    # line 0 and line 1 overlap in x and move through each other
    b = Bodies([20e3, 30e3, 25e3], [15.0] * 3, [0, 1, 1], [False, False, False], [0.0] * 3)
    x = np.array([0.0, 10.0, -20.0])
    v = np.array([2.0, -3.0, -3.0])
    eng = Engine(b, x, v)
    assert eng.gap[0] == np.inf
    assert eng.gap[1] == pytest.approx(15.0)
    ev = run(eng, 50, 0.1)
    assert ev == []
    np.testing.assert_allclose(eng.x, x + v * 5.0, rtol=1e-12)
    assert eng.groups[0] != eng.groups[1]
    # and a collision on line 1 does not touch line 0
    eng = Engine(b, x, np.array([0.0, 0.0, 2.0]))
    ev = run(eng, 100, 0.1)
    assert [(e.kind, e.cars, e.line) for e in ev] == [("impact", (1, 2), 1)]
    assert eng.v[0] == 0.0 and eng.x[0] == 0.0
    assert eng.momentum(1) == pytest.approx(25e3 * 2.0, rel=1e-12)


# --------------------------------------------------------------------------- API and errors


def test_bad_input_is_rejected():
    with pytest.raises(EngineError):
        Bodies([1.0, -1.0], [1.0, 1.0], [0, 0], [False, False], [0, 0])
    with pytest.raises(EngineError):
        Bodies([1.0, 1.0, 1.0], [1.0] * 3, [0, 1, 0], [False] * 3, [0] * 3)  # split line
    b = Bodies([1.0, 1.0], [10.0, 10.0], [0, 0], [True, False], [0.05, 0.0])
    with pytest.raises(EngineError, match="overlap"):
        Engine(b, [0.0, -9.0], [0.0, 0.0])
    with pytest.raises(EngineError, match="slack"):
        Engine(b, [0.0, -10.5], [0.0, 0.0])
    eng = Engine(b, [0.0, -10.02], [0.0, 0.0])
    with pytest.raises(TdbToolsError):
        eng.step(0.1, [0.0, 0.0], [-1.0, 0.0])
    with pytest.raises(EngineError):
        eng.step(0.1, [0.0, 0.0, 0.0], 0.0)
    assert not eng.x.flags.writeable and not eng.v.flags.writeable
    assert isinstance(Event("impact", 0.0, (0, 1), 0), Event)


def test_trains_constructor():
    b = Bodies.trains([[1.0, 2.0], [3.0]], [[5.0, 6.0], [7.0]], slack=0.1, line=2)
    np.testing.assert_array_equal(b.coupled, [True, False, False])
    np.testing.assert_array_equal(b.line, [2, 2, 2])
    np.testing.assert_array_equal(b.slack, 0.1)


def _same(a: float, b: float) -> bool:
    """Equal including the sign of zero and infinities."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


# speeds and accelerations on and around the thresholds (2·LINEAR_EPS: |A| = LINEAR_EPS)
SPEEDS = (-1.0, 0.0, LINEAR_EPS, 1.0)


ACCS = (-2.0, 0.0, 2 * LINEAR_EPS, 2.0)


GAPS = (0.0, 1.0, 1000.0)


def test_clash_times_equal_clash_time_on_every_edge_case():
    cases = list(itertools.product(GAPS, SPEEDS, SPEEDS, ACCS, ACCS))
    s, v1, v2, a1, a2 = (np.array(c) for c in zip(*cases))
    got = clash_times(s, v1, v2, a1, a2)
    assert got.dtype == np.float64 and got.shape == (len(cases),)
    bad = [(c, g, clash_time(*c)) for c, g in zip(cases, got.tolist()) if not _same(g, clash_time(*c))]
    assert bad == []


@pytest.mark.parametrize("linear", [True, False])
def test_clash_times_equal_clash_time_when_all_share_a_branch(linear):
    """All linear, or none: the vectorised code takes its no-gather shortcuts."""
    acc = (0.0,) if linear else (-2.0, 2 * LINEAR_EPS, 2.0)
    cases = [c for c in itertools.product(GAPS, SPEEDS, SPEEDS, acc, (0.0,))]
    s, v1, v2, a1, a2 = (np.array(c) for c in zip(*cases))
    got = clash_times(s, v1, v2, a1, a2).tolist()
    assert all(_same(g, clash_time(*c)) for c, g in zip(cases, got))


def test_clash_time_thresholds():
    # |A| exactly LINEAR_EPS is quadratic: 1e-6·t² + t = 1000
    t = (-1.0 + math.sqrt(1.0 + 4e-6 * 1000.0)) / 2e-6
    assert clash_times([1000.0], [1.0], [0.0], [2 * LINEAR_EPS], [0.0])[0] == pytest.approx(t, rel=1e-12)
    assert t < 999.01
    # |B| exactly LINEAR_EPS is a (slow) approach, not "never"
    assert clash_times([1.0], [LINEAR_EPS], [0.0], [0.0], [0.0])[0] == pytest.approx(1e6)
    assert clash_times([0.0], [0.0], [1.0], [-2.0], [0.0])[0] == 0.0  # touching already
    assert math.copysign(1.0, clash_times([0.0], [0.0], [1.0], [-2.0], [0.0])[0]) == 1.0
    assert math.copysign(1.0, clash_times([0.0], [0.0], [1.0], [0.0], [0.0])[0]) == 1.0
    # broadcasting a scalar gap against arrays
    got = clash_times(10.0, np.array([1.0, 2.0]), 0.0, 0.0, 0.0)
    assert got.tolist() == [10.0, 5.0]


def test_stopping_times_equal_stopping_time_on_every_edge_case():
    cases = list(
        itertools.product((0.0, STOP_EPS, 1.0, -1.0), (-1.0, -STOP_EPS, 0.0, STOP_EPS, 1.0), (-1.0, 0.0, 1.0))
    )
    fr, oth, v = (np.array(c) for c in zip(*cases))
    got = stopping_times(fr, oth, v)
    bad = [(c, g, stopping_time(*c)) for c, g in zip(cases, got.tolist()) if not _same(g, stopping_time(*c))]
    assert bad == []
    # |a| exactly STOP_EPS still stops: 1 m/s against 1e-7 m/s² takes 1e7 s
    assert stopping_times([0.0], [STOP_EPS], [-1.0])[0] == pytest.approx(1e7)
    assert stopping_times(0.5, 0.0, 2.0).item() == 4.0  # 0-d in, 0-d out


def test_bodies_trains_refuses_an_empty_or_uneven_train():
    from tdbtools.physics.engine import Bodies, EngineError

    with pytest.raises(EngineError, match="as many lengths as masses"):
        Bodies.trains([[]], [[]])
    with pytest.raises(EngineError, match="as many lengths as masses"):
        Bodies.trains([[1e4, 2e4]], [[10.0]])
    b = Bodies.trains([[1e4, 2e4], [3e4]], [[10.0, 12.0], [8.0]])
    assert len(b.mass) == 3


def test_touch_times_of_joints_at_their_limit():
    """A joint at its limit now: closing touches at once, opening while the closing
    acceleration brings it back touches at −B/A, anything else never."""
    from tdbtools.physics.engine import EPS_V, _touch_time, _touch_times

    B = np.array([1.0, 2 * EPS_V, -1.0, -1.0, 0.0, -2.0])
    A = np.array([0.0, -5.0, 2.0, -1.0, 3.0, 0.0])
    want = [0.0, 0.0, 0.5, math.inf, math.inf, math.inf]
    assert list(_touch_times(B, A)) == want
    assert [_touch_time(float(b), float(a)) for b, a in zip(B, A)] == want


def test_bodies_say_what_is_wrong():
    from tdbtools.physics.engine import Bodies, EngineError

    ok = {
        "mass": [1.0, 2.0],
        "length": [10.0, 12.0],
        "line": [0, 0],
        "coupled": [True, False],
        "slack": [0.1, 0.0],
    }
    b = Bodies(**ok)
    assert b.n == 2 and b.mass.dtype == np.float64 and b.line.dtype == np.int64 and b.coupled.dtype == bool
    assert list(b.coupled) == [True, False] and list(b.slack) == [0.1, 0.0]
    for name in ok:
        assert not getattr(b, name).flags.writeable, name
    bad = [
        ({"mass": [[1.0, 2.0]]}, "Bodies: mass must be a non-empty 1-D array"),
        ({"mass": []}, "Bodies: mass must be a non-empty 1-D array"),
        ({"length": [10.0]}, r"Bodies: length has shape \(1,\), expected \(2,\)"),
        ({"line": [0, 0, 0]}, r"Bodies: line has shape \(3,\), expected \(2,\)"),
        ({"coupled": [True]}, r"Bodies: coupled has shape \(1,\), expected \(2,\)"),
        ({"slack": [0.1]}, r"Bodies: slack has shape \(1,\), expected \(2,\)"),
        ({"mass": [1.0, 0.0]}, "Bodies: every mass must be finite and > 0"),
        ({"mass": [np.nan, 1.0]}, "Bodies: every mass must be finite and > 0"),
        ({"length": [10.0, 0.0]}, "Bodies: every length must be finite and > 0"),
        ({"length": [np.inf, 1.0]}, "Bodies: every length must be finite and > 0"),
        ({"slack": [0.1, -1e-9]}, "Bodies: every slack must be finite and >= 0"),
        ({"slack": [np.inf, 0.0]}, "Bodies: every slack must be finite and >= 0"),
    ]
    for change, msg in bad:
        with pytest.raises(EngineError, match=f"^{msg}$"):
            Bodies(**{**ok, **change})
    three = {k: [*v, v[-1]] for k, v in ok.items()}
    with pytest.raises(EngineError, match="^Bodies: the cars of a line must be consecutive$"):
        Bodies(**{**three, "line": [0, 1, 0]})
    assert list(Bodies(**{**three, "line": [1, 1, 0]}).line) == [1, 1, 0]  # numbers need not be sorted
    flags = Bodies(**{**ok, "coupled": [1, 0], "line": [0.0, 0.0]})  # stored as the types documented
    assert (
        flags.coupled.dtype == bool and list(flags.coupled) == [True, False] and flags.line.dtype == np.int64
    )


def test_bodies_of_trains():
    from tdbtools.physics.engine import Bodies, EngineError

    b = Bodies.trains([[1.0, 2.0, 3.0], [4.0]], [[5.0, 6.0, 7.0], [8.0]])
    assert list(b.mass) == [1.0, 2.0, 3.0, 4.0] and list(b.length) == [5.0, 6.0, 7.0, 8.0]
    assert list(b.coupled) == [True, True, False, False]
    assert list(b.line) == [0, 0, 0, 0] and list(b.slack) == [0.05] * 4
    for masses, lengths in (([[1.0, 2.0]], [[5.0]]), ([[]], [[]])):
        with pytest.raises(EngineError, match="^Bodies.trains: each train needs as many lengths as masses$"):
            Bodies.trains(masses, lengths)
    with pytest.raises(ValueError):
        Bodies.trains([[1.0]], [[5.0], [6.0]])  # one list of lengths per train


def test_engine_says_what_is_wrong_with_its_start():
    from tdbtools.physics.engine import SNAP_GAP, Bodies, Engine, EngineError

    b = Bodies([1.0, 1.0, 1.0], [10.0, 10.0, 10.0], [0, 0, 1], [True, False, False], [0.5, 0.0, 0.0])
    ok = [0.0, -10.2, 500.0]  # car 2 on another line: anywhere
    eng = Engine(b, ok, [1.0, 1.0, -2.0])
    assert list(eng.x) == ok and list(eng.v) == [1.0, 1.0, -2.0] and eng.time == 0.0
    cases = [
        ((ok, [0.0, 0.0]), {}, r"^Engine: x and v must have shape \(3,\)$"),
        (([0.0, -10.2], [0.0] * 3), {}, r"^Engine: x and v must have shape \(3,\)$"),
        ((ok, [0.0, np.nan, 0.0]), {}, "^Engine: x and v must be finite$"),
        (([0.0, -np.inf, 0.0], [0.0] * 3), {}, "^Engine: x and v must be finite$"),
        ((ok, [0.0] * 3), {"rest_speed": -1e-9}, "^Engine: rest_speed must be >= 0$"),
        ((ok, [0.0] * 3), {"rest_speed": np.nan}, "^Engine: rest_speed must be >= 0$"),
        (
            ([0.0, -9.5, 0.0], [0.0] * 3),
            {},
            r"^Engine: cars 0 and 1 overlap by 0\.5 m \(within a line x\[i\] - length\[i\] >= x\[i\+1\]\)$",
        ),
        (
            ([0.0, -10.75, 0.0], [0.0] * 3),
            {},
            r"^Engine: the coupler between cars 0 and 1 is stretched to 0\.75 m, beyond its slack 0\.5 m$",
        ),
    ]
    for args, kw, msg in cases:
        with pytest.raises(EngineError, match=msg):
            Engine(b, *args, **kw)
    with pytest.raises(EngineError, match="^Engine needs a Bodies$"):
        Engine("cars", ok, [0.0] * 3)  # type: ignore[arg-type]
    # within SNAP_GAP of touching or of taut: accepted
    Engine(b, [0.0, -10.0 + 0.5 * SNAP_GAP, 0.0], [0.0] * 3)
    Engine(b, [0.0, -10.5 - 0.5 * SNAP_GAP, 0.0], [0.0] * 3)
    Engine(b, [0.0, -10.2, 0.0], [0.0] * 3, rest_speed=0.0)
    # uncoupled cars of one line may stand any distance apart
    free = Bodies([1.0, 1.0], [10.0, 10.0], [0, 0], [False, False], [0.5, 0.5])
    Engine(free, [0.0, -1000.0], [0.0, 0.0])


def test_many_single_car_trains_coasting_to_a_stop_in_one_step():
    """Twenty lone cars (each on its own line: no joints) rolling against resistance stop
    within one long step and stand still at its end."""
    n = 20
    b = Bodies(
        mass=[1000.0] * n, length=[10.0] * n, line=list(range(n)), coupled=[False] * n, slack=[0.0] * n
    )
    e = Engine(b, x=[0.0] * n, v=[1.0 + 0.1 * i for i in range(n)])
    e.step(10.0, 0.0, 1000.0)  # 1 m/s² of resistance: each stops after v seconds
    assert e.v.tolist() == [0.0] * n
    assert e.x.tolist() == pytest.approx([0.5 * (1.0 + 0.1 * i) ** 2 for i in range(n)], rel=1e-9)


def test_a_slow_pull_on_a_tight_coupler_is_a_coupler_event():
    """Two cars coupled without slack, the front one pulling away at 0.5 m/s: the coupler
    takes the jerk (not the buffers), and both then run at 0.25 m/s."""
    b = Bodies(
        mass=[1000.0, 1000.0], length=[10.0, 10.0], line=[0, 0], coupled=[True, False], slack=[0.0, 0.0]
    )
    e = Engine(b, x=[10.0, 0.0], v=[0.5, 0.0])
    (ev,) = e.step(0.1, 0.0, 0.0)
    assert (ev.kind, ev.cars, ev.relative_speed) == ("coupler_taut", (0, 1), pytest.approx(0.5))
    assert e.v.tolist() == pytest.approx([0.25, 0.25])


def test_engine_step_names_the_bad_force_argument():
    from tdbtools.physics.engine import EngineError

    b = Bodies(
        mass=[1000.0, 1000.0], length=[10.0, 10.0], line=[0, 0], coupled=[False, False], slack=[0.0, 0.0]
    )
    e = Engine(b, x=[10.0, 0.0], v=[0.0, 0.0])
    with pytest.raises(EngineError, match=r"^Engine.step: drive has shape \(3,\), expected \(2,\)$"):
        e.step(0.1, [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(EngineError, match=r"^Engine.step: resist has shape \(3,\), expected \(2,\)$"):
        e.step(0.1, 0.0, [1.0, 2.0, 3.0])


def test_twenty_cars_on_one_line_close_up_with_impacts():
    """Twenty loose cars on one line, 0.5 m apart, every second one rolling at 1 m/s onto
    the standing one ahead: ten buffer impacts in the first step, none of them skipped."""
    n = 20
    b = Bodies(mass=[1000.0] * n, length=[10.0] * n, line=[0] * n, coupled=[False] * n, slack=[0.0] * n)
    e = Engine(b, x=[-10.5 * i for i in range(n)], v=[float(i % 2) for i in range(n)])
    ev = e.step(1.0, 0.0, 0.0)
    impacts = [x for x in ev if x.kind == "impact"]
    assert len(impacts) >= 10 and impacts[0].time == pytest.approx(0.5)
    assert e.truncated_steps == 0


def test_a_one_car_body_from_scalars_and_model_names():
    from helpers import SAMPLE_INSTALL

    b = Bodies(mass=1000.0, length=10.0, line=0, coupled=False, slack=0.0)
    assert b.n == 1 and b.length.tolist() == [10.0]
    cars = resolve_stock(read_consist(CONSISTS / "sample_passenger.con"), SAMPLE_INSTALL)
    assert F.CarModel.from_stock(cars).names == tuple(c.name for c in cars)
