"""An automatic driver's compiled step (tdbtools/physics/driver_step.py,
``_driver_kernel.one_step``) gives the controls and brake state of its Python
(:meth:`AutoDriver.__call__`), bit for bit, and leaves to it what it does not take."""

from __future__ import annotations

import collections
import random

import numpy as np
import pytest
from helpers import needs_kernels
from test_driver_batch import _random_driver, _same

from tdbtools.physics import driver_step
from tdbtools.physics.driver import AutoDriver, DriveState, Target

pytest.importorskip("numba", reason="the compiled step needs numba (tdbtools[fast])")
pytestmark = needs_kernels  # (compares the compiled step with the Python: none under the switch)


def _bits(x: float | None) -> bytes | None:
    return None if x is None else np.float64(x).tobytes()


def _controls(c) -> tuple:  # noqa: ANN001
    return (
        _bits(c.throttle),
        _bits(c.brake),
        _bits(c.deceleration),
        _bits(c.speed_target),
        c.emergency,
        _bits(c.dynamic),
    )


def _state(d: AutoDriver) -> tuple:
    return (_bits(d._applied), d._braking, d.finished, [(p.s, p.arrived_at, p.wait) for p in d.stops])


def _counting(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Counts what the compiled step gave: 'python' (left to the Python) or the control's kind."""
    seen: collections.Counter = collections.Counter()
    step = driver_step.CompiledStep.step

    def counting(self, d, st):  # noqa: ANN001, ANN202
        c = step(self, d, st)
        seen[
            "python"
            if c is None
            else "target"
            if c.speed_target is not None
            else "emergency"
            if c.emergency
            else "brake"
            if c.deceleration > 0.0
            else "coast"
        ] += 1
        return c

    monkeypatch.setattr(driver_step.CompiledStep, "step", counting)
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_compiled_step_gives_the_controls_and_state_of_the_python(seed, monkeypatch):
    """Random drivers (bare or in a signal wrapper, some lapping their brakes, some with
    a brake build-up, coasting, extra targets) in random states stepped 60 times, one
    copy compiled, one not: the same controls, ``_applied``, ``_braking``, stops and events
    after every call."""
    seen = _counting(monkeypatch)
    n = 120
    rng = random.Random(seed)
    made = [_random_driver(rng, k) for k in range(n)]
    rng2 = random.Random(seed)
    ref = [_random_driver(rng2, k) for k in range(n)]
    extra = random.Random(seed + 100)
    for (outer, d, *_), (_, d2, *_) in zip(made, ref):
        lap = extra.random() < 0.3
        braking = extra.random() < 0.5
        rob = extra.choice([1.5, 3.0])
        on_curve = extra.choice([0.02, 0.5])
        coast = extra.choice([d.coast_before, 30.0])
        for x in (d, d2):
            x.coast_before = coast
            x.lap_brakes, x._braking, x.release_over_build, x.ON_CURVE = lap, braking, rob, on_curve
        assert driver_step.compile_driver(outer) == (type(outer).__name__ != "DepartDriver")
        if type(outer).__name__ == "DepartDriver":
            assert driver_step.compile_driver(d)  # (its inner driver, bare)
        assert d.compiled is not None and d2.compiled is None
    front = np.array([rng.uniform(100.0, 3000.0) for _ in range(n)])
    speed = np.array([rng.choice([0.0, -0.5, rng.uniform(0.0, 35.0)]) for _ in range(n)])
    length = np.array([rng.uniform(20.0, 400.0) for _ in range(n)])
    dt = 0.5
    for step in range(60):
        time = 40.0 + step * dt
        for k in range(n):
            st = (time, 0.0, float(speed[k]), float(front[k]), float(front[k] - length[k]), dt)
            got = made[k][0](DriveState(*st))
            want = ref[k][0](DriveState(*st))
            assert _controls(got) == _controls(want), (k, step)
            assert _state(made[k][1]) == _state(ref[k][1]), (k, step)
            assert [e.to_dict() for e in made[k][1].events] == [e.to_dict() for e in ref[k][1].events]
        front = front + speed * dt
        speed = np.maximum(speed + np.array([rng.uniform(-0.6, 0.4) for _ in range(n)]), -0.3)
        if step % 5 == 4:  # the signals hand over new values (a new limits list)
            for (w, *_), (w2, *_) in zip(made, ref):
                if type(w).__name__ == "SignalDriver":
                    w.stop_s = w2.stop_s = rng.choice([None, rng.uniform(0.0, 3500.0)])
                    w.creep_at = w2.creep_at = rng.choice([None, rng.uniform(0.0, 3500.0)])
                    w.limits, w2.limits = list(w.limits[1:]), list(w2.limits[1:])
        if step == 30:  # a target appears (the Python's alone, while it is ahead)
            for (_, d, *_), (_, d2, *_) in list(zip(made, ref))[::9]:
                d.add_target(Target(float(front[0]) + 300.0, 6.0))
                d2.add_target(Target(float(front[0]) + 300.0, 6.0))
    # every kind of control came from the compiled step, and the Python took the rest
    assert all(seen[k] > 0 for k in ("python", "target", "brake", "emergency", "coast")), seen
    assert seen["target"] + seen["brake"] > seen["python"], seen


def test_replaced_constraints_and_targets_are_left_to_the_python():
    """A driver whose constraints someone else replaced, or with extra targets ahead, is
    not the compiled step's (it returns None and leaves the driver as it was)."""
    d = AutoDriver([0.0, 800.0], [20.0, 10.0], 2000.0, max_speed=None, deceleration=0.5)
    assert driver_step.compile_driver(d)
    st = DriveState(0.0, 0.0, 12.0, 100.0, 40.0, 0.1)
    assert d.compiled.step(d, st) is not None
    own = d.constraints
    d.constraints = lambda s: [*own(s), (1.0, 50.0)]  # type: ignore[method-assign]
    d._applied = 0.25
    assert d.compiled.step(d, st) is None and d._applied == 0.25
    # the Python then brakes for the new constraint
    assert d(st).deceleration > 0.0


def test_limit_posts_handed_over_anew_are_read_anew():
    """The compiled step keeps the driver's limit posts as arrays while its lists are the
    same objects; new lists (a caller setting other limits) are read at the next call:
    the Python's controls before and after, and lower ones after."""
    made = [AutoDriver([0.0, 800.0], [20.0, 10.0], 3000.0, max_speed=None, deceleration=0.5) for _ in "ab"]
    assert driver_step.compile_driver(made[0]) and made[1].compiled is None
    st = DriveState(0.0, 0.0, 12.0, 100.0, 40.0, 0.1)
    before = [_controls(d(st)) for d in made]
    assert before[0] == before[1]
    for d in made:
        d.limit_s, d.limit_v = [0.0, 150.0], [20.0, 4.0]  # (a post 50 m ahead, lower)
    after = [_controls(d(st)) for d in made]
    assert after[0] == after[1] and after[0] != before[0]


@pytest.mark.parametrize("physics", ["engineering", "openrails"])
def test_sample_replay_is_the_same_with_the_compiled_step(physics, monkeypatch):
    """The sample route's trains with the automatic driver and the route's signals, under
    either profile (the Open Rails one laps its brakes: its braking goes on in the
    Python): the same traces, events and summary with and without the compiled step."""
    import importlib

    from tdbtools.cli import bundled_sample_route
    from tdbtools.physics.replay import Replay

    replay_mod = importlib.import_module("tdbtools.physics.replay")
    from tdbtools.physics.scenario import scenario_from_text

    text = (
        f'route = "{bundled_sample_route()}"\nstep = 0.5\nduration = 300\nphysics = "{physics}"\n'
        '[[train]]\nname = "a"\nconsist = "sample_passenger"\npath = "MainWE.pat"\ndriver = "auto"\n'
        'max_speed = "90km/h"\n'
    )
    seen = _counting(monkeypatch)
    with_step = Replay(scenario_from_text(text))
    assert with_step.layout.compiled
    got = with_step.run()
    monkeypatch.setattr(replay_mod, "compile_driver", lambda d: False)
    want = Replay(scenario_from_text(text)).run()
    _same(got, want)
    assert seen["target"] > 0 and seen["brake"] + seen["python"] > 0, seen
    assert any(e.kind == "arrived" for e in got.events)


def test_after_its_first_call_the_step_calls_the_compiled_code_directly():
    """The first call goes through numba's dispatcher with floats and bools whatever the
    caller gave (ints, numpy floats); the step then calls the code it ran directly, and
    ints and numpy floats still give the Python's controls."""

    def make() -> AutoDriver:
        return AutoDriver([0.0, 800.0, 1500.0], [20.0, 10.0, 15.0], 2000.0, max_speed=None, deceleration=0.5)

    d, ref = make(), make()
    assert driver_step.compile_driver(d)
    dispatcher = driver_step._ONE_STEP()
    states = [
        (0, 0, 12, 100, 40, 1),  # all ints, first
        (1.0, 0.0, np.float64(18.5), np.float64(700.0), 640.0, 0.5),
        (2.0, 0.0, 15, 760.5, np.float64(700.5), 0.5),
    ]
    braked = False
    for st in states:
        got, want = d(DriveState(*st)), ref(DriveState(*st))
        assert _controls(got) == _controls(want) and _state(d) == _state(ref)
        assert d.compiled._kernel is not dispatcher  # direct from the first call's end on
        braked |= want.deceleration > 0.0
    assert braked


@pytest.mark.parametrize("compiled", [False, True])
def test_a_train_just_over_the_limit_brakes_down_to_it(compiled):
    """0.5 mm/s over the limit that holds now is over it: the driver asks for the
    deceleration that brings it down within the step, not for the limit as a target."""
    d = AutoDriver([0.0, 5000.0], [20.0, 20.0], 9000.0, max_speed=None, deceleration=0.5)
    if compiled:
        assert driver_step.compile_driver(d)
    c = d(DriveState(0.0, 0.0, 20.0005, 100.0, 40.0, 0.1))
    assert c.speed_target is None and c.deceleration == pytest.approx(0.005, rel=1e-6)
    c = d(DriveState(0.1, 0.0, 20.0, 100.0, 40.0, 0.1))
    assert c.speed_target == 20.0 and c.deceleration == 0.0
