"""The Open Rails profile's vacuum brake (docs/physics.md §7.3, "Vacuum brake";
tdbtools/physics/orts/vacuumbrake.py): real-format vacuum stock, closed forms of the
lead's application and release, the piston's force, and a train run with it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats.stock import read_stock
from tdbtools.physics.orts.airbrake import Handle
from tdbtools.physics.orts.auto_brakes import brake_plan
from tdbtools.physics.orts.run import Command, _brake_train, run_train
from tdbtools.physics.orts.vacuumbrake import VacuumBrakeTrain

DATA = Path(__file__).parent / "data" / "orts_stock"
INHG = 0.4911542  # psi
ATM = 14.5037738  # psi (1 bar)
IN3 = 1.6387064e-5  # m³


def _vac():
    return read_stock(DATA / "vacuum" / "VAC_DMBS.eng"), read_stock(DATA / "vacuum" / "VAC_COACH.wag")


def test_reads_vacuum_tokens_in_inhg():
    """Open Rails reads a vacuum car's bare brake pressures as inHg and rates as inHg/s."""
    eng, coach = _vac()
    b, c, lb = eng.orts.brakes, coach.orts.brakes, eng.orts.loco_brakes
    assert b.vacuum and c.vacuum
    assert b.vac_max_force_psi == pytest.approx(21 * INHG)  # bare 21
    assert c.vac_max_force_psi == pytest.approx(21 * INHG)  # 21inHg
    assert b.vac_application_rate == pytest.approx(2.5 * INHG) and b.vac_release_rate == pytest.approx(
        2.5 * INHG
    )
    assert c.vac_cylinder_size_m == pytest.approx(0.4572) and c.vac_num_cylinders == 2
    assert c.direct_admission and not b.direct_admission
    assert lb.vac_max_psi == pytest.approx(21 * INHG) and lb.vac_charging_rate == pytest.approx(10 * INHG)


def _train(cars: int, **kw) -> VacuumBrakeTrain:
    args = dict(app_rate=2.5 * INHG, rel_rate=2.5 * INHG, cylinder_size_m=0.4572, num_cylinders=2)
    args.update(direct_admission=kw.pop("direct_admission", False), **kw)
    return VacuumBrakeTrain([20.0] * cars, **args)


def _volume_factor(cars: int, length: float = 20.0) -> float:
    """The train's brake-system volume over 200 ft³, from Open Rails' sizes in inches."""
    pipe = math.pi / 4 * 0.05**2 * max(5.0, 1.0 + length)
    cyl = 2 * math.pi * 9.0**2 * 4.5 * IN3
    return cars * (pipe + cyl) / (200 * 0.028316847)


def test_lead_application_is_the_compound_service_factor():
    """The lead's pipe pressure grows by (1 + h/τ) per sub-step, τ = BrakeServiceTimeFactor
    × the volume factor: from full vacuum to the atmosphere in n sub-steps with
    p_full·(1 + h/τ)^n ≥ 1 atm (closed form, 40 cars)."""
    tr = _train(40, service_tau=3.0)
    m = _volume_factor(40)
    assert tr.service_tau == pytest.approx(3.0 * m)
    h = 0.1 / int(0.1 / tr.tau + 1)
    n = math.ceil(math.log(ATM / (ATM - 21 * INHG)) / math.log(1 + h / tr.service_tau))
    t = 0.0
    while tr.p[0] < ATM - 1e-9:
        tr.step_pipe(Handle("service", 21.0), 0.1)
        t += 0.1
    assert t == pytest.approx(math.ceil(n * h / 0.1 - 1e-9) * 0.1, abs=1e-6)


def test_application_reaches_the_rear_of_40_cars_later():
    """Along 40 cars the rear follows the lead: it lags and then stands at the lead's
    pressure; a longer train (more volume) scales the lead's time by its volume."""
    tr = _train(40, service_tau=3.0)
    front = rear = None
    for i in range(600):
        tr.step(Handle("service", 21.0), 0.1)
        if front is None and tr.bp[0] < 1.0:
            front = (i + 1) * 0.1
        if rear is None and tr.bp[-1] < 1.0:
            rear = (i + 1) * 0.1
    assert front is not None and rear is not None and rear > front
    assert tr.bp[-1] < 0.01
    # twice the cars: twice the service time factor, the lead's closed form above
    assert _train(80, service_tau=3.0).service_tau == pytest.approx(
        2 * _train(40, service_tau=3.0).service_tau
    )


def test_release_time_is_the_ejector_rate():
    """Releasing, the ejector takes the lead's pipe from the atmosphere to full vacuum at
    its rate divided by the volume factor: 21 inHg / (rate/m) s."""
    tr = _train(10, charging_rate=10 * INHG)
    tr.p[:] = ATM
    m = _volume_factor(10)
    want = 21 * INHG / (10 * INHG / m)
    t = 0.0
    while tr.p[0] > ATM - 21 * INHG + 1e-9:
        tr.step_pipe(Handle("release"), 0.1)
        t += 0.1
    assert t == pytest.approx(math.ceil(want / 0.1 - 1e-9) * 0.1, abs=1e-6)


@pytest.mark.parametrize("vacuum", [15.0, 8.0, 0.0])
def test_cylinder_force_at_a_pipe_vacuum(vacuum):
    """Settled at a pipe vacuum V with the reservoir at full vacuum, the cylinder stands
    at the pipe's pressure and the force share is min((cyl − res′)/21 inHg, 1), res′ the
    reservoir Open Rails adjusts for the piston's travel (its volumes in in³)."""
    tr = _train(1, direct_admission=True)
    for _ in range(400):
        tr.step(Handle("service", 21.0 - vacuum), 0.1)
    cyl = ATM - vacuum * INHG
    vres = math.pi * 12**2 * 16
    vcyl = 2 * math.pi * 9**2 * 4.5
    travel = min(max(1 - vacuum * INHG / (21 * INHG), 0.01), 1.0)
    res = ATM - 21 * INHG
    adj = min(res + vres / (vres - travel * vcyl), cyl)
    share = min(max(cyl - adj, 0.0) / (21 * INHG), 1.0)
    assert tr.cyl_a[0] == pytest.approx(cyl, abs=1e-6)
    assert float(tr.cyl[0] / (21 * INHG)) == pytest.approx(share, abs=1e-6)


def test_direct_admission_keeps_the_pipe():
    """Without a direct admission valve the cylinder's air comes from the pipe, whose
    vacuum then rises; with one, from the atmosphere."""
    with_dav, without = _train(1, direct_admission=True), _train(1)
    for tr in (with_dav, without):
        tr.step_pipe(Handle("emergency"), 1.0)  # the lead's pipe towards the atmosphere
        p = tr.p.copy()
        tr.p[:] = p
        tr.step_valves(0.5)
    assert with_dav.p[0] > without.p[0]


def test_vacuum_train_stops_and_says_so():
    """A vacuum-braked DMU with coaches at 60 km/h brakes to a stand with Open Rails'
    vacuum law (its notes say so); the cylinders release when the vacuum is recreated."""
    eng, coach = _vac()
    stocks = [eng, coach, coach]
    tr = run_train(
        stocks,
        [Command(0.0, handle=Handle("service", 21.0))],
        seconds=200,
        speed0=60 / 3.6,
        stop_at_rest_after=1,
    )
    assert tr.speed[-1] == 0.0 and any("VacuumSinglePipe" in n for n in tr.notes)
    assert not any("air-brake law" in n for n in tr.notes)
    rel = run_train(
        stocks,
        [Command(0.0, handle=Handle("service", 21.0)), Command(30.0, handle=Handle("release"))],
        seconds=120,
    )
    assert rel.cyl_last[299] > 5.0 and rel.cyl_last[-1] == 0.0 and rel.bp_last[-1] > 20.9


def test_mixed_air_and_vacuum_runs_the_air_law():
    eng, _ = _vac()
    air = read_stock(DATA / "wagons" / "COACH.wag")
    air_train, _, _ = _brake_train([eng, air])
    assert not isinstance(air_train, VacuumBrakeTrain)
    tr = run_train([eng, air], [], seconds=1)
    assert any("air-brake law" in n for n in tr.notes)


def test_plan_asks_the_vacuum_that_gives_a_share():
    """The driver's plan for a vacuum train: the reduction it asks for, held, leaves the
    cylinders at the share of the full-service force it wanted."""
    eng, coach = _vac()
    stocks = [eng, coach, coach, coach]
    plan = brake_plan(stocks)
    assert plan.vacuum is not None and 0.5 < plan.full_fraction <= 1.0 and plan.lag_s > 0
    tr, max_cyl, _ = _brake_train(stocks)
    red = plan.reduction_now(0.5, tr.max_psi, tr.aux, tr.cyl)
    for _ in range(600):
        tr.step(Handle("service", red), 0.1)
    w = plan.capacity
    got = float(np.sum(w * np.clip(tr.cyl / max_cyl, 0, 1)) / np.sum(w))
    assert got == pytest.approx(0.5 * plan.full_fraction, abs=0.06)


@pytest.mark.slow
@pytest.mark.parametrize("kmh", [100, 40])
def test_auto_driver_stops_a_vacuum_train_in_time(tmp_path, kmh):
    """The automatic driver under Open Rails' laws stops a vacuum-braked DMU and three
    coaches at its stopping point as it stops an air-braked train (tests/test_orts_driver
    .py): the front within ORTS_ARRIVED_WITHIN before it, at most 0.5 m past; the plan
    measured the vacuum brake's own lag."""
    import shutil

    from tdbtools.cli import bundled_sample_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import scenario_from_text
    from tdbtools.physics.stages.setup import ORTS_ARRIVED_WITHIN

    sample = Path(bundled_sample_route()).parents[1]
    root = tmp_path / "sample"
    shutil.copytree(sample, root)
    vac = root / "TRAINS" / "TRAINSET" / "VAC"
    vac.mkdir()
    for name in ("VAC_DMBS.eng", "VAC_COACH.wag"):
        shutil.copyfile(DATA / "vacuum" / name, vac / name)
    lines = ["SIMISA@@@@@@@@@@JINX0D0t______", "", "Train (", '\tTrainCfg ( "v"', '\t\tName ( "v" )']
    lines.append("\t\tEngine ( UiD ( 0 ) EngineData ( VAC_DMBS VAC ) )")
    lines += [f"\t\tWagon ( UiD ( {i} ) WagonData ( VAC_COACH VAC ) )" for i in (1, 2, 3)]
    lines += ["\t)", ")", ""]
    con = root / "TRAINS" / "CONSISTS" / "vac.con"
    con.write_text("\n".join(lines))
    route = root / "ROUTES" / Path(bundled_sample_route()).name
    text = (
        f'route = "{route}"\nstep = 0.5\nduration = 400\nphysics = "openrails"\n'
        f'[[train]]\nname = "v"\nconsist = "{con}"\npath = "MainWE.pat"\ndriver = "auto"\n'
        f'max_speed = "{kmh}km/h"\n'
    )
    rep = Replay(scenario_from_text(text))
    assert isinstance(rep.forces.orts.brakes[0].air, VacuumBrakeTrain)
    result = rep.run()
    (t,) = rep.layout.trains
    (stop,) = [p for p in t.auto.stops if p.kind == "end"]
    (s,) = result.summary["trains"].values()
    front = float(rep.layout.engine.x[t.cars.start])
    assert s["finished"] and stop.arrived_at is not None and not s["derailed"]
    assert stop.s - ORTS_ARRIVED_WITHIN <= front <= stop.s + 0.5
    assert s["max_speed_kmh"] > 0.6 * min(kmh, 65.0)
