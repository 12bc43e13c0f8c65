"""The Open Rails physics profile's laws (docs/physics.md §7), tested from the laws: closed
forms of the rate limits, the curve values, conservation of air, and runs of the
real-format fixtures in tests/data/orts_stock (written by tests/data/make_orts_stock.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tdbtools.errors import Diagnostics, FormatError
from tdbtools.formats.stock import read_stock
from tdbtools.formats.stock_orts import Table
from tdbtools.physics.orts import adhesion, brakes, diesel, steam, traction
from tdbtools.physics.orts import resistance as orts_resistance
from tdbtools.physics.orts.airbrake import APPLY, LAP, AirBrakeTrain, Handle
from tdbtools.physics.orts.run import Command, run_train, trailing_drag_factors

DATA = Path(__file__).parent / "data" / "orts_stock"
BAR = 14.5037738


@pytest.fixture(scope="module")
def dmu():
    return read_stock(DATA / "dmu" / "DMU_A.eng")


def _stock(name):
    return read_stock(DATA / name)


# -- reading -------------------------------------------------------------------------------------


def test_fixtures_are_utf16_crlf():
    """Every fixture is UTF-16LE with BOM and CRLF, but the one written as hand-edited
    files often are (UTF-8, LF: dmu/notched/DMU_N.eng)."""
    utf8 = {DATA / "dmu" / "notched" / "DMU_N.eng"}
    files = sorted(DATA.rglob("*.*[gn]"))
    assert utf8 <= set(files) and len(files) >= 9
    for f in files:
        raw = f.read_bytes()
        if f in utf8:
            assert raw.startswith(b"SIMISA") and b"\r\n" not in raw
            continue
        assert raw[:2] == b"\xff\xfe" and "\r\n" in raw[2:].decode("utf-16-le")


def test_reads_diesel_engines(dmu):
    (e,) = dmu.orts.diesel_engines
    assert (e.idle_rpm, e.max_rpm, e.change_up, e.change_down, e.rate_up, e.rate_down) == (
        600,
        2100,
        150,
        300,
        50,
        200,
    )
    assert e.max_power_w == 260e3
    assert e.throttle_rpm == Table((0, 25, 50, 75, 100), (600, 1000, 1400, 1750, 2100))
    assert e.power(1750) == 220e3
    assert dmu.orts.drive_wheel_weight_kg == 19e3
    assert dmu.tractive_force_curve is not None


def test_reads_brake_equipment(dmu):
    o = dmu.orts
    assert (
        o.max_brake_shoe_force_n == 100e3 and o.brake_shoe_type == "Cast_Iron_P10" and o.num_brake_shoes == 8
    )
    assert o.brakes.max_cylinder_psi == pytest.approx(3.8 * BAR)
    assert (o.brakes.max_application_rate, o.brakes.max_release_rate, o.brakes.aux_cyl_volume_ratio) == (
        14,
        4,
        2.5,
    )
    lb = o.loco_brakes
    assert lb.max_system_psi == pytest.approx(5 * BAR) and lb.full_service_drop_psi == pytest.approx(
        1.5 * BAR
    )
    assert (lb.pipe_charging_rate, lb.pipe_time_factor_s) == (21, 0.003)


def test_reads_steam_dynamic_and_wagon():
    s = _stock("steam/STEAM.eng")
    assert s.orts.steam.cylinder_diameter_m == pytest.approx(0.508) and s.orts.steam.boiler_psi == 225
    assert s.orts.brakes.vacuum
    el = _stock("electric/EL_LOCO.eng")
    assert el.orts.max_dynamic_brake_force_n == 240e3 and el.orts.dynamic_brake_curve(
        1.0, 50.0
    ) == pytest.approx(120e3)
    assert el.max_continuous_force_n == 250e3
    w = _stock("wagons/COACH.wag")
    assert w.orts.loco_brakes is None and w.orts.max_brake_shoe_force_n == 110e3


def _write(tmp_path, body):
    p = tmp_path / "X.eng"
    p.write_text(
        "SIMISA@@@@@@@@@@JINX0D0t______\n\nWagon ( X Type ( Engine ) )\nEngine ( X Type ( Diesel ) "
        + body
        + " )\n"
    )
    return p


def test_reads_traction_ramps_and_power_limit(tmp_path):
    """MSTSLocomotive.Parse's ramp tokens (force rates N/s, power rates W/s, with units) and
    MSTSDieselLocomotive's ORTSTractiveForceIsPowerLimited."""
    s = read_stock(
        _write(
            tmp_path,
            "ORTSTractiveForceRampUpRate ( 20kN/s ) ORTSTractiveForceRampDownRate ( 30kN/s ) "
            "ORTSTractiveForceRampDownToZeroRate ( 50000 ) ORTSTractivePowerRampUpRate ( 1000kW/s ) "
            "ORTSTractivePowerRampDownRate ( 2000kW/s ) ORTSTractivePowerRampDownToZeroRate ( 3e6 ) "
            "ORTSTractiveForceIsPowerLimited ( 1 )",
        )
    )
    r = s.orts.ramps
    assert (r.force_up, r.force_down, r.force_to_zero) == (20e3, 30e3, 50e3)
    assert (r.power_up, r.power_down, r.power_to_zero) == (1e6, 2e6, 3e6)
    assert s.orts.power_limited
    assert not _stock("dmu/DMU_A.eng").orts.power_limited


def test_bad_diesel_block_is_located(tmp_path):
    p = _write(
        tmp_path,
        "ORTSDieselEngines ( 2 Diesel ( IdleRPM ( 900 ) MaxRPM ( 600 ) ChangeUpRPMpS ( 1 ) ChangeDownRPMpS ( 1 ) ) )",
    )
    with pytest.raises(FormatError, match="MaxRPM"):
        read_stock(p)
    diags = Diagnostics(strict=False)
    s = read_stock(p, diagnostics=diags)
    assert len(s.orts.diesel_engines) == 1
    assert any("count says 2" in str(f) for f in diags.findings)


def test_missing_rate_of_change_is_reported(tmp_path):
    p = _write(
        tmp_path,
        "ORTSDieselEngines ( 1 Diesel ( IdleRPM ( 600 ) MaxRPM ( 900 ) ChangeUpRPMpS ( 1 ) ChangeDownRPMpS ( 1 ) ) )",
    )
    with pytest.raises(FormatError, match="RateOfChangeUpRPMpSS"):
        read_stock(p)


def test_table_rpms_made_increasing(tmp_path):
    p = _write(
        tmp_path,
        "ORTSDieselEngines ( 1 Diesel ( IdleRPM ( 600 ) MaxRPM ( 900 ) ChangeUpRPMpS ( 1 ) ChangeDownRPMpS ( 1 ) "
        "RateOfChangeUpRPMpSS ( 1 ) RateOfChangeDownRPMpSS ( 1 ) "
        "ThrottleRPMTab ( 0 600 50 600 100 900 ) ) )",
    )
    assert read_stock(p).orts.diesel_engines[0].throttle_rpm.ys == (600, 601, 900)


# -- diesel --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("r0", "r1"), [(600, 2100), (600, 1000), (1400, 1420)])
def test_run_up_time_against_closed_form(dmu, r0, r1):
    """DieselEngine.UpdateRPM from rest: accelerate at J, run at the limit, brake at J;
    a step past the target lands on it (fine steps: within 0.03 s of the closed form)."""
    e = dmu.orts.diesel_engines[0]
    dt = 1e-3
    trace = diesel.run_up_trace(e, r0, r1, dt, 15.0)
    measured = np.argmax(trace >= r1) * dt
    assert trace[-1] == r1
    assert measured == pytest.approx(diesel.run_up_time(r0, r1, e.change_up, e.rate_up), abs=0.03)


def test_run_up_closed_form_values():
    assert diesel.run_up_time(600, 2100, 150, 50) == pytest.approx(13.0)  # 1500/150 + 150/50
    assert diesel.run_up_time(0, 100, 150, 50) == pytest.approx(2.0 * math.sqrt(2.0))  # 2·sqrt(100/50)


def test_rpm_rate_is_jerk_limited(dmu):
    """The rate dRPM/dt itself moves by at most J·dt per step (RateOfChangeUpRPMpSS), so
    the first steps from idle rise by J·dt², 2·J·dt², …"""
    e = dmu.orts.diesel_engines[0]
    r, d = 600.0, 0.0
    for k in range(1, 4):
        r2, d = diesel.step_engine(e, r, d, 2100.0, 0.1)
        assert d == pytest.approx(k * e.rate_up * 0.1)
        assert r2 - r == pytest.approx(d * 0.1)
        r = r2
    # far from the target the rate stops at ChangeUpRPMpS
    r, d = diesel.step_engine(e, 700.0, e.change_up, 2100.0, 0.1)
    assert d == e.change_up
    # a step past the target lands on it
    assert diesel.step_engine(e, 2099.0, 50.0, 2100.0, 0.1) == (2100.0, pytest.approx(10.0))


def test_run_down_is_faster_and_lands(dmu):
    e = dmu.orts.diesel_engines[0]
    trace = diesel.run_up_trace(e, 2100, 600, 1e-3, 10.0)
    measured = np.argmax(trace <= 600.0) * 1e-3
    assert measured == pytest.approx(diesel.run_up_time(2100, 600, e.change_down, e.rate_down), abs=0.03)
    assert trace[-1] == 600


def test_apparent_throttle_inverts_the_table(dmu):
    e = dmu.orts.diesel_engines[0]
    for t in (0.0, 0.1, 0.25, 0.6, 1.0):
        assert diesel.apparent_throttle(e, diesel.demanded_rpm(e, t)) == pytest.approx(t)
    assert diesel.apparent_throttle(e, 1200) == pytest.approx(0.375)
    assert diesel.output_power(e, 1575) == pytest.approx(190e3)
    assert diesel.output_power(e, 1575, supply_w=50e3) == pytest.approx(140e3)


def test_force_at_apparent_throttle(dmu):
    """Full throttle from idle: each car's force is the curve at the apparent throttle of
    the engine's RPM (not the handle's), so it ramps up over the run-up."""
    r = run_train([dmu, dmu], [Command(0.0, throttle=1.0)], seconds=12.0)
    e = dmu.orts.diesel_engines[0]
    curve = dmu.tractive_force_curve
    for i in (1, 10, 30, 60, 100):
        app = diesel.apparent_throttle(e, r.rpm[i])
        assert r.traction[i] == pytest.approx(2 * curve(app, r.speed[i]), rel=1e-12)
    assert r.traction[1] < 0.3 * r.traction[100]


def test_part_throttle_holds_its_rpm(dmu):
    r = run_train([dmu, dmu], [Command(0.0, throttle=0.5)], seconds=30.0)
    # at 0.1 s steps the explicit rate law dithers within a few tenths of an RPM (as Open Rails')
    assert r.rpm[-1] == pytest.approx(1400, abs=1.0)
    assert r.traction[-1] == pytest.approx(2 * dmu.tractive_force_curve(0.5, r.speed[-1]), rel=1e-3)


def test_basic_diesel_force_law():
    """MSTSDieselLocomotive.GetAvailableTractionForceN without curves: t·MaxForce capped by
    t·RailPower/v, linear in t (not t² as the electric law)."""
    assert traction.basic_diesel_force(0.5, 10.0, 300e3, 2e6) == pytest.approx(100e3)  # 0.5·2e6/10
    assert traction.basic_diesel_force(0.25, 10.0, 300e3, 2e6) == pytest.approx(50e3)
    assert traction.basic_diesel_force(0.5, 0.0, 300e3, 2e6) == pytest.approx(150e3)  # 0.5·300 kN
    assert traction.basic_diesel_force(0.0, 0.0, 300e3, 2e6) == 0.0
    # above the unloading speed the power falls linearly to 0 at twice that speed
    assert traction.basic_diesel_force(1.0, 30.0, 300e3, 3e6, 20.0, 40.0) == pytest.approx(50e3)
    # no fade at MaxVelocity in the diesel law
    assert traction.basic_diesel_force(1.0, 30.5, 300e3, 3e6, 0.0, 30.0) == pytest.approx(3e6 / 30.5)


def test_effective_throttle():
    assert traction.effective_throttle(1.0, 0.3) == 0.3
    assert traction.effective_throttle(0.2, 0.3) == 0.2
    assert traction.effective_throttle(1.0, 0.3, power_limited=True) == 1.0
    assert traction.effective_throttle(0.7, None) == 0.7


def test_basic_electric_force():
    assert traction.basic_electric_force(0.5, 20.0, 300e3, 6e6) == pytest.approx(75e3)  # 6e6·0.25/20
    assert traction.basic_electric_force(0.5, 1.0, 300e3, 6e6) == pytest.approx(150e3)


def test_legacy_electric_force_fades_at_max_velocity():
    """MSTSLocomotive's legacy force (no curves): MaxForce untouched up to MaxVelocity −
    0.05 m/s, then times 20·(MaxVelocity − v), 0 above MaxVelocity; the power cap
    MaxPower·t²/v applies after the fade."""

    def f(v, vmax=30.0, fmax=100e3):
        return traction.basic_electric_force(1.0, v, fmax, 3e6, vmax)

    assert f(29.6, fmax=300e3) == pytest.approx(3e6 / 29.6)  # the power cap alone
    assert f(29.7) == pytest.approx(100e3)  # below the band: MaxForce (3e6/29.7 > 100 kN)
    assert f(29.95) == pytest.approx(100e3)  # the band's edge: factor 1
    assert f(29.98) == pytest.approx(20 * 0.02 * 100e3)
    assert f(-29.99) == pytest.approx(20 * 0.01 * 100e3)  # |v| either way
    assert f(29.98, fmax=300e3) == pytest.approx(3e6 / 29.98)  # 0.4·300 kN > the power cap
    assert f(30.0) == 0.0
    assert f(30.5) == 0.0
    assert f(30.5, vmax=0.0) == pytest.approx(3e6 / 30.5)  # no MaxVelocity: no fade


def _legacy_dmu(dmu, **ramps):
    from tdbtools.formats.stock_orts import TractionRamps

    o = replace(dmu.orts, ramps=TractionRamps(**ramps))
    return replace(dmu, tractive_force_curve=None, orts=o)


def test_legacy_diesel_force_follows_the_apparent_throttle(dmu):
    """A legacy diesel (no curves) at part throttle: every step's force is the basic law at
    min(handle, apparent); from rest it starts at the idle's apparent throttle (0) and
    ramps with the RPM, then settles at t·min(MaxForce, RailPower/v)."""
    leg = _legacy_dmu(dmu)
    e = leg.orts.diesel_engines[0]
    r = run_train([leg], [Command(0.0, throttle=0.5)], seconds=40.0)
    for i in (1, 5, 20, 60, 200, 399):
        app = diesel.apparent_throttle(e, r.rpm[i])
        want = traction.basic_diesel_force(min(0.5, app), r.speed[i], 40e3, 200e3, 0.0, leg.max_velocity_ms)
        assert r.traction[i] == pytest.approx(want, rel=1e-12)
    assert r.traction[1] < 0.1 * 0.5 * 40e3  # not t·MaxForce at once (the old law's 20 kN)
    v = r.speed[-1]
    assert r.traction[-1] == pytest.approx(0.5 * min(40e3, 200e3 / v), rel=1e-3)


def test_legacy_diesel_throttle_drop_cuts_the_force_at_once(dmu):
    """When the handle drops, the force is read at the new handle although the RPM is
    still falling (the minimum of the two)."""
    leg = _legacy_dmu(dmu)
    r = run_train([leg], [Command(0.0, throttle=1.0), Command(30.0, throttle=0.25)], seconds=31.0)
    i = int(round(30.1 / 0.1))
    assert r.rpm[i] > 1500  # the engine still runs high
    assert r.traction[i] == pytest.approx(0.25 * min(40e3, 200e3 / r.speed[i]), rel=1e-12)


def test_traction_force_ramp_closed_form(dmu):
    """ORTSTractiveForceRampUpRate: from rest at a constant target the force rises at the
    rate, reaching it after target/rate s; ORTSTractiveForceRampDownToZeroRate: to 0 at
    that rate when the handle closes."""
    from tdbtools.formats.stock_orts import TractionRamps

    ramps = TractionRamps(force_up=5e3, force_to_zero=10e3)
    assert traction.ramp_force(0.0, 0.1, 30e3, 1e9, 0.0, 0.0, ramps) == pytest.approx(500.0)
    assert traction.ramp_force(29.8e3, 0.1, 30e3, 1e9, 0.0, 0.0, ramps) == pytest.approx(30e3)
    assert traction.ramp_force(30e3, 0.1, 0.0, 1e9, 0.0, 0.0, ramps) == pytest.approx(29e3)
    assert traction.ramp_force(30e3, 0.1, 10e3, 1e9, 0.0, 0.0, ramps) == 10e3  # no down rate: at once
    assert traction.ramp_force(30e3, 0.1, 40e3, 20e3, 0.0, 0.0, ramps) == 20e3  # the cap
    # the power ramp: from 100 kW at 10 m/s toward 400 kW at 10 kW/s → 101 kW after 0.1 s
    pw = TractionRamps(power_up=10e3)
    assert traction.ramp_force(10e3, 0.1, 40e3, 1e9, 10.0, 10.0, pw) == pytest.approx(101e3 / 10.0)
    # in a run, every step: the last force plus at most rate·dt, never above the law's target
    leg = _legacy_dmu(dmu, force_up=2e3)
    e = leg.orts.diesel_engines[0]
    r = run_train([leg], [Command(0.0, throttle=1.0)], seconds=30.0)
    ramped = 0
    for i in range(1, len(r.time)):
        app = diesel.apparent_throttle(e, r.rpm[i])
        target = traction.basic_diesel_force(min(1.0, app), r.speed[i], 40e3, 200e3, 0.0, leg.max_velocity_ms)
        want = min(r.traction[i - 1] + 2e3 * 0.1, target) if target > r.traction[i - 1] else target
        assert r.traction[i] == pytest.approx(want, rel=1e-12, abs=1e-9)
        ramped += want < target
    assert ramped > 50  # the ramp, not the engine, set the pace for a while


def test_power_limited_diesel_reads_the_handle_but_the_engine_power(dmu):
    """ORTSTractiveForceIsPowerLimited: the force is read at the handle's throttle, capped
    by the engines' present output power over the speed (DieselPowerSupply)."""
    leg = replace(_legacy_dmu(dmu), orts=replace(_legacy_dmu(dmu).orts, power_limited=True))
    e = leg.orts.diesel_engines[0]
    r = run_train([leg], [Command(0.0, throttle=1.0)], seconds=15.0, speed0=5.0)
    for i in (1, 10, 50, 149):
        cap = diesel.output_power(e, r.rpm[i]) / r.speed[i]
        want = min(traction.basic_diesel_force(1.0, r.speed[i], 40e3, 200e3, 0.0, 0.0), cap)
        assert r.traction[i] == pytest.approx(want, rel=1e-12)


def test_run_holds_a_legacy_electric_at_max_velocity():
    el = _stock("electric/EL_LOCO.eng")
    # no curves, adhesion out of the way, a top speed reached within the run
    el = replace(
        el,
        tractive_force_curve=None,
        max_velocity_ms=8.0,
        max_continuous_force_n=None,
        orts=replace(el.orts, drive_wheel_weight_kg=200e3),
    )
    r = run_train([el], [Command(0.0, throttle=1.0)], seconds=60.0)
    # explicit 0.1 s steps (as Open Rails'): one step may overshoot by a step's acceleration,
    # then the speed dithers in the fade band
    step_gain = float(np.max(np.diff(r.speed)))
    assert r.speed.max() <= 8.0 + step_gain
    tail = r.speed[r.time >= 50.0]
    assert tail.min() >= 7.95 and tail.max() <= 8.01
    assert r.traction[-1] < 0.5 * r.traction[0]


def test_trailing_locomotive_drag_factor():
    """Open Rails (MSTSWagon) multiplies Davis C by ORTSTrailLocomotiveResistanceFactor
    for an engine that is not the lead, as the replay's car model does."""
    el = replace(_stock("electric/EL_LOCO.eng"), trail_loco_resistance_factor=0.25)
    coach = _stock("wagons/COACH.wag")
    assert list(trailing_drag_factors([coach, el, el, coach])) == [1.0, 1.0, 0.25, 1.0]
    assert list(trailing_drag_factors([coach, coach])) == [1.0, 1.0]
    # coasting from 30 m/s: the first step's loss is the closed-form resistance over the mass
    v0, dt = 30.0, 0.1
    r = run_train([el, el], [], seconds=dt, dt=dt, speed0=v0)
    resist = 2 * (el.davis_a + v0 * el.davis_b) + (1.0 + 0.25) * el.davis_c * v0 * v0
    assert r.speed[1] == pytest.approx(v0 - resist / (2 * el.mass_kg) * dt, rel=1e-9)


# -- continuous force ----------------------------------------------------------------------------


def test_continuous_force_derating_converges():
    law = traction.ContinuousForce(300e3, 250e3, tau=100.0)
    f, avg = 0.0, 0.0
    first = None
    for _ in range(5000):
        f, avg = law.step(300e3, avg, 1.0)
        first = f if first is None else first
    assert first == 300e3  # nothing pulled yet: the full force
    assert f == pytest.approx(250e3, rel=1e-6)  # full demand settles at MaxContinuousForce
    assert law.steady_force(150e3) == pytest.approx(150e3 / (1 + (50e3 / 7.5e10) * 150e3))


def test_run_derates_the_electric(tmp_path):
    el = _stock("electric/EL_LOCO.eng")
    # a drive-wheel weight well above the mass takes adhesion out of the way
    el = replace(el, orts=replace(el.orts, continuous_force_time_factor_s=10.0, drive_wheel_weight_kg=200e3))
    r = run_train([el], [Command(0.0, throttle=1.0)], seconds=3.0, grade=0.5)
    assert r.speed[-1] == 0.0  # held on a 50 % grade; the force settles at the continuous force
    assert r.traction[0] == pytest.approx(300e3)
    k = (300e3 - 250e3) / (300e3 * 250e3)
    avg1 = 0.01 * 300e3  # the mean after one 0.1 s step of a 10 s time constant
    assert r.traction[1] == pytest.approx(300e3 * (1 - k * avg1), rel=1e-12)
    assert 250e3 < r.traction[-1] < r.traction[1]


# -- brakes --------------------------------------------------------------------------------------


def test_default_shoe_curve_values():
    assert brakes.default_shoe_mu(0.0) == pytest.approx(7.6 / 17.5 + 0.07)
    assert brakes.default_shoe_mu(100 / 3.6) == pytest.approx(7.6 / 117.5 + 0.07)
    assert brakes.default_shoe_mu(41.0 / 3.6) == pytest.approx(0.2, abs=1e-3)


def test_shoe_factor_paths(dmu):
    # shoe-force path (ORTSMaxBrakeShoeForce + a known shoe type): force on shoes × μ(v)
    assert brakes.brake_force_capacity(dmu) == 100e3
    assert brakes.shoe_factor(dmu, 100 / 3.6) == pytest.approx(7.6 / 117.5 + 0.07)
    # without a shoe type Open Rails ignores ORTSMaxBrakeShoeForce: MaxBrakeForce × clamp(μ/0.2)
    plain = replace(dmu, orts=replace(dmu.orts, brake_shoe_type=""))
    assert brakes.brake_force_capacity(plain) == plain.max_brake_force_n == 89e3
    assert brakes.shoe_factor(plain, 0.0) == 1.0
    assert brakes.shoe_factor(plain, 100 / 3.6) == pytest.approx((7.6 / 117.5 + 0.07) / 0.2)
    fr = _stock("wagons/FREIGHT.wag")  # MaxBrakeForce with a table: μ(v)/μ(0)
    assert brakes.shoe_factor(fr, 100 / 3.6) == pytest.approx(0.19 / 0.49)
    assert float(brakes.cylinder_fraction(36.0, 64.0, 8.0)) == pytest.approx(0.5)


# -- air brakes ----------------------------------------------------------------------------------


def _freight_train(n):
    fr = _stock("wagons/FREIGHT.wag")
    el = _stock("electric/EL_LOCO.eng")
    return [el] + [fr] * n


def _air(stocks, **kw):
    from tdbtools.physics.orts.run import _brake_train

    return _brake_train(stocks)[0]


def test_pipe_keeps_the_air():
    ab = AirBrakeTrain([20.0, 15.0, 30.0], app_rate=1, rel_rate=1, aux_rate=1, ratio=2.5, tau=0.01)
    ab.bp[:] = [90.0, 70.0, 50.0]
    before = float(np.sum(ab.bp * ab.vol))
    ab._propagate(0.01)
    assert float(np.sum(ab.bp * ab.vol)) == pytest.approx(before, rel=1e-14)
    assert ab.bp[0] < 90 and ab.bp[2] > 50


def propagation_time(n_cars, reduction=10.0):
    """Seconds from a service application until the last car's valve applies."""
    ab = _air(_freight_train(n_cars))
    dt, t = 0.05, 0.0
    while t < 120:
        ab.step(Handle("service", reduction), dt)
        t += dt
        if ab.state[-1] == APPLY or ab.cyl[-1] > 0:
            return t
    return math.inf


def test_brake_pipe_propagation_along_40_cars():
    t40 = propagation_time(40)
    t20 = propagation_time(20)
    t5 = propagation_time(5)
    assert t5 < t20 < t40 < 60
    # the pipe equalises neighbour by neighbour: a longer train waits more than in proportion
    assert t40 / t20 > 1.3


def test_cylinder_build_up_time_closed_form():
    """A car whose pipe falls by Δ: the cylinder rises at MaxApplicationRate until it has
    taken Δ·TripleValveRatio from the reservoir (lap): Δ·r/rate seconds."""
    ab = AirBrakeTrain([20.0], app_rate=14.0, rel_rate=4.0, aux_rate=1.684, ratio=2.5, max_psi=72.5)
    ab.bp[0] = 72.5 - 10.0
    dt, t = 1e-3, 0.0
    while ab.state[0] != LAP or t == 0:
        ab.step_valves(dt)
        t += dt
        assert t < 10
    assert t == pytest.approx(10.0 * 2.5 / 14.0, abs=2 * dt)
    assert ab.cyl[0] == pytest.approx(25.0) and ab.aux[0] == pytest.approx(62.5)
    # release: the pipe back up, the cylinder empties at MaxReleaseRate
    ab.bp[0] = 72.5
    t = 0.0
    while ab.cyl[0] > 0:
        ab.step_valves(dt)
        t += dt
    assert t == pytest.approx(25.0 / 4.0, abs=2 * dt)


def test_emergency_equalises_reservoir_and_cylinder():
    ab = AirBrakeTrain(
        [20.0], app_rate=14.0, rel_rate=4.0, aux_rate=1.684, ratio=2.5, max_psi=72.5, full_service_drop=21.8
    )
    ab.bp[0] = 0.0
    for _ in range(2000):
        ab.step_valves(0.01)
    assert ab.cyl[0] == pytest.approx(72.5 * 2.5 / 3.5)


# -- adhesion, steam -----------------------------------------------------------------------------


def test_adhesion_curve():
    assert adhesion.curtius_kniffler(0.0) == pytest.approx(7.5 / 44 + 0.161)
    assert adhesion.adhesion_limit(19e3, 0.0) == pytest.approx((7.5 / 44 + 0.161) * 9.80665 * 19e3)


def test_steam_starting_effort():
    s = _stock("steam/STEAM.eng")
    lbf = 0.85 * 225 * 20**2 * 26 / (2 * 0.94 / 0.0254)
    assert steam.starting_tractive_effort(s.orts.steam, 0.94) == pytest.approx(lbf * 4.44822162)
    assert steam.steam_force(s.orts.steam, 0.94, 1.0, 20.0, 1.5e6) == pytest.approx(75e3)


# -- multiple units and whole runs ---------------------------------------------------------------


def test_emu_accelerates_from_its_powered_cars():
    m, t = _stock("emu/EMU_M.eng"), _stock("emu/EMU_T.wag")
    r = run_train([m, t, m], [Command(0.0, throttle=1.0)], seconds=1.0)
    mass = 50e3 + 36e3 + 50e3
    # at rest each car meets Open Rails' starting resistance (§7.5), not Davis A
    f0 = [orts_resistance.starting_force(x) for x in (m, t, m)]
    a0 = (2 * 80e3 - sum(f0)) / mass
    assert r.speed[1] == pytest.approx(a0 * 0.1, rel=1e-12)
    assert 1.0 < a0 < 1.3


def test_dmu_station_run_is_plausible(dmu):
    r = run_train(
        [dmu, dmu],
        [
            Command(0.0, throttle=1.0),
            Command(90.0, throttle=0.0),
            Command(100.0, handle=Handle("service", 21.8)),
        ],
        seconds=300.0,
        stop_at_rest_after=100.0,
    )
    kmh = r.speed * 3.6
    assert 30 < kmh[int(20 / 0.1)] < 50  # about 40 km/h after 20 s
    assert 80 < kmh[int(90 / 0.1)] < 110
    assert 100 < r.time[-1] < 200 and r.speed[-1] == 0.0


# -- the finer points the first mutants slipped past ----------------------------------------------


def test_slowest_rate_is_one_percent_of_the_limit(dmu):
    """Near its target the square-root rate is floored at 1 % of ChangeUpRPMpS."""
    e = dmu.orts.diesel_engines[0]
    r, d = diesel.step_engine(e, 2100 - 0.01, 1.5, 2100, 0.001)  # √(2·50·0.01) = 1 < 1.5 RPM/s
    assert d == pytest.approx(0.01 * e.change_up)


def test_power_capped_at_maximal_power(dmu):
    e = dmu.orts.diesel_engines[0]
    assert e.power(2400) > 260e3  # the table extrapolates past its last point
    assert diesel.output_power(e, 2400) == 260e3


def test_one_sweep_of_the_pipe():
    """Sub-step h = τ: each pair equalises fully, front to back (equal volumes)."""
    ab = AirBrakeTrain([20.0, 20.0, 20.0], app_rate=1, rel_rate=1, aux_rate=1, ratio=2.5, tau=0.01)
    ab.bp[:] = [90.0, 70.0, 50.0]
    ab._propagate(0.01)
    assert ab.bp.tolist() == pytest.approx([80.0, 65.0, 65.0])
    ab.bp[:] = [90.0, 70.0, 50.0]
    ab._propagate(0.005)  # half a τ: half the difference of each pair moves
    assert ab.bp.tolist() == pytest.approx([85.0, 68.75, 56.25])


def test_lead_pipe_falls_at_the_service_rate():
    """The lead's pipe loses h/τ_service of itself per sub-step: from 72.5 to 62.5 psi
    after n sub-steps with (1 − h/τ_s)^n = 62.5/72.5."""
    ab = AirBrakeTrain([20.0], app_rate=1, rel_rate=1, aux_rate=1, ratio=2.5, max_psi=72.5, tau=0.001)
    h = 0.001
    n = math.ceil(math.log(62.5 / 72.5) / math.log(1 - h / 1.009))
    t = 0.0
    while ab.bp[0] > 62.5:
        ab.step_pipe(Handle("service", 10.0), h)
        t += h
    assert t == pytest.approx(n * h, abs=1.5 * h)
    assert ab.bp[0] == 62.5


def test_grade_first_step_closed_form():
    co = _stock("wagons/COACH.wag")
    r = run_train([co], [], seconds=0.2, grade=0.01, speed0=10.0)
    sin_t = 0.01 / math.hypot(1.0, 0.01)
    a = -(9.80665 * sin_t + co.davis_force_n(10.0) / co.mass_kg)
    assert r.speed[1] == pytest.approx(10.0 + a * 0.1, rel=1e-12)
    assert r.distance[1] == pytest.approx(0.05 * (10.0 + r.speed[1]), rel=1e-12)


def test_traction_capped_by_adhesion():
    el = _stock("electric/EL_LOCO.eng")
    el = replace(el, orts=replace(el.orts, drive_wheel_weight_kg=50e3))
    r = run_train([el], [Command(0.0, throttle=1.0)], seconds=0.1)
    assert r.traction[0] == pytest.approx(float(adhesion.adhesion_limit(50e3, 0.0)))


# -- legacy diesel engines and the gearbox (DieselEngine.EstablishParameters, GearBox) ------------


@pytest.fixture(scope="module")
def dmu101():
    return read_stock(DATA / "dmu101" / "DMU101_DMBS.eng")


def test_reads_gearbox_tokens(dmu101):
    g = dmu101.orts.gearbox
    mph = 0.44704
    assert g.fitted and g.gears == 4 and g.operation == "automatic" and g.transmission == "legacy"
    assert g.max_speeds_ms == pytest.approx([15 * mph, 27 * mph, 41 * mph, 70 * mph])  # bare numbers: mph
    assert g.max_forces_n == (28000, 16000, 10500, 6200)
    assert (g.up_proportion, g.down_proportion, g.coasting_force_n) == (0.85, 0.35, 500)
    m = dmu101.orts.msts_diesel
    assert (m.idle_rpm, m.max_rpm, m.change_rate) == (450, 1800, 400)


def test_msts_diesel_engine_is_established(dmu101):
    """Without ORTSDieselEngines Open Rails builds one engine from the MSTS tokens: rates
    from DieselEngineMaxRPMChangeRate, the default torque shape scaled so that the power at
    MaxRPM is MaxPower, where the torque is 81 % of its largest value."""
    (e,) = diesel.establish(dmu101)
    assert (e.idle_rpm, e.max_rpm, e.change_up, e.change_down, e.rate_up, e.rate_down) == (
        450,
        1800,
        400,
        400,
        400,
        400,
    )
    assert e.starting_rpm == pytest.approx(300.0) and e.governor_rpm == pytest.approx(1.309 * 1800)
    assert e.power(1800) == pytest.approx(224e3)
    assert e.torque(1800) == pytest.approx(0.81 * max(e.torque.ys))
    assert e.torque(1800) * 1800 * 2 * math.pi / 60 == pytest.approx(224e3)
    assert e.torque(450) == pytest.approx(0.2 * max(e.torque.ys))
    # MaxRPM at least 1.5 × idle for an MSTS engine; the defaults without any token
    o = dmu101.orts
    low = replace(dmu101, orts=replace(o, msts_diesel=replace(o.msts_diesel, max_rpm=500.0)))
    assert diesel.establish(low)[0].max_rpm == 675.0
    bare = replace(dmu101, max_power_w=None, orts=replace(o, msts_diesel=type(o.msts_diesel)()))
    (b,) = diesel.establish(bare)
    assert (b.idle_rpm, b.max_rpm, b.change_up, b.max_power_w) == (300.0, 600.0, 40.0, 2.5e6)


def _sweep(stock, speeds, throttle=1.0, dt=0.1):
    """Drive one PowerUnit along a prescribed speed profile: per step the gear, RPM, force."""
    from tdbtools.physics.orts.unit import PowerUnit

    u = PowerUnit(stock)
    gear, rpm, force = [], [], []
    for v in speeds:
        force.append(u.force(throttle, v, dt))
        gear.append(u.boxes[0].current)
        rpm.append(u.rpm[0])
    return np.array(gear), np.array(rpm), np.array(force), u


def test_gears_of_the_legacy_box(dmu101):
    from tdbtools.physics.orts.gearbox import gears_of

    (e,) = diesel.establish(dmu101)
    gears = gears_of(dmu101.orts.gearbox, e)
    assert [g.ratio for g in gears] == pytest.approx([v / 1800 for v in dmu101.orts.gearbox.max_speeds_ms])
    assert [g.max_force_n for g in gears] == [28000, 16000, 10500, 6200]
    # ORTSGearBoxTractiveForceAtSpeed: the force at top speed raised by T_max/T(MaxRPM)
    spec = replace(dmu101.orts.gearbox, forces_at_speed_n=(1e3, 1e3, 1e3, 1e3))
    assert gears_of(spec, e)[0].max_force_n == pytest.approx(1e3 / 0.81)
    assert gears_of(spec, e, n_engines=2)[0].max_force_n == pytest.approx(1e3 / 0.81 / 2)


def test_gearbox_shifts_up_and_down_at_the_proportions(dmu101):
    """A speed ramp at full throttle: each upshift within two steps after the speed passes
    UpGearProportion·V_i; coming back down, each downshift within two steps after it falls
    below DownGearProportion·V_i."""
    g = dmu101.orts.gearbox
    dt = 0.1
    up = np.concatenate([np.zeros(50), np.arange(0.0, 30.0, 0.03)])  # 0.3 m/s², after 5 s at rest
    gear, _, _, u = _sweep(dmu101, up)
    assert gear[0] == -1 and gear[49] == 0  # in gear 1 from the first step with the throttle open
    assert list(dict.fromkeys(gear.tolist())) == [-1, 0, 1, 2, 3]
    for i in range(3):
        cross = int(np.argmax(up > g.up_proportion * g.max_speeds_ms[i]))
        shift = int(np.argmax(gear > i))
        assert cross <= shift <= cross + 2, (i, cross, shift)
    down = np.arange(30.0, 0.5, -0.03)
    from tdbtools.physics.orts.unit import PowerUnit

    gear2 = []
    for v in down:
        u.force(1.0, v, dt)
        gear2.append(u.boxes[0].current)
    gear2 = np.array(gear2)
    for i in (3, 2, 1):
        cross = int(np.argmax(down < g.down_proportion * g.max_speeds_ms[i]))
        shift = int(np.argmax(gear2 < i))
        assert cross <= shift <= cross + 2, (i, cross, shift)
    assert gear2[-1] == 0
    assert PowerUnit(dmu101).boxes[0].current == -1


def test_gearbox_force_per_gear(dmu101):
    """At a steady speed in gear i with the clutch in, the engine turns at the shaft's
    v/ratio_i and the force is t·min(t·F_i·T(rpm)/T_max, P(rpm)/v)."""
    (e,) = diesel.establish(dmu101)
    g = dmu101.orts.gearbox
    t_max = max(e.torque.ys)
    for i, frac in ((0, 0.6), (1, 0.6), (2, 0.6), (3, 0.6)):
        v = frac * g.max_speeds_ms[i]
        # reach the gear along a ramp, then hold the speed
        ramp = np.linspace(0.0, v, 400)
        prof = np.concatenate([ramp, np.full(300, v)])
        for t in (1.0, 0.5):
            gear, rpm, force, u = _sweep(dmu101, prof, throttle=t)
            if gear[-1] != i:
                continue  # a part throttle may settle one gear lower; the gear is checked below
            shaft = v / (g.max_speeds_ms[i] / 1800)
            assert rpm[-1] == pytest.approx(shaft, rel=1e-6)
            want = t * min(t * g.max_forces_n[i] * e.torque(shaft) / t_max, e.power(shaft) / v)
            assert force[-1] == pytest.approx(want, rel=1e-9)
        gear, *_ = _sweep(dmu101, prof)
        assert gear[-1] == i


def test_gearbox_neutral_with_the_throttle_closed(dmu101):
    speeds = np.concatenate([np.linspace(0, 8, 200), np.full(20, 8.0)])
    from tdbtools.physics.orts.unit import PowerUnit

    u = PowerUnit(dmu101)
    for v in speeds:
        u.force(1.0, v, 0.1)
    assert u.boxes[0].current >= 0
    assert u.force(0.0, 8.0, 0.1) == 0.0  # the gear drops out this step (force read after)
    assert u.boxes[0].current == -1


def test_dmu101_run_up(dmu101):
    """A Class 101-like car from rest at full throttle: gear 1 at once with the clutch
    slipping (the force t²·F_1·T(rpm)/T_max as the engine runs up), all four gears in
    order, about 60 km/h after a minute (plausible for a 300 hp, 33 t car)."""
    r = run_train([dmu101], [Command(0.0, throttle=1.0)], seconds=120.0)
    (e,) = diesel.establish(dmu101)
    t_max = max(e.torque.ys)
    for i in (1, 5, 10):
        assert r.traction[i] == pytest.approx(28000 * e.torque(r.rpm[i]) / t_max, rel=1e-9)
    kmh = r.speed * 3.6
    assert 50 < kmh[600] < 75
    # the clutch locks with the engine above the shaft: the engine's RPM rate (state, jerk
    # limited) turns round while the shaft runs away, and for a step the shaft overruns it by
    # more than 20 % (the box's coasting drag), as Open Rails' formulas give
    assert np.sum(np.diff(r.speed) < 0) <= 2
    assert r.notes == ()
    # a manual box is run as automatic, and the run says so
    man = replace(dmu101, orts=replace(dmu101.orts, gearbox=replace(dmu101.orts.gearbox, operation="manual")))
    assert any("manual gearbox run as automatic" in n for n in run_train([man], [], seconds=0.1).notes)


def test_gearbox_coasting_drag(dmu101):
    """While the shaft overruns the engine by more than 20 % (ClutchPercent < −20) the box
    gives −t·CoastingForce·(1 + slip) instead of traction."""
    from tdbtools.physics.orts.gearbox import GearBox, gears_of

    (e,) = diesel.establish(dmu101)
    box = GearBox(gears_of(dmu101.orts.gearbox, e), e)
    box.current = 0
    box.slip = -0.5
    assert box.force(1.0, 5.0, 1000.0) == pytest.approx(-250.0)
    assert box.force(0.5, 5.0, 1000.0) == pytest.approx(-125.0)
    box.slip = -0.1  # within 20 %: traction
    assert box.force(1.0, 5.0, 1000.0) > 0


def test_gearbox_power_cap_and_shift_waits_for_the_engine(dmu101):
    """The gear force is capped by the engine's power at its RPM over the speed; a shift is
    selected only with the engine within 5 % of the shaft's RPM (``clutch < 0.05``)."""
    from tdbtools.physics.orts.gearbox import GearBox, gears_of

    (e,) = diesel.establish(dmu101)
    big = replace(dmu101.orts.gearbox, max_forces_n=(1e6, 1e6, 1e6, 1e6))
    box = GearBox(gears_of(big, e), e)
    box.current, box.slip = 0, 0.0
    assert box.force(1.0, 5.0, 1500.0) == pytest.approx(e.power(1500.0) / 5.0)
    assert box.force(0.5, 5.0, 1500.0) == pytest.approx(0.5 * e.power(1500.0) / 5.0)
    box = GearBox(gears_of(dmu101.orts.gearbox, e), e)
    box.current = box.next = 0
    v = 0.9 * dmu101.orts.gearbox.max_speeds_ms[0]  # above UpGearProportion·V_1
    box.slip = 0.1
    box.update(1.0, v)
    assert box.next == 0
    box.slip = 0.02
    box.update(1.0, v)
    assert box.next == 1
    box.update(1.0, v)
    assert box.current == 1


# -- resistance at low speed (MSTSWagon.UpdateTrainBaseResistance) -------------------------------


def test_davis_starting_force_closed_form():
    """A car with Davis values and no ORTSStandstillFriction: F0 = bearing lbf per UK ton ×
    wheel radius / 18.5 in × UK tons + 1120/g · axle load (UK tons) lbf, g on the line from
    800 at 5 t to 400 at 26 t per axle; at least 1.2·A; then linear to Davis at 5 mph."""
    coach = _stock("wagons/COACH.wag")
    lbf, tuk = 4.44822162, 1016.0469088
    axles = coach.num_axles - coach.num_drive_axles
    axle_t = coach.mass_kg / axles / tuk
    g = max(800.0 - 400.0 * (axle_t - 5.0) / 21.0, 100.0)
    per_ton = {"Roller": 4.5, "Low": 2.5, "Grease": 30.0}.get(coach.bearing_type, 20.0)
    want = (
        coach.mass_kg / tuk * per_ton * lbf * coach.wheel_radius_m / (18.5 * 0.0254)
        + 1120.0 / g * axle_t * lbf
    )
    want = max(want, 1.2 * coach.davis_a) if want < coach.davis_a else want
    assert orts_resistance.starting_force(coach) == pytest.approx(want, rel=1e-12)
    # cold bearings (−10 °C and below): 30/45/12/7.5 lbf per ton
    cold = {"Roller": 12.0, "Low": 7.5, "Grease": 45.0}.get(coach.bearing_type, 30.0)
    assert orts_resistance.starting_force(coach, -20.0) - orts_resistance.starting_force(
        coach
    ) == pytest.approx(
        coach.mass_kg / tuk * (cold - per_ton) * lbf * coach.wheel_radius_m / (18.5 * 0.0254), rel=1e-9
    )
    # the floor: a car whose A exceeds that starting force starts from 1.2·A
    heavy_a = replace(coach, davis_a=1e5)
    assert orts_resistance.starting_force(heavy_a) == pytest.approx(1.2e5)
    # the line to Davis at 5 mph
    f0, vm = orts_resistance.starting_terms([coach])
    assert vm[0] == pytest.approx(orts_resistance.MPH5)
    v = 0.5 * vm[0]
    davis5 = coach.davis_a + vm[0] * (coach.davis_b + vm[0] * coach.davis_c)
    assert orts_resistance.resistance([coach], f0, vm, np.ones(1), v) == pytest.approx(0.5 * (f0[0] + davis5))
    v = 2 * vm[0]
    assert orts_resistance.resistance([coach], f0, vm, np.ones(1), v) == pytest.approx(
        coach.davis_a + v * (coach.davis_b + v * coach.davis_c)
    )


def test_standstill_friction_and_merge_speed_from_the_file():
    coach = replace(_stock("wagons/COACH.wag"), standstill_friction_n=5e3, merge_speed_ms=3.0)
    f0, vm = orts_resistance.starting_terms([coach])
    assert (f0[0], vm[0]) == (5e3, 3.0)
    f0c, _ = orts_resistance.starting_terms([coach], -20.0)
    assert f0c[0] == pytest.approx(6e3)  # the static factor 1.2 with frozen bearings
    at3 = coach.davis_a + 3.0 * (coach.davis_b + 3.0 * coach.davis_c)
    assert orts_resistance.resistance([coach], f0, vm, np.ones(1), 1.0) == pytest.approx(
        5e3 + (at3 - 5e3) / 3.0
    )


def test_run_starts_against_the_starting_resistance():
    """A coasting check: a train standing with no traction stays; a light push at 1 m/s
    loses speed at the low-speed line's force over the mass."""
    el, coach = _stock("electric/EL_LOCO.eng"), _stock("wagons/COACH.wag")
    r = run_train([el, coach], [], seconds=0.1, speed0=1.0)
    f0, vm = orts_resistance.starting_terms([el, coach])
    drag = np.ones(2)
    want = orts_resistance.resistance([el, coach], f0, vm, drag, 1.0)
    assert r.speed[1] == pytest.approx(1.0 - want / (el.mass_kg + coach.mass_kg) * 0.1, rel=1e-12)
    assert want > el.davis_a + coach.davis_a + 1.0 * (el.davis_b + coach.davis_b)


def test_freight_animations_set_the_mass():
    """ORTSFreightAnims with WagonEmptyWeight: Open Rails runs the wagon at the empty weight
    plus the first continuous load full at the start plus the static animations."""
    from tdbtools.physics.orts.mass import orts_mass

    hop = _stock("wagons/HOPPER.wag")
    f = hop.orts.freight
    assert (f.empty_kg, f.load_kg, f.static_kg) == pytest.approx((13.7e3, 32.3e3, 0.5e3))
    assert hop.mass_kg == pytest.approx(13.7e3)  # MassKG: what the engineers' profile runs
    assert orts_mass(hop) == pytest.approx(46.5e3)
    not_full = replace(hop, orts=replace(hop.orts, freight=replace(f, load_kg=0.0)))
    assert orts_mass(not_full) == pytest.approx(14.2e3)
    assert orts_mass(replace(hop, orts=replace(hop.orts, freight=None))) == hop.mass_kg
    # the run accelerates the loaded mass: a coasting step from 20 m/s
    el = _stock("electric/EL_LOCO.eng")
    r = run_train([el, hop], [], seconds=0.1, speed0=20.0)
    f0, vm = orts_resistance.starting_terms([el, hop])
    resist = orts_resistance.resistance([el, hop], f0, vm, np.ones(2), 20.0)
    assert r.speed[1] == pytest.approx(20.0 - resist / (el.mass_kg + 46.5e3) * 0.1, rel=1e-12)


def test_full_at_start_flag_forms(tmp_path):
    """FullAtStart ( ) is true (ReadBoolBlock's default), FullAtStart ( 0 ) false."""
    body = (
        "SIMISA@@@@@@@@@@JINX0D0t______\n\nWagon ( W Type ( Freight ) Mass ( 10t ) ORTSFreightAnims ( "
        "WagonEmptyWeight ( 10t ) FreightAnimContinuous ( FreightWeightWhenFull ( 20t ) FullAtStart ( {} ) ) ) )\n"
    )
    for flag, load in (("", 20e3), ("0", 0.0), ("1", 20e3)):
        p = tmp_path / f"W{flag or 'e'}.wag"
        p.write_text(body.format(flag))
        assert read_stock(p).orts.freight.load_kg == load
