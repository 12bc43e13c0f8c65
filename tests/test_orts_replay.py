"""The Open Rails profile inside the route replay (physics = "openrails"; docs/physics.md §7.9)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from tdbtools.cli import bundled_scenario, main
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import ScenarioError, read_scenario, scenario_from_text, with_settings


@pytest.mark.by_stock
def test_scenario_key():
    text = 'route = "x"\nphysics = "openrails"\n[[train]]\nconsist = "c"\npath = "p"\n'
    sc = scenario_from_text(text)
    assert sc.physics == "openrails" and sc.rotating_mass is None
    assert sc.profile(False) == sc.profile(True) == ("openrails", False)  # Open Rails has no factor
    sc = scenario_from_text(text.replace('"openrails"', '"openrails"\nrotating_mass = true'))
    assert sc.profile(False) == ("openrails", True)
    # no key: by the stock, Open Rails' for .eng/.wag files, the engineers' with stand-ins
    sc = scenario_from_text(text.replace('physics = "openrails"\n', ""))
    assert sc.physics is None
    assert sc.profile(False) == ("openrails", False) and sc.profile(True) == ("engineering", True)
    with pytest.raises(ScenarioError, match="physics must be"):
        scenario_from_text(text.replace('"openrails"', '"msts"'))
    with pytest.raises(ScenarioError, match="rotating_mass"):
        scenario_from_text(text.replace('physics = "openrails"', "rotating_mass = 1"))
    base = scenario_from_text(text.replace('physics = "openrails"\n', "rotating_mass = true\n"))
    assert with_settings(base, physics="openrails").profile(False) == ("openrails", False)
    assert with_settings(base, physics="engineering").profile(False) == ("engineering", True)


@pytest.mark.by_stock
def test_the_sample_defaults_to_open_rails_and_stand_ins_to_engineering():
    rep = Replay(with_settings(read_scenario(bundled_scenario()), duration=1))
    assert rep.scenario.physics == "openrails" and rep.forces.orts is not None
    assert float(rep.model.rotating_mass.max()) == 1.0
    eng = Replay(with_settings(read_scenario(bundled_scenario()), duration=1, physics="engineering"))
    assert eng.forces.orts is None and float(eng.model.rotating_mass.max()) > 1.0


@pytest.mark.by_stock
def test_stand_in_stock_brings_the_engineers_laws(tmp_path):
    from tdbtools.cli import bundled_sample_route

    con = tmp_path / "odd.con"
    con.write_text(
        'SIMISA@@@@@@@@@@JINX0D0t______\nTrain ( TrainCfg ( "odd" Name ( "odd" ) '
        "Engine ( UiD ( 1 ) EngineData ( NOPE_LOCO NOPE_FOLDER ) ) ) )\n"
    )
    text = f'route = "{bundled_sample_route()}"\nstand_in = true\nduration = 1\n'
    text += f'[[train]]\nname = "odd"\nconsist = "{con}"\npath = "MainWE.pat"\n'
    rep = Replay(scenario_from_text(text))
    assert rep.scenario.physics == "engineering" and rep.forces.orts is None
    assert float(rep.model.rotating_mass.max()) > 1.0
    rep = Replay(
        scenario_from_text(text.replace("stand_in = true", 'stand_in = true\nphysics = "openrails"'))
    )
    assert rep.scenario.physics == "openrails" and rep.forces.orts is not None


def test_sample_replay_runs_with_open_rails_laws():
    sc = with_settings(read_scenario(bundled_scenario()), physics="openrails", duration=400)
    rep = Replay(sc)
    # (of the compiled step, the profile takes the per-car kernels, not the engineers' train loop)
    assert rep.forces.orts is not None and (rep.forces.ck is None or rep.forces.ck.trains is None)
    result = rep.run()
    (cols,) = result.traces.values()
    assert np.nanmax(cols["speed"]) > 15.0  # it got going
    assert np.nanmax(cols["brake"]) > 0.3  # and braked through its cylinders
    (t,) = result.summary["trains"].values()
    assert t["finished"]


def test_cli_says_which_profile(tmp_path):
    r = CliRunner().invoke(
        main, ["replay", "--physics", "openrails", "--duration", "60", "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.output
    assert "Open Rails physics profile" in r.output


def _orts_forces():
    from pathlib import Path

    from tdbtools.formats.stock import read_stock
    from tdbtools.physics.orts.replay_forces import OrtsTrainForces

    d = Path(__file__).parent / "data" / "orts_stock"
    stocks = [read_stock(d / "dmu" / "DMU_A.eng"), read_stock(d / "wagons" / "COACH.wag")]
    mass = sum(s.mass_kg for s in stocks)
    return stocks, OrtsTrainForces([stocks], np.array([0]), [mass]), mass


def test_brake_fraction_is_a_pipe_reduction():
    from tdbtools.physics.driver import Controls

    stocks, f, _ = _orts_forces()
    z = np.zeros(2)
    for _ in range(300):  # 30 s: the pipe and the cylinders settle
        trac, brk, scale, applied = f.forces([Controls(brake=0.5)], z, z, z, 0.1)
    drop = 0.5 * f.full_drop[0]
    cyl = f.brakes[0].air.cyl
    assert cyl == pytest.approx([drop * 2.5] * 2, rel=1e-3)
    frac = drop * 2.5 / (3.8 * 14.5037738)
    # at rest: the DMU's 100 kN shoe force × μ(0), the coach's 110 kN × μ(0)
    mu0 = 7.6 / 17.5 + 0.07
    assert brk == pytest.approx([100e3 * frac * mu0, 110e3 * frac * mu0], rel=1e-3)
    assert applied[0] == pytest.approx(frac, rel=1e-3) and trac.tolist() == [0.0, 0.0]


def test_throttle_and_speed_target_drive_the_engines():
    from tdbtools.physics.driver import Controls

    stocks, f, mass = _orts_forces()
    v = np.full(2, 5.0)
    z = np.zeros(2)
    trac, *_ = f.forces([Controls(throttle=0.5)], v, z, z, 0.1)
    ((_, unit),) = f.units[0]
    e = stocks[0].orts.diesel_engines[0]
    from tdbtools.physics.orts import diesel

    app = min(0.5, diesel.apparent_throttle(e, unit.rpm[0]))
    assert trac[0] == pytest.approx(stocks[0].tractive_force_curve(app, 5.0)) and trac[1] == 0.0
    # a speed target above the speed, engines near idle: full throttle
    _, _, scale, _ = f.forces([Controls(speed_target=20.0)], v, z, z, 0.1)
    assert scale[0] == 1.0
    # a target below the speed on the level: no traction, and the brakes are asked for
    _, _, scale, _ = f.forces([Controls(speed_target=4.0)], v, z, z, 0.1)
    assert scale[0] == 0.0 and f.brakes[0].air.bp[0] < f.brakes[0].air.max_psi


def test_engines_at_idle_get_full_throttle_for_a_higher_target():
    """At idle RPM the apparent throttle is 0, so is the force the curves give: the
    target still asks for full throttle (else the engines would never run up)."""
    from tdbtools.physics.driver import Controls

    _, f, _ = _orts_forces()
    z = np.zeros(2)
    ((_, unit),) = f.units[0]
    assert unit.capacity(0.0) == 0.0
    _, _, scale, _ = f.forces([Controls(speed_target=10.0)], z, z, z, 0.1)
    assert scale[0] == 1.0


def _final_front(physics: str):
    sc = with_settings(read_scenario(bundled_scenario()), physics=physics)
    rep = Replay(sc)
    result = rep.run()
    (t,) = rep.layout.trains
    (stop,) = [p for p in t.auto.stops if p.kind == "end"]
    (summary,) = result.summary["trains"].values()
    return summary, float(rep.layout.engine.x[t.cars.start]), stop


def test_automatic_driver_stops_at_the_end_with_open_rails_brakes():
    """The brakes lag ~35 s (AirSinglePipe defaults, 7 cars): the driver brakes that much
    earlier, laps the handle instead of easing a brake that would release fully, and
    stands within ARRIVED_WITHIN (5 m) before its stopping point, never past it."""
    from tdbtools.physics.stages.setup import ORTS_ARRIVED_WITHIN

    summary, front, stop = _final_front("openrails")
    assert summary["finished"] and summary["events"].get("arrived") == 1
    assert stop.arrived_at is not None
    assert stop.s - ORTS_ARRIVED_WITHIN <= front <= stop.s + 0.5
    assert "derailment" not in summary["events"]


def test_brake_plan_lag_is_half_the_linear_build_up():
    """One car, a full-service reduction Δ: its cylinder rises at MaxApplicationRate to
    min(Δ·ratio, the cylinder of the full force), a ramp: the lag is half its time (plus
    the pipe's fall, under a second); reduction_for inverts the cylinder law."""
    from pathlib import Path

    from tdbtools.formats.stock import read_stock
    from tdbtools.physics.orts.auto_brakes import brake_plan

    d = Path(__file__).parent / "data" / "orts_stock"
    s = read_stock(d / "wagons" / "FREIGHT.wag")
    b = s.orts.brakes
    plan = brake_plan([s])
    top = min(plan.full_drop * b.aux_cyl_volume_ratio, b.max_cylinder_psi)
    ramp = top / b.max_application_rate
    assert ramp / 2 <= plan.lag_s <= ramp / 2 + 1.0
    assert plan.full_fraction == pytest.approx(min(top / b.max_cylinder_psi, 1.0), rel=1e-3)
    assert plan.reduction_for(1.0) == pytest.approx(
        min(b.max_cylinder_psi / b.aux_cyl_volume_ratio, plan.full_drop)
    )
    assert plan.reduction_for(0.5) == pytest.approx(plan.reduction_for(1.0) / 2)
    assert plan.reduction_for(0.0) == 0.0


def test_compiled_pipe_gives_the_python_numbers():
    """The brake pipe's compiled sub-steps (physics/_orts_kernel.py) against the Python
    code they mirror: the same pressures, bit for bit, through an application, a lap and
    a release along 40 cars."""
    from tdbtools.physics.kernels import compiled_available
    from tdbtools.physics.orts.airbrake import AirBrakeTrain, Handle

    if not compiled_available():
        pytest.skip("numba is not available")

    def train(compiled: bool) -> AirBrakeTrain:
        # cars of different lengths: their pipe volumes differ, so does each pair's share
        lengths = [12.0 + 7.0 * (i % 3) for i in range(40)]
        t = AirBrakeTrain(lengths, app_rate=0.9, rel_rate=1.86, aux_rate=1.684, ratio=2.5)
        t.compiled = compiled
        return t

    a, b = train(True), train(False)
    peak = 0.0
    for i in range(400):
        h = Handle("service", 12.0) if i < 150 else Handle("lap") if i < 250 else Handle("release")
        a.step(h, 0.1)
        b.step(h, 0.1)
        assert np.array_equal(a.bp, b.bp) and np.array_equal(a.cyl, b.cyl)
        peak = max(peak, float(b.cyl.max()))
    assert peak > 20.0 and float(b.cyl[0]) < peak  # applied, then the lead releasing


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def test_compiled_valves_give_the_numpy_numbers():
    """The triple valves' compiled step (physics/_orts_kernel.step_valves) against the
    numpy masks it mirrors, bit for bit (the sign of a zero, a NaN), on random cars in
    every valve state: pipes above, near and below their reservoirs, emergencies,
    cylinders at and near zero, reservoirs at the pipe."""
    from tdbtools.physics.kernels import compiled_available
    from tdbtools.physics.orts.airbrake import AirBrakeTrain

    if not compiled_available():
        pytest.skip("numba is not available")
    rng = np.random.default_rng(32)
    n = 4000

    def train(compiled: bool) -> AirBrakeTrain:
        r = np.random.default_rng(7)
        t = AirBrakeTrain(
            r.uniform(5.0, 30.0, n), app_rate=r.uniform(0.5, 20.0, n), rel_rate=r.uniform(0.5, 5.0, n),
            aux_rate=r.uniform(0.5, 3.0, n), ratio=r.uniform(1.5, 3.5, n), max_psi=90.0, full_service_drop=26.0,
        )  # fmt: skip
        t.compiled = compiled
        return t

    a, b = train(True), train(False)
    special = np.array([0.0, -0.0, np.nan, 64.0, 63.0, 90.0, 89.0, 91.0])
    for step in range(30):
        bp = rng.uniform(-5.0, 95.0, n)
        aux = np.where(
            rng.random(n) < 0.2, bp + rng.choice([-1.0, 0.0, 1.0, 1e-12], n), rng.uniform(0.0, 95.0, n)
        )
        cyl = np.where(rng.random(n) < 0.3, rng.choice([0.0, -0.0, 1e-9], n), rng.uniform(0.0, 70.0, n))
        for arr in (bp, aux, cyl):
            pick = rng.random(n) < 0.02
            arr[pick] = rng.choice(special, int(pick.sum()))
        state = rng.integers(0, 4, n).astype(np.int8)
        for t in (a, b):
            t.bp[:], t.aux[:], t.cyl[:], t.state[:] = bp, aux, cyl, state
        for _ in range(3):  # from those states on, as a replay steps them
            dt = float(rng.choice([0.1, 0.01, 1.0]))
            a.step_valves(dt)
            b.step_valves(dt)
            for name in ("bp", "aux", "cyl", "state"):
                assert np.array_equal(_bits(getattr(a, name)), _bits(getattr(b, name))), (step, name)
    assert {0, 1, 2, 3} <= set(b.state.tolist())


def test_traction_pulls_forward_when_rolling_back():
    """A train rolling back (brakes released on a rising grade) with the driver asking
    for a speed ahead: the traction pulls forward, against the motion (it once pushed
    along the motion, and a train ran off backwards)."""
    from tdbtools.physics.driver import Controls

    _, f, _ = _orts_forces()
    v = np.full(2, -0.4)
    z = np.zeros(2)
    for _ in range(50):  # the engines run up
        trac, *_ = f.forces([Controls(speed_target=5.0)], v, z, z, 0.1)
    assert trac[0] > 0.0 and trac[1] == 0.0
