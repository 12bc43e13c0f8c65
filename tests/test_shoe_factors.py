"""The brake-shoe factor of a whole train at once (``brakes.ShoeFactors``, used by the Open
Rails replay's brakes and the automatic driver's brake plan) gives each car exactly what
``brakes.shoe_factor`` gives it car by car, on every path of the law: the default curve
(clamped μ/0.2), a friction table (μ(v)/μ(0)), the shoe-force path with the default curve
and with a table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats.stock import read_stock
from tdbtools.physics.orts import brakes
from tdbtools.physics.orts.auto_brakes import brake_plan

DATA = Path(__file__).parent / "data" / "orts_stock"


def _variants():
    dmu = read_stock(DATA / "dmu" / "DMU_A.eng")  # shoe-force path, default curve
    fr = read_stock(DATA / "wagons" / "FREIGHT.wag")  # MaxBrakeForce with a table
    assert brakes.uses_shoe_force(dmu) and dmu.brake_shoe_friction is None
    assert not brakes.uses_shoe_force(fr) and fr.brake_shoe_friction is not None
    plain = replace(dmu, orts=replace(dmu.orts, brake_shoe_type=""))  # default curve / 0.2
    shoe_table = replace(dmu, brake_shoe_friction=fr.brake_shoe_friction)  # shoe force × table μ
    assert not brakes.uses_shoe_force(plain) and plain.brake_shoe_friction is None
    assert brakes.uses_shoe_force(shoe_table) and shoe_table.brake_shoe_friction is not None
    return [dmu, fr, plain, shoe_table]


def _reference(stocks, speeds):
    return np.array([float(brakes.shoe_factor(s, float(abs(v)))) for s, v in zip(stocks, speeds)])


@pytest.mark.parametrize("seed", range(4))
def test_shoe_factors_match_the_per_car_law_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    kinds = _variants()
    # shared stock objects (as a consist's cars share them) and a distinct copy of one
    stocks = [kinds[i] for i in rng.integers(0, len(kinds), 60)] + [replace(kinds[0])]
    speeds = rng.normal(0.0, 20.0, len(stocks))
    speeds[:6] = [0.0, -0.0, 1e-300, -45.0, 300.0, 41.0 / 3.6]
    got = brakes.ShoeFactors(stocks)(speeds)
    want = _reference(stocks, speeds)
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert len(brakes.ShoeFactors(stocks).groups) == len(kinds) + 1  # one per stock object


def test_shoe_factors_of_no_cars():
    assert brakes.ShoeFactors([])(np.zeros(0)).shape == (0,)


def test_brake_plan_full_force_is_the_per_car_sum():
    kinds = _variants()
    stocks = [kinds[0]] + [kinds[1], kinds[2]] * 5 + [kinds[3]]
    plan = brake_plan(stocks)
    for v in (0.0, 5.0, -12.5, 33.3, 80.0):
        f = _reference(stocks, [v] * len(stocks))
        assert plan.full_force(v) == plan.full_fraction * float(np.sum(plan.capacity * f))
