"""The Open Rails profile's per-stock shortcuts in the replay (docs/physics.md §7.9): one
power unit per stock and train, the shoe factors per law, the full-service force asked
twice at one speed. Each against the per-car code it stands for, bit for bit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_DL66

from tdbtools.formats.stock import read_stock
from tdbtools.physics.driver import Controls
from tdbtools.physics.orts.auto_brakes import brake_plan
from tdbtools.physics.orts.brakes import ShoeFactors, shoe_factor
from tdbtools.physics.orts.replay_forces import OrtsTrainForces

DATA = Path(__file__).parent / "data" / "orts_stock"
DL66 = SAMPLE_DL66


@pytest.fixture(scope="module")
def stocks():
    """Air-braked stock of every law the units and shoes have: a diesel with force curves,
    one with a derating, one with a gearbox, the legacy diesel law (the sample's Class 66),
    an electric with a dynamic brake and one without, wagons on the shoe-force path, with a
    friction table and on the default factor."""
    names = {
        "cc": "diesel/LOCO_CC.eng", "dmu": "dmu/DMU_A.eng", "geared": "dmu101/DMU101_DMBS.eng",
        "el": "electric/EL_LOCO.eng", "emu": "emu/EMU_M.eng", "trailer": "emu/EMU_T.wag",
        "coach": "wagons/COACH.wag", "freight": "wagons/FREIGHT.wag", "hopper": "wagons/HOPPER.wag",
    }  # fmt: skip
    out = {k: read_stock(DATA / v) for k, v in names.items()}
    out["dl66"] = read_stock(DL66)
    return out


def _consist(stocks) -> list:  # noqa: ANN001
    """22 cars: engines of one stock several times (the Class 66 thrice, the electric
    four times, the curve diesel twice) between engines and wagons of other stock."""
    order = (
        "el cc coach dl66 freight el hopper geared cc trailer el dl66 coach freight emu "
        "dl66 hopper dmu el coach freight trailer"
    ).split()
    return [stocks[k] for k in order]


def _drive(cars: list, steps: int = 900):
    """Trace of (traction, brakes, throttle, brake share) per step of a train of ``cars``
    through speed targets, a throttle, the dynamic brake, braking to a deceleration, a
    service and an emergency application; the speed follows the forces."""
    f = OrtsTrainForces([cars], np.array([0]), [sum(s.mass_kg for s in cars)])
    n = len(cars)
    mass = np.array([s.mass_kg for s in cars])
    resist = 0.002 * 9.80665 * mass
    z = np.zeros(n)
    v = 0.0
    out = []
    for i in range(steps):
        if i < 250:
            c = Controls(speed_target=18.0)
        elif i < 400:
            c = Controls(throttle=0.6)
        elif i < 500:
            c = Controls(dynamic=0.8)
        elif i < 600:
            c = Controls(deceleration=0.3)
        elif i < 750:
            c = Controls(speed_target=12.0)
        elif i < 850:
            c = Controls(brake=0.5)
        else:
            c = Controls(emergency=True)
        vv = np.full(n, v)
        trac, brk, scale, applied = f.forces([c], vv, z, resist, 0.1)
        out.append((trac.copy(), brk.copy(), scale.copy(), applied.copy()))
        a = (float(trac.sum()) - float(brk.sum()) - float(resist.sum())) / float(mass.sum())
        v = max(v + 0.1 * a, 0.0)
    return f, out


def test_one_unit_per_stock_gives_each_engine_its_own_numbers(stocks):
    """The train's engines of one stock share one unit; the same train with every car a
    distinct (equal) stock object steps one unit per engine, as the per-car code did:
    traction, brakes with the dynamic brake, throttle and brake share are the same bits
    at every step."""
    cars = _consist(stocks)
    alone = [dataclasses.replace(s) for s in cars]  # equal stock, one object per car
    grouped, g_trace = _drive(cars)
    single, s_trace = _drive(alone)
    assert len(grouped.groups[0]) == 6 and len(single.groups[0]) == len(single.units[0]) == 12
    # (the engines of one stock are one unit)
    assert (
        grouped.units[0][0][1] is grouped.units[0][3][1] and grouped.units[0][1][1] is grouped.units[0][5][1]
    )
    moved = dyn = False
    for step, (a, b) in enumerate(zip(g_trace, s_trace)):
        for x, y, what in zip(a, b, ("traction", "brake", "throttle", "applied")):
            assert np.array_equal(x.view(np.uint64), y.view(np.uint64)), (step, what)
        moved |= bool(a[0].max() > 1e4)
        dyn |= 400 <= step < 500 and bool(a[1][0] > a[1][2])
    assert moved and dyn  # the engines pulled, the electrics' dynamic brake acted
    # every engine of a stock pulled as much as the others of it, the wagons nothing
    trac = np.array([t[0] for t in g_trace])
    rows = [i for i, s in enumerate(cars) if s is stocks["el"]]
    assert len(rows) == 4 and all(np.array_equal(trac[:, rows[0]], trac[:, r]) for r in rows)
    assert not trac[:, [i for i, s in enumerate(cars) if s.kind == "wagon"]].any()


def test_shoe_factors_per_law_are_the_per_stock_numbers(stocks):
    """ShoeFactors calls each law once over all its cars; per stock (the code it replaced)
    gives the same bits, also at ±0, negative and NaN speeds; a train of one law alone."""
    rng = np.random.default_rng(5)
    for cars in (_consist(stocks), [stocks["hopper"], stocks["trailer"], stocks["el"]] * 5):
        sf = ShoeFactors(cars)
        for _ in range(20):
            v = rng.uniform(-40.0, 40.0, len(cars))
            v[rng.random(len(cars)) < 0.2] = rng.choice([0.0, -0.0, np.nan, 1e-9])
            ref = np.empty(len(cars))
            for s, rows in sf.groups:
                ref[rows] = shoe_factor(s, np.abs(v[rows]))
            assert np.array_equal(sf(v).view(np.uint64), ref.view(np.uint64))
    assert len(ShoeFactors([stocks["hopper"], stocks["trailer"]] * 3).laws) == 1


def test_full_force_asked_again_at_one_speed(stocks):
    """BrakePlan.full_force keeps its last answer for the same speed: every answer is the
    one a fresh plan gives, whatever was asked before."""
    plan = brake_plan(_consist(stocks))
    for v in (3.0, 3.0, -3.0, 7.5, 3.0, 0.0, -0.0, 0.0, 25.0, 25.0, 7.5):
        fresh = dataclasses.replace(plan)  # (no answer kept)
        assert plan.full_force(v) == fresh.full_force(v)
    assert plan.full_force(0.0) > plan.full_force(25.0) > 0.0


def test_apparent_throttle_is_the_engines_mean(stocks):
    """A unit with two prime movers at different RPM: its apparent throttle is their
    plain mean (numpy's), one engine's is its own."""
    from tdbtools.physics.orts import diesel
    from tdbtools.physics.orts.unit import PowerUnit

    s = stocks["dmu"]
    (e,) = s.orts.diesel_engines
    two = dataclasses.replace(s, orts=dataclasses.replace(s.orts, diesel_engines=(e, e)))
    u = PowerUnit(two)
    u.rpm = [e.idle_rpm + 100.0, e.idle_rpm + 700.0]
    a, b = (diesel.apparent_throttle(x, r) for x, r in zip(u.engines, u.rpm))
    assert a != b and u.apparent() == float(np.mean([a, b]))
    one = PowerUnit(s)
    one.rpm = [e.idle_rpm + 100.0]
    assert one.apparent() == a


def test_stock_looked_up_once_per_file_and_kind(tmp_path):
    """resolve_stock looks each distinct (kind, folder, file) up once: an engine and a
    wagon of one name in one folder stay apart, repeated cars share one Stock object."""
    import shutil

    from tdbtools.formats.consist import read_consist, resolve_stock

    folder = tmp_path / "TRAINS" / "TRAINSET" / "MU"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "dmu" / "DMU_A.eng", folder / "UNIT.eng")
    shutil.copy(DATA / "wagons" / "COACH.wag", folder / "unit.WAG")  # (any case)
    car = "\t\t{kind} (\n\t\t\tUiD ( {k} )\n\t\t\t{kind}Data ( UNIT MU )\n\t\t)\n"
    kinds = ["Engine", "Wagon", "Wagon", "Engine", "Wagon"]
    con = tmp_path / "mu.con"
    con.write_text(
        'SIMISA@@@@@@@@@@JINX0D0t______\n\nTrain (\n\tTrainCfg ( "mu"\n\t\tName ( "mu" )\n\t\tSerial ( 1 )\n'
        + "".join(car.format(kind=kd, k=k) for k, kd in enumerate(kinds))
        + "\t)\n)\n",
        encoding="ascii",
    )
    out = resolve_stock(read_consist(con), tmp_path)
    assert [s.kind for s in out] == ["engine", "wagon", "wagon", "engine", "wagon"]
    assert out[0] is out[3] and out[1] is out[2] is out[4] and out[0] is not out[1]
