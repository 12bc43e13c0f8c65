"""The incremental signalling cycle gives what the plain one gives (docs/signals.md §4.4).

``Interlocking.incremental`` (the default) rewrites only the sections whose occupants
changed, keeps each train's signal routes, and works out again only the free blocks of
sections that changed. With it off, every cycle is worked out afresh. Each replay here
runs both ways; after every cycle the whole interlocking (aspects, blocks, routes,
reservations, occupants, what each train is told, the events) must be the same, and so
must the replays' events and traces.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, needs_dk24

from tdbtools.signals import runtime as rt

H = 8 * 3600


def _state(ilk: rt.Interlocking) -> tuple:
    """Everything a cycle leaves behind that anybody reads."""
    return (
        [e.to_dict() for e in ilk.events],
        [
            (
                t.front,
                t.stop_s,
                t.creep_at,
                list(t.limits),
                t.next_signal,
                t.waiting_since,
                t.waiting_at,
                t.deadlocked,
                t.done,
                t.on_track,
                sorted(t.opposed),
                sorted(t.stopped_by),
                t.up_to_signal,
                t.last_seen,
                sorted(t.extents.items()),
            )
            for t in ilk.trains
        ],
        list(ilk.block),
        list(ilk.enabled_train),
        list(ilk.next_normal),
        list(ilk.req),
        [None if r is None else [dataclasses.astuple(e) for e in r] for r in ilk.route_of],
        [(h.state, h.draw_state) for h in ilk.heads],
        [dict(lv) for lv in ilk.lvars],
        # (occupants with their order: who is looked at first)
        [
            (k, s.reserved, list(s.occupants.items()))
            for k, s in enumerate(ilk.sections)
            if s.reserved >= 0 or s.occupants
        ],
        sorted(ilk.switches.items()),
    )


def _both_ways(monkeypatch: pytest.MonkeyPatch, run) -> tuple[object, int]:  # noqa: ANN001
    """``run()`` with the incremental cycle and with the plain one; returns the first
    result and the number of cycles compared."""
    states: dict[bool, list[tuple]] = {True: [], False: []}
    update, init = rt.Interlocking.update, rt.Interlocking.__init__

    def recorded(self: rt.Interlocking, time: float, fronts: list[float], speeds: list[float]) -> None:
        update(self, time, fronts, speeds)
        states[self.incremental].append(_state(self))

    def plain(self: rt.Interlocking, *a, **k) -> None:  # noqa: ANN002, ANN003
        init(self, *a, **k)
        self.incremental = False

    monkeypatch.setattr(rt.Interlocking, "update", recorded)
    fast = run()
    with monkeypatch.context() as m:
        m.setattr(rt.Interlocking, "__init__", plain)
        slow = run()
    assert states[True] and len(states[True]) == len(states[False])
    for k, (a, b) in enumerate(zip(states[True], states[False])):
        assert a == b, f"cycle {k} differs"
    rf, rs = _result_of(fast), _result_of(slow)  # (an activity's replay result)
    assert [e.to_dict() for e in rf.events] == [e.to_dict() for e in rs.events]
    timing = ("wall_seconds", "realtime_factor")
    assert {k: v for k, v in rf.summary.items() if k not in timing} == {
        k: v for k, v in rs.summary.items() if k not in timing
    }
    tr_fast, tr_slow = rf.traces, rs.traces
    assert tr_fast.keys() == tr_slow.keys()
    for name, tr in tr_fast.items():
        assert tr.keys() == tr_slow[name].keys()
        for col, v in tr.items():
            assert np.array_equal(v, tr_slow[name][col], equal_nan=v.dtype.kind == "f"), (name, col)
    return fast, len(states[True])


def _result_of(res):  # noqa: ANN001, ANN202
    return getattr(res, "replay", res)


@pytest.mark.parametrize("name", ["follow", "crossing"])
def test_sample_signalled_scenarios_same_both_ways(monkeypatch, name):
    from tdbtools.physics.replay import replay

    res, cycles = _both_ways(monkeypatch, lambda: replay(SAMPLE_INSTALL / f"signals_{name}.toml"))
    assert cycles > 50 and any(e.kind == "aspect" for e in res.events)


def test_signalled_activity_same_both_ways(monkeypatch, tmp_path):
    """Trains entering and leaving, the deadlock look-ahead, clearances, a reservation horizon."""
    from helpers import signalled_sample_activity

    from tdbtools.physics.activity import replay_activity

    route, act = signalled_sample_activity(tmp_path, H)
    res, cycles = _both_ways(monkeypatch, lambda: replay_activity(act, route=route, signals=True))
    kinds = {e.kind for e in res.replay.events}
    assert cycles > 100 and {"aspect", "start_delayed"} <= kinds


@pytest.fixture(scope="module")
def sample_route():  # noqa: ANN201
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_ROUTE)


def _cycles(ilk: rt.Interlocking, steps: list, poke=None) -> list[tuple]:  # noqa: ANN001
    out = []
    for k, (fronts, speeds) in enumerate(steps):
        ilk.update(float(k), fronts, speeds)
        out.append(_state(ilk))
        if poke is not None:
            poke(k, ilk)
    return out


def test_a_standing_train_that_starts_moving_changes_the_free_block_behind_it(tmp_path, sample_route):
    """The same sections occupied, but the train now moves: a free signal facing it whose
    route it occupies (not reserved: released from outside here) goes from OCCUPIED to
    JN_OBSTRUCTED and back, both ways (§4.2)."""
    from test_signals import FakeLine, b3_line

    steps = [([610.0], [v]) for v in (0.0, 0.0, 3.0, 3.0, 0.0)]

    def release(k: int, ilk: rt.Interlocking) -> None:
        if k == 0:
            ilk.reserve_section(4, -1)

    got = []
    for incremental in (True, False):
        ilk = b3_line(tmp_path, sample_route, dirs=[0, 0, 1, 0, 0])  # S3 faces the train
        ilk.incremental = incremental
        ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=610.0)
        got.append(_cycles(ilk, steps, release))
    assert got[0] == got[1]
    blocks = [st[2][2] for st in got[0]]
    # (cycle 0: occupied by the standing train and reserved for it: occupancy is read
    # first, as in Open Rails, so OCCUPIED, not the reservation's JN_OBSTRUCTED)
    assert blocks == [
        rt.BLOCK_OCCUPIED,
        rt.BLOCK_OCCUPIED,
        rt.BLOCK_JN_OBSTRUCTED,
        rt.BLOCK_JN_OBSTRUCTED,
        rt.BLOCK_OCCUPIED,
    ]


def test_occupants_are_listed_in_train_order_whoever_came_first(tmp_path, sample_route):
    """A section's occupants in train order (as filled afresh every cycle): train 9 there
    first, then train 1 joins it."""
    from test_signals import FakeLine, b3_line

    got = []
    for incremental in (True, False):
        ilk = b3_line(tmp_path, sample_route)
        ilk.incremental = incremental
        for k in range(10):
            ilk.add_train(f"t{k}", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=100.0, on_track=k in (1, 9))
        fronts = [0.0] * 10
        steps = []
        for f1 in (550.0, 660.0, 700.0):
            fronts = fronts[:]
            fronts[1], fronts[9] = f1, 750.0
            steps.append((fronts, [0.0] * 10))
        got.append(_cycles(ilk, steps))
        sec = ilk.node_secs[4][3]  # 600..800 m
        assert list(ilk.sections[sec].occupants) == [1, 9]
    assert got[0] == got[1]


def _dk24_trains(route, seed: int, n: int) -> tuple:  # noqa: ANN001
    """``n`` trains on random DK24 paths with track enough, two on some of them (the
    second following, a little later), random starts, lengths and departures."""
    from tdbtools.physics.scenario import TrainSpec
    from tdbtools.physics.trackline import TrackLine
    from tdbtools.track.paths import resolve_route_paths

    rng = random.Random(seed)
    paths = [(name, res) for name, res, _err in resolve_route_paths(route) if res is not None and res.ok]
    rng.shuffle(paths)
    consist = SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / "sample_freight.con"
    out: list = []
    for name, res in paths:
        if len(out) >= n:
            break
        drive = float(rng.choice([2000, 3500, 5000]))
        if TrackLine.from_path(route, res, extend=drive + 1500.0).length < drive + 1500.0:
            continue
        for k in range(rng.choice([1, 2, 2])):
            start = 1300.0 * k + rng.choice([0.0, 50.0])
            out.append(
                TrainSpec(
                    name=f"r{len(out)}",
                    consist=consist,
                    path=Path(name),
                    start_offset=start,
                    beyond_path=drive + 1300.0 * k,
                    depart=float(rng.choice([0, 20, 60])) if k == 0 else 0.0,
                    driver="auto",
                )
            )
    return tuple(out[:n])


@pytest.mark.slow
@needs_dk24
@pytest.mark.parametrize("seed", [2])
def test_dk24_random_trains_same_both_ways(monkeypatch, dk24, seed):
    """Random DK24 trains with the route's own scripts: followers held at reds, trains
    meeting on shared track, switches thrown for them."""
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Scenario

    sc = Scenario(Path(DK24_ROUTE), _dk24_trains(dk24, seed, 16), step=0.2, duration=150.0, stand_in=True)
    res, cycles = _both_ways(monkeypatch, lambda: Replay(sc, route=dk24).run())
    kinds = {e.kind for e in res.events}
    assert cycles >= 120 and "aspect" in kinds, kinds
