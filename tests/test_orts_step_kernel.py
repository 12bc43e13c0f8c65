"""Each train's Open Rails forces in one compiled call (issue 32; docs/physics.md §7.9):
``_orts_step_kernel.train_step`` through ``OrtsTrainForces.step_fused`` against the
numpy/Python reference (``OrtsTrainForces.forces``, numba not used), bit for bit, on
trains of several kinds in one replay step: Class 66 diesels (one derated) with hoppers,
electric units with trailers, and a train the kernels do not cover (a diesel with a
``ThrottleRPMTab`` and force curves, an electric with a dynamic brake: the reference
runs it); through speed targets (with and without the brakes needed to hold them),
throttles, the dynamic brake, a deceleration demand, service and emergency
applications and releases, on a line whose grade changes under the trains."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_DL66

from tdbtools.formats.stock import read_stock
from tdbtools.formats.stock_orts import TractionRamps
from tdbtools.physics.driver import Controls
from tdbtools.physics.kernels import compiled_available
from tdbtools.physics.orts.replay_forces import OrtsTrainForces
from tdbtools.physics.stages.forces import car_types

DATA = Path(__file__).parent / "data" / "orts_stock"
needs_numba = pytest.mark.skipif(not compiled_available(), reason="numba is not available")


def _bits(a) -> np.ndarray:  # noqa: ANN001
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).view(np.uint64)


def _trains() -> list[list]:
    dl66 = read_stock(SAMPLE_DL66)
    # (with ramps: the units' state then carries over from step to step)
    ramps = TractionRamps(force_up=4e4, force_down=3e4, force_to_zero=5e4, power_up=3e5, power_down=4e5)
    assert dl66.orts is not None
    derated = dataclasses.replace(
        dl66, name="derated", max_continuous_force_n=0.6 * (dl66.max_force_n or 3e5),
        orts=dataclasses.replace(dl66.orts, ramps=ramps),
    )  # fmt: skip
    emu = read_stock(DATA / "emu" / "EMU_M.eng")
    assert emu.orts is not None
    electric = dataclasses.replace(
        emu, tractive_force_curve=None, orts=dataclasses.replace(emu.orts, ramps=TractionRamps(force_up=2e4))
    )
    hopper = read_stock(DATA / "wagons" / "HOPPER.wag")
    trailer = read_stock(DATA / "emu" / "EMU_T.wag")
    return [
        [dl66, *[hopper] * 20, dl66, *[hopper] * 9, derated, *[hopper] * 5],
        [electric, *[trailer] * 6, electric],
        [
            read_stock(DATA / "diesel" / "LOCO_CC.eng"),
            read_stock(DATA / "electric" / "EL_LOCO.eng"),
            *[hopper] * 5,
        ],
    ]


def _line(n_pts: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Elevations rising 1 % to 1,500 m, then falling 2 % (the grade changes under the
    first train); curvature pieces every 100 m."""
    S = np.linspace(-50.0, 6000.0, n_pts)
    Y = np.where(S < 1500.0, 0.01 * S, 15.0 - 0.02 * (S - 1500.0))
    P1 = np.arange(0.0, 6001.0, 100.0)
    PC = np.where(np.arange(P1.size) % 3 == 0, 0.0, 1.0 / (300.0 + 10.0 * np.arange(P1.size)))
    from tdbtools.physics import _step_kernel as K

    return K.line_table(S, Y), np.array([P1, PC])


def _phases(k: int) -> list[tuple[Controls, int]]:
    """Train ``k``'s controls: each train its own order of them."""
    p = [
        (Controls(speed_target=25.0), 300),  # (downhill: the brakes to hold it, then traction)
        (Controls(throttle=0.7), 120),
        (Controls(dynamic=0.8), 60),
        (Controls(deceleration=0.4), 80),
        (Controls(speed_target=8.0), 120),
        (Controls(brake=0.6), 100),
        (Controls(speed_target=12.0, emergency=True), 40),
        (Controls(), 150),
        (Controls(speed_target=6.0), 100),
    ]
    return p[k:] + p[:k]


def _drive(
    phases: list | None = None, speed: list | None = None, keep: list | None = None
) -> tuple[list, list, dict]:
    """Both codes on the same steps: per step the fused call's outputs and the
    reference's, and how often the fused trains fell back to the reference. ``phases``:
    per train its (controls, steps) (default :func:`_phases`); ``speed``: the trains'
    speeds at the start; ``keep``: the fused side's forces appended to it."""
    from tdbtools.physics import _step_kernel as K

    trains = _trains()
    sizes = [len(t) for t in trains]
    n = sum(sizes)
    start = np.cumsum([0, *sizes[:-1]])
    bounds = np.append(start, n).astype(np.int64)
    mass = np.array([s.mass_kg for t in trains for s in t], dtype=np.float64)
    inertia = [float(mass[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:])]
    fused = OrtsTrainForces(trains, start, inertia, compiled=True)
    if keep is not None:
        keep.append(fused)
    ref = OrtsTrainForces(trains, start, inertia, compiled=False)
    lines, pieces = _line()
    cars = np.zeros((K.N_CAR_ROWS, n))
    cars[K.C_LINE_LEN], cars[K.C_LEN_TOL], cars[K.C_HALF], cars[K.C_SPACING] = 6000.0, 6000.1, 10.0, 10.0
    cars[K.C_FRONT_BOGIE] = 5.0
    cars[K.C_NEG_MG], cars[K.C_MG_CURVE] = -mass * 9.80665, mass * 9.80665 * 0.4
    cars[K.C_DA], cars[K.C_DB], cars[K.C_DC] = mass * 0.008, 20.0, 3.0
    cars[K.C_F0], cars[K.C_VM], cars[K.C_SLOPE] = mass * 0.03, 1.0, -mass * 0.02
    ctab, ctype = car_types(cars)
    consts = np.array([1.0, 0.0, 0.0, 1.15, 0.05])
    rows, work = np.full(3 * n, -1, dtype=np.int64), np.empty(4 * n)
    front = [2500.0, 1000.0, 400.0]
    speed = [12.0, 0.0, 3.0] if speed is None else list(speed)
    phases = [_phases(k) for k in range(len(trains))] if phases is None else phases
    steps = sum(c for _, c in phases[0])
    fell_back = {k: 0 for k in range(len(trains))}
    real_train = fused._train

    def counted(k, *a):  # noqa: ANN001, ANN002, ANN202
        fell_back[k] += 1
        return real_train(k, *a)

    fused._train = counted
    got, want = [], []
    sums = np.empty((2, len(trains)))
    for i in range(steps):
        ctl = []
        for k in range(len(trains)):
            j, left = 0, i
            while left >= phases[k][j][1]:
                left -= phases[k][j][1]
                j += 1
            ctl.append(phases[k][j][0])
        x = np.concatenate([f - 20.0 * np.arange(s) for f, s in zip(front, sizes)])
        v = np.concatenate([np.full(s, sp) + np.linspace(0.0, 1e-3, s) for sp, s in zip(speed, sizes)])
        x.flags.writeable = v.flags.writeable = False
        fbrb = np.stack([x - 5.0, x - 15.0], axis=1)
        out = np.empty((K.N_OUT_ROWS, n))
        scale, applied = fused.step_fused(
            ctl, v, 0.1, out, sums, (x, fbrb, ctab, ctype, consts, lines, pieces, rows, work, bounds)
        )
        grav, resist = out[K.F_GRAV].copy(), out[K.F_RESIST].copy()
        trac, brk, scale_r, applied_r = ref.forces(ctl, v, grav, resist, 0.1)
        got.append([out[K.F_TRAC], out[K.F_BRAKE], out[K.F_DRIVE], out[K.F_OPPOSED], scale, applied])
        got[-1] += [fused.brake_decel, fused.held]
        want.append([trac, brk, trac + grav, resist + brk, scale_r, applied_r, ref.brake_decel, ref.held])
        got[-1] = [np.array(a, dtype=np.float64) for a in got[-1]]
        want[-1] = [np.array(a, dtype=np.float64) for a in want[-1]]
        for k in range(len(trains)):
            a, b = bounds[k], bounds[k + 1]
            net = float(trac[a:b].sum() - brk[a:b].sum() + grav[a:b].sum() - resist[a:b].sum())
            speed[k] = min(max(speed[k] + 0.1 * net / inertia[k], 0.0), 40.0)
            front[k] += 0.1 * speed[k]
    assert [f is not None for f in fused.fused] == [True, True, False]
    return got, want, fell_back


@needs_numba
def test_one_call_per_train_is_the_reference():
    got, want, fell_back = _drive()
    _same(got, want)
    # the fused trains ran the reference in the steps that needed their brakes (the
    # deceleration demand, holding a speed target downhill), and only then
    assert 80 <= fell_back[0] < 600 and 80 <= fell_back[1] < 600
    assert fell_back[2] == len(got)
    # (the traction, the brakes applying and releasing and the sums all moved)
    tr = np.array([g[0].sum() for g in got])
    br = np.array([g[5][:2] for g in got])
    assert tr.max() > 1e5 and br.max() > 0.3 and br[-1].max() < br.max()


def _same(got: list, want: list) -> None:
    names = ["trac", "brk", "drive", "opposed", "scale", "applied", "brake_decel", "held"]
    for i, (g, w) in enumerate(zip(got, want)):
        for name, a, b in zip(names, g, w):
            assert np.array_equal(_bits(a), _bits(b)), (i, name)


@needs_numba
def test_the_brakes_to_hold_a_speed_target_at_their_threshold():
    """Speed targets whose brakes to hold them (``hold``: the net force but for traction
    less what reaches the target in the step) are a few newtons either side of zero:
    the fused call hands back exactly the steps the reference brakes in (``hold > 0``),
    and both give the same numbers and held reductions."""
    speed = [12.0, 9.0, 3.0]
    inertia = [float(sum(s.mass_kg for s in t)) for t in _trains()]
    # the trains' net force but for traction and brakes ``other`` (from their
    # deceleration but for traction, (brakes − other)/M)
    _, want, _ = _drive([[(Controls(speed_target=s), 1)] for s in speed], speed)
    ends = np.cumsum([len(t) for t in _trains()])
    brakes = [float(want[0][1][e - len(t) : e].sum()) for e, t in zip(ends, _trains())]
    other = [b - d * m for b, d, m in zip(brakes, want[0][6], inertia)]
    backs = []
    for hold in [-5e3, -50.0, 50.0, 5e3]:
        targets = [s + (o - hold) * 0.1 / m for s, o, m in zip(speed, other, inertia)]
        got, want, fell_back = _drive([[(Controls(speed_target=t), 1)] for t in targets], speed)
        _same(got, want)
        backs.append(fell_back[0] + fell_back[1])
    assert backs == [0, 0, 2, 2], backs


SPECIAL = [0.0, -0.0, 1e-300, -1e-300, 1e300, -1e300, 1e16, 1.0, -1.0, 0.1, math.inf]


@needs_numba
@pytest.mark.parametrize("neumaier", [False, True])
def test_py_sum_is_pythons_sum(neumaier):
    """``py_sum``: the running Python's ``sum()`` of floats (Python 3.12 on: compensated),
    bit for bit, and the other Python's rule against its plain-Python model."""
    from tdbtools.physics._orts_step_kernel import py_sum

    def model(xs: list[float]) -> float:
        if not xs:
            return 0.0
        s, c = 0.0 + xs[0], 0.0
        for x in xs[1:]:
            if neumaier:
                t = s + x
                c += ((s - t) + x) if abs(s) >= abs(x) else ((x - t) + s)
                s = t
            else:
                s += x
        if neumaier and c != 0.0 and math.isfinite(c):
            s += c
        return s

    rng = np.random.default_rng(5)
    for trial in range(400):
        m = int(rng.integers(0, 45))
        a = rng.normal(0.0, 1.0, m) * 10.0 ** rng.integers(-20, 20, m)
        if trial % 3 == 0 and m:
            a[rng.integers(0, m, 3)] = rng.choice(SPECIAL[:-1], 3)
        if trial % 50 == 0 and m:  # (41 equal capacities: the long train's units)
            a[:] = a[0]
        xs = a.tolist()
        ref = sum(xs) if neumaier == (sys.version_info >= (3, 12)) else model(xs)
        buf = np.append(a, 7.0)  # (only the first m count)
        assert _bits([py_sum(buf, m, neumaier)])[0] == _bits([float(ref)])[0], (trial, xs)


@needs_numba
def test_elevations_with_kept_slopes_are_numpys_interp():
    """``_step_kernel._elevations`` (the slopes of ``line_table`` read, not divided)
    against np.interp and the lookup kernel's ``interp``, bit for bit (a zero's sign, a
    NaN): random tables with repeated points and infinite values, points at, between
    and outside the table points, NaN, and rows kept from call to call."""
    from tdbtools.physics import _step_kernel as K
    from tdbtools.physics._lookup_kernel import interp

    rng = np.random.default_rng(33)
    for t in range(120):
        m = int(rng.integers(2, 1500))
        xp = np.sort(rng.normal(size=m) * 1000.0)
        if t % 3 == 0:
            xp = np.sort(np.concatenate([xp, xp[rng.integers(0, m, size=m // 5)]]))
        fp = rng.normal(size=xp.size) * 10.0 ** float(rng.integers(-3, 4))
        if t % 7 == 0:
            fp[rng.integers(0, fp.size, 3)] = np.inf
        if t % 5 == 0:
            fp[rng.integers(0, fp.size, 5)] = -0.0
        table = K.line_table(xp, fp)
        n = int(rng.integers(1, 2000))
        rows = rng.integers(-5, xp.size + 5, size=n).astype(np.int64)
        rows2 = rows.copy()
        x = rng.normal(size=n) * 1200.0
        for _ in range(4):
            x = x + rng.normal(size=n) * 10.0 ** float(rng.integers(-1, 3))
            x[rng.integers(0, n, size=n // 10)] = xp[rng.integers(0, xp.size, size=n // 10)]
            x[rng.integers(0, n, 2)] = np.nan
            x[rng.integers(0, n, 2)] = xp[-1]
            got, ref = np.empty(n), np.empty(n)
            K._elevations(x, table[0], table[1], table[2], got, rows)
            interp(x, xp, fp, fp, ref, ref, rows2, False)
            assert np.array_equal(_bits(got), _bits(ref)), t
            assert np.array_equal(_bits(got), _bits(np.interp(x, xp, fp))), t


@needs_numba
def test_the_state_goes_to_the_reference_and_back():
    """What the reference reads when it runs a step of a fused train: after
    ``to_objects`` its units' state, its brakes' memo and applied share are the fused
    call's; after ``from_objects`` the call's are the objects' again."""
    keep: list = []
    phases = [[(Controls(throttle=0.8), 40), (Controls(brake=0.7), 30)] for _ in range(3)]
    _drive(phases, [5.0, 5.0, 5.0], keep)
    from tdbtools.physics import _orts_step_kernel as K

    for ft in keep[0].fused[:2]:
        memo = ft.tconst[10:16].copy()
        assert memo.any() and ft.q[K.Q_APPLIED] > 0.0
        ft.to_objects()
        assert np.array_equal(_bits(ft.tb._fused[5]), _bits(memo))
        assert _bits([ft.tb.applied])[0] == _bits([ft.q[K.Q_APPLIED]])[0]
        for g, u in enumerate(ft.units):
            row = ft.units_a[g]
            state = [u.average, u.traction, u.prev_speed] + ([u.rpm[0], u.drpm[0]] if u.rpm else [])
            want = [row[K.U_AVERAGE], row[K.U_TRACTION], row[K.U_PREV_SPEED]]
            want += [row[K.U_RPM], row[K.U_DRPM]] if u.rpm else []
            assert np.array_equal(_bits(state), _bits(want)) and any(state)
        before = ft.units_a.copy(), ft.tconst.copy()
        ft.units_a[:, K.U_RPM :] = 0.0
        ft.tconst[10:16] = 0.0
        ft.q[K.Q_APPLIED] = 0.0
        ft.from_objects()
        assert np.array_equal(_bits(ft.units_a), _bits(before[0]))
        assert np.array_equal(_bits(ft.tconst), _bits(before[1]))
