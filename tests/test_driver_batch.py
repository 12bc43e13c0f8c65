"""The replay's batch path (drivers and traction/brakes over all trains in numpy calls,
docs/running-time.md §2.1) gives the numbers of the per-train path, bit for bit."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL, needs_dk24
from test_running_time import install_with_shoe_curve

from tdbtools.physics.driver import AutoDriver, DriverBatch, DriveState, Stop, Target
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import Command, Scenario, TrainSpec
from tdbtools.physics.signalling import DepartDriver, SignalDriver
from tdbtools.physics.stages.driving import DrivingStage
from tdbtools.signals.runtime import CREEP

FREIGHT = SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / "sample_freight.con"


def _bits(x: float) -> bytes:
    return np.float64(x).tobytes()


def _random_driver(rng: random.Random, k: int):  # noqa: ANN202
    """An automatic driver (maybe in a signal or departure wrapper) in a random state."""
    n_posts = rng.randint(1, 12)
    posts = sorted(rng.uniform(0.0, 3000.0) for _ in range(n_posts))
    posts[0] = 0.0
    limits = [rng.choice([8.0, 12.5, 16.0, 22.0, 30.0, 40.0, math.inf]) for _ in posts]
    if rng.random() < 0.3:  # many posts close together: more within reach than the batch looks at
        posts = [40.0 * i for i in range(80)]
        limits = [rng.choice([40.0, 40.0, 40.0, 39.0, 38.0, 37.0, 9.0]) for _ in posts]
    d = AutoDriver(
        posts,
        limits,
        rng.choice([None, rng.uniform(500.0, 3500.0)]),
        max_speed=rng.choice([None, 25.0, 33.3]),
        deceleration=rng.choice([0.3, 0.5, 0.7]),
        speed_factor=rng.choice([1.0, 1.0, 0.9]),
        coast_before=rng.choice([0.0, 0.0, 0.0, 20.0]),
    )
    d.brake_delay = rng.choice([0.0, 2.0, 10.0])
    d.brake_level = rng.choice([None, 0.0, 0.4, 0.9])
    d._applied = rng.choice([0.0, rng.uniform(0.0, 0.8)])
    for _ in range(rng.randint(0, 2)):
        d.stops.append(Stop(rng.uniform(0.0, 3000.0), rng.choice([0.0, 20.0]), "waiting point"))
    d.stops.sort(key=lambda p: p.s)
    if d.stops and rng.random() < 0.1:
        d.stops[0].arrived_at = 0.0
    d.finished = rng.random() < 0.05
    if rng.random() < 0.05:
        d.add_target(Target(1500.0, 5.0))
    kind = rng.choice(["bare", "signal", "signal", "depart"])
    if kind == "bare":
        return d, d, None, None
    if kind == "depart":
        w = DepartDriver(d, rng.choice([0.0, 50.0]))
        return w, d, w, None
    s = SignalDriver(d, rng.choice([0.0, 0.0, 50.0]))
    if rng.random() < 0.5:
        s.stop_s = rng.uniform(0.0, 3000.0)
    if rng.random() < 0.3:
        s.creep_at = rng.uniform(0.0, 3000.0)
    s.limits = [
        (a, a + rng.uniform(10.0, 800.0), rng.choice([4.0, 11.1, 16.7]))
        for a in sorted(rng.uniform(0.0, 3000.0) for _ in range(rng.randint(0, 3)))
    ]
    return s, d, s, s


@pytest.mark.parametrize("seed", range(6))
def test_batch_drivers_give_the_controls_and_brake_state_of_their_own_calls(seed, implementation):
    """Random drivers in random states, stepped 40 times: every control and ``_applied``
    of the trains the batch drives equal their own call's; the others are left to it."""
    n = 300
    rng = random.Random(seed)
    made = [_random_driver(rng, k) for k in range(n)]
    rng_mine = random.Random(seed)
    mine = [_random_driver(rng_mine, k)[0] for k in range(n)]  # the same drivers, called one by one
    outer = [m[0] for m in made]
    autos = [m[1] for m in made]
    # odd seeds: some trains are not the batch's (the rows it drives are gathered and scattered)
    in_batch = [None if seed % 2 and k % 7 == 0 else d for k, d in enumerate(autos)]
    batch = DriverBatch(in_batch, [m[2] for m in made], [m[3] for m in made], CREEP)
    assert batch.all_rows == (seed % 2 == 0)
    front = np.array([rng.uniform(100.0, 3000.0) for _ in range(n)])
    speed = np.array([rng.choice([0.0, -0.5, rng.uniform(0.0, 35.0)]) for _ in range(n)])
    length = np.array([rng.uniform(20.0, 400.0) for _ in range(n)])
    free = np.array([rng.random() > 0.02 for _ in range(n)])
    dt = 0.5
    driven_total = 0
    seen = {"target": 0, "braking": 0, "emergency": 0, "held": 0, "standing": 0}
    for step in range(40):
        time = 40.0 + step * dt
        rear = front - length
        driven, (thr, brk, dec, tgt, em) = batch.drive(time, dt, front, speed, rear, free, step // 4)
        driven_total += int(driven.sum())
        seen["target"] += int((driven & ~np.isnan(tgt)).sum())
        seen["braking"] += int((driven & (dec > 0)).sum())
        seen["emergency"] += int((driven & em).sum())
        seen["held"] += int((driven & (brk == 1.0)).sum())
        seen["standing"] += int((driven & (brk == 1.0) & (dec > 0)).sum())  # at the end of the run
        for k in range(n):
            c = mine[k](DriveState(time, 0.0, float(speed[k]), float(front[k]), float(rear[k]), dt))
            if driven[k]:
                assert free[k]
                got = (thr[k], brk[k], dec[k], em[k])
                assert [_bits(x) for x in got[:3]] == [
                    _bits(c.throttle),
                    _bits(c.brake),
                    _bits(c.deceleration),
                ]
                assert bool(got[3]) == c.emergency
                assert (math.isnan(tgt[k]) and c.speed_target is None) or _bits(tgt[k]) == _bits(
                    c.speed_target
                )
                assert _bits(autos[k]._applied) == _bits(getattr(mine[k], "inner", mine[k])._applied), k
                assert autos[k].finished == getattr(mine[k], "inner", mine[k]).finished, k
            else:
                # the replay calls it itself: the batch's copy follows the same call
                outer[k](DriveState(time, 0.0, float(speed[k]), float(front[k]), float(rear[k]), dt))
        # move on (a train may roll back a little or stand)
        front = front + speed * dt
        speed = np.maximum(speed + np.array([rng.uniform(-0.6, 0.4) for _ in range(n)]), -0.3)
        if step % 4 == 3:  # the signals change every few steps
            for w, w2 in zip(outer, mine):
                if isinstance(w, SignalDriver):
                    assert isinstance(w2, SignalDriver)
                    w.stop_s = w2.stop_s = rng.choice([None, rng.uniform(0.0, 3500.0)])
                    w.limits, w2.limits = list(w.limits[:1]), list(w2.limits[:1])
    # most steps of most trains are the batch's; the rest (stops, targets, coasting,
    # rolling back, derailed) its own calls
    assert 0.25 * 40 * n < driven_total < 40 * n
    assert all(seen.values()), seen  # every kind of control came from the batch


def _dk24_paths(route, n: int, need: float) -> list[str]:  # noqa: ANN001
    """Up to ``n`` paths with ``need`` metres of track beyond them, sharing no track node
    (benchmarks/bench_replay.py's choice)."""
    import importlib.util

    from helpers import REPO

    spec = importlib.util.spec_from_file_location("bench_replay", REPO / "benchmarks" / "bench_replay.py")
    bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    return bench.long_paths(route, n, need)


def _same(a, b) -> None:  # noqa: ANN001
    assert [e.to_dict() for e in a.events] == [e.to_dict() for e in b.events]
    assert a.traces.keys() == b.traces.keys()
    for name, cols in a.traces.items():
        for col, arr in cols.items():
            assert arr.tobytes() == b.traces[name][col].tobytes(), (name, col)
    sa, sb = dict(a.summary), dict(b.summary)
    for s in (sa, sb):
        s.pop("wall_seconds"), s.pop("realtime_factor")
    assert sa == sb


@pytest.mark.slow
@needs_dk24
def test_dk24_replay_is_the_same_with_the_batch_path(monkeypatch, tmp_path, dk24, dk24_signals):
    """Many trains on DK24 with its signals (two per line, the second catching up with
    the first), force and deceleration brakes, brake-shoe curves, allowances by speed and
    by coasting, a late departure, a speed cap, waiting points, a schedule driver, trains
    that reach the end of their run: the same traces, events and summary either way."""
    inst = install_with_shoe_curve(tmp_path)
    pax = inst / "TRAINS" / "CONSISTS" / "sample_passenger.con"
    paths = _dk24_paths(dk24, 5, 4000.0)
    assert len(paths) == 5  # (every variant below at least once)
    specs = []
    for i, p in enumerate(paths):
        for k in range(2):
            kw: dict = dict(
                name=f"t{i}-{k}",
                consist=FREIGHT if (i + k) % 3 else pax,
                path=Path(p),
                start_offset=700.0 * k,
                beyond_path=700.0 * k + (3000.0 if i % 2 else 900.0),
                driver="auto",
            )
            j = (i * 2 + k) % 8
            kw.update(
                [
                    {},
                    {"brake_mode": "deceleration"},
                    {"allowance": 8.0} if i < 4 else {},  # (one train each: the fit plans a dozen runs)
                    {"depart": 30.0},
                    {"deceleration": 0.3},
                    {"max_speed": 12.0},
                    {"allowance": 5.0, "allowance_mode": "eco"} if i < 4 else {},
                    {"driver": "schedule", "schedule": (Command(0.0, 0.5, 0.0), Command(60.0, 0.0, 0.3))}
                    if i == 3
                    else {},
                ][j]
            )
            specs.append(TrainSpec(**kw))
    driven = [0, 0]
    drive = DriverBatch.drive

    def counting(self, *a):  # noqa: ANN001, ANN002, ANN202
        d, c = drive(self, *a)
        driven[0] += int(d.sum())
        driven[1] += len(d)
        return d, c

    monkeypatch.setattr(DriverBatch, "drive", counting)
    # The allowance fit plans each allowance train's run a dozen times, the same way in
    # every replay below: fitted once per train (its result set on the driver as the fit sets it).
    import tdbtools.physics.runtime as runtime_mod

    fit = runtime_mod.fit_allowance
    fitted: dict = {}

    def fit_once(d, *a, mode: str, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        key = (d.train, mode, d.speed_factor, d.coast_before)
        if key not in fitted:
            out = fit(d, *a, mode=mode, **kw)
            fitted[key] = (d.speed_factor, d.coast_before, out)
        d.speed_factor, d.coast_before, out = fitted[key]
        return out

    monkeypatch.setattr(runtime_mod, "fit_allowance", fit_once)
    # (per train; all in the batch; at step 0.1 also the traction and brakes alone in it)
    never = 10**9
    # (the fine step for a part of the run only: the suite's time)
    for step, duration, modes in (
        (0.5, 250.0, ((never, never), (1, 1))),
        (0.1, 30.0, ((never, never), (1, 1), (1, never))),
    ):
        results = []
        for batch_min, drivers_min in modes:
            monkeypatch.setattr(DrivingStage, "BATCH_MIN_TRAINS", batch_min)
            monkeypatch.setattr(DrivingStage, "BATCH_DRIVERS_MIN_TRAINS", drivers_min)
            sc = Scenario(dk24.folder, tuple(specs), step=step, duration=duration)
            rep = Replay(sc, route=dk24, signals=dk24_signals, trace_every=1.0)
            for t in rep.trains[::3]:  # waiting points
                d = getattr(t.driver, "inner", t.driver)
                if isinstance(d, AutoDriver):
                    d.stops.append(Stop(t.front0 + 400.0, 15.0, "waiting point"))
                    d.stops.sort(key=lambda p: p.s)
            results.append(rep.run())
        for other in results[1:]:
            _same(results[0], other)
        kinds = {e.kind for e in results[0].events}
        if step == 0.5:
            assert {"arrived", "waiting", "departed", "signal_wait"} <= kinds, kinds
    # both ways were taken: the batch drove a part, the drivers' own calls the rest
    assert 0.2 * driven[1] < driven[0] < 0.9 * driven[1], driven


def test_the_batch_reads_the_drivers_again_after_a_step_it_did_not_see():
    """A train the batch drove keeps its stop and brake state for the next step (the
    batch's own copy); one it did not drive (its caller calls it) is read again, and
    so is every train when a step is not the one after the last (the caller drove them
    itself in between)."""
    drivers = [AutoDriver([0.0], [20.0], 5000.0, max_speed=None, deceleration=0.5) for _ in range(3)]
    batch = DriverBatch(drivers, [None] * 3, [None] * 3, CREEP)
    front, speed = np.array([100.0, 200.0, 300.0]), np.array([10.0, 10.0, 10.0])
    free = np.array([True, False, True])

    def drive(time: float) -> list[bool]:
        return batch.drive(time, 0.5, front, speed, front - 50.0, free)[0].tolist()

    assert drive(0.0) == [True, False, True]
    free[1] = True
    drivers[1].add_target(Target(400.0, 5.0))  # not driven the step before: read again
    assert drive(0.5) == [True, False, True]  # (a train with a target is left to its call)
    drivers[1].targets.clear()
    assert drive(1.0) == [True, True, True]
    drivers[2].add_target(Target(400.0, 5.0))
    assert drive(3.0) == [True, True, False]  # a step later than the next: all read again
