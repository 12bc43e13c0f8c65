"""Resting contacts in one pass (docs/physics.md §1.1, "Resting contacts"): the engine's
rule, that a cut an impulse leaves opening slower than ``rest_speed`` is held and the run
solved again until no cut is, gives the same speeds bit for bit when the rounds that only
move one cut by a joint are taken without solving the whole run again
(:func:`~tdbtools.physics.engine_contacts._take_up`), in the Python reference and in the
compiled kernel, against the plain repeated solve kept here as the slow reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tdbtools.physics import engine_contacts as C
from tdbtools.physics.joints import _EQ, _GE, _LE, _solve_chain


def rounds(w, f, types, tol, rest):
    """The resting-contact rule as it is stated: solve, hold every cut opening slower than
    ``rest``, solve again. Returns the speeds and the number of solves."""
    types = list(types)
    n = 0
    while True:
        y, cuts = _solve_chain(w, f, types, tol)
        n += 1
        held = [i for i in cuts if types[i] != _EQ and 0.0 < C._opening(types[i], y[i] - y[i + 1]) < rest]
        if not held:
            return y, n
        for i in held:
            types[i] = _EQ


# (no shrinking: a failing run is shown as drawn; shrinking one took minutes)
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate]
_SLOW = [HealthCheck.too_slow]


def _tol(f):
    return 1e-12 * math.fsum(abs(x) for x in f) + 1e-300


@st.composite
def runs(draw):
    """A run of cars at their limits in a few groups of one speed each (a train whose
    slack has run in and out): speeds that differ by about ``rest``, so that cuts open
    slowly and are taken up joint by joint, and joints of every type."""
    ng = draw(st.integers(1, 4))
    w: list[float] = []
    v: list[float] = []
    types: list[int] = []
    base = draw(st.floats(-3.0, 3.0))
    for _ in range(ng):
        k = draw(st.integers(1, 40))
        vg = base + draw(st.integers(-20, 20)) * 1e-4
        p_ge = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
        for _i in range(k):
            if w:
                r = draw(st.floats(0.0, 1.0))
                types.append(_GE if r < p_ge else (_EQ if r > 0.97 else _LE))
            w.append(draw(st.floats(2e4, 9e4)))
            v.append(vg)
    rest = draw(st.sampled_from([1e-3, 3e-4, 5e-3, 0.0]))
    return w, [wi * vi for wi, vi in zip(w, v)], types, rest


@settings(max_examples=300, deadline=None, derandomize=True, phases=_PHASES, suppress_health_check=_SLOW)
@given(runs())
def test_the_take_up_gives_the_repeated_solves_speeds(case):
    w, f, types, rest = case
    tol = _tol(f)
    want, _ = rounds(w, f, types, tol, rest)
    assert C.rest_solve(w, f, types, tol, rest) == want


def _take_up_run(n, tail, seed, tail_type=_LE, body=_GE):
    rng = np.random.default_rng(seed)
    w = rng.uniform(25e3, 90e3, n).tolist()
    v = [1.0] * (n - 1) + [tail]
    types = [body] * (n - 2) + [tail_type]
    return w, [a * b for a, b in zip(w, v)], types


@pytest.mark.parametrize(
    "tail, tail_type, body",
    [(0.9985, _LE, _GE), (0.999, _EQ, _GE), (1.0015, _GE, _LE), (1.0008, _LE, _LE), (0.9993, _GE, _GE)],
)
def test_a_train_taken_up_car_by_car_is_solved_twice_not_once_per_car(monkeypatch, tail, tail_type, body):
    """The pattern that made the impulses quadratic: one slow (fast) car on a taut coupler
    (buffers) behind a train whose slack is the other way; each round of the rule moves
    the cut one car forward. The repeated solves took one solve per car; the take-up
    gives the same speeds after two (or a few)."""
    w, f, types = _take_up_run(150, tail, 3, tail_type, body)
    tol = _tol(f)
    want, n_old = rounds(w, f, types, tol, 1e-3)
    solves = []
    orig = C._solve_chain
    monkeypatch.setattr(C, "_solve_chain", lambda *a: solves.append(1) or orig(*a))
    got = C.rest_solve(w, f, types, tol, 1e-3)
    assert got == want
    assert n_old > 100 and len(solves) <= 3, (n_old, len(solves))


def test_random_runs_of_the_long_train_kind():
    """Many seeded runs: a long body of one speed with a few cars of other speeds at
    either end and joints of every type (the take-up runs forward, back, stops part
    way, meets a second cut, and falls back to solving)."""
    rng = np.random.default_rng(11)
    took = 0
    for _ in range(400):
        n = int(rng.integers(3, 120))
        w = rng.uniform(2e4, 9e4, n).tolist()
        v = np.full(n, 1.0)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, n))
            v[i : i + int(rng.integers(1, 4))] += rng.integers(-15, 16) * 1e-4
        pg = rng.random()
        types = [
            int(t) for t in rng.choice([_GE, _LE, _EQ], size=n - 1, p=[pg * 0.95, (1 - pg) * 0.95, 0.05])
        ]
        f = [a * b for a, b in zip(w, v.tolist())]
        tol = _tol(f)
        want, n_old = rounds(w, f, types, tol, 1e-3)
        took += n_old > 3
        assert C.rest_solve(w, f, types, tol, 1e-3) == want
    assert took > 50  # (the take-up was exercised)


def _segments(rng):
    """A run of 2-5 segments of one speed each (within a few ``rest_speed`` of each other),
    each with joints of one type or mixed: the take-up meets blocks that are not whole,
    cuts that close, and the window's ends held in the same round."""
    w: list[float] = []
    v: list[float] = []
    types: list[int] = []
    for _ in range(int(rng.integers(2, 6))):
        vs = 1.0 + int(rng.integers(-30, 31)) * 1e-4
        jt = int(rng.choice([_GE, _LE, _EQ], p=[0.45, 0.45, 0.1]))
        mix = rng.random() < 0.3
        for i in range(int(rng.integers(1, 25))):
            if w:
                types.append(int(rng.choice([_GE, _LE])) if (mix or i == 0) else jt)
            w.append(float(rng.uniform(2e4, 9e4)))
            v.append(vs)
    return w, v, types


def test_random_segmented_runs():
    rng = np.random.default_rng(1)
    for _ in range(1500):
        w, v, types = _segments(rng)
        f = [a * b for a, b in zip(w, v)]
        tol = _tol(f)
        assert C.rest_solve(w, f, types, tol, 1e-3) == rounds(w, f, types, tol, 1e-3)[0]


K = pytest.importorskip("tdbtools.physics._engine_kernel", reason="the compiled engine needs numba")


def _kernel_speeds(w, f, types, v0, rest):
    n = len(w)
    atz = np.array([t != _LE for t in types] + [False])
    att = np.array([t != _GE for t in types] + [False])
    v = np.array(v0, dtype=np.float64)
    sc = K._scratch(n)
    ev = np.empty((16, 8))
    js = np.zeros(0, np.int64)
    K._impulse_run(
        np.array(w), atz, att, v, np.int64(0), np.int64(n), js, np.zeros(0), np.int64(0), rest, 0.0,
        np.zeros(n, np.int64), ev, np.int64(0), 0.0, sc,
    )  # fmt: skip
    # (the speeds, the run's full solves: the solve number counts from the run's own
    # reset of the fresh cache, which takes one number)
    return v.tolist(), int(sc[5][5][0]) - 1


def _kernel_speeds_shared(cases, rest, sc):
    """_kernel_speeds of each case in turn through ONE set of work arrays ``sc`` (as a step
    resolves its runs): what a run keeps in the sums cache must not answer for the next."""
    ev = np.empty((16, 8))
    out = []
    for w, v0, types in cases:
        n = len(w)
        atz = np.array([t != _LE for t in types] + [False])
        att = np.array([t != _GE for t in types] + [False])
        v = np.array(v0, dtype=np.float64)
        K._impulse_run(
            np.array(w), atz, att, v, np.int64(0), np.int64(n), np.zeros(0, np.int64), np.zeros(0),
            np.int64(0), rest, 0.0, np.zeros(n, np.int64), ev, np.int64(0), 0.0, sc,
        )  # fmt: skip
        out.append(v.tolist())
    return out


def test_the_kernels_runs_through_shared_work_arrays_are_each_solved_anew():
    """Runs of the same cars and joints but other speeds, one after another through one
    set of work arrays: each gets the reference's speeds (a cached sum, running state or
    whole block of the run before, same first car and end, would give the earlier run's
    answer), forward, backward (the tolerance from the first solve's sum of one sign) and
    with momenta of both signs."""
    rng = np.random.default_rng(7)
    sc = K._scratch(200)
    for it in range(300):
        w, v, types = _segments(rng)
        cases = []
        for scale in (1.0, -1.0, 1.0 + 2.0**-40, 0.5):
            vv = [x * scale for x in v]
            if it % 3 == 0 and len(vv) > 2:
                vv[len(vv) // 2] = -vv[len(vv) // 2]  # (both signs: the tolerance summed apart)
            cases.append((w, vv, types))
        got = _kernel_speeds_shared(cases, 1e-3, sc)
        for (cw, cv, ct), g in zip(cases, got):
            f = [a * b for a, b in zip(cw, cv)]
            assert g == C.rest_solve(cw, f, ct, _tol(f), 1e-3)
            assert g == _kernel_speeds(cw, f, ct, cv, 1e-3)[0]


@settings(max_examples=300, deadline=None, derandomize=True, phases=_PHASES, suppress_health_check=_SLOW)
@given(runs())
def test_the_kernels_take_up_is_the_references(case):
    w, f, types, rest = case
    v0 = [fi / wi for fi, wi in zip(f, w)]
    f = [wi * vi for wi, vi in zip(w, v0)]  # (the kernel makes f from the speeds)
    tol = _tol(f)
    assert _kernel_speeds(w, f, types, v0, rest)[0] == C.rest_solve(w, f, types, tol, rest)


def test_the_kernels_take_up_on_segmented_runs():
    rng = np.random.default_rng(2)
    for _ in range(1500):
        w, v, types = _segments(rng)
        f = [a * b for a, b in zip(w, v)]
        assert _kernel_speeds(w, f, types, v, 1e-3)[0] == C.rest_solve(w, f, types, _tol(f), 1e-3)


@pytest.mark.parametrize(
    "tail, tail_type, body", [(0.9985, _LE, _GE), (1.0008, _LE, _LE), (0.9993, _GE, _GE)]
)
def test_the_kernels_long_take_up_is_the_repeated_solves(tail, tail_type, body):
    w, f, types = _take_up_run(300, tail, 4, tail_type, body)
    v0 = [fi / wi for fi, wi in zip(f, w)]
    f = [wi * vi for wi, vi in zip(w, v0)]
    want, n_old = rounds(w, f, types, _tol(f), 1e-3)
    assert n_old > 200
    got, solves = _kernel_speeds(w, f, types, v0, 1e-3)
    assert got == want and solves <= 3, solves


def test_the_kernels_tolerance_is_the_sum_of_the_momenta_sizes():
    """Two halves of a run moving apart at +u and -u with mirrored masses: the momenta
    cancel (sum f = 0) but the tolerance is 1e-12 * sum |f|, not of |sum f|; a tolerance
    from the signed sum would split each half at its rounding noise (no resting contacts
    with ``rest_speed`` 0 to hold the splits again)."""
    rng = np.random.default_rng(8)
    for _ in range(300):
        h = int(rng.integers(5, 40))
        wh = rng.uniform(2e4, 9e4, h).tolist()
        w = wh + wh[::-1]
        u = float(rng.uniform(0.1, 3.0))
        v = [u] * h + [-u] * h
        types = [_GE] * (2 * h - 1)
        f = [a * b for a, b in zip(w, v)]
        assert math.fsum(f) == 0.0
        want = C.rest_solve(w, f, types, _tol(f), 0.0)
        assert _kernel_speeds(w, f, types, v, 0.0)[0] == want
