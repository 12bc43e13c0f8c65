"""The compiled power units of the Open Rails profile (issue 32; ``_orts_kernel.unit_force``
and ``unit_capacity`` behind :meth:`PowerUnit.compile`): for the units they cover, the
same numbers as :class:`PowerUnit`'s Python code, bit for bit, step after step (the force,
the capacity and the whole state: RPM, its rate, the derating's mean, the force before
adhesion, the last speed); every other unit keeps the Python code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats.stock import read_stock
from tdbtools.formats.stock_orts import Table, TractionRamps
from tdbtools.physics.kernels import compiled_available
from tdbtools.physics.orts import diesel, traction
from tdbtools.physics.orts.adhesion import G
from tdbtools.physics.orts.unit import PowerUnit

DATA = Path(__file__).parent / "data" / "orts_stock"
TRAINSET = Path(__file__).parent.parent / "sample_routes" / "sample" / "TRAINS" / "TRAINSET"
needs_numba = pytest.mark.skipif(not compiled_available(), reason="numba is not available")

RAMPS = TractionRamps(
    force_up=60e3, force_down=90e3, force_to_zero=150e3, power_up=400e3, power_down=700e3, power_to_zero=1.2e6
)


def _stock(name: str):  # noqa: ANN202
    """A stock of each case the kernels cover: the sample's Class 66 (one engine,
    continuous-force derating), a DMU power car (one engine, no derating), the sample's
    electric; and variants with every traction ramp and an unloading speed."""
    base = {
        "dl66": TRAINSET / "SAMPLE_DL" / "SAMPLE_DL66.eng",
        "dmbs": DATA / "vacuum" / "VAC_DMBS.eng",
        "el64": TRAINSET / "SAMPLE_EL" / "SAMPLE_EL64.eng",
    }[name.split("_")[0]]
    s = read_stock(base)
    if name.endswith("_ramps"):
        s = dataclasses.replace(s, orts=dataclasses.replace(s.orts, ramps=RAMPS, unloading_speed_ms=12.0))
    return s


def _bits(*xs: float) -> list[int]:
    return [int(b) for b in np.array(xs, dtype=np.float64).view(np.uint64)]


def _state(u: PowerUnit) -> list[int]:
    return _bits(*u.rpm, *u.drpm, u.average, u.traction, u.prev_speed)


@needs_numba
@pytest.mark.parametrize("name", ["dl66", "dl66_ramps", "dmbs", "dmbs_ramps", "el64", "el64_ramps"])
def test_compiled_unit_is_pythons(name):
    """3,000 steps of throttle runs (held long enough for the engine to settle, cut to
    0, stepped up, out of range), speeds from standing to past the top speed, either
    sign, a NaN now and then, steps of several lengths, then full throttle across the
    top speed: force, capacity and state alike."""
    stock = _stock(name)
    py, cu = PowerUnit(stock), PowerUnit(stock)
    assert cu.compile() and cu._ck is not None and py._ck is None
    rng = np.random.default_rng(7)
    v, throttle, most = 0.0, 0.0, 0.0
    for i in range(3000):
        if i % 40 == 0:
            throttle = float(rng.choice([0.0, 1.0, 0.35, 1.2, -0.1, float(rng.random())]))
        v = abs(v) + float(rng.normal(0.4, 1.0)) if i % 500 else 0.0
        v = min(v, 70.0) * (-1.0 if (i // 700) % 2 else 1.0)
        speed = float("nan") if i % 997 == 13 else v
        dt = float(rng.choice([0.1, 0.1, 0.05, 0.5, 1.0]))
        cp, cc = py.capacity(speed), cu.capacity(speed)
        assert _bits(cp) == _bits(cc), (i, cp, cc)
        fp, fc = py.step(throttle, 0.0, speed, dt), cu.step(throttle, 0.0, speed, dt)
        assert _bits(*fp) == _bits(*fc), (i, fp, fc)
        assert _state(py) == _state(cu), i
        most = max(most, fp[0])
    # across the top speed's fade band (an electric's force falls to 0 over its last 0.05 m/s)
    top = stock.max_velocity_ms or 0.0
    for speed in np.linspace(top - 0.1, top + 0.02, 25):
        fp, fc = py.step(1.0, 0.0, float(speed), 0.1), cu.step(1.0, 0.0, float(speed), 0.1)
        assert _bits(*fp, py.capacity(float(speed))) == _bits(*fc, cu.capacity(float(speed))), speed
        assert _state(py) == _state(cu), speed
    assert most > 0.5 * (stock.max_force_n or 0.0) > 0  # (it pulled)


@needs_numba
@pytest.mark.parametrize(
    "path",
    [
        DATA / "steam" / "STEAM.eng",  # steam
        DATA / "dmu101" / "DMU101_DMBS.eng",  # a gearbox
        DATA / "emu" / "EMU_M.eng",  # force curves
        DATA / "dmu" / "DMU_A.eng",  # a ThrottleRPMTab
        DATA / "electric" / "EL_LOCO.eng",  # a dynamic brake
    ],
)
def test_units_the_kernels_do_not_cover_keep_python(path):
    u = PowerUnit(read_stock(path))
    assert not u.compile() and u._ck is None


@needs_numba
def test_more_than_one_engine_a_throttle_table_or_power_limited_keeps_python():
    s = _stock("dl66")
    two = PowerUnit(s)
    two.engines, two.rpm, two.drpm = two.engines * 2, two.rpm * 2, two.drpm * 2
    assert not two.compile()
    table = PowerUnit(s)
    table.engines = (dataclasses.replace(table.engines[0], throttle_rpm=Table((0.0, 100.0), (300.0, 600.0))),)
    assert not table.compile()
    limited = dataclasses.replace(s, orts=dataclasses.replace(s.orts, power_limited=True))
    assert PowerUnit(limited).power_limited and not PowerUnit(limited).compile()


def test_kernel_constants_are_the_laws():
    """The constants the kernel copies from the Python laws."""
    pytest.importorskip("numba")
    from tdbtools.physics import _orts_kernel as K

    assert (K.MIN_RATE_SHARE, K.EASE_FACTOR) == (diesel.MIN_RATE_SHARE, diesel.EASE_FACTOR)
    assert K.FADE_BAND_MS == traction.FADE_BAND_MS and K.G == G
