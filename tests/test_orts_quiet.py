"""The Open Rails profile's step with less work per step for a long train (issue 32;
docs/physics.md §7.9): the brakes' pipe and valves skipped while they are at rest
(``_orts_kernel.train_brakes``' memo, ``step_valves``' change flag), each train's sums of
gravity and resistance made in the per-car forces' call (``_step_kernel.car_forces_sums``),
and the cab controllers asked again only when a handle moved (``replay_forces._Memo``).
Each against the code it skips or stands for, bit for bit."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_DL66

from tdbtools.formats.stock import read_stock
from tdbtools.physics.kernels import compiled_available
from tdbtools.physics.orts.controllers import throttle_value
from tdbtools.physics.orts.replay_forces import OrtsTrainForces, _Memo
from tdbtools.physics.stages.forces import car_types

DATA = Path(__file__).parent / "data" / "orts_stock"
needs_numba = pytest.mark.skipif(not compiled_available(), reason="numba is not available")


def _bits(a) -> np.ndarray:  # noqa: ANN001
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).view(np.uint64)


def _drive(compiled: bool, forget: bool = False) -> tuple[list, int]:
    """A Class 66 and 60 hoppers through a release, a service application held long
    enough for the pipe and valves to come to rest, a second step of the handle, a
    release held until they rest again, an emergency and a release: per step the
    forces, brake shares and the driver's deceleration. ``forget``: the fused kernel's
    memo wiped before every step (it then does all the work each step). Returns the
    steps and in how many the compiled brakes were found at rest (so the next one may
    skip)."""
    from tdbtools.physics.driver import Controls

    cars = [read_stock(SAMPLE_DL66)] + [read_stock(DATA / "wagons" / "HOPPER.wag")] * 60
    mass = float(sum(s.mass_kg for s in cars))
    f = OrtsTrainForces([cars], np.array([0]), [mass], compiled=compiled)
    n = len(cars)
    rng = np.random.default_rng(7)
    grav = rng.normal(0.0, 300.0, n)
    resist = np.full(n, 50.0) + rng.random(n)
    phases = [(Controls(), 50), (Controls(brake=0.3), 900), (Controls(brake=0.5), 600), (Controls(), 1500)]
    phases += [(Controls(emergency=True), 100), (Controls(throttle=0.4), 300)]
    out, rest, v = [], 0, 15.0
    for c, steps in phases:
        for _ in range(steps):
            tb = f.brakes[0]
            if forget and tb._fused is not None:
                tb._fused[5][:] = 0.0
            # (the cars' speeds differ a little; backwards while a service application
            # stands lapped, at rest, so the shoe factor of the rest's forces sees them)
            vv = (np.full(n, v + 3.0) + np.linspace(0.0, 1e-3, n)) * (-1.0 if c.brake > 0 else 1.0)
            trac, brk, scale, applied = f.forces([c], vv, grav, resist, 0.1)
            out.append((brk.copy(), applied.copy(), trac.copy(), scale.copy(), [f.brake_decel_of(0)]))
            if tb._fused is not None:
                rest += int(tb._fused[5][0] != 0.0)
            v = min(max(v + 0.1 * float(trac.sum() - brk.sum()) / mass, 0.0), 30.0)
    return out, rest


@needs_numba
def test_brakes_at_rest_skip_the_pipe_and_valves_with_the_same_numbers():
    """The compiled brakes with the memo, with it wiped every step and numpy's: the same
    bits every step, and the brakes were found at rest in many steps (both while applied
    and lapped, and released)."""
    a, rest = _drive(True)
    b, rest_b = _drive(True, forget=True)
    c, _ = _drive(False)
    assert rest > 500 and rest_b == rest  # (wiped: found at rest, but nothing skipped)
    assert max(x[1][0] for x in c) > 0.2 and any(x[1][0] == 0.0 for x in c)  # braked, released
    for step, (x, y, z) in enumerate(zip(a, b, c)):
        for p, q, r in zip(x, y, z):
            assert np.array_equal(_bits(p), _bits(q)), step
            assert np.array_equal(_bits(p), _bits(r)), step


@needs_numba
@pytest.mark.parametrize("dt", [0.05, math.nan, 0.1])
@pytest.mark.parametrize("service", [True, False])
def test_brakes_at_rest_step_again_for_another_step_length(dt, service):
    """A train's brakes at rest, released or after a lapped application, then one call
    with another step length (NaN too: a released valve then writes a NaN cylinder):
    with the memo as the rest left it and with it wiped, the same bits (the memo's inputs
    include the step length)."""
    from tdbtools.physics.orts.airbrake import RELEASE, Handle

    handle = Handle("service", 8.0) if service else Handle("release")

    cars = [read_stock(DATA / "wagons" / "HOPPER.wag")] * 30
    f = OrtsTrainForces([cars], np.array([0]), [1e6], compiled=True)
    tb = f.brakes[0]
    v = np.full(30, -15.0)  # (backwards, fast enough for a shoe factor under its clip)
    out = np.zeros(30)
    if service:
        for _ in range(600):
            tb.step(handle, 0.1, v, out)
    else:  # valves released after an application, the reservoirs recharged, cylinders empty
        tb.air.state[:] = RELEASE
        for _ in range(3):
            tb.step(handle, 0.1, v, out)
    assert tb._fused is not None and tb._fused[5][0] != 0.0  # at rest
    assert (tb.applied > 0.0) == service
    kept, wiped = copy.deepcopy(tb), copy.deepcopy(tb)
    wiped._fused[5][:] = 0.0
    got = [(t.step(handle, dt, v, o), o) for t, o in ((kept, np.zeros(30)), (wiped, np.zeros(30)))]
    (a, fa), (b, fb) = got
    assert np.array_equal(_bits(list(a)), _bits(list(b))) and np.array_equal(_bits(fa), _bits(fb))
    for x, y in zip((kept.air.bp, kept.air.aux, kept.air.cyl), (wiped.air.bp, wiped.air.aux, wiped.air.cyl)):
        assert np.array_equal(_bits(x), _bits(y))
    if not service and dt != dt:
        assert np.isnan(wiped.air.cyl).all()  # (what the check is about)


@needs_numba
def test_valves_say_whether_they_changed_anything():
    """``step_valves``' flag: True exactly when a value it wrote has other bits than
    before (a zero's sign counts; a NaN is always a change)."""
    from tdbtools.physics import _orts_kernel as K

    rng = np.random.default_rng(3)
    n = 50
    ratio, app, rel, aux_rate = np.full(n, 2.5), np.full(n, 20.0), np.full(n, 15.0), np.full(n, 1.5)
    for case in range(400):
        bp = rng.choice([90.0, 80.0, 64.0, 89.5, 0.0], n)
        aux = np.where(rng.random(n) < 0.7, bp, rng.choice([90.0, 70.0, 0.0], n))
        cyl = rng.choice([0.0, -0.0, 0.0, 10.0, 64.0], n) if case % 2 else np.zeros(n)
        state = rng.choice(np.array([0, 1, 2, 3], dtype=np.int8), n)
        if case % 5 == 0:
            aux[rng.integers(n)] = np.nan
        before = [a.copy() for a in (bp, aux, cyl, state)]
        changed = K.step_valves(bp, aux, cyl, state, ratio, app, rel, aux_rate, 64.0, 0.1)
        same = all(np.array_equal(_bits(x), _bits(y)) for x, y in zip(before[:3], (bp, aux, cyl)))
        same = same and np.array_equal(before[3], state)
        assert changed == (not same), case
        if not changed:  # a fixed point: stepping again changes nothing again
            assert not K.step_valves(bp, aux, cyl, state, ratio, app, rel, aux_rate, 64.0, 0.1)
    # a train at rest but for one valve's state (applying with its reservoir at the pipe:
    # it laps, no pressure moves) or one cylinder's zero sign
    for k, (st, c) in enumerate([(1, 0.0), (0, -0.0), (0, 0.0)]):
        bp, aux, cyl = np.full(n, 70.0), np.full(n, 70.0), np.zeros(n)
        state = np.zeros(n, dtype=np.int8)
        state[7], cyl[7] = st, c
        assert K.step_valves(bp, aux, cyl, state, ratio, app, rel, aux_rate, 64.0, 0.1) == (k < 2), k
        assert not K.step_valves(bp, aux, cyl, state, ratio, app, rel, aux_rate, 64.0, 0.1), k


@needs_numba
def test_car_forces_sums_are_the_per_train_reduce():
    """``car_forces_sums``: the per-car forces of ``car_forces`` and per train
    ``np.add.reduce`` of its gravity and of its resistance, bit for bit (trains of 1, 7,
    8, 129 and 400 cars: numpy's pairwise sum splits from 128 on)."""
    from tdbtools.physics import _step_kernel as K

    sizes = [1, 7, 8, 129, 400]
    n = sum(sizes)
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    rng = np.random.default_rng(11)
    cars = np.abs(rng.normal(1.0, 0.5, (K.N_CAR_ROWS, n))) * 10.0 ** rng.integers(-3, 5, (K.N_CAR_ROWS, n))
    cars[K.C_LINE_LEN] = 5000.0
    cars[K.C_BASE] = 0.0
    x = np.sort(rng.uniform(0.0, 4000.0, n))[::-1].copy()
    v = rng.normal(0.0, 10.0, n)
    fbrb = np.stack([x - 2.0, x - 12.0], axis=1)
    S = np.linspace(-10.0, 5100.0, 700)
    lines = K.line_table(S, rng.normal(0.0, 5.0, S.size))
    pieces = np.array([np.linspace(0.0, 5100.0, 90), rng.normal(0.0, 1e-3, 90)])
    consts = np.array([1.0, 0.0, 0.0, 1.15, 0.05])

    def rows_work():  # noqa: ANN202
        return np.full(3 * n, -1, dtype=np.int64), np.empty(4 * n)

    want = np.empty((4, n))
    ctab, ctype = car_types(cars)
    K.car_forces(x, v, fbrb, ctab, ctype, consts, lines, pieces, *rows_work(), want)
    got, sums = np.empty((4, n)), np.empty((2, len(sizes)))
    K.car_forces_sums(x, v, fbrb, ctab, ctype, consts, lines, pieces, *rows_work(), got, bounds, sums)
    assert np.array_equal(_bits(got), _bits(want))
    for k in range(len(sizes)):
        a, b = bounds[k], bounds[k + 1]
        assert _bits([sums[0, k]])[0] == _bits([np.add.reduce(want[0, a:b])])[0], k
        assert _bits([sums[1, k]])[0] == _bits([np.add.reduce(want[3, a:b])])[0], k


def test_memo_calls_again_unless_the_same_bits():
    """``_Memo``: the same argument's bits give the kept value without a call; another
    value, the other zero or a NaN call again (a controller's law may tell −0.0 from
    0.0: Python's ``max(-0.0, 0.0)`` is −0.0)."""
    calls = []

    def law(x: float) -> float:
        calls.append(x)
        return throttle_value(None, x)

    m = _Memo(law)
    for x in [0.5, 0.5, 0.0, 0.0, -0.0, -0.0, 0.0, math.nan, math.nan, 0.7, 0.7]:
        assert _bits([m(x)])[0] == _bits([throttle_value(None, x)])[0]
    assert len(calls) == 7
    assert math.copysign(1.0, m(-0.0)) == math.copysign(1.0, throttle_value(None, -0.0))


@needs_numba
@pytest.mark.parametrize("law", [0, 1])
def test_released_brakes_forces_are_the_shoe_formulas(law):
    """Released brakes at rest (``train_brakes``' memo RELEASED: every share +0.0, every
    capacity finite without a sign bit) give their forces without the shoe's arithmetic:
    against ``_shares_forces`` (the code it skips) and with the memo wiped, the same bits
    for speeds of both signs, ±0, ±inf and NaNs of other payloads, and the same sum (the
    skipped call's ``np_sum``); a
    share or a capacity that is not such is never RELEASED (a −0.0, negative or infinite
    capacity, a NaN share, a −0.0 share of a cylinder whose range is below its spring
    give other bits)."""
    from tdbtools.physics import _orts_kernel as K

    rng = np.random.default_rng(34)
    n = 257
    for case in range(60):
        cars = np.zeros((K.N_BRAKE_ROWS, n))
        cars[K.B_VOL], cars[K.B_RATIO], cars[K.B_APP_RATE] = 1.0, 2.5, 20.0
        cars[K.B_REL_RATE], cars[K.B_AUX_RATE], cars[K.B_MAX_CYL] = 15.0, 1.5, 64.0
        cars[K.B_CAPACITY] = rng.choice([0.0, 5e4, 7.3e4], n)
        odd = case % 6
        if odd == 1:
            cars[K.B_CAPACITY, rng.integers(n)] = -0.0
        elif odd == 2:
            cars[K.B_CAPACITY, rng.integers(n)] = -3.0
        elif odd == 3:
            cars[K.B_CAPACITY, rng.integers(n)] = np.inf
        elif odd == 5:  # (a cylinder's range below its spring: the share of 0.0 is -0.0)
            cars[K.B_MAX_CYL, rng.integers(n)] = -1.0
        consts = np.zeros(K.N_BRAKE_CONSTS)
        consts[K.P_CHARGING], consts[K.P_TAU], consts[K.P_SERVICE_TAU] = 10.0, 0.0015, 3.0
        consts[K.P_EMERGENCY_TAU], consts[K.P_SETTLED], consts[K.P_FULL_SERVICE_BP] = 1.0, 0.05, 64.0
        consts[K.P_LAW], consts[K.P_NORMALISER] = law, 0.2
        consts[K.P_SHOE_MIN], consts[K.P_SHOE_MAX] = 0.5, 1.4
        bp, aux = np.full(n, 90.0), np.full(n, 90.0)
        cyl = np.zeros(n)
        if odd == 4:
            cyl[rng.integers(n)] = np.nan  # (a NaN share)
        state = np.zeros(n, dtype=np.int8)
        memo, frac, force = np.zeros(K.N_BRAKE_MEMO), np.empty(n), np.empty(n)
        v = rng.choice([0.0, -0.0, 3.0, -12.5, 30.0], n)
        for step in range(3):  # (the first call finds the rest, the next ones skip)
            vv = v.copy()
            if step and case % 2:
                vv[rng.integers(n, size=3)] = [np.nan, np.inf, -np.inf]
                vv[rng.integers(n)] = np.frombuffer(np.uint64(0x7FF8_0000_DEAD_BEEF).tobytes())[0]
            kept = K.train_brakes(
                bp, aux, cyl, state, cars, consts, 90.0, True, False, 0.1, vv, force, frac, memo
            )
            wiped_memo = np.zeros(K.N_BRAKE_MEMO)
            f2 = np.empty(n)
            wiped = K.train_brakes(
                bp.copy(), aux.copy(), cyl.copy(), state.copy(), cars, consts, 90.0, True, False, 0.1, vv, f2,
                np.empty(n), wiped_memo,
            )  # fmt: skip
            ref = np.empty(n)
            K._shares_forces(vv, frac, cars[K.B_CAPACITY], law, 0.2, 0.5, 1.4, ref)
            assert np.array_equal(_bits(force), _bits(f2)) and np.array_equal(_bits(force), _bits(ref)), case
            assert np.array_equal(_bits(list(kept)), _bits(list(wiped))), case
            # (the sum the call it skips made: np_sum, numpy's pairwise order. A sum of NaNs
            # of two payloads keeps the one the CPU's add picks, and LLVM may swap an add's
            # operands differently in two compiled copies of np_sum: only NaN-ness is the
            # promised there)
            total = K.np_sum(ref, 0, n)
            if math.isnan(total):
                assert math.isnan(kept[1]), case
            else:
                assert _bits([kept[1]])[0] == _bits([total])[0], case
        assert (memo[K.M_QUIET] == K.RELEASED) == (odd == 0), case
        assert (memo[K.M_QUIET] != K.BUSY) == (odd != 4), case  # (at rest but with a NaN share)
