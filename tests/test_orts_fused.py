"""The Open Rails profile's brakes fused for a long train (issue 32; docs/physics.md §7.9):
the per-car brake forces in one compiled pass (``_orts_kernel.brake_forces``), the settled
pipe's shortcut inside the compiled pipe step, the shoe factor of one speed in Python
floats (``shoe_factor_of``, what ``BrakePlan.full_force`` asks once a step). Each against
the numpy code it stands for, bit for bit (the sign of a zero, a NaN)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_DL66

from tdbtools.formats.stock import read_stock
from tdbtools.formats.stock_parts import BRAKE_SHOE_FACTOR_MAX, BRAKE_SHOE_FACTOR_MIN
from tdbtools.physics.kernels import compiled_available
from tdbtools.physics.orts.airbrake import AirBrakeTrain, Handle
from tdbtools.physics.orts.auto_brakes import brake_plan
from tdbtools.physics.orts.brakes import (
    DEFAULT_SHOE_NORMALISER,
    ShoeFactors,
    cylinder_fraction,
    shoe_factor,
    shoe_factor_of,
)
from tdbtools.physics.orts.replay_forces import OrtsTrainForces

DATA = Path(__file__).parent / "data" / "orts_stock"
DL66 = SAMPLE_DL66
DYNAMIC = DATA / "electric" / "EL_LOCO.eng"  # (a dynamic brake)
needs_numba = pytest.mark.skipif(not compiled_available(), reason="numba is not available")


def _bits(a) -> np.ndarray:  # noqa: ANN001
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).view(np.uint64)


@pytest.fixture(scope="module")
def laws():
    """A stock of each shoe law: the default curve as a factor (HOPPER), as μ on the
    shoe-force path (COACH), a friction table (FREIGHT)."""
    return {
        "factor": read_stock(DATA / "wagons" / "HOPPER.wag"),
        "mu": read_stock(DATA / "wagons" / "COACH.wag"),
        "table": read_stock(DATA / "wagons" / "FREIGHT.wag"),
    }


SPECIAL = [0.0, -0.0, np.nan, 1e-300, -1e-9, 1e300, -np.inf, np.inf, 4.861, 11.4, -11.4]


def _speeds(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.uniform(-60.0, 60.0, n)
    pick = rng.random(n) < 0.15
    v[pick] = rng.choice(SPECIAL, int(pick.sum()))
    return v


def test_the_laws_are_what_the_tests_say(laws):
    assert ShoeFactors([laws["factor"]] * 3).default_law == "factor"
    assert ShoeFactors([laws["mu"]] * 3).default_law == "mu"
    assert ShoeFactors([laws["table"]] * 3).default_law is None
    assert ShoeFactors([laws["factor"], laws["mu"]]).default_law is None


def test_shoe_factor_of_one_speed_is_numpys(laws):
    """shoe_factor_of (Python floats) against shoe_factor (numpy) for every law, at
    random and special speeds: the same bits; a factor stays within its clamp."""
    rng = np.random.default_rng(32)
    for law, s in laws.items():
        # (a friction table's own interpolation warns beyond finite speeds: not ours)
        special = [x for x in SPECIAL if law != "table" or np.isfinite(x)]
        for v in [*special, *rng.uniform(-80.0, 80.0, 300).tolist()]:
            got = shoe_factor_of(s, v)
            ref = float(shoe_factor(s, abs(v)))
            assert type(got) is float and _bits(got) == _bits(ref), (s.name, v)
    got = [shoe_factor_of(laws["factor"], v) for v in np.linspace(0.0, 80.0, 81)]
    assert min(got) >= BRAKE_SHOE_FACTOR_MIN and max(got) <= BRAKE_SHOE_FACTOR_MAX and max(got) == 1.0


def test_full_force_is_the_per_car_sum(laws):
    """BrakePlan.full_force (one factor per law, Python floats) against the sum over the
    cars of capacity × each car's numpy shoe factor, for one-law trains (of one stock, and
    of engines and wagons whose capacities differ, so that Σ(c·f) is not Σc·f) and a
    mixed one; the numpy sum and, with numba, the compiled one (``scaled_sum``)."""
    dl66 = read_stock(DL66)
    trains = (
        [laws["factor"]] * 7,
        [dl66, *[laws["factor"]] * 20, dl66, laws["factor"]],
        [laws["factor"], laws["mu"], laws["table"], laws["mu"]] * 3,
    )
    assert len(brake_plan(trains[1]).shoe_factors.laws) == 1  # (one law, capacities differ)
    for cars in trains:
        for compiled in (False, True) if compiled_available() else (False,):
            plan = brake_plan(cars, compiled=compiled)
            assert plan.compiled == compiled
            for v in (0.0, -0.0, 0.3, 3.0, -7.5, 11.4, 25.0, 60.0):
                fresh = dataclasses.replace(plan)
                f = np.array([float(shoe_factor(s, abs(v))) for s in cars])
                ref = plan.full_fraction * float(np.sum(plan.capacity * f))
                assert _bits(fresh.full_force(v)) == _bits(ref), (len(cars), v, compiled)


@needs_numba
@pytest.mark.parametrize("law", ["factor", "mu"])
def test_compiled_brake_forces_are_numpys(law):
    """_orts_kernel.brake_forces against ShoeFactors × cylinder_fraction × capacity, car by
    car, bit for bit: random speeds and cylinders with ±0, NaN and infinities, cylinders
    below the spring, at and above the maximum."""
    from tdbtools.physics._orts_kernel import LAW_FACTOR, LAW_MU, brake_forces

    rng = np.random.default_rng(7 if law == "factor" else 8)
    n = 3000
    for _ in range(20):
        v = _speeds(rng, n)
        max_cyl = rng.uniform(30.0, 80.0, n)
        spring = np.where(rng.random(n) < 0.5, 0.0, rng.uniform(0.0, 10.0, n))
        cyl = rng.uniform(-5.0, 90.0, n)
        pick = rng.random(n) < 0.1
        cyl[pick] = rng.choice([0.0, -0.0, np.nan, np.inf], int(pick.sum()))
        at = rng.random(n) < 0.05
        cyl[at] = np.where(rng.random(int(at.sum())) < 0.5, spring[at], max_cyl[at])
        capacity = rng.uniform(0.0, 2e5, n)
        mu = 7.6 / (np.abs(np.abs(v)) * 3.6 + 17.5) + 0.07
        shoe = mu if law == "mu" else np.clip(mu / DEFAULT_SHOE_NORMALISER, BRAKE_SHOE_FACTOR_MIN, 1.0)
        frac_ref = cylinder_fraction(cyl, max_cyl, spring)
        force_ref = capacity * frac_ref * shoe
        force, frac = np.empty(n), np.empty(n)
        brake_forces(
            v, cyl, max_cyl, spring, capacity, LAW_MU if law == "mu" else LAW_FACTOR,
            DEFAULT_SHOE_NORMALISER, BRAKE_SHOE_FACTOR_MIN, BRAKE_SHOE_FACTOR_MAX, force, frac,
        )  # fmt: skip
        assert np.array_equal(_bits(frac), _bits(frac_ref))
        assert np.array_equal(_bits(force), _bits(force_ref))


@needs_numba
def test_compiled_settled_pipe_is_pythons():
    """The compiled pipe step's shortcut for a pipe at its target (within SETTLED_PSI) against
    the Python check: a settled pipe, one just outside, one with a NaN (never settled), a
    lap (no target): the same pressures bit for bit."""
    from tdbtools.physics.orts.airbrake import SETTLED_PSI

    def train(compiled: bool) -> AirBrakeTrain:
        lengths = [14.0 + (i % 4) for i in range(30)]
        t = AirBrakeTrain(lengths, app_rate=0.9, rel_rate=1.86, aux_rate=1.684, ratio=2.5)
        t.compiled = compiled
        return t

    for offset in (0.0, 0.5 * SETTLED_PSI, SETTLED_PSI, 2.0 * SETTLED_PSI, 1e-3, np.nan):
        for handle in (Handle("release"), Handle("service", 10.0), Handle("lap")):
            a, b = train(True), train(False)
            target = handle.target(a.max_psi, a.full_service_drop)
            base = a.max_psi if target is None else target
            for t in (a, b):
                t.bp[:] = base
                t.bp[7] = base + offset
                t.bp[20] = base - 0.25 * offset
            a.step_pipe(handle, 0.1)
            b.step_pipe(handle, 0.1)
            assert np.array_equal(_bits(a.bp), _bits(b.bp)), (offset, handle)


@needs_numba
@pytest.mark.parametrize("kind", ["factor", "mu", "mixed", "long", "engines"])
def test_train_brakes_compiled_and_numpy_alike(laws, kind):
    """A train driven through braking, a lap, a release, a deceleration demand, an
    emergency and a speed target: its brake forces, traction, brake share and the
    deceleration the driver reads (brakes, resistance, grade), the compiled forces
    against numpy's, the same bits every step. Compiled: one call for the pipe, valves,
    forces, mean and sum (``_orts_kernel.train_brakes``) when every car is on a default
    shoe curve ("factor", "mu", "long": 137 cars, so the pairwise sums are split as
    numpy splits them), else the separate kernels ("mixed": a friction table);
    "engines": the sample's Class 66 (a compiled power unit) and an electric with a
    dynamic brake (Python; its force added to the brakes) ahead of 40 hoppers."""
    hopper, coach, table = laws["factor"], laws["mu"], laws["table"]
    cars = {
        "factor": [hopper] * 40, "mu": [coach] * 40, "mixed": [hopper, coach, table] * 13,
        "long": [hopper] * 137, "engines": [read_stock(DL66), read_stock(DYNAMIC)] + [hopper] * 40,
    }[kind]  # fmt: skip
    mass = float(sum(s.mass_kg for s in cars))
    fused = []

    def run(compiled: bool) -> list:
        from tdbtools.physics.driver import Controls

        f = OrtsTrainForces([cars], np.array([0]), [mass], compiled=compiled)
        tb = f.brakes[0]
        fused.append(tb)
        n = len(cars)
        rng = np.random.default_rng(2)
        grav = rng.normal(0.0, 300.0, n)
        resist = np.full(n, 50.0) + rng.random(n)
        out, v = [], 20.0
        # (the phases' steps; shorter for the long train, whose numpy pipe is slow)
        ends = np.cumsum([150, 100, 150, 100, 200]) // (3 if kind == "long" else 1)
        for i in range(int(ends[-1])):
            c = (
                Controls(brake=0.6) if i < ends[0] else Controls(dynamic=0.7) if i < ends[1]
                else Controls(deceleration=0.4) if i < ends[2] else Controls(emergency=True) if i < ends[3]
                else Controls(speed_target=v + 0.3)
            )  # fmt: skip
            vv = np.full(n, v) + np.linspace(0.0, 1e-3, n)  # (the cars' speeds differ a little)
            trac, brk, scale, applied = f.forces([c], vv, grav, resist, 0.1)
            out.append((brk.copy(), applied.copy(), trac.copy(), scale.copy(), [f.brake_decel_of(0)]))
            v = max(v + 0.1 * float(trac.sum() - brk.sum()) / mass, 0.0)
        return out

    a, b = run(True), run(False)
    # (the compiled run took the one-call step where it can, the numpy run did not)
    assert (fused[0]._fused is not None) == (kind != "mixed") and fused[1]._fused is None
    assert any(x[0].max() > 0 for x in b) and max(x[1][0] for x in b) > 0.2  # it braked
    if kind == "engines":
        assert max(x[2].max() for x in b) > 0  # it pulled
    for step, (x, y) in enumerate(zip(a, b)):
        for p, q in zip(x, y):
            assert np.array_equal(_bits(p), _bits(q)), step


@needs_numba
def test_compiled_sums_are_numpys():
    """``scaled_sum`` (the brake plan's full force) is ``np.add.reduce(a * f)`` and
    ``two_sums`` two ``np.add.reduce`` of slices, bit for bit."""
    from tdbtools.physics._orts_kernel import scaled_sum, two_sums

    rng = np.random.default_rng(5)
    for n in [1, 2, 7, 8, 9, 127, 128, 129, 300, 1000, 1001, 4099]:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
        for f in (0.0, -0.0, 1.0, 0.3137, -2.5, 1e-300):
            assert np.array_equal(_bits([scaled_sum(a, f)]), _bits([np.add.reduce(a * f)])), (n, f)
        x, y = rng.standard_normal(n + 5), rng.standard_normal(n + 5)
        got = two_sums(x, y, 3, n + 3)
        assert np.array_equal(_bits(got), _bits([np.add.reduce(x[3 : n + 3]), np.add.reduce(y[3 : n + 3])]))


def _slack_run(quiet: float) -> tuple[list, int]:
    """A 60-car train whose couplers run in and out at many speeds (drive changing at both
    ends of its halves, random resistance), compiled; its events and count."""
    from tdbtools.physics.engine import Bodies, Engine

    n = 60
    eng = Engine(Bodies.trains([[80e3] * n], [[20.0] * n]), -20.0 * np.arange(n), np.zeros(n), compiled=True)
    eng.quiet_contact_speed = quiet
    rng = np.random.default_rng(3)
    out = []
    for i in range(600):
        drive = np.zeros(n)
        phase = (i // 40) % 4
        drive[0] = (3e5, 0.0, -3e5, 0.0)[phase] * (1.0 + 0.5 * np.sin(i))
        drive[n // 2] = (0.0, 2e5, 0.0, -2e5)[phase]
        out += eng.step(0.1, drive, np.full(n, 300.0 + 50.0 * rng.random()))
    return out, eng.event_count


@needs_numba
def test_quiet_contacts_are_not_made_but_counted():
    """Engine.quiet_contact_speed (set by the replay's watching stage): the compiled step
    makes no records of impacts and taut couplers slower than it, and every other event
    as it was (stops and starts whatever their speed, contacts at or above it, NaN speeds);
    the count is of all of them. The watching stage's own filter (MIN_EVENT_SPEED) drops
    exactly those, so a replay's events are the same."""
    from tdbtools.physics.stages.watching import MIN_EVENT_SPEED

    every, n_every = _slack_run(0.0)
    quiet, n_quiet = _slack_run(MIN_EVENT_SPEED)
    kept = [
        e for e in every
        if not (e.kind in ("coupler_taut", "impact") and abs(float(e.relative_speed)) < MIN_EVENT_SPEED)
    ]  # fmt: skip
    assert n_every == n_quiet == len(every) and len(kept) < len(every)
    assert {e.kind for e in quiet} == {"impact", "coupler_taut", "stopped", "started"}
    assert quiet == kept


def test_unit_limits_ask_each_force_once():
    """PowerUnit._limits hands back the available force at the effective throttle and at
    its limit, asked once each (once when equal): each is what ``available`` gives there,
    and the capacity is the smaller of the force at the limit and the cap, for diesels
    (power-limited or not, engines at any RPM), an electric and a steam engine."""
    from tdbtools.physics.orts import traction
    from tdbtools.physics.orts.unit import PowerUnit

    names = ("diesel/LOCO_CC.eng", "dmu/DMU_A.eng", "electric/EL_LOCO.eng", "steam/STEAM.eng")
    stocks = [read_stock(DATA / n) for n in names]
    stocks.append(read_stock(SAMPLE_DL66))
    rng = np.random.default_rng(11)
    unequal = equal = 0
    for s in stocks:
        u = PowerUnit(s)
        for _ in range(60):
            u.rpm = [rng.uniform(e.idle_rpm, e.max_rpm) for e in u.engines]
            v = float(rng.choice([0.0, rng.uniform(0.0, 40.0)]))
            throttle = float(rng.choice([0.0, 1.0, rng.uniform(0.0, 1.0)]))
            t, limit, cap, target, at_limit = u._limits(throttle, v)
            app = u.apparent()
            assert t == traction.effective_throttle(throttle, app, u.power_limited)
            assert target == u.available(t, v) and at_limit == u.available(limit, v)
            unequal += t != limit
            equal += t == limit
            if not u.geared and limit > 0:
                assert u.capacity(v) == min(min(u.available(limit, v), cap), float(_adhesion(u, v)))
    assert unequal > 20 and equal > 20


def _adhesion(u, v):  # noqa: ANN001, ANN202
    from tdbtools.physics.orts.adhesion import adhesion_limit

    return adhesion_limit(u.drive_mass, v)


def test_adhesion_limit_of_one_speed_is_numpys():
    """adhesion_limit_of (Python floats, what a power unit asks twice a step) against
    adhesion_limit (numpy) at random and special speeds, masses and both weathers."""
    from tdbtools.physics.orts.adhesion import adhesion_limit, adhesion_limit_of

    rng = np.random.default_rng(12)
    for v in [*SPECIAL, *rng.uniform(-80.0, 80.0, 300).tolist()]:
        for mass in (126000.0, 80000, float(rng.uniform(1e4, 2e5))):
            for weather in ("dry", "wet"):
                got = adhesion_limit_of(mass, v, weather)
                ref = float(adhesion_limit(mass, v, weather))
                assert type(got) is float and _bits(got) == _bits(ref), (v, mass, weather)


@needs_numba
def test_compiled_sum_is_numpys_reduce():
    """``_orts_kernel.np_sum`` (the fused brakes' mean) is ``np.add.reduce`` of a slice bit
    for bit: numpy's pairwise blocks and halving at every length around their edges
    (8, 128, the splits above), a sum of −0.0s (+0.0), NaN and infinities, huge and tiny
    terms; an offset start."""
    from tdbtools.physics._orts_kernel import np_sum

    rng = np.random.default_rng(11)
    sizes = [*range(0, 300), 383, 384, 385, 511, 512, 513, 1000, 1023, 1024, 1025, 4097, 40_001]
    for n in sizes:
        for _ in range(2):
            a = rng.standard_normal(n + 9) * 10.0 ** rng.integers(-12, 12, n + 9)
            lo = int(rng.integers(0, 9))
            pick = rng.random(n + 9) < 0.02
            a[pick] = rng.choice([0.0, -0.0, 1e308, -1e308, 5e-324], int(pick.sum()))
            with np.errstate(over="ignore", invalid="ignore"):  # (±1e308 may overflow)
                want = np.add.reduce(a[lo : lo + n])
            assert np.array_equal(_bits([np_sum(a, lo, lo + n)]), _bits([want])), n
    for special in (np.full(9, -0.0), np.full(3, -0.0), np.array([np.nan, 1.0]), np.array([np.inf, -np.inf])):
        with np.errstate(invalid="ignore"):
            got, want = np_sum(special, 0, special.size), np.add.reduce(special)
        assert np.array_equal(_bits([got]), _bits([want]))
