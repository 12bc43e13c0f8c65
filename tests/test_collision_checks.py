"""The replay's collision checks (docs/physics.md §5.4) against the algorithm they
replaced, kept here as the reference: one box per train, every watched train made a
TrainPosition and checked against every other. The events (kinds, times, trains, cars,
locations, order), the watched trains and their order, and the contacts remembered must
be the same after every check."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import CONSISTS, SAMPLE_ROUTE, sample_scenario

from tdbtools.formats.route import load_route
from tdbtools.physics.collisions import Occupancy, TrainPosition, _collision_events, side_collisions
from tdbtools.physics.proximity import box_pairs
from tdbtools.physics.replay import Replay
from tdbtools.physics.safety import SafetyEvent
from tdbtools.physics.scenario import TrainSpec
from tdbtools.physics.trackline import TrackLine

REPO = Path(__file__).resolve().parents[1]
CONSIST = REPO / "sample_routes" / "sample" / "TRAINS" / "CONSISTS" / "sample_freight.con"

# -- the reference: the checks as they were (commit 4cb89b5) -------------------------------


def _old_collisions(trains: Sequence[TrainPosition], time: float) -> list[SafetyEvent]:
    """collisions.collisions before the broad phase: every pair of trains node by node."""
    trains = list(trains)
    by_node: dict[int, list[tuple[int, float, float]]] = {}
    for k, tr in enumerate(trains):
        for node, a, b in tr.intervals():
            by_node.setdefault(node, []).append((k, min(a, b), max(a, b)))
    best: dict[tuple[int, int], tuple[float, int, float, float, float]] = {}
    for node, entries in by_node.items():
        if len(entries) < 2:
            continue
        entries.sort(key=lambda e: e[1])
        for x in range(len(entries)):
            i, lo_i, hi_i = entries[x]
            for y in range(x + 1, len(entries)):
                j, lo_j, hi_j = entries[y]
                if lo_j >= hi_i:
                    break
                if i == j or trains[i]._key == trains[j]._key:
                    continue
                overlap = min(hi_i, hi_j) - max(lo_i, lo_j)
                if overlap <= 0:
                    continue
                key = (min(i, j), max(i, j))
                mid = (max(lo_i, lo_j) + min(hi_i, hi_j)) / 2.0
                centre_i, centre_j = (lo_i + hi_i) / 2.0, (lo_j + hi_j) / 2.0
                if key[0] != i:
                    centre_i, centre_j = centre_j, centre_i
                if key not in best or overlap > best[key][0]:
                    best[key] = (overlap, node, mid, centre_i, centre_j)
    # (the events made of the pairs found are not what changed: the module's own code)
    return _collision_events(trains, best, time)


class _OldOccupancy:
    def __init__(self) -> None:
        self.trains: dict[Hashable, TrainPosition] = {}
        self.contact: set[tuple[str, Hashable, Hashable]] = set()

    def remove(self, train: Hashable) -> None:
        self.trains.pop(train, None)
        if self.contact:
            self.contact = {c for c in self.contact if train not in (c[1], c[2])}

    def new(self, kind: str, events: list[SafetyEvent]) -> list[SafetyEvent]:
        now = {(kind, e.train, e.other_train) for e in events}
        fresh = [e for e in events if (kind, e.train, e.other_train) not in self.contact]
        self.contact = {c for c in self.contact if c[0] != kind} | now
        return fresh


def _old_check(rep, occ: _OldOccupancy) -> list[SafetyEvent]:  # noqa: ANN001
    """Replay.check_collisions before the broad phase over cars."""
    if len(rep.trains) < 2:
        return []
    x, v = rep.engine.x, rep.engine.v
    fx, fz = rep.lines.world_xz(rep.layout.g(x))
    rx, rz = rep.lines.world_xz(rep.layout.g(x - rep.bodies.length))
    X, Z = np.concatenate([fx, rx]), np.concatenate([fz, rz])
    owner = np.concatenate([rep.car_train, rep.car_train])
    T = len(rep.trains)
    pad = 10.0
    lo_x, hi_x = np.full(T, np.inf), np.full(T, -np.inf)
    lo_z, hi_z = np.full(T, np.inf), np.full(T, -np.inf)
    np.minimum.at(lo_x, owner, X)
    np.maximum.at(hi_x, owner, X)
    np.minimum.at(lo_z, owner, Z)
    np.maximum.at(hi_z, owner, Z)
    close = (
        (lo_x[:, None] - pad <= hi_x[None, :])
        & (lo_x[None, :] - pad <= hi_x[:, None])
        & (lo_z[:, None] - pad <= hi_z[None, :])
        & (lo_z[None, :] - pad <= hi_z[:, None])
    )
    np.fill_diagonal(close, False)
    active = rep.on_track()
    if active is not None:
        close &= active[:, None] & active[None, :]
    near = set(np.flatnonzero(close.any(axis=1)).tolist())
    for k, t in enumerate(rep.trains):
        if k in near:
            sl = t.cars
            occ.trains[t.spec.name] = TrainPosition(t.spec.name, t.line, x[sl], rep.bodies.length[sl], v[sl])
        else:
            occ.remove(t.spec.name)
    if len(near) < 2:
        return []
    trains = list(occ.trains.values())
    return occ.new("collision", _old_collisions(trains, rep.time)) + occ.new(
        "side_collision", side_collisions(trains, rep.time)
    )


# -- unit tests --------------------------------------------------------------------------


def test_box_pairs_are_the_pairs_of_the_all_pairs_comparison():
    """Random boxes of mixed sizes (some huge), with and without groups: the grid finds
    exactly the pairs the all-pairs comparison does."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(2, 300))
        lo_x = rng.uniform(-3000, 3000, n).round(int(trial % 3))  # ties on the grid too
        lo_z = rng.uniform(-3000, 3000, n)
        w = rng.exponential(40.0, (2, n)) * (rng.uniform(size=n) < 0.97) + rng.exponential(2000.0, (2, n)) * (
            rng.uniform(size=n) < 0.03
        )
        hi_x, hi_z = lo_x + w[0], lo_z + w[1]
        group = rng.integers(0, 5, n) if trial % 2 else None
        pad = float(rng.choice([0.0, 3.61, 10.0]))
        close = (
            (lo_x[:, None] - pad <= hi_x[None, :])
            & (lo_x[None, :] - pad <= hi_x[:, None])
            & (lo_z[:, None] - pad <= hi_z[None, :])
            & (lo_z[None, :] - pad <= hi_z[:, None])
        )
        close = np.triu(close, 1)
        if group is not None:
            close &= group[:, None] != group[None, :]
        want = set(zip(*np.nonzero(close)))
        ii, jj = box_pairs(lo_x, hi_x, lo_z, hi_z, pad, group=group)
        got = list(zip(ii.tolist(), jj.tolist()))
        assert len(got) == len(set(got)) and set(got) == {(int(a), int(b)) for a, b in want}, trial
    assert [len(a) for a in box_pairs(np.zeros(1), np.ones(1), np.zeros(1), np.ones(1), 10.0)] == [0, 0]


def test_compiled_owner_pairs_are_the_numpy_ones(monkeypatch):
    """proximity._owner_pairs compiled (tdbtools.physics._lookup_kernel.owner_cross) gives the
    numpy code's pairs, in its order, for random trains of random cars (some crossing,
    some far apart, ties on the pad), with both of the numpy code's ways of pairing."""
    pytest.importorskip("numba", reason="the compiled pairing needs numba (tdbtools[fast])")
    from tdbtools.physics import proximity

    rng = np.random.default_rng(8)
    for trial in range(80):
        owners = int(rng.integers(2, 40))
        size = rng.integers(1, 25, owners)
        owner = np.repeat(np.arange(owners), size)
        n = len(owner)
        # each owner's cars in a row along a random heading from a random start
        at = rng.uniform(-400, 400, (owners, 2))[owner]
        heading = rng.uniform(0, 2 * np.pi, owners)[owner]
        step = np.arange(n) - np.repeat(np.cumsum(size) - size, size)
        lo_x = (at[:, 0] + 15.0 * step * np.cos(heading)).round(int(trial % 3))
        lo_z = at[:, 1] + 15.0 * step * np.sin(heading)
        hi_x, hi_z = lo_x + rng.uniform(0.0, 20.0, n), lo_z + rng.uniform(0.0, 20.0, n)
        group = rng.integers(0, 4, owners)[owner]
        pad = float(rng.choice([0.0, 3.61, 10.0]))
        args = (lo_x, hi_x, lo_z, hi_z, pad, group, owner)
        monkeypatch.setattr(proximity._CROSS, "value", None)
        got = proximity._owner_pairs(*args)
        monkeypatch.setattr(proximity._CROSS, "value", False)
        for cross_max in (8192, 0):
            monkeypatch.setattr(proximity, "OWNER_CROSS_MAX", cross_max)
            want = proximity._owner_pairs(*args)
            assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, want)), trial
    assert len(got[0])  # (the last trial has pairs)


def test_compiled_sweep_finds_the_boxes_of_box_pairs():
    """The collision checks' compiled sweep (_lookup_kernel.boxes_near) marks exactly the
    boxes in a pair of box_pairs: random boxes of mixed sizes, with ties."""
    pytest.importorskip("numba", reason="the compiled sweep needs numba (tdbtools[fast])")
    from tdbtools.physics._lookup_kernel import boxes_near

    rng = np.random.default_rng(4)
    for trial in range(120):
        n = int(rng.integers(1, 400))
        lo_x = rng.uniform(-3000, 3000, n).round(int(trial % 3))
        lo_z = rng.uniform(-3000, 3000, n).round(int(trial % 2))
        w = rng.exponential(40.0, (2, n)) * (rng.uniform(size=n) < 0.97) + rng.exponential(2000.0, (2, n)) * (
            rng.uniform(size=n) < 0.03
        )
        hi_x, hi_z = lo_x + w[0], lo_z + w[1]
        pad = float(rng.choice([0.0, 3.61, 10.0]))
        want = np.zeros(n, dtype=bool)
        ii, jj = box_pairs(lo_x, hi_x, lo_z, hi_z, pad)
        want[ii] = want[jj] = True
        got = boxes_near(lo_x, hi_x, lo_z, hi_z, pad, np.argsort(lo_x, kind="stable"))
        assert np.array_equal(got, want), trial


def test_box_pairs_over_a_world_of_tiny_cells():
    """Small boxes spread over ±30 million km (more cells than an int64 key holds with the
    groups): the cells are numbered densely first, and the pairs are still all there."""
    rng = np.random.default_rng(4)
    n = 400
    lo_x = np.concatenate([rng.uniform(-3e10, 3e10, n // 2), rng.uniform(0.0, 60.0, n // 2)])
    lo_z = np.concatenate([rng.uniform(-3e10, 3e10, n // 2), rng.uniform(0.0, 60.0, n // 2)])
    hi_x, hi_z = lo_x + rng.uniform(0.0, 0.5, n), lo_z + rng.uniform(0.0, 0.5, n)
    group = rng.integers(0, 3, n)
    close = np.triu(
        (lo_x[:, None] - 3.6 <= hi_x[None, :])
        & (lo_x[None, :] - 3.6 <= hi_x[:, None])
        & (lo_z[:, None] - 3.6 <= hi_z[None, :])
        & (lo_z[None, :] - 3.6 <= hi_z[:, None]),
        1,
    ) & (group[:, None] != group[None, :])
    ii, jj = box_pairs(lo_x, hi_x, lo_z, hi_z, 3.6, group=group)
    want = {(int(a), int(b)) for a, b in zip(*np.nonzero(close))}
    assert len(want) > 100 and set(zip(ii.tolist(), jj.tolist())) == want


def _two_node_line(name: str) -> TrackLine:
    """A straight 200 m line over node 1 (0–100 m) and node 2 (100–200 m, offset from 0)."""
    line = TrackLine.synthetic(200.0, source=name)
    return dataclasses.replace(
        line,
        seg_node=np.array([1, 2], np.int64),
        seg_dir=np.array([1, 1], np.int8),
        seg_s0=np.array([0.0, 100.0]),
        seg_s1=np.array([100.0, 200.0]),
        seg_off0=np.array([0.0, 0.0]),
    )


def test_a_tie_between_two_nodes_is_named_as_over_every_train():
    """A and B overlap by 50 m on node 1 and on node 2: over every train the node met
    first names the collision, and C (on node 2 only, touching nobody, watched first)
    makes that node 2. Checked among A and B alone, node 1 would come first: the tie
    sends the check to every train, and the event is the same."""
    from tdbtools.physics.collisions import _overlaps

    a_line, b_line, c_line = (_two_node_line(n) for n in "abc")
    a = TrainPosition("A", a_line, [150.0], [100.0], speed=2.0)
    b = TrainPosition("B", b_line, [150.0], [100.0], speed=-1.0)
    c = TrainPosition("C", c_line, [190.0], [20.0])
    want = Occupancy([c, a, b]).collisions(1.0)
    assert [(e.train, e.other_train, e.node) for e in want] == [("A", "B", 2)]
    best, tied = _overlaps([a, b])
    assert tied and [e.node for e in _collision_events([a, b], best, 1.0)] == [1]
    assert Occupancy([c, a, b]).check_among(1.0, {"A", "B"}, set()) == want
    assert not _overlaps([a, TrainPosition("B", b_line, [140.0], [100.0])])[1]  # 50 / 40 m: no tie


def test_lazy_positions_are_made_when_asked():
    """update_lazy keeps the train's place in the order; nothing is made until a check
    or the trains are asked for, and then each time anew."""
    line = TrackLine.synthetic(500.0)
    made = []

    def source() -> TrainPosition:
        made.append(1)
        return TrainPosition("L", line, [100.0], [20.0])

    occ = Occupancy([TrainPosition("A", line, [50.0], [20.0])])
    occ.update_lazy("L", source)
    occ.update(TrainPosition("B", line, [300.0], [20.0]))
    assert made == [] and occ.watched() == ["A", "L", "B"]
    assert [t.train for t in occ.trains] == ["A", "L", "B"] and len(made) == 1
    assert occ.intervals("L") == [(1, 80.0, 100.0)] and len(made) == 2
    occ.update_lazy("A", source)  # replaced in place
    assert occ.watched() == ["A", "L", "B"]


# -- the replay's checks against the reference on DK24 -------------------------------------


def _dk24_specs(dk24, seed: int, n_paths: int, n_trains: int, drive: float = 3000.0) -> tuple:  # noqa: ANN001
    """Freight trains on random DK24 paths (several per path: one line), each path
    with ``drive`` metres of track beyond it."""
    from tdbtools.physics.scenario import TrainSpec
    from tdbtools.track.paths import resolve_route_paths

    resolved = [(name, res) for name, res, _err in resolve_route_paths(dk24) if res is not None and res.ok]
    rng = np.random.default_rng(seed)
    paths: list[str] = []
    for i in rng.permutation(len(resolved)).tolist():
        name, res = resolved[i]
        if TrackLine.from_path(dk24, res, extend=drive).length >= 2500.0:
            paths.append(name)
            if len(paths) == n_paths:
                break
    return tuple(
        TrainSpec(
            name=f"t{k}",
            consist=CONSIST,
            path=Path(paths[k % len(paths)]),
            start_offset=600.0 * (k // len(paths)),
            beyond_path=drive,
            driver="auto",
        )
        for k in range(n_trains)
    )


def _dk24_replay(dk24, seed: int):  # noqa: ANN001, ANN202
    """A replay of 36 freight trains on 14 random DK24 paths; the tests put its cars
    where they like."""
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Scenario

    specs = _dk24_specs(dk24, seed, 14, 36)
    return Replay(Scenario(Path(dk24.folder), specs, step=0.1, duration=1.0), route=dk24, signals=False)


def _place(rep, rng, focus, old_x=None):  # noqa: ANN001, ANN202
    """Car fronts for every train: most near the world point ``focus`` on their line,
    some anywhere, some partly off their line; a few with wide gaps between cars."""
    x = np.empty(len(rep.bodies.length))
    for t in rep.trains:
        ln, sl = t.line, t.cars
        n = sl.stop - sl.start
        if old_x is not None and rng.uniform() < 0.85:
            x[sl] = old_x[sl] + rng.uniform(-12.0, 12.0)  # moved as one
            continue
        u = rng.uniform()
        if u < 0.75:
            i = int(np.argmin(np.hypot(ln.X - focus[0], ln.Z - focus[1])))
            front = float(ln.s[i]) + rng.uniform(-150.0, 450.0)
        elif u < 0.9:
            front = rng.uniform(0.0, ln.length)
        else:
            front = rng.choice([ln.length + rng.uniform(-200.0, 60.0), rng.uniform(-50.0, 300.0)])
        gaps = rng.uniform(0.0, 0.3, n)
        gaps[rng.uniform(size=n) < 0.01] = rng.uniform(5.0, 120.0)
        lengths = rep.bodies.length[sl]
        x[sl] = front - np.concatenate([[0.0], np.cumsum(lengths[:-1] + gaps[:-1])])
    return x


def _compare_on_placements(rep, seed: int, sequences: int) -> dict[str, int]:  # noqa: ANN001
    """``sequences`` runs of 6 checks (trains moved, put elsewhere, taken off the track
    and back between checks): after every check the same events in the same order, the
    same watched trains in the same order and the same contacts as the reference."""
    rng = np.random.default_rng(seed)
    counts = {"collision": 0, "side_collision": 0}
    for seq in range(sequences):
        rep.occupancy = rep.watch.occupancy = Occupancy()
        ref = _OldOccupancy()
        t0 = rep.trains[int(rng.integers(len(rep.trains)))].line
        i = int(rng.integers(len(t0.s)))
        focus = (float(t0.X[i]), float(t0.Z[i]))
        x = None
        mode = seq % 3  # all on the track / some off / trains going off and on
        active = np.ones(len(rep.trains), dtype=bool)
        for check in range(6):
            x = _place(rep, rng, focus, x)
            v = np.repeat(
                rng.uniform(-25.0, 25.0, len(rep.trains)), rep.layout.train_end - rep.train_start + 1
            )
            v += rng.normal(0.0, 0.05, len(v))
            rep.engine = rep.watch.engine = SimpleNamespace(x=x, v=v)
            rep.time = 0.5 * check
            if mode:
                flip = rng.uniform(size=len(active)) < (0.1 if mode == 1 else 0.3)
                active = active ^ flip
                rep.on_track = (lambda a: lambda: a)(active.copy())
            else:
                rep.on_track = lambda: None
            got: list[SafetyEvent] = []
            rep.watch.safety = got.append
            rep.check_collisions()
            want = _old_check(rep, ref)
            assert got == want, (seed, seq, check)
            assert rep.occupancy.watched() == list(ref.trains), (seed, seq, check)
            assert rep.occupancy._contact == ref.contact, (seed, seq, check)
            for e in want:
                counts[e.kind] += 1
    return counts


@pytest.mark.parametrize("cross_max", [8192, 0, "compiled"])
def test_checks_match_the_reference_on_random_dk24_placements(dk24, monkeypatch, cross_max):  # noqa: ANN001
    """Two random sets of trains, 30 sequences of 6 checks on each; the comparison sees
    plenty of both kinds of event. The side checks' pairs of cars come from pairs of
    trains all three ways (every car against every car, only the cars near the other
    train first, or compiled)."""
    from tdbtools.physics import proximity

    if cross_max == "compiled":
        pytest.importorskip("numba", reason="the compiled pairing needs numba (tdbtools[fast])")
        monkeypatch.setattr(proximity._CROSS, "value", None)  # made again: compiled
    else:
        monkeypatch.setattr(proximity._CROSS, "value", False)
        monkeypatch.setattr(proximity, "OWNER_CROSS_MAX", cross_max)
    total = {"collision": 0, "side_collision": 0}
    for seed in (11, 12):
        counts = _compare_on_placements(_dk24_replay(dk24, seed), 2013 + seed, 30)
        assert counts["collision"] and counts["side_collision"], (seed, counts)
        for k, c in counts.items():
            total[k] += c
    assert total["collision"] >= 300 and total["side_collision"] >= 300, total


@pytest.mark.slow
def test_replays_match_the_reference_on_dk24(dk24):  # noqa: ANN001
    """Whole replays (the trains driving, the checks every 0.5 s): the same events and
    summaries with the reference checks as with the replay's own, on two random sets of
    24 trains whose paths share track (collisions and side collisions happen)."""
    from tdbtools.physics.events import Collision, SideCollision
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import Scenario

    class OldReplay(Replay):
        def check_collisions(self) -> None:
            occ = self.__dict__.setdefault("_old_occupancy", _OldOccupancy())
            for ev in _old_check(self, occ):
                self.watch.safety(ev)

    kinds = set()
    for seed in (21, 22):
        specs = _dk24_specs(dk24, seed, 8, 24)
        sc = Scenario(Path(dk24.folder), specs, step=0.1, duration=40.0)
        new = Replay(sc, route=dk24, signals=False).run()
        old = OldReplay(sc, route=dk24, signals=False).run()
        assert new.events == old.events, seed
        drop = {"wall_seconds", "realtime_factor"}
        assert {k: v for k, v in new.summary.items() if k not in drop} == {
            k: v for k, v in old.summary.items() if k not in drop
        }
        kinds |= {type(e) for e in new.events}
    assert {Collision, SideCollision} <= kinds


def test_lookups_on_many_lines_are_each_lines_own(dk24):  # noqa: ANN001
    """The replay's one-go lookups of engine-event locations (node, world X, Z, height)
    give, bit for bit, what each line's own node_offset, world_xz and elevation give:
    at random distances, at the samples and node ends themselves, between them, at a
    line's two ends and just inside them."""
    rep = _dk24_replay(dk24, 11)
    lines = list({id(t.line): t.line for t in rep.trains}.values())
    rng = np.random.default_rng(7)
    idx, ss = [], []
    for k, ln in enumerate(lines):
        pts = np.concatenate(
            [
                rng.uniform(0.0, ln.length, 400),
                ln.s,
                ln.seg_s1,
                ln.seg_s0,
                (ln.s[:-1] + ln.s[1:]) / 2.0,
                np.nextafter(ln.s, np.inf),
                np.nextafter(ln.s, -np.inf),
                [0.0, ln.length, 1e-12, ln.length - 1e-9],
            ]
        )
        pts = np.clip(pts, 0.0, ln.length)
        idx.append(np.full(len(pts), k))
        ss.append(pts)
    line, s = np.concatenate(idx), np.concatenate(ss)
    order = rng.permutation(len(s))  # lines and distances in any order
    line, s = line[order], s[order]
    from tdbtools.physics.kernels import compiled_available
    from tdbtools.physics.stages.linetable import LineTable

    tables = [LineTable(lines, compiled=False)]  # numpy's (the replay's may be either)
    if compiled_available():  # the compiled lookup (_lookup_kernel.on_lines) too
        tables.append(LineTable(lines, compiled=True))
    for table in tables:
        node, X, Z, Y = table.on_lines(line, s)
        for k, ln in enumerate(lines):
            m = line == k
            want_x, want_z = ln.world_xz(s[m])
            assert np.array_equal(node[m], ln.node_offset(s[m])[0])
            for got, want in ((X[m], want_x), (Z[m], want_z), (Y[m], ln.elevation(s[m]))):
                assert np.array_equal(got.view(np.int64), want.view(np.int64)), k
    if len(tables) == 2:  # and beyond what a line's own lookups take: NaN, outside the line
        odd = np.array([np.nan, -1.0, -0.0, 1e12, -np.inf, np.inf])
        line2 = np.repeat(np.arange(len(lines)), len(odd))
        s2 = np.tile(odd, len(lines))
        with np.errstate(invalid="ignore"):
            for a, b in zip(tables[0].on_lines(line2, s2), tables[1].on_lines(line2, s2)):
                assert np.array_equal(a.view(np.int64), b.view(np.int64))


def test_side_collision_found_wherever_the_grid_cells_fall():
    """The pair is found whichever neighbouring grid cell the other car's centre falls
    in, and whichever train comes first: slide both along the line, both orders."""
    from test_physics_parts import _parallel

    from tdbtools.formats import load_route
    from tdbtools.physics.collisions import TrainPosition, side_collisions
    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    line = TrackLine.from_path(route, SAMPLE_ROUTE / "PATHS" / "MainWE.pat")
    near = _parallel(line, 3.0)
    missed = []
    for s in np.arange(120.0, 420.0, 7.3):  # V_a's straight: the cells are 23.6 m (a car and the clearance)
        a = TrainPosition("A", line, [s], [20.0], speed=1.0)
        for off in (-15.0, 15.0):  # the other car's centre behind or ahead
            b = TrainPosition("B", near, [s + off], [20.0])
            for pair in ((a, b), (b, a)):
                if len(side_collisions(list(pair), 0.0, cell=10.0)) != 1:
                    missed.append((float(s), off, pair[0].train))
    assert missed == []


V_A, J1, V_MAIN = 2, 3, 4


@pytest.fixture(scope="module")
def lines():
    from helpers import SAMPLE_ROUTE

    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    return tuple(
        TrackLine.from_path(route, SAMPLE_ROUTE / "PATHS" / f"{p}.pat") for p in ("MainWE", "MainEW")
    )


def _parallel(line, lateral: float):  # noqa: ANN001, ANN202
    """The same line moved ``lateral`` metres to the right (a parallel track)."""
    import dataclasses

    h = line._heading_u
    return dataclasses.replace(line, X=line.X + lateral * np.cos(h), Z=line.Z - lateral * np.sin(h))


def test_side_collision_lists_every_car_involved(lines):
    from tdbtools.physics.collisions import TrainPosition, side_collisions

    we = lines[0]
    s = 300.0
    a = TrainPosition("A", we, [s, s - 20.5, s - 41.0], [20.0, 20.0, 20.0], speed=10.0)
    # B's two cars overlap A's first two, not its third; B runs the other way
    b = TrainPosition("B", _parallel(we, 3.0), [s + 10.0, s - 10.5], [20.0, 20.0], speed=[-5.0, -5.0])
    (e,) = side_collisions([b, a], 4.0)  # the event names the first of the two trains as given
    assert (e.train, e.other_train, e.cars, e.other_cars) == ("B", "A", (0, 1), (0, 1))
    assert (e.kind, e.time, e.node) == ("side_collision", 4.0, V_A)
    assert e.cause == "cars 3.00 m apart (clearance 3.6 m) on different lines"
    assert e.closing_speed == pytest.approx(15.0)
    assert e.s in (pytest.approx(s), pytest.approx(s - 20.5))  # the middle of one of B's cars
    assert e.location.as_tuple() == pytest.approx(b.line.location(e.s).as_tuple())
    # moving together at the same speed: no closing speed
    same = TrainPosition("B", _parallel(we, 3.0), [s + 10.0], [20.0], speed=10.0)
    (e2,) = side_collisions([a, same], 1.0)
    assert e2.closing_speed == pytest.approx(0.0, abs=1e-9)
    assert e2.cars == (0,) and e2.s == pytest.approx(s - 10.0)


def test_side_collision_clearance_and_cells(lines):
    from tdbtools.physics.collisions import TrainPosition, side_collisions

    we = lines[0]
    s = 300.0
    a = TrainPosition("A", we, [s], [20.0])
    b = TrainPosition("B", _parallel(we, 4.0), [s + 5.0], [20.0])
    assert side_collisions([a, b], 0.0) == []
    (e,) = side_collisions([a, b], 0.0, clearance=4.5)
    assert e.cause == "cars 4.00 m apart (clearance 4.5 m) on different lines"
    # cells far smaller than a car: enlarged, the pair is still found
    assert len(side_collisions([a, b], 0.0, clearance=4.5, cell=1.0)) == 1
    # a train wholly off its line is not anywhere: nothing to collide with
    off = TrainPosition("C", _parallel(we, 1.0), [-30.0], [20.0])
    assert side_collisions([a, off], 0.0) == []
    assert side_collisions([off], 0.0) == []
    # a car partly off the line's start still counts with the part that is on it
    part = TrainPosition("D", _parallel(we, 2.0), [8.0], [20.0])
    near0 = TrainPosition("A", we, [15.0], [20.0])
    (e,) = side_collisions([near0, part], 0.0)
    assert e.other_train == "D" and e.s == pytest.approx(5.0)


def test_segment_distance():
    from tdbtools.physics.proximity import seg_dist as _seg_dist

    def d(p1, q1, p2, q2):  # noqa: ANN001, ANN202
        return float(_seg_dist(*(np.array([x], dtype=float) for x in (p1, q1, p2, q2)))[0])

    assert d((0, 0), (10, 0), (5, -1), (5, 1)) == 0.0  # crossing
    assert d((0, 0), (10, 0), (0, 3), (10, 3)) == pytest.approx(3.0)  # parallel
    assert d((0, 0), (10, 0), (12, 0), (20, 0)) == pytest.approx(2.0)  # in line, end to end
    assert d((0, 0), (10, 0), (13, 4), (13, 4)) == pytest.approx(5.0)  # a point beyond an end
    assert d((0, 0), (0, 0), (3, 4), (3, 4)) == pytest.approx(5.0)  # two points
    assert d((0, 0), (10, 0), (5, 2), (5, 1)) == pytest.approx(1.0)  # a T short of the bar
    assert d((5, 2), (5, 1), (0, 0), (10, 0)) == pytest.approx(1.0)
    assert d((0, 0), (10, 10), (0, 10), (5, 5)) == pytest.approx(0.0)  # touching at an end


def test_collision_event_details(lines):
    from tdbtools.physics.collisions import Occupancy, TrainPosition, collisions

    we, ew = lines
    j_we, j_ew = we.junctions[0].s, ew.junctions[0].s
    # A eastbound on V_main [380, 480]; B westbound on V_main [440, 540]
    a = TrainPosition("A", we, [j_we + 480.0, j_we + 430.0], [50.0, 50.0], speed=[10.0, 10.0])
    b = TrainPosition("B", ew, [j_ew - 440.0], [100.0], speed=5.0)
    (e,) = collisions([a, b], 2.0)
    assert (e.train, e.other_train, e.node, e.cars, e.other_cars) == ("A", "B", V_MAIN, (0,), (0,))
    assert e.cause == "both trains occupy node 4 around offset 460.00 m"
    assert e.s == pytest.approx(j_we + 460.0) and e.closing_speed == pytest.approx(15.0)
    # given the other way round: named from B, closing just as fast
    (e,) = collisions([b, a], 2.0)
    assert (e.train, e.other_train, e.closing_speed) == ("B", "A", pytest.approx(15.0))
    assert e.s == pytest.approx(j_ew - 460.0)
    # moving apart: a negative closing speed
    back = TrainPosition("B", ew, [j_ew - 440.0], [100.0], speed=-12.0)
    (e,) = collisions([a, back], 2.0)
    assert e.closing_speed == pytest.approx(-2.0)
    # the nearest car of a train: its second car overlaps B, its first not
    a2 = TrainPosition("A", we, [j_we + 560.0, j_we + 500.0], [50.0, 60.0], speed=[3.0, 4.0])
    (e,) = collisions([a2, b], 2.0)
    # A's centre is east of B's: going east while B goes west, they draw apart
    assert e.cars == (1,) and e.closing_speed == pytest.approx(-9.0)
    # contacts are reported once until the trains part; all of them when asked
    occ = Occupancy([a, b])
    assert len(occ.collisions(1.0)) == 1 and occ.collisions(2.0) == []
    assert len(occ.collisions(3.0, only_new=False)) == 1
    assert occ.intervals("A") == a.intervals()
    occ.remove("B")
    occ.remove("nobody")
    assert occ.collisions(4.0) == [] and [t.train for t in occ.trains] == ["A"]
    occ.update(b)
    assert len(occ.collisions(5.0)) == 1  # new again after parting
    assert occ.by_node() == {
        V_MAIN: [
            ("A", pytest.approx(380.0), pytest.approx(480.0)),
            ("B", pytest.approx(440.0), pytest.approx(540.0)),
        ]
    }


def test_a_train_removed_and_put_back_touches_anew_whichever_side_it_was(lines):
    """Occupancy.remove forgets the removed train's contacts at once: put back, the
    same pair is reported again with no check in between to clear it, whichever of the
    two was taken off. (A train put back comes last, so the event then names it second:
    which side of a contact the removal clears cannot be told apart from outside.)"""
    from tdbtools.physics.collisions import Occupancy, TrainPosition

    we, ew = lines
    j_we, j_ew = we.junctions[0].s, ew.junctions[0].s
    a = TrainPosition("A", we, [j_we + 480.0], [100.0], speed=10.0)
    b = TrainPosition("B", ew, [j_ew - 440.0], [100.0], speed=5.0)
    for gone, back in (("A", a), ("B", b)):
        occ = Occupancy([a, b])
        (e,) = occ.collisions(1.0)
        assert (e.train, e.other_train) == ("A", "B")
        assert occ.collisions(2.0) == []  # the same contact: not new
        occ.remove(gone)
        occ.update(back)
        assert len(occ.collisions(3.0)) == 1, gone


def test_collision_picks_the_longest_overlap(lines):
    from tdbtools.physics.collisions import TrainPosition, collisions

    we, ew = lines
    j_we, j_ew = we.junctions[0].s, ew.junctions[0].s
    # A: 30 m of V_a before J1 and 10 m of V_main after it; B westbound: 40 m into V_main... and
    # through J1 onto V_a for 25 m
    a = TrainPosition("A", we, [j_we + 10.0], [40.0], speed=1.0)
    b = TrainPosition("B", ew, [j_ew + 25.0], [60.0], speed=1.0)
    (e,) = collisions([a, b], 0.0)
    assert e.node == V_A  # 25 m shared there, 10 m on V_main


def test_side_collision_events_reported_once(lines):
    from tdbtools.physics.collisions import Occupancy, TrainPosition

    we = lines[0]
    a = TrainPosition("A", we, [300.0], [20.0])
    b = TrainPosition("B", _parallel(we, 3.0), [305.0], [20.0])
    occ = Occupancy([a, b])
    assert len(occ.side_collisions(0.0)) == 1 and occ.side_collisions(1.0) == []
    assert len(occ.side_collisions(1.0, only_new=False)) == 1
    assert len(occ.side_collisions(1.0, clearance=2.0, only_new=False)) == 0
    # collisions and side collisions are remembered apart (the parallel copy shares the nodes)
    assert len(occ.collisions(1.0)) == 1 and len(occ.side_collisions(2.0, only_new=False)) == 1


def test_track_end_derailments_at_both_ends():
    import dataclasses

    from tdbtools.physics.safety import BogieSet
    from tdbtools.physics.trackline import TrackLine

    line = dataclasses.replace(TrackLine.synthetic(500.0, node=7), starts_at_track_end=True)
    bs = BogieSet("T", line, [100.0, 79.5], [20.0, 20.0], [14.0, 14.0])
    assert bs.bogies[1] == pytest.approx([76.5, 62.5])
    assert bs.move(-60.0, 1.0) == [] and bs.move(-2.0, 2.0) == []  # the rear bogie 0.5 m from 0
    (e,) = bs.move(-1.0, 3.0)
    assert (e.kind, e.time, e.train, e.cars, e.node, e.s) == ("derailment", 3.0, "T", (1,), 7, 0.0)
    assert e.cause == "ran off the track end at the near end of the line"
    assert e.location.as_tuple() == pytest.approx(line.location(0.0).as_tuple())
    (e,) = bs.move(-21.0, 4.0)  # the first car follows; the second is not reported again
    assert e.cars == (0,)
    far = BogieSet("F", line, [495.0], [20.0], [14.0])
    assert far.move([2.5], 1.0) == [] and list(far.beyond_line()) == []
    (e,) = far.move([6.0], 2.0)  # the front bogie 0.5 m beyond the end
    assert e.cause == "ran off the track end at the far end of the line" and e.s == 500.0
    assert list(far.beyond_line()) == [0] and list(far.derailed) == [True]
    assert far.move(3.0, 3.0) == []


def test_switch_events_say_why(lines):
    from tdbtools.physics.safety import BogieSet

    we = lines[0]
    j = we.junctions[0].s
    under = BogieSet("A", we, [j + 10.0], [20.0], [14.0])
    (e,) = under.throw_switch(J1, 1, 5.0)
    assert e.kind == "derailment" and e.s == pytest.approx(j) and e.node == J1
    assert e.cause == (
        "switch 3 thrown to route 1 under the car (the line takes route 0): its bogies take different routes"
    )
    assert under.throw_switch(J1, 1, 6.0) == []  # already derailed
    ahead = BogieSet("B", we, [j - 20.0], [20.0], [14.0])
    (e,) = ahead.throw_switch(J1, 1, 5.0)
    assert (e.kind, e.cars, e.s) == ("path_changed", (), pytest.approx(j))
    assert e.cause == "facing switch 3 ahead now set to route 1; the line takes route 0: rebuild the line"
    assert ahead.throw_switch(99, 1, 5.0) == []  # a junction the line does not pass
    # a trailing switch ahead is not reported
    ew = lines[1]
    trailing = BogieSet("C", ew, [ew.junctions[0].s - 50.0], [20.0], [14.0])
    assert trailing.throw_switch(J1, 1, 5.0) == []


def test_train_position_parts(lines):
    from tdbtools.physics.collisions import TrainPosition, _node_dir

    we, ew = lines
    t = TrainPosition("A", we, [100.0, 79.0, 58.0], 20.0, speed=[1.0, 2.0, 3.0])
    assert t.front == 100.0 and t.rear == 38.0
    assert list(t.car_length) == [20.0, 20.0, 20.0]
    assert [t.nearest_car(s) for s in (101.0, 90.0, 79.5, 70.0, 59.0, 30.0)] == [0, 0, 0, 1, 1, 2]
    assert [t.car_speed(i) for i in range(3)] == [1.0, 2.0, 3.0]
    assert TrainPosition("B", we, [5.0], [5.0], speed=4.0).car_speed(0) == 4.0
    assert _node_dir(we, V_MAIN, 100.0) == 1 and _node_dir(ew, V_MAIN, 100.0) == 0
    assert _node_dir(ew, V_A, 10.0) == 1 and _node_dir(we, V_A, 10.0) == 0
    assert _node_dir(we, 99, 0.0) == 1  # a node the line does not pass


def test_collisions_between_many_trains_on_one_node(lines):
    """Four trains on V_main (each on a line of its own): the long one overlaps the two
    short ones inside it, never the one beyond it."""
    from tdbtools.physics.collisions import TrainPosition, collisions

    we = lines[0]
    j = we.junctions[0].s
    spans = {"long": (0.0, 100.0), "a": (10.0, 20.0), "b": (50.0, 60.0), "far": (200.0, 300.0)}
    trains = [TrainPosition(n, we, [j + hi], [hi - lo], line_key=n) for n, (lo, hi) in spans.items()]
    pairs = {(e.train, e.other_train): e for e in collisions(trains, 0.0)}
    assert set(pairs) == {("long", "a"), ("long", "b")}
    assert pairs[("long", "b")].cause == "both trains occupy node 4 around offset 55.00 m"


def test_a_second_collision_of_the_same_two_trains_is_reported():
    """Train B runs at 30 m/s (1 s steps) through standing train A, away, and back over
    A's track (a line that doubles back over the same node, as a balloon loop does): both
    collisions are reported, although B leaves A's surroundings within one step."""
    import dataclasses

    from tdbtools.physics.events import Collision

    a_line = TrackLine.synthetic(600.0, route_limit=40.0)
    b0 = TrackLine.synthetic(600.0, route_limit=40.0, step=1.0)
    back = b0.s > 300.0
    fold = np.where(back, 600.0 - b0.s, b0.s)
    b_line = dataclasses.replace(
        b0,
        Z=fold,
        z=fold,
        offset=fold,
        direction=np.where(back, -1, 1).astype(np.int8),
        heading=np.where(back, np.pi, 0.0),
        _heading_u=np.where(back, np.pi, 0.0),
        seg_node=np.array([1, 1], np.int64),
        seg_dir=np.array([1, -1], np.int8),
        seg_s0=np.array([0.0, 300.0]),
        seg_s1=np.array([300.0, 600.0]),
        seg_off0=np.array([0.0, 300.0]),
    )
    assert b_line.occupancy(440.0, 480.0) == [(1, 160.0, 120.0)]  # back over node 1
    double = CONSISTS / "sample_double.con"
    a = TrainSpec("A", double, path=Path("x"), start_offset=120.0, driver="schedule")
    b = TrainSpec("B", double, path=Path("x"), start_speed=30.0, driver="schedule")
    res = Replay(sample_scenario(a, b, duration=20.0, step=1.0), lines={"A": a_line, "B": b_line}).run()
    hits = [e for e in res.events if isinstance(e, Collision)]
    # B closes on A at its own speed both times, over the node forwards and then backwards
    assert hits[0].closing_speed == pytest.approx(30.0, abs=0.5)
    assert [(e.train, e.other_train) for e in hits] == [("A", "B")] * 2
    assert hits[1].closing_speed == pytest.approx(29.4, abs=0.5)  # B coasts, a little slower
    assert hits[0].time < 6.0 < 12.0 < hits[1].time


def test_train_position_stores_whole_metre_fronts_as_float():
    from tdbtools.physics.collisions import TrainPosition

    pos = TrainPosition("A", TrackLine.synthetic(500.0), [250, 229], [20.0, 20.0])
    assert pos.car_front.dtype == np.float64 and pos.car_front.tolist() == [250.0, 229.0]
