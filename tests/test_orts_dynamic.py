"""The dynamic brake under the Open Rails profile (docs/physics.md §7.2): the force law
from the curves and from ``DynamicBrakesMaximumForce``, Open Rails' engaging delay, the
force ramp, throttle and dynamic brake excluding each other, the controller, a run that
decelerates as F/m predicts, the replay's forces and the scenario schedule's key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats.stock import read_stock
from tdbtools.formats.stock_orts import TractionRamps
from tdbtools.physics.orts import traction
from tdbtools.physics.orts.controllers import dynamic_value, lead_dynamic_controller
from tdbtools.physics.orts.dynamic import DynamicBrake, engage_delay
from tdbtools.physics.orts.mass import orts_mass
from tdbtools.physics.orts.resistance import resistance, starting_terms
from tdbtools.physics.orts.run import Command, run_train, trailing_drag_factors

DATA = Path(__file__).parent / "data" / "orts_stock"


@pytest.fixture(scope="module")
def el():
    return read_stock(DATA / "electric" / "EL_LOCO.eng")


def test_reads_the_dynamic_brake_tokens(el):
    o = el.orts
    assert o.dynamic_brake_delay_s == 10.0
    assert o.dynamic_ramps.force_up == 60e3 and o.dynamic_ramps.force_down == 0.0
    assert [n.value for n in o.dynamic_brake.notches] == [0, 0.25, 0.5, 0.75, 1]
    assert o.dynamic_brake_min_speed_ms == pytest.approx(5 / 3.6)


def test_force_law_closed_forms(el):
    # MaxForce law: setting × DynamicBrakesMaximumForce, none below the minimum speed or at rest
    assert traction.dynamic_brake_force(0.5, 20.0, 240e3, None, 5 / 3.6) == 120e3
    assert traction.dynamic_brake_force(1.0, 1.0, 240e3, None, 5 / 3.6) == 0.0
    assert traction.dynamic_brake_force(1.0, 0.0, 240e3, None, 0.0) == 0.0
    # the fixture's curves: 240 kN up to 6000 kW / 240 kN = 25 m/s, 6000 kW / v above
    from tdbtools.physics.orts.unit import PowerUnit

    u = PowerUnit(el)
    assert u.dynamic(1.0, 50.0) == pytest.approx(6e6 / 50.0)
    assert u.dynamic(1.0, 10.0) == pytest.approx(240e3)
    assert u.dynamic(0.5, 10.0) == pytest.approx(120e3)
    assert u.dynamic(1.0, 1.0) == 0.0  # below DynamicBrakesMinUsableSpeed (5 km/h)


def test_electric_delay_and_controller(el):
    assert engage_delay(10.0, "Electric") == 2.0 and engage_delay(10.0, "Diesel") == 10.0
    assert engage_delay(3.0, "Electric") == 3.0 and engage_delay(-1.0, "Diesel") == 0.0
    spec = lead_dynamic_controller([el])
    assert dynamic_value(spec, 0.6) == 0.5 and dynamic_value(spec, 1.0) == 1.0  # Dummy notches
    assert dynamic_value(None, 0.6) == 0.6


def _const(setting, v):
    return 100e3 * setting


def test_engages_after_the_delay_then_ramps():
    db = DynamicBrake(_const, 2.0, TractionRamps(force_up=40e3))
    f = [db.step(1.0, 0.0, 0.0, 10.0, 0.25) for _ in range(16)]
    # the conditions first hold at step 0; engaged once 0.25·k s > 2 s: step 9
    assert f[:9] == [0.0] * 9
    assert f[9:14] == pytest.approx([10e3, 20e3, 30e3, 40e3, 50e3])  # 40 kN/s × 0.25 s
    assert f[-1] == pytest.approx(70e3)


def test_release_disengages_and_throttle_excludes():
    db = DynamicBrake(_const, 0.0, TractionRamps())
    # an open throttle (or traction still there) keeps it from engaging
    assert [db.step(1.0, 0.5, 0.0, 10.0, 0.1) for _ in range(5)] == [0.0] * 5
    assert [db.step(1.0, 0.0, 1e3, 10.0, 0.1) for _ in range(5)] == [0.0] * 5
    assert not db.engaged
    assert [db.step(1.0, 0.0, 0.0, 10.0, 0.1) for _ in range(3)] == [0.0, 100e3, 100e3]
    # engaged, a throttle opened meanwhile does not release it while the handle asks
    assert db.step(1.0, 1.0, 0.0, 10.0, 0.1) == 100e3 and db.engaged
    assert db.step(0.0, 1.0, 0.0, 10.0, 0.1) == 0.0 and db.engaged  # force to 0 first
    db.step(0.0, 1.0, 0.0, 10.0, 0.1)
    assert not db.engaged


def test_run_decelerates_as_f_over_m(el):
    dt, v0 = 0.25, 30.0
    r = run_train([el], [Command(0.0, dynamic=0.6)], seconds=20.0, dt=dt, speed0=v0)
    m = orts_mass(el)
    # electric: the file's 10 s delay is 2 s; the handle's 0.6 is the Dummy notch 0.5
    first = int(np.flatnonzero(r.brake > 0)[0])
    assert first == 9  # 0.25·9 > 2
    assert (r.traction == 0).all()
    f0, vm = starting_terms([el], 25.0)
    drag = trailing_drag_factors([el])
    curve = el.orts.dynamic_brake_curve
    ramped = False
    for i in range(first, len(r.time) - 1):
        want = curve(0.5, r.speed[i])
        fd = r.brake[i]
        # 60 kN/s from the file: 15 kN a step until the curve's force
        assert fd == pytest.approx(min(want, 15e3 * (i - first + 1)), rel=1e-9)
        ramped |= fd == pytest.approx(want)
        a = (r.speed[i + 1] - r.speed[i]) / dt
        assert a == pytest.approx(-(fd + resistance([el], f0, vm, drag, r.speed[i])) / m, rel=1e-9)
    assert ramped
    # at full dynamic brake above 25 m/s: 6 MW / v; the deceleration is F/m plus resistance
    assert r.speed[-1] < v0 - 5.0


def test_throttle_first_keeps_the_dynamic_brake_off(el):
    r = run_train([el], [Command(0.0, throttle=1.0, dynamic=1.0)], seconds=5.0, dt=0.25, speed0=20.0)
    assert (r.brake == 0).all() and (r.traction[1:] > 0).all()
    # released throttle: it engages 2 s + a step later, and the traction is gone
    r = run_train(
        [el], [Command(0.0, throttle=1.0, dynamic=1.0), Command(1.0, throttle=0.0)], seconds=6.0, dt=0.25,
        speed0=20.0,
    )  # fmt: skip
    on = np.flatnonzero(r.brake > 0)
    assert on[0] == 4 + 9 and (r.traction[on] == 0).all()
    # engaged first: a throttle opened while the handle still asks gives no traction;
    # the handle released, the force drops to 0, it disengages and the throttle pulls
    r = run_train(
        [el], [Command(0.0, dynamic=1.0), Command(4.0, throttle=1.0), Command(6.0, dynamic=0.0)],
        seconds=8.0, dt=0.25, speed0=20.0,
    )  # fmt: skip
    assert (r.brake[9:24] > 0).all() and (r.traction[:26] == 0).all()
    assert (r.brake[24:] == 0).all() and (r.traction[26:] > 0).all()


def test_replay_forces_apply_it(el):
    from tdbtools.physics.driver import Controls
    from tdbtools.physics.orts.replay_forces import OrtsTrainForces

    coach = read_stock(DATA / "wagons" / "COACH.wag")
    stocks = [el, coach]
    f = OrtsTrainForces([stocks], np.array([0]), [orts_mass(el) + orts_mass(coach)])
    v = np.full(2, 30.0)
    z = np.zeros(2)
    out = [f.forces([Controls(dynamic=1.0)], v, z, z, 0.25) for _ in range(20)]
    brk = np.array([o[1] for o in out])
    # the air brakes stay released: the locomotive's brake force is the dynamic brake's
    assert (brk[:, 1] == 0).all() and (brk[:9, 0] == 0).all()
    assert brk[9, 0] == pytest.approx(15e3) and brk[-1, 0] == pytest.approx(min(6e6 / 30.0, 15e3 * 11))
    # and the engineers' view of the controls: no dynamic key, nothing
    f2 = OrtsTrainForces([stocks], np.array([0]), [1.0])
    assert all((f2.forces([Controls()], v, z, z, 0.25)[1] == 0).all() for _ in range(20))


def test_scenario_schedule_dynamic_key():
    from tdbtools.errors import TdbToolsError
    from tdbtools.physics.scenario import scenario_from_text

    body = '[[train]]\nconsist = "c"\npath = "p"\nschedule = [{ at = 0, dynamic = 0.5 }, { at = 9, throttle = 1 }]\n'
    sc = scenario_from_text('route = "x"\n' + body, "s.toml")
    cmds = sc.trains[0].schedule
    assert cmds[0].dynamic == 0.5 and cmds[1].dynamic == 0.0
    with pytest.raises(TdbToolsError, match=r"dynamic: 2 is outside \[0.0, 1.0\]"):
        scenario_from_text('route = "x"\n' + body.replace("0.5", "2"), "s.toml")


@pytest.mark.by_stock
def test_a_replay_schedule_drives_it_and_the_engineers_profile_refuses_it():
    from dataclasses import replace

    from tdbtools.cli import bundled_scenario
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Command as Cmd
    from tdbtools.physics.scenario import read_scenario, with_settings
    from tdbtools.physics.stages.setup import ReplayError

    sc = read_scenario(bundled_scenario())
    t0 = replace(sc.trains[0], driver="schedule", schedule=(Cmd(0.0, dynamic=1.0),))
    sc = replace(sc, trains=(t0, *sc.trains[1:]))
    with pytest.raises(ReplayError, match="asks for the dynamic brake, which only"):
        Replay(with_settings(sc, duration=1, physics="engineering"))
    rep = Replay(with_settings(sc, duration=1))
    assert rep.forces.orts is not None
    rep.step()  # the schedule's dynamic handle reaches the Open Rails forces


def test_reads_bare_numbers_as_open_rails_does(tmp_path):
    """DynamicBrakesMinUsableSpeed: a bare number is mph; the delay seconds; the ramps
    down to zero default to the ramps down (MSTSLocomotive.Parse/Initialize)."""
    p = tmp_path / "X.eng"
    p.write_text(
        "SIMISA@@@@@@@@@@JINX0D0t______\n\nWagon ( X Type ( Engine ) )\nEngine ( X Type ( Diesel ) "
        "DynamicBrakesMaximumForce ( 100kN ) DynamicBrakesMinUsableSpeed ( 5 ) "
        "DynamicBrakesDelayTimeBeforeEngaging ( 10 ) ORTSDynamicBrakeForceRampDownRate ( 30kN/s ) "
        "ORTSDynamicBrakePowerRampDownRate ( 2000kW/s ) )\n"
    )
    o = read_stock(p).orts
    assert o.dynamic_brake_min_speed_ms == pytest.approx(5 * 0.44704)
    assert o.dynamic_brake_delay_s == 10.0 and engage_delay(o.dynamic_brake_delay_s, "Diesel") == 10.0
    r = o.dynamic_ramps
    assert (r.force_down, r.force_to_zero, r.power_down, r.power_to_zero) == (30e3, 30e3, 2e6, 2e6)
