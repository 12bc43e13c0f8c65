"""The replay step's shortcuts give the numbers of the plain lookups, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.physics.replay import Replay, replay
from tdbtools.physics.scenario import read_scenario
from tdbtools.physics.stages.forces import CurveCache


@pytest.mark.parametrize("seed", range(4))
def test_curve_forces_kept_between_steps_are_those_looked_up_anew(seed, monkeypatch):
    """Cars' middles wander over a random piece table (ends hit exactly, repeated ends,
    beyond both ends, NaN): the kept curve resistance equals a fresh lookup each step."""
    monkeypatch.setattr(CurveCache, "KEEP_CURVES_MIN_CARS", 0)
    rep = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    rng = np.random.default_rng(seed)
    lines = rep.lines
    ends = np.sort(rng.uniform(0.0, 500.0, 60))
    ends[10] = ends[11]  # a piece of no length
    lines.P1 = ends
    lines.PC = rng.choice([0.0, -0.0, 1e-3, -2e-3, 4e-3], len(ends))
    lines.P1_lo = np.concatenate(([-np.inf], ends))
    lines.P1_hi = np.concatenate((ends, [np.inf]))
    n = len(rep.engine.x)
    pre = rep.forces.prepared
    gm = rng.uniform(-20.0, 520.0, n)
    changed = 0
    for _ in range(300):
        step = rng.choice([0.0, 0.5, 3.0, 15.0], n) * rng.choice([-1.0, 1.0], n)
        gm = gm + step
        k = rng.integers(n)
        if rng.random() < 0.2:
            gm[k] = ends[rng.integers(len(ends))]  # exactly on a piece end
        if rng.random() < 0.05:
            gm[k] = np.nan
        before = rep.forces.curves.crv.copy()
        got = rep.forces.curves(gm).copy()
        want = pre.curve(lines.curvature(gm))
        assert got.tobytes() == want.tobytes()
        changed += got.tobytes() != before.tobytes()
    assert changed > 100  # the cars did change pieces


def test_prepared_davis_skips_the_start_blend_only_when_no_car_needs_it():
    """Prepared.davis with its quick test of the merge speeds equals the blend worked
    out for every step (speeds above, below and around the merge speeds, NaN)."""
    import dataclasses

    from tdbtools.formats.stock import Stock
    from tdbtools.physics import forces

    diesel = dataclasses.replace(Stock.generic("engine", "diesel"), friction0_n=5000.0, merge_speed_ms=2.0)
    wagon = dataclasses.replace(Stock.generic("wagon", "freight"), friction0_n=900.0, merge_speed_ms=0.5)
    m = forces.CarModel.from_stock([diesel, wagon, Stock.generic("wagon", "freight")], [False, False, True])
    pre = forces.Prepared(m)
    assert pre._start
    rng = np.random.default_rng(3)
    blended = 0
    for _ in range(400):
        v = rng.choice([0.0, -0.0, 0.3, 0.5, 1.9999, 2.0, -2.5, 7.0, 30.0, np.nan], 3)
        speed = np.abs(v)
        f = pre._a + speed * (pre._b + speed * pre._c)
        low = speed < pre._vm
        want = np.where(low, pre._f0 + pre._slope * speed, f) if low.any() else f
        blended += bool(low.any())
        assert pre.davis(v).tobytes() == want.tobytes()
    assert 50 < blended < 350


def test_compiled_interp_with_kept_rows_is_numpys():
    """The replay's compiled np.interp (tdbtools.physics._lookup_kernel) against np.interp:
    random tables with repeated points, points at, between and outside the table points,
    NaN, infinite values, and rows kept from call to call as a moving train's are."""
    K = pytest.importorskip("tdbtools.physics._lookup_kernel", reason="needs numba")
    rng = np.random.default_rng(7)
    for t in range(120):
        m = int(rng.integers(2, 2000))
        xp = np.sort(rng.normal(size=m) * 1000.0)
        if t % 3 == 0:
            xp = np.sort(np.concatenate([xp, xp[rng.integers(0, m, size=m // 5)]]))
        f1 = rng.normal(size=xp.size) * 10.0 ** float(rng.integers(-3, 4))
        f2 = rng.normal(size=xp.size)
        if t % 7 == 0:
            f1[rng.integers(0, f1.size, 3)] = np.inf
        n = int(rng.integers(1, 3000))
        rows = rng.integers(-5, xp.size + 5, size=n).astype(np.int64)  # any start is fine
        x = rng.normal(size=n) * 1200.0
        for step in range(4):  # the points move on a little; their rows are kept
            x = x + rng.normal(size=n) * 10.0 ** float(rng.integers(-1, 3))
            x[rng.integers(0, n, size=n // 10)] = xp[rng.integers(0, xp.size, size=n // 10)]
            x[rng.integers(0, n, 2)] = np.nan
            x[rng.integers(0, n, 2)] = xp[-1]
            o1, o2 = np.empty(n), np.empty(n)
            K.interp(x, xp, f1, f2, o1, o2, rows, step % 2 == 0)
            assert np.array_equal(o1, np.interp(x, xp, f1), equal_nan=True)
            if step % 2 == 0:
                assert np.array_equal(o2, np.interp(x, xp, f2), equal_nan=True)


def _replay_outputs(path):
    res = Replay(read_scenario(path)).run()
    summary = dict(res.summary)
    for k in ("wall_seconds", "realtime_factor"):
        summary.pop(k, None)
    traces = {
        name: {c: np.asarray(v).tobytes() for c, v in cols.items()} for name, cols in res.traces.items()
    }
    return summary, traces, [repr(e) for e in res.events]


@pytest.mark.parametrize("name", ["shunt.toml", "signals_crossing.toml", "replay.toml"])
def test_replays_without_numba_are_those_with_it(name, monkeypatch):
    """A whole replay on the numpy code (no compiled engine, drivers or lookups, as
    without numba: the TDBTOOLS_PURE_PYTHON switch) gives the compiled replay's traces,
    events and summary, bit for bit."""
    pytest.importorskip("numba", reason="compares the compiled replay with the numpy one")
    from tdbtools.physics import kernels

    monkeypatch.delenv(kernels.PURE_PYTHON_ENV, raising=False)
    kernels.reset()
    compiled = _replay_outputs(SAMPLE_INSTALL / name)
    monkeypatch.setenv(kernels.PURE_PYTHON_ENV, "1")
    kernels.reset()
    try:
        plain = _replay_outputs(SAMPLE_INSTALL / name)
    finally:
        monkeypatch.delenv(kernels.PURE_PYTHON_ENV)
        kernels.reset()
    assert plain[0] == compiled[0] and plain[2] == compiled[2]
    assert plain[1] == compiled[1]


def test_compiled_train_controls_are_the_numpy_ones(monkeypatch):
    """The batch path's per-train traction and brakes compiled (_driver_kernel.controls)
    against its numpy calls, from random controls, speeds (negative, ±0, near the top
    speed), forces and brake states: the same forces, scales and brake fractions, bit for
    bit."""
    pytest.importorskip("numba", reason="the compiled controls need numba (tdbtools[fast])")

    from tdbtools.physics.stages import forces as forces_stage
    from tdbtools.physics.stages.driving import ControlArrays as _ControlArrays

    rep = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    assert not rep.forces.per_train.any_decel_mode
    rng = np.random.default_rng(5)
    T, n = len(rep.trains), len(rep.engine.x)
    top = np.nan_to_num(rep.forces.per_train.vmax, nan=30.0)

    def pick(*choices: object, size: int = T) -> np.ndarray:
        return np.array([choices[i] for i in rng.integers(len(choices), size=size)], dtype=np.float64)

    tapered = 0
    for trial in range(3000):
        vk = np.where(rng.random(T) < 0.5, top - rng.uniform(-0.2, 0.3, T), pick(0.0, -0.0, -1.5, 7.0))
        v = np.repeat(vk, np.diff(np.append(rep.train_start, n)))
        ctl = _ControlArrays(
            pick(0.0, 1.0, rng.uniform()),
            pick(0.0, 0.0, 0.4, 1.0),
            pick(0.0, -0.0, 0.3, 1.2),
            pick(np.nan, np.nan, 0.0, vk[0] + 0.05, 25.0),
            rng.random(T) < 0.05,
        )
        grav = rng.normal(0.0, 2e4, n) * rng.choice([0.0, 1.0, 10.0])
        dav = rng.uniform(0.0, 3e3, n)
        crv = rng.uniform(0.0, 500.0, n) * (rng.random(n) < 0.3)
        dt = float(rng.choice([0.1, 0.5]))
        start = pick(0.0, 0.3, 1.0, 1.15)
        out = []
        for kernel in (None, False):
            monkeypatch.setattr(forces_stage._CONTROLS, "value", kernel)
            rep.forces.brake_applied = start.copy()
            trac, brk, scale, a = rep.forces.traction_and_brakes_batch(ctl, v, v, vk, grav, dav, crv, dt)
            out.append([np.asarray(x).tobytes() for x in (trac, brk, scale, a, rep.forces.brake_applied)])
        assert out[0] == out[1], trial
        tapered += bool(np.any(np.frombuffer(out[0][2]) % 1.0))
    assert tapered > 100  # (the taper and partial targets were reached)


def test_a_replay_freezes_the_older_objects_only_while_it_runs(monkeypatch):
    """Replay.run keeps the objects made before it out of the garbage collector's passes
    while it steps, and leaves the collector as it was: as found after, and untouched
    when the caller froze objects itself."""
    import gc

    seen: list[int] = []
    step = Replay.step

    def counting(self):  # noqa: ANN001, ANN202
        if len(seen) < 3:  # (the count walks the frozen objects)
            seen.append(gc.get_freeze_count())
        step(self)

    monkeypatch.setattr(Replay, "step", counting)
    assert gc.get_freeze_count() == 0
    Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml")).run()
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        seen.clear()
        Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml")).run()
        # (frozen objects that die leave the count; none joins it)
        assert seen and max(seen) <= mine and gc.get_freeze_count() <= mine
    finally:
        gc.unfreeze()


def _bits(a) -> bytes:
    return np.asarray(a, dtype=np.float64).tobytes()


def test_tile_of_is_normalize_tile_bit_for_bit():
    """The one-coordinate tile split in Python floats (a replay's few engine events)
    gives normalize_tile's tile and offset, bit for bit, over tile edges, signed zeros,
    tiny and large offsets; a coordinate it cannot split exactly is left to the arrays."""
    from tdbtools.track.geometry import normalize_tile, tile_of

    rng = np.random.default_rng(7)
    edges = np.array(
        [-3072.0, -1024.0, -1023.999999, 0.0, -0.0, 1023.999999, 1024.0, 3072.0, 5e-324, -5e-324]
    )
    xs = np.concatenate(
        [
            edges,
            np.nextafter(edges, np.inf),
            np.nextafter(edges, -np.inf),
            rng.uniform(-3e7, 3e7, 2000),
            [1e15, -1e15],
        ]
    )
    tiles, _, offsets, _ = normalize_tile(np.zeros(len(xs), np.int64), 0, xs, 0.0)
    for x, t, o in zip(xs.tolist(), tiles.tolist(), offsets.tolist()):
        got = tile_of(x)
        assert got is not None and got[0] == t and _bits(got[1]) == _bits(o), x
    for x in (float("nan"), float("inf"), -float("inf"), 2.0**51, -(2.0**51)):
        assert tile_of(x) is None


def _events(path, monkeypatch, few):
    from tdbtools.physics.stages.watching import WatchStage

    monkeypatch.setattr(WatchStage, "FEW_EVENTS", few)
    calls = {"few": 0, "many": 0}
    for name in ("few", "many"):
        real = getattr(WatchStage, f"_locate_{name}")

        def counted(self, *a, _real=real, _name=name):
            calls[_name] += 1
            return _real(self, *a)

        monkeypatch.setattr(WatchStage, f"_locate_{name}", counted)
    res = Replay(read_scenario(path)).run()
    monkeypatch.undo()
    return [e.to_dict() for e in res.events], calls


@pytest.mark.parametrize("name", ["shunt.toml", "replay.toml"])
def test_engine_events_located_one_by_one_are_those_located_together(name, monkeypatch):
    """The engine events of a step located in Python floats (a few) and in numpy calls
    over all of them (a burst) give the same events, locations bit for bit; each way
    is taken where it is meant to be."""
    few, c_few = _events(SAMPLE_INSTALL / name, monkeypatch, 10**9)
    many, c_many = _events(SAMPLE_INSTALL / name, monkeypatch, 0)
    assert c_few["few"] > 0 and c_few["many"] == 0
    assert c_many["many"] > 0 and c_many["few"] == 0
    assert any("location" in e for e in few)
    assert few == many


def test_trace_columns_are_the_rows_as_they_were_recorded(monkeypatch):
    """The trace keeps per row only the raw state and works the columns out at the end:
    they equal the rows made at each sample from the state of that moment (distance,
    speed, acceleration since the last row, traction and brake fractions), bit for bit,
    and no sample is lost."""
    from tdbtools.physics.stages.recording import Recorder

    seen = []
    real = Recorder.trace

    def spy(self, time, trac, brk, scale, x=None, v=None):
        xe, ve = self.engine.x, self.engine.v
        st = self.L.train_start
        seen.append(
            (time, xe[st].copy(), ve[st].copy(), np.array(scale, dtype=np.float64), np.add.reduceat(brk, st))
        )
        return real(self, time, trac, brk, scale, x, v)

    monkeypatch.setattr(Recorder, "trace", spy)
    rep = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    # (a tenth of each train's brake force: the fraction's cap at 1 is reached too)
    rep.recorder.maxbrake = maxbrake = rep.recorder.maxbrake / 10.0
    res = rep.run()
    rows = []
    for i, (time, xf, v, scale, brk) in enumerate(seen):
        prev = seen[i - 1] if i else None
        acc = (v - prev[2]) / (time - prev[0]) if prev is not None and time > prev[0] else np.zeros(len(v))
        rows.append((time, xf - rep.layout.train_front0, v, acc, scale, np.minimum(brk / maxbrake, 1.0)))
    assert len(rows) > 100
    assert any((r[5] == 1.0).any() for r in rows) and any(((r[5] > 0) & (r[5] < 1)).any() for r in rows)
    for k, t in enumerate(rep.trains):
        cols = res.traces[t.spec.name]
        for j, c in enumerate(("time", "distance", "speed", "acceleration", "throttle", "brake")):
            want = [r[j] if j == 0 else r[j][k] for r in rows]
            assert _bits(cols[c]) == _bits(want), (t.spec.name, c)


@pytest.mark.parametrize(("name", "others"), [("shunt.toml", False), ("signals_crossing.toml", True)])
def test_engine_events_made_later_come_in_their_place(name, others):
    """The engine's events wait to be made (EventLog.defer) until something else is
    logged or the list is read: a replay whose events are read after every step (made
    step by step) and one read only at the end give the same events in the same order,
    and a read in between sees every event of the steps so far."""
    sc = read_scenario(SAMPLE_INSTALL / name)
    stepped = Replay(sc)
    seen = []
    while stepped.time < sc.duration - 1e-9 and not stepped.finished():
        stepped.step()
        evs = stepped.events
        assert evs[: len(seen)] == seen  # (nothing made later lands before an older one)
        seen = list(evs)
    ran = Replay(sc).run()
    assert [e.to_dict() for e in seen] == [e.to_dict() for e in ran.events]
    assert any(e.kind in ("impact", "coupler_taut", "stopped", "started") for e in seen)
    # (with events of other stages between the engine's: signals)
    assert any(e.kind not in ("impact", "coupler_taut", "stopped", "started") for e in seen) == others


def test_event_log_makes_the_deferred_events_before_the_next_one():
    """EventLog: deferred events are made before an event added after them, and before
    the list is read; a second deferral while one waits keeps the first's place."""
    from tdbtools.physics.events import EventLog, StandIn

    log = EventLog()
    made = []

    def later(tag):
        def make():
            made.append(tag)
            return [StandIn(time=float(len(made)), train=tag, message="later")]

        return make

    log.add(StandIn(time=0.0, train="a", message="now"))
    log.defer(later("b"))
    assert made == []
    log.add(StandIn(time=5.0, train="c", message="now"))
    log.defer(later("d"))
    log.defer(later("e"))  # another maker: "d" is made first
    assert [e.train for e in log.events] == ["a", "b", "c", "d", "e"]
    assert made == ["b", "d", "e"] and log.events[-1].train == "e"


def _walks_and_outputs(run, monkeypatch, fresh):
    """(walks made, what ``run()`` gives) with the occupancy walk kept between updates or
    (``fresh``) made at every update."""
    from tdbtools.signals.runtime import Interlocking

    walks = {"walked": 0, "updates": 0}
    real_key = Interlocking._walk_key

    def key(self, t, i, rear, front, look):
        k = None if fresh else real_key(self, t, i, rear, front, look)
        walks["updates"] += 1
        if k is None or t.occ_walk is None or t.occ_walk[0] != k or t.occ_walk[1] is not t.occ_elems:
            walks["walked"] += 1
        return k

    monkeypatch.setattr(Interlocking, "_walk_key", key)
    try:
        return walks, run()
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("what", ["signals_follow.toml", "signals_crossing.toml", "Crossing.act"])
def test_occupancy_walk_kept_between_updates_gives_what_a_fresh_walk_gives(what, monkeypatch):
    """The interlocking walks a train's elements for its occupancy only when the
    elements its rear and front cover changed (Interlocking._walk_key): the same
    events, aspects and traces as walking at every update (an activity: junction
    clearances), and fewer walks."""
    if what.endswith(".act"):
        from tdbtools.physics.activity import replay_activity

        act = SAMPLE_INSTALL / "ROUTES" / "SIGNALS" / "ACTIVITIES" / what

        def run():
            res = replay_activity(act)
            return [e.to_dict() for e in res.replay.events]
    else:

        def run():
            out = _replay_outputs(SAMPLE_INSTALL / what)
            return out[0], out[1], out[2]

    kept_walks, kept = _walks_and_outputs(run, monkeypatch, False)
    fresh_walks, fresh = _walks_and_outputs(run, monkeypatch, True)
    assert kept == fresh
    assert fresh_walks["walked"] == fresh_walks["updates"] > 0
    assert 0 < kept_walks["walked"] < kept_walks["updates"]


def _walked(ilk, t):
    """A train's occupancy as a walk over all its elements gives it (the reference):
    (section -> direction, [(element, section start, end)])."""
    from tdbtools.signals.runtime import JUNCTION_LOOK

    look = JUNCTION_LOOK if ilk.clearance is not None else 0.0
    rear, front = t.front - t.length, t.front
    occ, elems = {}, []
    for e in t.elements:
        sec = ilk.sections[e.section]
        tail = ilk._clear(sec.node) if look and sec.kind == "junction" else 0.0
        if e.s1 >= rear - look and e.s0 <= front + 1e-6 and e.s1 + tail >= rear - 1e-6:
            occ[e.section] = e.direction
            elems.append((e, sec.start, sec.end))
    return occ, elems


@pytest.mark.parametrize("what", ["signals_follow.toml", "signals_crossing.toml", "Crossing.act"])
def test_occupancy_after_every_update_is_a_walk_over_all_elements(what, monkeypatch):
    """After every signalling update each train in the world occupies what a walk over
    all its elements gives for its rear and front now (the kept walk is never stale)."""
    from tdbtools.signals.runtime import Interlocking

    real = Interlocking.update
    checked = []

    def update(self, time, fronts, speeds):
        real(self, time, fronts, speeds)
        for t in self.trains:
            if t.on_track:
                assert (t.occ, t.occ_elems) == _walked(self, t), (time, t.name)
                checked.append(len(t.occ_elems))

    monkeypatch.setattr(Interlocking, "update", update)
    if what.endswith(".act"):
        from tdbtools.physics.activity import replay_activity

        replay_activity(SAMPLE_INSTALL / "ROUTES" / "SIGNALS" / "ACTIVITIES" / what)
    else:
        Replay(read_scenario(SAMPLE_INSTALL / what)).run()
    assert len(checked) > 50 and max(checked) >= 2


def test_a_train_or_two_read_their_ends_as_the_array_path_does(monkeypatch):
    """The fronts, rears and speeds a few trains' drivers get car by car are those the
    array path gives, bit for bit (signed zeros, NaN, random positions)."""
    from tdbtools.physics.stages.driving import DrivingStage

    rep = Replay(read_scenario(SAMPLE_INSTALL / "signals_follow.toml"))
    assert len(rep.trains) >= 2
    got: dict[int, list] = {}

    def drive(self, time, k, front, speed, rear, dt):
        got[self.FEW_TRAINS].append((k, front, speed, rear))
        return rep.trains[k].controls

    monkeypatch.setattr(DrivingStage, "drive", drive)
    rng = np.random.default_rng(3)
    n = len(rep.engine.x)
    for _ in range(20):
        x = rng.uniform(-50.0, 3000.0, n)
        v = rng.uniform(-5.0, 40.0, n)
        x[rng.integers(n)], v[rng.integers(n)] = -0.0, -0.0
        x[rng.integers(n)] = np.nan
        seen = []
        for few in (4, 0):
            monkeypatch.setattr(DrivingStage, "FEW_TRAINS", few)
            got[few] = []
            rep.driving.controls(0.0, x, v, 0.1, 0)
            seen.append([tuple(_bits(c) for c in row[1:]) + (row[0],) for row in got[few]])
        assert seen[0] == seen[1] and len(seen[0]) == len(rep.trains)


def test_running_trains_and_finished_follow_every_finish_between_steps():
    """The driving stage keeps its running trains and ``Replay.finished`` per version of
    the trains' Changes: a train finished from outside between two steps (as the signals'
    deadlock and a policy do) leaves the running ones at the next step, and the replay is
    finished exactly when every train is, as a fresh look at the trains says."""
    rep = Replay(read_scenario(SAMPLE_INSTALL / "signals_follow.toml"))
    assert len(rep.trains) >= 2
    fresh = lambda: all(t.done_at is not None for t in rep.trains)  # noqa: E731
    for _ in range(5):
        rep.step()
    assert rep.driving.running == list(range(len(rep.trains))) and not rep.finished() and not fresh()
    rep.trains[0].finish(rep.time)
    assert not rep.finished()
    rep.step()
    assert rep.driving.running == list(range(1, len(rep.trains)))
    for t in rep.trains[1:]:
        assert not rep.finished()
        t.finish(rep.time)
    assert rep.finished() and fresh()
    rep.step()
    assert rep.driving.running == []


def test_after_step_finds_an_arrival_between_quiet_steps(monkeypatch):
    """A step whose drivers all run on is skipped by one pass over their ``finished``
    flags; the step an automatic driver finishes still marks its train done, with its
    Arrived event, as the per-train look did."""
    from tdbtools.physics.events import Arrived

    res = replay(SAMPLE_INSTALL / "replay.toml")
    arrived = [e for e in res.events if isinstance(e, Arrived)]
    assert arrived and all(t["finished"] for t in res.summary["trains"].values())
    assert res.summary["simulated_seconds"] == pytest.approx(max(e.time for e in arrived), abs=0.11)


def test_every_signal_cycle_hands_its_targets_to_the_drivers():
    """After each signalling cycle every train's signal wrapper holds that cycle's stop,
    creep point and aspect limits of its train (the driver's constraints, compiled or
    not, read them from there), and the batch of drivers is told they changed."""
    rep = Replay(read_scenario(SAMPLE_INSTALL / "signals_follow.toml"))
    sig = rep.signals
    assert sig is not None and any(d is not None for d in sig.drivers)
    cycles = 0
    while rep.time < 60.0:
        before = sig.version
        rep.step()
        if sig.version == before:
            continue
        cycles += 1
        for k, d in enumerate(sig.drivers):
            t = sig.ilk.trains[k]
            if d is not None:
                assert (d.stop_s, d.creep_at) == (t.stop_s, t.creep_at) and d.limits is t.limits
    assert cycles >= 50
