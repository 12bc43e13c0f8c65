"""The compiled engine step (tdbtools.physics._engine_kernel, docs/physics.md §1.1) gives the
Python/numpy engine's numbers bit for bit: its building blocks against numpy's and Python's
own sums and the Python block solver, and whole random runs state by state, event by event."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import needs_kernels

import tdbtools.physics.engine as E
from tdbtools.physics import kernels
from tdbtools.physics.engine import Bodies, Engine, EngineError

K = pytest.importorskip("tdbtools.physics._engine_kernel", reason="the compiled engine needs numba")
pytestmark = needs_kernels  # (compares the kernels with the reference: none under the switch)


def test_constants_are_the_engines():
    from tdbtools.physics import interaction as I

    assert (K.EPS_V, K.SNAP_GAP, K.V_REST, K.T_TOL) == (E.EPS_V, E.SNAP_GAP, E.V_REST, E.T_TOL)
    assert (K.LINEAR_EPS, K.STOP_EPS) == (I.LINEAR_EPS, I.STOP_EPS)
    assert (K._GE, K._LE, K._EQ) == (E._GE, E._LE, E._EQ)
    assert E.EVENT_KINDS[K.K_IMPACT] == "impact" and E.EVENT_KINDS[K.K_TAUT] == "coupler_taut"
    assert E.EVENT_KINDS[K.K_STOPPED] == "stopped" and E.EVENT_KINDS[K.K_STARTED] == "started"
    assert (E._F_BAD, E._F_DIRTY, E._F_TRUNCATED, E._F_MOVED) == (
        K.F_BAD,
        K.F_DIRTY,
        K.F_TRUNCATED,
        K.F_MOVED,
    )


def _nasty(rng, n):
    """Values of mixed signs and magnitudes (sums that cancel and round)."""
    return rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, size=n)


def test_segment_sums_are_numpys_reduceat():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 1500))
        a = _nasty(rng, n)
        starts = np.unique(np.concatenate(([0], rng.integers(0, n, size=int(rng.integers(0, 30))))))
        ref = np.add.reduceat(a, starts)
        ends = np.append(starts[1:], n)
        got = [K._seg_sum(a, int(s), int(e)) for s, e in zip(starts, ends)]
        assert np.array_equal(np.array(got), ref)


def test_segment_sums_of_products_are_numpys_reduceat():
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 1500))
        m, v = _nasty(rng, n), _nasty(rng, n)
        starts = np.unique(np.concatenate(([0], rng.integers(0, n, size=int(rng.integers(0, 30))))))
        ref = np.add.reduceat(m * v, starts)
        ends = np.append(starts[1:], n)
        got = [K._seg_sum_mv(m, v, int(s), int(e)) for s, e in zip(starts, ends)]
        assert np.array_equal(np.array(got), ref)


def test_fsum_is_pythons():
    rng = np.random.default_rng(2)
    cases = [[], [-0.0], [1.0, 1e100, 1.0, -1e100], [0.1] * 10, [1e308, -1e308, 5.0]]
    cases += [_nasty(rng, int(rng.integers(1, 300))).tolist() for _ in range(300)]
    # half-way cases: the round-half-even correction across partials
    cases += [[1.0, 2.0**-53, 2.0**-106], [1.0, -(2.0**-53), -(2.0**-106)], [2.0**53, 1.0, 2.0**-60]]
    for c in cases:
        a = np.array(c, dtype=np.float64)
        got = K._fsum(a, 0, a.size)
        assert got == math.fsum(c) and math.copysign(1.0, got) == math.copysign(1.0, math.fsum(c))


def _fsum_hard_cases(rng):
    """Sums the certified TwoSum pass of ``_fsum`` must hand over (ties, exact zeros,
    cancellation down to the last bits) and sums it decides itself (masses, momenta)."""
    for it in range(3000):
        n = int(rng.integers(1, 120))
        kind = it % 5
        if kind == 0:  # masses and momenta as the engine has them
            yield rng.uniform(2e4, 9e4, n) * rng.choice([1.0, -1.0, 1e-3], size=n)
        elif kind == 1:  # a sum cancelling to a few ulps of its terms
            a = rng.normal(size=n) * 1e5
            yield np.concatenate((a, -a[::-1] * (1.0 + rng.integers(0, 2, n) * 2.0**-52)))
        elif kind == 2:  # half-way cases hidden among terms that cancel exactly
            b = rng.normal(size=n)
            tail = [1.0, rng.choice([1.0, -1.0]) * 2.0**-53, rng.choice([0.0, 2.0**-106, -(2.0**-106)])]
            a = np.concatenate((b, -b, tail))
            rng.shuffle(a)
            yield a
        elif kind == 3:  # exact binary fractions far apart: exact zeros and ties
            yield rng.integers(-5, 5, n) * 2.0 ** rng.integers(-60, 60, n)
        else:
            yield _nasty(rng, n)


def test_fsum_fast_pass_is_pythons_on_hard_sums():
    rng = np.random.default_rng(3)
    handed_over = 0
    for a in _fsum_hard_cases(rng):
        c = a.tolist()
        got = K._fsum(a, 0, a.size)
        want = math.fsum(c)
        assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), c
        assert K._fsum_exact(a, 0, a.size) == want
        # the plain TwoSum estimate (without the certificate) differs from fsum somewhere
        t = cs = 0.0
        for x in c:
            u = t + x
            bp = u - t
            cs += (t - (u - bp)) + (x - bp)
            t = u
        handed_over += (t + cs) != want
    assert handed_over  # (the certificate had work to do: these cases reach the fallback)


def _same_float(x, y):
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


def test_fsum2_and_its_kept_running_states_are_pythons():
    """_fsum2 is two _fsum in one pass, and a range of the same first element that ends
    earlier is summed from the running states that pass kept: both math.fsum's sums."""
    rng = np.random.default_rng(4)
    for it, a in enumerate(_fsum_hard_cases(rng)):
        if it == 500:
            break
        b = a[::-1] * 3.0  # another sum of the same length
        n = a.size
        tag = np.full(n, -1, np.int64)
        st = np.empty((n, 6))
        s = int(rng.integers(0, n))
        base = int(rng.integers(0, 3)) * (n + 1)  # (the key of these a and b)
        got = K._fsum2(a, b, s, n, tag, st, base)
        for x, want in zip(got, (math.fsum(a[s:].tolist()), math.fsum(b[s:].tolist()))):
            assert _same_float(x, want), (a, s)
        assert (tag[s:] == s + base).all()
        for e in range(s + 1, n + 1):
            got = K._fsum2(a, b, s, e, tag, st, base)
            for x, want in zip(got, (math.fsum(a[s:e].tolist()), math.fsum(b[s:e].tolist()))):
                assert _same_float(x, want), (a, s, e)
        # other sums under a new key: the states kept for the old key are not used
        a2 = a * 1.5 + 1.0
        got = K._fsum2(a2, b, s, n, tag, st, base + n + 1)
        assert _same_float(got[0], math.fsum(a2[s:].tolist())), (a, s)
        assert (tag[s:] == s + base + n + 1).all()


def test_fsum_errors_exact_decides_ties_as_fsum():
    """The second try of the certified sum (the errors' own sum exact): when it answers,
    the answer is math.fsum's, and it answers the ties of equal terms the certificate
    hands over (momenta of cars at one speed)."""
    rng = np.random.default_rng(5)
    answered = 0
    for a in _fsum_hard_cases(rng):
        ok, x = K._fsum_errors_exact(a, 0, a.size)
        if ok:
            answered += 1
            assert _same_float(x, math.fsum(a.tolist())), a.tolist()
    assert answered > 500
    ties = 0
    for _ in range(300):
        n = int(rng.integers(2, 60))
        a = np.full(n, 84000.0 * rng.uniform(0.01, 30.0))
        t = c = ae = 0.0
        for x in a.tolist():
            u = t + x
            bp = u - t
            err = (t - (u - bp)) + (x - bp)
            t, c, ae = u, c + err, ae + abs(err)
        b = ae * (4.0 * n * 2.0**-53)
        ties += ae > 0.0 and t + (c - b) != t + (c + b)  # the certificate cannot decide
        ok, x = K._fsum_errors_exact(a, 0, n)
        assert ok and _same_float(x, math.fsum(a.tolist()))
        assert _same_float(K._fsum(a, 0, n), math.fsum(a.tolist()))
    assert ties > 10


def _chain_case(rng, k):
    w = rng.uniform(20e3, 90e3, k)
    f = rng.normal(size=k) * rng.choice([1.0, 1e3, 1e5], size=k)
    types = rng.choice([E._GE, E._LE, E._EQ], size=max(k - 1, 0), p=[0.45, 0.45, 0.1])
    return w, f, types.astype(np.int64)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 30, 49, 200])
def test_block_solvers_are_the_python_ones(k):
    rng = np.random.default_rng(k)
    for _ in range(60):
        w, f, types = _chain_case(rng, k)
        tol = float(rng.choice([1e-300, 1e-3, 10.0]))
        y_ref, cuts_ref = E._solve_chain(w.tolist(), f.tolist(), types.tolist(), tol)
        y, cuts = np.empty(k), np.empty(k, np.int64)
        nc = K._solve_chain(w, f, types, tol, y, cuts)
        assert y.tolist() == y_ref and cuts[:nc].tolist() == cuts_ref
        r = np.abs(rng.normal(size=k)) * 1e3
        y_ref, cuts_ref = E._solve_static(w.tolist(), f.tolist(), r.tolist(), types.tolist(), tol)
        nc = K._solve_static(w, f, r, types, tol, y, cuts)
        assert y.tolist() == y_ref and cuts[:nc].tolist() == cuts_ref


def _random_engines(seed: int):
    """The same random yard twice (Python and compiled): several lines, trains and loose
    cuts, rigid and slack couplers, uncoupled buffers, cars at rest and moving both ways."""
    rng = np.random.default_rng(seed)
    nl = int(rng.integers(1, 5))
    mass, length, line, coupled, slack, x, v = [], [], [], [], [], [], []
    for li in range(nl):
        k = int(rng.integers(1, 90))
        head = 0.0
        vt = float(rng.choice([0.0, 0.0, 1.5, -1.0, 3.0]))
        prev_cp, prev_sl = False, 0.0
        for i in range(k):
            m = float(rng.uniform(15e3, 95e3))
            ln = float(rng.uniform(10.0, 25.0))
            cp = bool(rng.random() < 0.85) and i < k - 1
            sl = float(rng.choice([0.0, 0.02, 0.05, 0.1]))
            if i:
                if prev_cp:  # within its slack: buffers touching, taut or in between
                    gap = float(rng.choice([0.0, prev_sl, rng.uniform(0, prev_sl)]))
                else:
                    gap = float(rng.choice([0.0, 0.3, 5.0]))
                    if rng.random() < 0.5:  # a loose cut now and then: a speed of its own
                        vt = float(rng.choice([0.0, 1.0, -0.5, 2.0]))
                head = head - length[-1] - gap
            mass.append(m)
            length.append(ln)
            line.append(li)
            coupled.append(cp)
            slack.append(sl)
            x.append(head)
            v.append(vt)
            prev_cp, prev_sl = cp, sl
    bodies = Bodies(np.array(mass), np.array(length), np.array(line), np.array(coupled), np.array(slack))
    mk = lambda c: Engine(bodies, np.array(x), np.array(v), compiled=c)  # noqa: E731
    n = len(mass)
    drive_a = rng.normal(size=n) * rng.choice([0.0, 2e4, 1.5e5], size=n)
    brake = rng.uniform(0.0, 0.15, n) * np.array(mass) * 9.81
    return mk(False), mk(True), drive_a, brake, rng


def _same_events(a, b):
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert (ea.kind, ea.time, ea.cars, ea.line) == (eb.kind, eb.time, eb.cars, eb.line)
        assert (ea.relative_speed, ea.impulse, ea.energy_lost) == (
            eb.relative_speed,
            eb.impulse,
            eb.energy_lost,
        )


@pytest.mark.parametrize("seed", range(12))
def test_random_yards_step_for_step(seed):
    py, co, drive_a, brake, rng = _random_engines(seed)
    assert not py.compiled and co.compiled
    n = py.n
    events = 0
    for k in range(150):
        phase = (k // 30) % 4  # pull, coast, brake, push back: the slack runs out and in
        av = np.abs(py.v)
        resist = 500.0 + av * (20.0 + 1.2 * av) + (brake if phase == 2 else 0.0)
        drive = drive_a * (1.0, 0.0, 0.0, -1.3)[phase]
        if rng.random() < 0.1:
            drive = float(rng.normal() * 1e3)  # scalar forces too
        dt = float(rng.choice([0.1, 0.1, 0.5, 0.02]))
        ea, eb = py.step(dt, drive, resist), co.step(dt, drive, resist)
        _same_events(ea, eb)
        events += len(ea)
        for name in ("x", "v", "a", "gap", "groups"):
            assert np.array_equal(getattr(py, name), getattr(co, name)), (k, name)
        assert py.time == co.time and py.truncated_steps == co.truncated_steps
    assert events > 0 and n > 0


def test_the_arrays_handed_out_do_not_change():
    py, co, drive_a, brake, _ = _random_engines(3)
    for stepped in (False, True):  # those of the engine as made, then those of a step
        v0, a0, g0, x0 = co.v, co.a, co.groups, co.x
        keep = [np.array(z) for z in (v0, a0, g0, x0)]
        co.step(0.5, drive_a, 1e3)
        for held, copy in zip((v0, a0, g0, x0), keep):
            assert np.array_equal(held, copy) and not held.flags.writeable
            if stepped and held is not g0:  # nor can a step's v, a, x be made writable
                with pytest.raises(ValueError):  # (views of one read-only array)
                    held.flags.writeable = True


def test_compiled_is_chosen_by_size_and_can_be_refused(monkeypatch):
    b = Bodies.trains([[40e3] * 80], [[20.0] * 80])
    assert Engine(b, -np.arange(80) * 20.0, np.zeros(80)).compiled == (80 >= E.COMPILED_MIN_CARS)
    assert not Engine(b, -np.arange(80) * 20.0, np.zeros(80), compiled=False).compiled
    monkeypatch.setattr(kernels, "_COMPILED", False)
    assert not Engine(b, -np.arange(80) * 20.0, np.zeros(80)).compiled
    with pytest.raises(EngineError, match="numba"):
        Engine(b, -np.arange(80) * 20.0, np.zeros(80), compiled=True)


@pytest.mark.parametrize(
    "drive,resist",
    [(np.nan, 1.0), (1.0, np.nan), (1.0, -1.0), (np.inf, 1.0), (1.0, np.inf), (-np.inf, 0.0)],
)
def test_bad_forces_are_refused_and_change_nothing(drive, resist):
    py, co, drive_a, brake, _ = _random_engines(5)
    for eng in (py, co):
        eng.step(0.3, drive_a, brake + 500.0)
        before = [np.array(getattr(eng, k)) for k in ("x", "v", "a", "gap", "groups")] + [eng.time]
        d = np.array(drive_a)
        r = np.array(brake + 500.0)
        d[-1], r[-1] = drive, resist  # the last car only: the check must see every car
        with pytest.raises(EngineError, match="resist must be finite"):
            eng.step(0.1, d, r)
        after = [np.array(getattr(eng, k)) for k in ("x", "v", "a", "gap", "groups")] + [eng.time]
        assert all(np.array_equal(b, a_, equal_nan=True) for b, a_ in zip(before[:-1], after[:-1]))
        assert before[-1] == after[-1]
    ea, eb = py.step(0.1, drive_a, brake + 500.0), co.step(0.1, drive_a, brake + 500.0)
    _same_events(ea, eb)
    assert np.array_equal(py.x, co.x)


def test_compile_kernels_compiles_each_kernel_or_nothing(monkeypatch):
    from tdbtools.physics import compiled

    took = compiled.compile_kernels()
    assert set(took) == set(compiled.KERNEL_GROUPS) == {
        "engine",
        "drivers",
        "lookups",
        "step",
        "orts",
    } and all(t >= 0.0 for t in took.values())
    monkeypatch.setattr(compiled, "compiled_available", lambda: False)
    assert compiled.compile_kernels() == {}


@pytest.mark.parametrize("seed", range(4))
def test_yards_at_rest_with_forces_that_tie(seed):
    """Blocks at rest whose drive equals their friction exactly, or both zero, next to
    cars that can break free: the static-friction decisions of both paths agree."""
    py, co, drive_a, brake, rng = _random_engines(100 + seed)
    n = py.n
    resist = np.abs(rng.normal(size=n)) * 2e4
    drive = resist * rng.choice([-1.0, 1.0, 0.5, 2.0], n)  # |D| = R on many cars exactly
    drive[rng.random(n) < 0.2] = 0.0
    resist[rng.random(n) < 0.1] = 0.0
    for k in range(60):
        f = (drive, resist) if k % 3 else (np.zeros(n), np.zeros(n))
        _same_events(py.step(0.2, *f), co.step(0.2, *f))
        for name in ("x", "v", "a", "gap", "groups"):
            assert np.array_equal(getattr(py, name), getattr(co, name)), (k, name)


def test_a_broken_or_old_numba_counts_as_none(monkeypatch):
    import sys
    import types

    monkeypatch.setattr(kernels, "_COMPILED", None)
    monkeypatch.setitem(sys.modules, "numba", types.SimpleNamespace(__version__="0.59.1"))
    assert not kernels.compiled_available()
    monkeypatch.setattr(kernels, "_COMPILED", None)
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    assert not kernels.compiled_available()
    b = Bodies.trains([[40e3] * 3], [[20.0] * 3])
    assert not Engine(b, [0.0, -20.0, -40.0], [0.0] * 3).compiled
    # (monkeypatch puts the real numba and the cached answer back)


def test_the_environment_switch_runs_the_reference_code(monkeypatch):
    """TDBTOOLS_PURE_PYTHON=1 turns every kernel off (the engine's, and the lazily
    imported ones); without it they run again."""
    pytest.importorskip("numba", reason="compares with the compiled kernels")
    from tdbtools.physics.driver import _CORE

    b = Bodies.trains([[40e3] * 3], [[20.0] * 3])
    monkeypatch.setenv(kernels.PURE_PYTHON_ENV, "1")
    kernels.reset()
    try:
        assert not kernels.compiled_available() and _CORE() is None
        assert not Engine(b, [0.0, -20.0, -40.0], [0.0] * 3).compiled
        monkeypatch.setenv(kernels.PURE_PYTHON_ENV, "0")
        kernels.reset()
        assert kernels.compiled_available() and _CORE() is not None
        assert Engine(b, [0.0, -20.0, -40.0], [0.0] * 3).compiled
    finally:
        monkeypatch.delenv(kernels.PURE_PYTHON_ENV)
        kernels.reset()


def test_a_long_train_with_slack_step_for_step():
    """A 300-car train, a locomotive every 25 cars, slack couplers in every state, pulled,
    coasting, braked and pushed back: a dozen event rounds a step, most of them one coupler
    taking up its slack somewhere along the train. The compiled step redoes only what each
    event changed (the blocks around the last round's group boundaries and the impulses'
    runs, a block's joint-force check kept while its inputs are the same, the cars' speeds
    filled from their groups); the Python engine redoes everything. Both must agree."""
    rng = np.random.default_rng(32)
    n = 300
    loco = np.arange(n) % 25 == 0
    mass = np.where(loco, 126e3, rng.uniform(25e3, 90e3, n))
    length = np.where(loco, 21.4, 15.0)
    slack = rng.choice([0.0, 0.03, 0.06, 0.1], n)
    coupled = np.ones(n, bool)
    coupled[-1] = False
    gap = np.where(rng.random(n) < 0.5, rng.choice([0.0, 1.0], n) * slack, rng.uniform(0, 1, n) * slack)
    x = np.concatenate(([0.0], -np.cumsum(length[:-1] + gap[:-1])))
    bodies = Bodies(mass, length, np.zeros(n, np.int64), coupled, slack)
    py, co = (Engine(bodies, x, np.full(n, 2.0), compiled=c) for c in (False, True))
    assert co.compiled and not py.compiled
    rounds = events = 0
    for k in range(120):
        phase = (k // 20) % 4  # pull, coast, brake, push back
        av = np.abs(py.v)
        resist = 800.0 + av * (30.0 + 1.5 * av) + (0.1 * mass * 9.81 * rng.random(n) if phase == 2 else 0.0)
        drive = np.where(loco, (2.5e5, 0.0, 0.0, -1.5e5)[phase], 0.0) + rng.normal(size=n) * 50.0
        ea, eb = py.step(0.1, drive, resist), co.step(0.1, drive, resist)
        _same_events(ea, eb)
        events += len(ea)
        rounds += sum(e.kind in ("impact", "coupler_taut") for e in ea)
        for name in ("x", "v", "a", "gap", "groups"):
            assert np.array_equal(getattr(py, name), getattr(co, name)), (k, name)
    assert rounds > 200 and events > 0


def test_a_coupler_taking_up_a_train_car_by_car_is_the_reference(monkeypatch):
    """A slow last car on a taut coupler behind a train whose buffers touch: the impulse
    leaves each new cut opening slower than rest_speed, so the rule's next round holds
    one more joint, ~120 rounds over 120 cars (the pattern that cost the long train's
    impulses most). Both engines take those rounds up without solving the run again
    (engine_contacts._take_up; tests/test_engine_resting.py holds it to the repeated
    solves), with the same speeds and events."""
    from tdbtools.physics import engine_contacts

    n = 120
    rng = np.random.default_rng(5)
    mass = rng.uniform(25e3, 90e3, n)
    length = np.full(n, 15.0)
    slack = np.full(n, 0.05)
    coupled = np.ones(n, bool)
    coupled[-1] = False
    gap = np.zeros(n)
    gap[n - 2] = slack[n - 2]
    x = np.concatenate(([0.0], -np.cumsum(length[:-1] + gap[:-1])))
    bodies = Bodies(mass, length, np.zeros(n, np.int64), coupled, slack)
    solves, took = [], []
    orig, orig_take = engine_contacts._solve_chain, engine_contacts._take_up
    monkeypatch.setattr(engine_contacts, "_solve_chain", lambda *a: solves.append(1) or orig(*a))
    monkeypatch.setattr(engine_contacts, "_take_up", lambda *a: took.append(a[7]) or orig_take(*a))
    for tail in (0.9985, 0.999, 0.9995, 1.0005):  # (the last one: a push, no take-up)
        v = np.full(n, 1.0)
        v[-1] = tail
        py, co = (Engine(bodies, x, v, compiled=c) for c in (False, True))
        solves.clear()
        took.clear()
        for k in range(3):
            drive = np.zeros(n) if k == 0 else rng.normal(size=n) * 1e3
            _same_events(py.step(0.1, drive, 500.0), co.step(0.1, drive, 500.0))
            for name in ("x", "v", "a", "gap", "groups"):
                assert np.array_equal(getattr(py, name), getattr(co, name)), (tail, k, name)
        if tail < 0.9995:  # (the pattern did happen: taken up from the last joint, few solves)
            assert n - 3 in took and len(solves) < 40, (tail, took, len(solves))


def test_event_table_rows_and_columns_give_the_same_events():
    """Engine's conversion of the compiled step's event table: a few rows one by one, a
    burst column by column; both give the same events (kinds, cars, Python ints/floats)."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(40):
        k = i % 4
        c0 = int(rng.integers(0, 999))
        c1 = c0 + 1 if k < 2 else c0 + int(rng.integers(0, 2))
        rows.append([k, rng.random() * 100, c0, c1, int(rng.integers(0, 3)), *rng.normal(size=3)])
    table = np.array(rows)
    burst = E._events_from_table(table)
    few = [e for s in range(0, 40, 5) for e in E._events_from_table(table[s : s + 5])]
    assert len(burst) == 40 and few == burst
    for e, f in zip(burst, few):
        assert [type(c) for c in e.cars] == [type(c) for c in f.cars] == [int] * len(e.cars)
        assert type(e.line) is type(f.line) is int and type(f.time) is float
    assert {len(e.cars) for e in burst if e.kind in ("stopped", "started")} == {1, 2}


def _force_checks(n):
    """The joint-force checks kept within a step (_engine_kernel._workspace's rows; the
    int rows in one array as in the work arrays, for _limits_moved)."""
    wi = np.full((max(K.I_FC_END, K.I_FC_OWNER, K.I_SP_END, K.I_SP_OWNER) + 1, n), -1, np.int64)
    fl = [np.zeros(n) for _ in range(2)]
    fb = [np.zeros(n, np.bool_) for _ in range(2)]
    return wi, (wi[K.I_FC_END], wi[K.I_FC_OWNER], fl[0], fl[1], fb[0], fb[1])


def _checked_before(fc, s, e, ak, sk, allmov):
    """regroup's test of a kept check (written out there): the block's cars, acceleration,
    direction and whether every block moved are the kept check's."""
    end, _owner, fa, fs, _bad, fmov = fc
    return bool(end[s] == e and fa[s] == ak and fs[s] == sk and fmov[s] == allmov)


def test_a_kept_force_check_is_used_only_with_the_same_inputs():
    """A block's joint-force check is reused within a step only when every input is the
    same: its cars, its acceleration and direction, whether every block moves, and its
    joints' limits (a limit that moves drops the checks over that joint, and only those);
    a later check over some of its cars drops it."""
    n = 12
    rng = np.random.default_rng(5)
    m, drive, resist = rng.uniform(2e4, 9e4, n), rng.normal(size=n) * 1e5, rng.uniform(0, 1e4, n)
    atz = rng.random(n - 1) < 0.5
    att = ~atz
    wi, fc = _force_checks(n)
    s, e, ak, sk, tol = 3, 9, 0.25, 1.0, 1e-3
    bad = K._force_check(m, drive, resist, atz, att, s, e, ak, sk, tol, True)
    K._keep_check(fc, s, e, ak, sk, True, bad)
    assert _checked_before(fc, s, e, ak, sk, True)
    assert not _checked_before(fc, s, e, ak + 1e-9, sk, True)
    assert not _checked_before(fc, s, e, ak, -sk, True)
    assert not _checked_before(fc, s, e, ak, sk, False)
    assert not _checked_before(fc, s, e - 1, ak, sk, True)
    for j in (s - 1, e - 1):  # the joints before and after the block are not the block's
        K._limits_moved(wi, j)
        assert _checked_before(fc, s, e, ak, sk, True), j
    for j in (s, e - 2):  # a joint inside the block
        K._keep_check(fc, s, e, ak, sk, True, bad)
        K._limits_moved(wi, j)
        assert not _checked_before(fc, s, e, ak, sk, True), j
    # a later check over some of its cars drops it (the kept checks never overlap)
    K._keep_check(fc, s, e, ak, sk, True, bad)
    K._keep_check(fc, 7, 11, ak, sk, True, bad)
    assert not _checked_before(fc, s, e, ak, sk, True)
    assert _checked_before(fc, 7, 11, ak, sk, True)
    K._keep_check(fc, 1, 4, ak, sk, True, bad)  # over the first car of a dropped one
    K._limits_moved(wi, 8)
    assert not _checked_before(fc, 7, 11, ak, sk, True)
    # and the kept check's result is the check's
    K._keep_check(fc, s, e, ak, sk, True, bad)
    assert fc[4][s] == bad


def test_the_force_check_sums_from_the_blocks_first_car():
    """A block's joint forces are the running sums of F - m·a from its own first car:
    the check flags a block exactly when such a sum has the sign its limit forbids
    (buffers at their limit push: P <= tol; a taut coupler pulls: P >= -tol). The limits
    are set so that each block holds, then one joint's limit is flipped in half the
    trials (the block then fails unless that joint's force is within the tolerance)."""
    rng = np.random.default_rng(11)
    n = 40
    flagged = 0
    for trial in range(200):
        m = rng.uniform(2e4, 9e4, n)
        drive = rng.normal(size=n) * 1e5
        resist = rng.uniform(0, 1e4, n)
        s = int(rng.integers(0, n - 2))
        e = int(rng.integers(s + 2, n + 1))
        ak, sk, tol = float(rng.normal()), float(rng.choice((-1.0, 1.0))), 1e-3
        P = np.add.accumulate(drive[s:e] - sk * resist[s:e] - m[s:e] * ak)[:-1]
        atz = rng.random(n - 1) < 0.5  # the joints outside the block: anything
        atz[s : e - 1] = P <= 0.0
        if trial % 2:
            j = int(rng.integers(s, e - 1))
            atz[j] = not atz[j]
        att = ~atz
        sign = np.where(atz[s : e - 1], 1.0, -1.0)
        want = bool(np.any(sign * P > tol))
        flagged += want
        assert K._force_check(m, drive, resist, atz, att, s, e, ak, sk, tol, True) == want, trial
    assert 60 <= flagged <= 140, flagged  # both outcomes are tried


def test_a_copied_engine_steps_as_the_original():
    """The compiled engine keeps its state as views of its work arrays; a copy (pickle,
    deepcopy) gets separate arrays, views again, and steps as the original does."""
    import copy
    import pickle

    _, co, drive_a, brake, _ = _random_engines(4)
    co.step(0.5, drive_a, 500.0 + brake)
    for make in (copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e))):
        twin = make(co)
        for k in range(20):
            drive = drive_a * (1.0, -1.0)[(k // 5) % 2]
            ea, eb = co.step(0.1, drive, 500.0), twin.step(0.1, drive, 500.0)
            _same_events(ea, eb)
            for name in ("x", "v", "a", "gap", "groups"):
                assert np.array_equal(getattr(co, name), getattr(twin, name)), (k, name)
        co.step(0.5, drive_a, 500.0 + brake)


def test_quiet_contacts_of_a_run_with_a_fast_one_keep_its_record():
    """A run of cars with two contacts at one instant, one slower than
    Engine.quiet_contact_speed and one faster: the fast one's record is made, with the
    run's energy shared over both as without the threshold (the slow one is only
    counted)."""
    bodies = Bodies(
        np.array([40e3, 60e3, 50e3]), np.full(3, 20.0), np.zeros(3, np.int64), np.zeros(3, bool), np.zeros(3)
    )
    x, v = np.array([0.0, -20.0, -40.0]), np.array([-0.01, 0.0, 1.0])
    runs = []
    for compiled, quiet in ((False, 0.0), (True, 0.0), (True, 0.05)):
        eng = Engine(bodies, x, v, compiled=compiled)
        eng.quiet_contact_speed = quiet
        runs.append((eng.step(0.1, 0.0, 0.0), eng.event_count))
    (every, n0), (every_c, n1), (quiet, n2) = runs
    _same_events(every, every_c)
    contacts = [e for e in every if e.kind == "impact"]
    assert len(contacts) == 2 and {e.cars for e in contacts} == {(0, 1), (1, 2)}
    assert n0 == n1 == n2 == len(every)
    kept = [e for e in every if not (e.kind == "impact" and e.relative_speed < 0.05)]
    assert len(kept) < len(every)
    _same_events(quiet, kept)


def test_a_truncated_compiled_step_leaves_a_consistent_engine():
    """At the cap of event rounds the compiled step moves the rest of the step without
    interactions and snaps the gaps in Python; the state stays the kernel's (views of its
    work arrays) and consistent: gaps within their limits, x from the snapped gaps."""
    _, co, drive_a, brake, _ = _random_engines(2)
    wf, wi, wb = co._work
    wi[K.I_META, 1] = 1  # the cap of rounds: one
    for k in range(30):
        co.step(0.5, drive_a * (1.0, -1.0)[(k // 5) % 2], 500.0 + brake)
    assert co.truncated_steps > 0
    assert np.shares_memory(co._gap, wf) and np.shares_memory(co._atz, wb) and np.shares_memory(co._xlead, wf)
    b = co.bodies
    same = b.line[:-1] == b.line[1:]
    gap = co.gap[same]
    assert np.all(gap >= 0.0) and np.all(gap <= np.where(b.coupled[:-1], b.slack[:-1], np.inf)[same])
    x = co.x
    assert np.allclose(((x[:-1] - b.length[:-1]) - x[1:])[same], gap, atol=1e-9)
    assert np.array_equal(co._atz, co._gap <= 0.0)


@pytest.mark.parametrize("gap0, snaps", [(5e-10, True), (0.05, False)])
def test_a_gap_snapped_onto_its_limit_drops_the_results_kept_over_it(gap0, snaps):
    """A joint that reaches a limit by snapping while the groups move (a gap within
    SNAP_GAP of it, not an event) changes the limits a kept joint-force check and a kept
    split solution were made with: _advance drops both; a gap that stays off its limits
    keeps them."""
    n = 6
    _, wi, _ = K.work_arrays(n)
    gap = np.array([0.0, 0.0, gap0, 0.0, 0.0])
    hi = np.full(n - 1, 0.1)
    atz, att = gap <= 0.0, gap >= hi
    for owner, end in ((K.I_FC_OWNER, K.I_FC_END), (K.I_SP_OWNER, K.I_SP_END)):
        wi[owner, :] = -1
        wi[end, :] = -1
        wi[owner, :n] = 0  # one block over every car, kept
        wi[end, 0] = n
    gstart, jb, jg = np.array([0, 3]), np.array([2]), np.array([0])
    gv, ga, dg = np.array([1.0, 1.0]), np.zeros(2), np.zeros(2)
    ev, cnt, dirty, _ = K._advance(
        0.1, n, 2, 1, jb, jg, gstart, gv, ga, dg, gap, hi, atz, att, np.ones(n), np.zeros(1),
        np.zeros(n, np.int64), np.zeros(1, np.int64), 0.0, False, np.empty((16, 8)), 0, wi,
    )  # fmt: skip
    assert bool(atz[2]) == snaps and dirty == snaps
    kept = -1 if snaps else n
    assert wi[K.I_FC_END, 0] == kept and wi[K.I_SP_END, 0] == kept


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_a_first_round_from_the_last_steps_groups_is_a_full_one(seed):
    """A step's first round starts from the last step's last round's groups (looking again
    only at their boundaries and the impulses' runs); a twin made to look at every car in
    every step's first round (the kept groups forgotten) gives the same numbers and events."""
    import copy

    _, co, drive_a, brake, rng = _random_engines(seed)
    twin = copy.deepcopy(co)
    wi = twin._work[1]
    kept = events = 0
    for k in range(120):
        phase = (k // 20) % 4
        drive = drive_a * (1.0, 0.0, 0.0, -1.3)[phase]
        resist = 500.0 + (brake if phase == 2 else 0.0) + 40.0 * np.abs(co.v)
        kept += wi[K.I_LAST, K.LAST_NG] > 0
        wi[K.I_LAST, K.LAST_NG] = 0  # the twin: a full first round
        ea, eb = co.step(0.1, drive, resist), twin.step(0.1, drive, resist)
        _same_events(ea, eb)
        events += len(ea)
        for name in ("x", "v", "a", "gap", "groups"):
            assert np.array_equal(getattr(co, name), getattr(twin, name)), (k, name)
    assert events > 0 and kept >= 119  # the engine kept its groups after every step


def test_the_compiled_step_takes_forces_of_any_layout():
    """The engine calls the kernel's compiled code without numba's matching of the argument
    types, so it makes the forces the one type first: lists, ints, float32, strided,
    read-only arrays and scalars give the numbers of the same values as float64 arrays."""
    import copy

    _, co, drive_a, brake, _ = _random_engines(6)
    resist = 500.0 + brake
    ro = resist.copy()
    ro.flags.writeable = False
    f32 = drive_a.astype(np.float32)
    wide = np.repeat(drive_a, 2)[::2]  # strided
    cases = [
        (drive_a.tolist(), resist.tolist(), drive_a, resist),
        (wide, ro, drive_a, resist),
        (f32, resist, f32.astype(np.float64), resist),
        (np.round(drive_a).astype(np.int64), 700, np.round(drive_a), np.full(co.n, 700.0)),
        (0.0, 1e3, np.zeros(co.n), np.full(co.n, 1e3)),
    ]
    for given_d, given_r, d, r in cases:
        twin = copy.deepcopy(co)
        for _ in range(5):
            ea, eb = co.step(0.2, given_d, given_r), twin.step(0.2, d, r)
            _same_events(ea, eb)
            for name in ("x", "v", "a", "gap", "groups"):
                assert np.array_equal(getattr(co, name), getattr(twin, name)), name
    with pytest.raises(EngineError, match="shape"):
        co.step(0.1, drive_a[:-1], resist)


def test_an_impact_at_a_steps_start_splits_a_kept_group():
    """A car closes on a pulled train so that the gap snaps shut at the very end of a step
    (0.5 nm left, no event in it): the next step's first round starts from the last step's
    groups with an impact at its start. The push cannot pass the train's taut coupler, so
    the train's last car leaves its group: the compiled engine must look at that group
    again, as the Python engine does (same events, speeds and groups)."""
    mass = np.array([80e3, 40e3, 40e3, 30e3])
    bodies = Bodies(
        mass,
        np.full(4, 20.0),
        np.zeros(4, np.int64),
        np.array([1, 1, 0, 0], bool),
        np.array([0.1, 0.1, 0, 0]),
    )
    gap = 1.0 + 0.5e-9  # closed at 1 m/s in the 1-s step, within SNAP_GAP of touching
    x = np.array([0.0, -20.1, -40.2, -60.2 - gap])
    py, co = (Engine(bodies, x, np.array([1.0, 1.0, 1.0, 2.0]), compiled=c) for c in (False, True))
    for eng in (py, co):
        assert eng.step(1.0, 0.0, 0.0) == [] and eng.gap[2] == 0.0
        assert np.array_equal(eng.groups, [0, 0, 0, 1])
    for k in range(3):
        drive = [5e3, 0.0, 0.0, 0.0]
        ea, eb = py.step(0.5, drive, 0.0), co.step(0.5, drive, 0.0)
        _same_events(ea, eb)
        if k == 0:
            assert ea[0].kind == "impact" and ea[0].time == 1.0 and ea[0].cars == (2, 3)
        for name in ("x", "v", "a", "gap", "groups"):
            assert np.array_equal(getattr(py, name), getattr(co, name)), (k, name)


def test_a_run_whose_momenta_cancel_is_the_reference():
    """Two halves of a train running apart at +u and -u (mirrored masses) on the taut
    coupler between them: the impulse's run has momenta that cancel (sum f = 0), and its
    tolerance is 1e-12 * sum |f| in both engines (the kernel takes it from the first
    solve's sum only when the momenta have one sign); with ``rest_speed`` 0 a tolerance
    of the signed sum splits the halves at their rounding noise."""
    rng = np.random.default_rng(9)
    for _ in range(300):
        h = int(rng.integers(5, 40))
        wh = rng.uniform(2e4, 9e4, h)
        mass = np.concatenate((wh, wh[::-1]))
        n = 2 * h
        length = np.full(n, 15.0)
        slack = np.full(n, 0.05)
        coupled = np.ones(n, bool)
        coupled[-1] = False
        gap = np.zeros(n)
        gap[h - 1] = slack[h - 1]  # (taut; the others' buffers touch)
        x = np.concatenate(([0.0], -np.cumsum(length[:-1] + gap[:-1])))
        u = float(rng.uniform(0.1, 3.0))
        v = np.concatenate((np.full(h, u), np.full(h, -u)))
        bodies = Bodies(mass, length, np.zeros(n, np.int64), coupled, slack)
        py, co = (Engine(bodies, x, v, rest_speed=0.0, compiled=c) for c in (False, True))
        _same_events(py.step(0.1, np.zeros(n), 0.0), co.step(0.1, np.zeros(n), 0.0))
        for name in ("x", "v", "a", "gap", "groups"):
            assert np.array_equal(getattr(py, name), getattr(co, name)), name
