"""Cab controllers as Open Rails applies them (docs/physics.md §7.10): a handle position
gives the throttle and the brake-pipe reduction Open Rails' notch controller and default
train-brake controller give; the fixture dmu/notched/DMU_N.eng (an include of DMU_A.eng,
UTF-8, odd case) has a 7-notch throttle and a graduated self-lapping brake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdbtools.formats.stock import read_stock
from tdbtools.formats.stock_orts import ControllerSpec, Notch
from tdbtools.physics.orts.controllers import (
    brake_handle,
    lead_controllers,
    notch_fraction,
    set_value,
    throttle_value,
)
from tdbtools.physics.orts.run import Command, run_train

D = Path(__file__).parent / "data" / "orts_stock"
BAR = 14.5037738


@pytest.fixture(scope="module")
def notched():
    return read_stock(D / "dmu" / "notched" / "DMU_N.eng", root=D)


def test_the_notched_file_reads_through_its_include(notched):
    base = read_stock(D / "dmu" / "DMU_A.eng")
    # everything of the included file, and what the including file adds
    assert notched.mass_kg == base.mass_kg and notched.orts.diesel_engines == base.orts.diesel_engines
    assert notched.max_continuous_force_n == pytest.approx(36e3)
    assert notched.orts.min_reduction_psi == pytest.approx(0.4 * BAR)
    th, br = notched.orts.throttle, notched.orts.train_brake
    assert [n.value for n in th.notches] == [0, 0.143, 0.286, 0.429, 0.571, 0.714, 0.857, 1]
    assert not any(n.smooth for n in th.notches)
    assert [n.kind for n in br.notches] == [
        "release",
        "running",
        "graduatedselflaplimited",
        "fullservice",
        "emergency",
    ]
    assert [n.smooth for n in br.notches] == [False, False, True, False, False]


def test_a_handle_clicks_into_the_notch_at_or_below(notched):
    th = notched.orts.throttle
    assert set_value(th, 0.5) == (3, 0.429)  # 50 % on a 7-notch throttle: notch 3
    assert set_value(th, 0.571) == (4, 0.571)
    assert set_value(th, 1.7) == (7, 1.0) and set_value(th, -1.0) == (0, 0.0)
    assert throttle_value(th, 0.5) == 0.429
    assert throttle_value(None, 0.5) == 0.5  # no controller: the handle is the throttle
    smooth = ControllerSpec(0.0, 1.0, 0.1, 0.0, (Notch(0.0, True), Notch(0.5, False), Notch(0.8, True)))
    assert set_value(smooth, 0.3) == (0, 0.3) and set_value(smooth, 0.6) == (1, 0.5)
    assert notch_fraction(smooth, 0, 0.3) == pytest.approx(0.6)
    assert notch_fraction(smooth, 2, 0.9) == pytest.approx(0.5)  # to 1 after the last notch
    assert notch_fraction(smooth, 1, 0.5) == 1.0
    rel = ControllerSpec(0.0, 1.0, 0.1, 0.0, (Notch(0.0, True, "release"), Notch(0.5, False)))
    assert notch_fraction(rel, 0, 0.1) == pytest.approx(0.8)  # reversed in a Release notch


def test_train_brake_positions(notched):
    br = notched.orts.train_brake
    full = notched.orts.loco_brakes.full_service_drop_psi
    mn = notched.orts.min_reduction_psi
    assert brake_handle(br, 0.0, full, mn).position == "release"
    assert brake_handle(br, 0.15, full, mn).position == "release"  # running
    # graduated self-lapping from 0.2 to 0.85: min·(1 − x) + full·x
    for h in (0.2, 0.4, 0.6, 0.84):
        x = (h - 0.2) / 0.65
        got = brake_handle(br, h, full, mn)
        assert got.position == "service" and got.reduction == pytest.approx(mn * (1 - x) + full * x)
    assert brake_handle(br, 0.9, full, mn).reduction == pytest.approx(full)  # full service
    assert brake_handle(br, 1.0, full, mn).position == "emergency"
    # no controller (or no notches): full × handle, as Open Rails' "no notch" case
    assert brake_handle(None, 0.5, full).reduction == pytest.approx(full / 2)
    assert brake_handle(None, 0.0, full).position == "release"
    lapped = ControllerSpec(0, 1, 0.1, 0, (Notch(0.0, False, "release"), Notch(0.5, False, "lap")))
    assert brake_handle(lapped, 0.6, full).position == "lap"


def test_lead_controllers(notched):
    coach = read_stock(D / "wagons" / "COACH.wag")
    th, br, mn = lead_controllers([coach, notched, read_stock(D / "dmu" / "DMU_A.eng")])
    assert (
        th is notched.orts.throttle
        and br is notched.orts.train_brake
        and mn == notched.orts.min_reduction_psi
    )
    assert lead_controllers([coach]) == (None, None, 0.0)


def test_half_throttle_gives_the_notch_force(notched):
    """50 % throttle on the 7-notch controller: the engine runs up to the RPM of 42.9 %
    and the force settles where the curves give it at that throttle (not at 50 %)."""
    base = read_stock(D / "dmu" / "DMU_A.eng")
    v0 = 10.0
    tr = run_train([notched], [Command(0.0, throttle=0.5)], seconds=40.0, speed0=v0)
    ref = run_train([base], [Command(0.0, throttle=0.5)], seconds=40.0, speed0=v0)
    e = notched.orts.diesel_engines[0]
    rpm = e.throttle_rpm(42.9)
    assert tr.rpm[-1] == pytest.approx(rpm, abs=1.0)
    assert ref.rpm[-1] == pytest.approx(e.throttle_rpm(50.0), abs=1.0)
    assert tr.traction[-1] < ref.traction[-1]


def test_brake_handle_in_a_run(notched):
    """The handle at 0.5 (graduated self-lap): the pipe falls by the notch's reduction and
    the cylinder settles at reduction × TripleValveRatio."""
    tr = run_train([notched], [Command(0.0, brake=0.5)], seconds=60.0, speed0=0.0)
    full = notched.orts.loco_brakes.full_service_drop_psi
    mn = notched.orts.min_reduction_psi
    x = (0.5 - 0.2) / 0.65
    red = mn * (1 - x) + full * x
    b = notched.orts.brakes
    assert tr.bp_last[-1] == pytest.approx(notched.orts.loco_brakes.max_system_psi - red, abs=0.05)
    assert tr.cyl_first[-1] == pytest.approx(min(red * b.aux_cyl_volume_ratio, 1e9), rel=0.02)


def test_a_file_written_as_real_british_files_are():
    """diesel/LOCO_CC.eng: long tons, lbf, hp, inches, bar/s, Comment blocks after values,
    Open Rails' ORTSCylinderSpringPressure and ORTSBrakePipeChargingRate tokens (reading a
    real Class 47 file showed both were missed), a smooth throttle notch."""
    s = read_stock(D / "diesel" / "LOCO_CC.eng")
    o = s.orts
    assert s.mass_kg == pytest.approx(110 * 1016.05, rel=1e-5)  # long tons
    assert s.max_force_n == pytest.approx(55000 * 4.4482216)
    assert s.driver_wheel_radius_m == pytest.approx(22.5 * 0.0254)
    assert o.max_brake_shoe_force_n == pytest.approx(150000 * 4.4482216)
    assert o.brakes.cylinder_spring_psi == 5.0
    assert o.brakes.max_application_rate == pytest.approx(1.5 * BAR)
    assert o.loco_brakes.pipe_charging_rate == pytest.approx(4.5 * BAR)
    assert o.diesel_engines[0].max_power_w == pytest.approx(2500 * 745.6999, rel=1e-6)
    # the smooth notch from 0.1: 50 % is 50 %; 5 % falls to notch 0 (not smooth): 0
    assert throttle_value(o.throttle, 0.5) == 0.5 and throttle_value(o.throttle, 0.05) == 0.0


def test_real_format_locomotive_brakes_to_the_closed_form():
    """Full service at rest: the pipe falls 1.5 bar; the valve stops where reservoir and
    cylinder meet (p·r/(1 + r) from the charged 5 bar) if that comes before reduction·r;
    the shoe force × μ(0) × (p − spring)/(p_max − spring) holds the train."""
    s = read_stock(D / "diesel" / "LOCO_CC.eng")
    o = s.orts
    lb, b = o.loco_brakes, o.brakes
    tr = run_train([s], [Command(0.0, brake=1.0)], seconds=30.0)
    r = b.aux_cyl_volume_ratio
    p = min(lb.full_service_drop_psi * r, lb.max_system_psi * r / (1 + r))
    assert tr.cyl_first[-1] == pytest.approx(p, rel=1e-3)
    mu0 = 7.6 / 17.5 + 0.07
    frac = (p - b.cylinder_spring_psi) / (b.max_cylinder_psi - b.cylinder_spring_psi)
    assert tr.brake[-1] == pytest.approx(o.max_brake_shoe_force_n * mu0 * frac, rel=1e-3)
    # full throttle from rest: the engine runs up, the speed rises, the force follows the
    # curves at the apparent throttle and never exceeds the adhesion limit
    run = run_train([s], [Command(0.0, throttle=1.0)], seconds=60.0)
    assert run.rpm[-1] == pytest.approx(750.0, abs=1.0) and run.speed[-1] > run.speed[100] > 0
    assert run.traction.max() <= 0.35 * s.mass_kg * 9.81
