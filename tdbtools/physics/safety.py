"""Derailments and collisions (docs/physics.md §5).

Bogies (docs/physics.md §5.1)
-----------------
A :class:`BogieSet` keeps every car's two bogies as measures (line distances) along its
train's :class:`~tdbtools.physics.trackline.TrackLine`: the front bogie ``(L − b)/2``
behind the car front, the rear bogie ``b`` further back (``b`` the bogie spacing,
0.65·L when the file gives none). Each step every bogie is moved by its car's
displacement (:meth:`BogieSet.move`); when all bogies of the train are on one track node
they are re-synchronised from the car positions the integrator keeps
(:meth:`BogieSet.resync`), which removes the rounding drift the article mentions without
risk (no switch can lie between them).

A car derails (:class:`SafetyEvent` ``kind="derailment"``) when

* one of its bogies passes the far end of a line that ``ends_at_track_end`` (or the
  start of one that ``starts_at_track_end``): it ran off the end of the track;
* a switch is thrown under it (:meth:`BogieSet.throw_switch`): a junction the line
  passes lies between the car's front and rear bogie and the switch now selects a
  route other than the one the line takes — the bogies of one car would take
  different routes. Facing and trailing junctions count alike (the blades move under
  the car either way).

Throwing a *facing* switch ahead of a train (all its bogies before the junction) does
not derail it but makes its line wrong beyond the junction: a ``kind="path_changed"``
event tells the integrator to rebuild the line. A trailing switch ahead is not
reported (the traveller runs trailing switches through whatever their position).
A bogie beyond the end of a line that does *not* end at a track end is not a
derailment: the line was just not sampled further (:meth:`BogieSet.beyond_line`).

Occupancy (docs/physics.md §5.3) and collisions
----------------------------------------
A :class:`TrainPosition` says where a train is on its line (car fronts, car lengths,
speed). Its track occupancy is the exact list of node intervals between its rear and
front (:meth:`TrackLine.occupancy`, coupler gaps included). :func:`collisions` compares
trains on *different* lines node by node (an index by node keeps it near linear): an
overlap of positive length on one node is a ``"collision"`` at the middle of the
overlap, with the nearest car of each train and the closing speed (the rate at which
the two trains approach each other along that node, + = approaching). Trains on the
same line are the 1-D engine's business and are skipped; so is mere touching.

Side collisions (docs/physics.md §5.3)
--------------------------
Where tracks run close, cars on different lines can foul each other.
:func:`side_collisions` puts every car (its chord rear → middle → front, from
:meth:`TrackLine.world_xz`) in a uniform grid of cells (default 50 m, enlarged to the
longest car + clearance so neighbours are never missed) and checks only pairs in the
same or neighbouring cells, on different lines: a pair whose centre lines come closer
than ``clearance`` (default 3.6 m, the centre-to-centre distance at which two ~3 m
wide cars touch) *and* overlap longitudinally (one car's chord projected on the other's
axis overlaps it) is a ``"side_collision"``. One event per pair of trains, listing the
cars involved, located at the closest pair.

Every event has the time, the train, the car indices (front → back, 0 = first car),
the track node and the world location (tile_x, tile_z, x, y, z).
:class:`Occupancy` keeps the trains' positions and reports only *new* contacts.

Broad phase (docs/physics.md §5.4)
----------------------------------
For many trains the replay narrows the checks down first: :func:`box_pairs` (boxes
within a pad, by a grid) picks the trains to watch, :func:`chords_within` the cars that
may touch side by side, and :meth:`Occupancy.check_among` runs the two checks over only
the trains that may touch, with the events and contacts of the checks over all of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Container, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..track.geometry import WorldPoint
from .forces import CarModel
from .kernels import LazyKernel
from .trackline import TrackLine

__all__ = [
    "BogieSet",
    "DEFAULT_CELL_M",
    "DEFAULT_CLEARANCE_M",
    "Occupancy",
    "SafetyEvent",
    "TrainPosition",
    "box_pairs",
    "chords_within",
    "collisions",
    "derailments",
    "side_collisions",
    "throw_switch",
]

#: Centre-to-centre distance (m) below which cars on different tracks foul each other.
DEFAULT_CLEARANCE_M = 3.6
#: Edge of the grid cells for side collisions (m).
DEFAULT_CELL_M = 50.0
_TOL = 1e-6


@dataclass(frozen=True)
class SafetyEvent:
    """A derailment, collision, side collision or path change.

    ``cars`` are indices into ``train``'s cars (front → back); ``other_train`` /
    ``other_cars`` the second train of a collision. ``node`` is the track node (a
    junction node for a switch thrown under a car), ``location`` the world position,
    ``s`` the line distance on ``train``'s line. ``closing_speed`` (m/s) for
    collisions. ``cause`` says why in words.
    """

    kind: str
    time: float
    train: Hashable
    cars: tuple[int, ...]
    node: int
    location: WorldPoint
    cause: str = ""
    other_train: Hashable | None = None
    other_cars: tuple[int, ...] = ()
    closing_speed: float | None = None
    s: float | None = None


# -- bogies and derailments ---------------------------------------------------------------


class BogieSet:
    """The bogies of one train's cars as measures along its line (module docstring).

    ``car_front``: line distance of each car's front, front → back. ``length`` and
    ``spacing`` (bogie spacing) per car, in metres.
    """

    def __init__(self, train: Hashable, line: TrackLine, car_front, length, spacing) -> None:
        self.train = train
        self.line = line
        self.length = np.array(length, dtype=np.float64).reshape(-1)
        n = len(self.length)
        self.spacing = np.broadcast_to(np.asarray(spacing, dtype=np.float64), (n,)).copy()
        self.front = np.zeros(n)
        self.rear = np.zeros(n)
        self.derailed = np.zeros(n, dtype=bool)
        self.place(car_front)

    @classmethod
    def from_model(cls, train: Hashable, line: TrackLine, car_front, model: CarModel) -> BogieSet:
        return cls(train, line, car_front, model.length, model.bogie_spacing)

    def __len__(self) -> int:
        return len(self.length)

    def place(self, car_front) -> None:
        """Put every bogie where the car fronts say (no checks)."""
        cf = np.broadcast_to(np.asarray(car_front, dtype=np.float64), self.length.shape)
        self.front = cf - (self.length - self.spacing) / 2.0
        self.rear = self.front - self.spacing

    @property
    def bogies(self) -> np.ndarray:
        """(n_cars, 2) array: front and rear bogie line distances."""
        return np.stack([self.front, self.rear], axis=1)

    def nodes(self) -> np.ndarray:
        """(n_cars, 2) track nodes under the front and rear bogies."""
        node, _off, _d = self.line.node_offset(self.bogies.reshape(-1))
        return node.reshape(-1, 2)

    def on_one_node(self) -> bool:
        """Are all bogies on the same node traversal of the line (and on the line)?"""
        b = self.bogies.reshape(-1)
        if b.min() < 0.0 or b.max() > self.line.length:
            return False
        seg = self.line.segment_index(b)
        return bool((seg == seg[0]).all())

    def move(self, displacement, time: float, *, car_front=None) -> list[SafetyEvent]:
        """Move every bogie by its car's displacement (m along the line; one value or
        one per car), report cars that ran off a track end, then re-synchronise from
        ``car_front`` if given and all bogies are on one node."""
        d = np.broadcast_to(np.asarray(displacement, dtype=np.float64), self.length.shape)
        self.front = self.front + d
        self.rear = self.rear + d
        events = self.check(time)
        if car_front is not None:
            self.resync(car_front)
        return events

    def resync(self, car_front) -> bool:
        """Recompute the bogies from the car fronts if all bogies are on one node
        (docs/physics.md §5.1); returns whether it did."""
        if not self.on_one_node():
            return False
        self.place(car_front)
        return True

    def beyond_line(self) -> np.ndarray:
        """Cars with a bogie outside [0, line length]."""
        b = self.bogies
        return np.flatnonzero((b < -_TOL).any(axis=1) | (b > self.line.length + _TOL).any(axis=1))

    def check(self, time: float) -> list[SafetyEvent]:
        """Derailments of cars whose bogies ran past a track end of the line (cars
        already derailed are not reported again)."""
        out: list[SafetyEvent] = []
        line = self.line
        b = self.bogies
        ends = []
        if line.ends_at_track_end:
            ends.append(((b > line.length + _TOL).any(axis=1), line.length, "far"))
        if line.starts_at_track_end:
            ends.append(((b < -_TOL).any(axis=1), 0.0, "near"))
        for hit, s_end, which in ends:
            new = hit & ~self.derailed
            if not new.any():
                continue
            self.derailed |= new
            node, _off, _d = line.node_offset(np.array([s_end]))
            out.append(
                SafetyEvent(
                    "derailment",
                    float(time),
                    self.train,
                    tuple(int(i) for i in np.flatnonzero(new)),
                    int(node[0]),
                    line.location(s_end),
                    cause=f"ran off the track end at the {which} end of the line",
                    s=float(s_end),
                )
            )
        return out

    def straddling(self, s: float) -> np.ndarray:
        """Cars whose front bogie is past line distance ``s`` and rear bogie not yet."""
        return np.flatnonzero((self.front > s + _TOL) & (self.rear < s - _TOL))

    def throw_switch(self, junction: int, route: int, time: float) -> list[SafetyEvent]:
        """A switch is thrown to ``route``: derail the cars straddling it where the line
        takes another route; report a facing switch changed ahead of the train."""
        out: list[SafetyEvent] = []
        line = self.line
        for k in np.flatnonzero(line.junction_node == int(junction)):
            if int(line.junction_route[k]) == int(route):
                continue
            s_j = float(line.junction_s[k])
            cars = [int(i) for i in self.straddling(s_j) if not self.derailed[i]]
            loc = line.location(s_j)
            if cars:
                self.derailed[cars] = True
                out.append(
                    SafetyEvent(
                        "derailment",
                        float(time),
                        self.train,
                        tuple(cars),
                        int(junction),
                        loc,
                        cause=(
                            f"switch {junction} thrown to route {route} under the car (the line "
                            f"takes route {int(line.junction_route[k])}): its bogies take "
                            "different routes"
                        ),
                        s=s_j,
                    )
                )
            elif bool(line.junction_facing[k]) and self.front.max() < s_j - _TOL:
                out.append(
                    SafetyEvent(
                        "path_changed",
                        float(time),
                        self.train,
                        (),
                        int(junction),
                        loc,
                        cause=(
                            f"facing switch {junction} ahead now set to route {route}; the line "
                            f"takes route {int(line.junction_route[k])}: rebuild the line"
                        ),
                        s=s_j,
                    )
                )
        return out


def derailments(bogie_sets: Iterable[BogieSet], time: float) -> list[SafetyEvent]:
    """Track-end derailments of every bogie set (:meth:`BogieSet.check`)."""
    out: list[SafetyEvent] = []
    for b in bogie_sets:
        out.extend(b.check(time))
    return out


def throw_switch(bogie_sets: Iterable[BogieSet], junction: int, route: int, time: float) -> list[SafetyEvent]:
    """A scenario event: ``junction`` is thrown to ``route`` at ``time``
    (:meth:`BogieSet.throw_switch` for every train)."""
    out: list[SafetyEvent] = []
    for b in bogie_sets:
        out.extend(b.throw_switch(junction, route, time))
    return out


# -- occupancy and collisions ------------------------------------------------------------


@dataclass
class TrainPosition:
    """Where a train is: its line, each car's front (line distance, front → back) and
    length, and its speed (m/s along the line, + = towards increasing s; one value or
    one per car). ``line_key`` says which trains share a line (default: the line
    object itself)."""

    train: Hashable
    line: TrackLine
    car_front: np.ndarray
    car_length: np.ndarray
    speed: float | np.ndarray = 0.0
    line_key: Hashable | None = None
    _key: Hashable = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.car_front = np.array(self.car_front, dtype=np.float64).reshape(-1)
        self.car_length = np.broadcast_to(
            np.asarray(self.car_length, dtype=np.float64), self.car_front.shape
        ).copy()
        self._key = self.line_key if self.line_key is not None else ("line", id(self.line))

    @property
    def front(self) -> float:
        return float(self.car_front[0])

    @property
    def rear(self) -> float:
        return float(self.car_front[-1] - self.car_length[-1])

    def car_speed(self, i: int) -> float:
        v = np.asarray(self.speed, dtype=np.float64)
        return float(v) if v.ndim == 0 else float(v[i])

    def intervals(self) -> list[tuple[int, float, float]]:
        """Node intervals ``(node, offset at the rear side, offset at the front side)``."""
        return self.line.occupancy(self.rear, self.front)

    def nearest_car(self, s: float) -> int:
        """The car closest to line distance ``s`` (0 inside it)."""
        lo = self.car_front - self.car_length
        d = np.maximum(np.maximum(lo - s, s - self.car_front), 0.0)
        return int(np.argmin(d))


def _node_dir(line: TrackLine, node: int, offset: float) -> int:
    """Direction (1/0) in which ``line`` runs over ``node`` near ``offset``."""
    m = np.flatnonzero(line.seg_node == node)
    for i in m:
        span = line.seg_s1[i] - line.seg_s0[i]
        o0 = line.seg_off0[i]
        lo, hi = (o0, o0 + span) if line.seg_dir[i] == 1 else (o0 - span, o0)
        if lo - _TOL <= offset <= hi + _TOL:
            return int(line.seg_dir[i])
    return int(line.seg_dir[m[0]]) if len(m) else 1


def _pass_at(tr: TrainPosition, node: int, offset: float) -> tuple[float, bool]:
    """Where ``tr``'s line passes ``(node, offset)`` and whether it runs along the node
    there. A line can pass a node twice (a loop): the pass nearest the train is the one
    it occupies."""
    ss = tr.line.locate(node, offset)
    if not len(ss):
        return tr.front, _node_dir(tr.line, node, offset) == 1
    s = float(ss[np.argmin(np.abs(ss - 0.5 * (tr.front + tr.rear)))])
    seg = int(tr.line.segment_index(np.array([s]))[0])
    return s, bool(tr.line.seg_dir[seg] == 1)


def _overlaps(
    trains: Sequence[TrainPosition],
) -> tuple[dict[tuple[int, int], tuple[float, int, float, float, float]], bool]:
    """The longest node overlap of every pair of trains on different lines (indices into
    ``trains``), and whether some pair's longest overlap is equally long on two nodes
    (then the node :func:`collisions` names is the one met first over *all* its trains)."""
    by_node: dict[int, list[tuple[int, float, float]]] = {}
    for k, tr in enumerate(trains):
        for node, a, b in tr.intervals():
            by_node.setdefault(node, []).append((k, min(a, b), max(a, b)))
    best: dict[tuple[int, int], tuple[float, int, float, float, float]] = {}
    tied: set[tuple[int, int]] = set()
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
                    tied.discard(key)
                elif overlap == best[key][0] and node != best[key][1]:
                    tied.add(key)
    return best, bool(tied)


def collisions(trains: Sequence[TrainPosition], time: float) -> list[SafetyEvent]:
    """Trains on different lines whose occupied node intervals overlap (module
    docstring): one ``"collision"`` event per pair of trains."""
    trains = list(trains)
    return _collision_events(trains, _overlaps(trains)[0], time)


def _collision_events(
    trains: list[TrainPosition],
    best: dict[tuple[int, int], tuple[float, int, float, float, float]],
    time: float,
) -> list[SafetyEvent]:
    out: list[SafetyEvent] = []
    for (i, j), (_ov, node, mid, ci, cj) in sorted(best.items()):
        ta, tb = trains[i], trains[j]
        s_a, fwd_a = _pass_at(ta, node, mid)
        s_b, fwd_b = _pass_at(tb, node, mid)
        car_a, car_b = ta.nearest_car(s_a), tb.nearest_car(s_b)
        va = ta.car_speed(car_a) * (1.0 if fwd_a else -1.0)
        vb = tb.car_speed(car_b) * (1.0 if fwd_b else -1.0)
        closing = (va - vb) if ci <= cj else (vb - va)
        out.append(
            SafetyEvent(
                "collision",
                float(time),
                ta.train,
                (car_a,),
                int(node),
                ta.line.location(s_a),
                cause=f"both trains occupy node {node} around offset {mid:.2f} m",
                other_train=tb.train,
                other_cars=(car_b,),
                closing_speed=float(closing),
                s=s_a,
            )
        )
    return out


def _seg_dist(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Minimum distance between 2-D segments p1q1 and p2q2 (arrays of shape (k, 2))."""

    def point_seg(p, a, b):  # noqa: ANN001, ANN202
        ab = b - a
        den = np.einsum("ij,ij->i", ab, ab)
        t = np.where(den > 0, np.einsum("ij,ij->i", p - a, ab) / np.where(den > 0, den, 1.0), 0.0)
        t = np.clip(t, 0.0, 1.0)
        c = a + t[:, None] * ab
        return np.hypot(*(p - c).T)

    def cross(o, a, b):  # noqa: ANN001, ANN202
        return (a[:, 0] - o[:, 0]) * (b[:, 1] - o[:, 1]) - (a[:, 1] - o[:, 1]) * (b[:, 0] - o[:, 0])

    d = np.minimum.reduce(
        [point_seg(p1, p2, q2), point_seg(q1, p2, q2), point_seg(p2, p1, q1), point_seg(q2, p1, q1)]
    )
    d1, d2 = cross(p2, q2, p1), cross(p2, q2, q1)
    d3, d4 = cross(p1, q1, p2), cross(p1, q1, q2)
    crossing = (d1 * d2 < 0) & (d3 * d4 < 0)
    return np.where(crossing, 0.0, d)


def side_collisions(
    trains: Sequence[TrainPosition],
    time: float,
    *,
    clearance: float = DEFAULT_CLEARANCE_M,
    cell: float = DEFAULT_CELL_M,
) -> list[SafetyEvent]:
    """Cars of trains on different lines fouling each other where the tracks run close
    (module docstring): one ``"side_collision"`` event per pair of trains."""
    trains = list(trains)
    if not trains:
        return []
    # The cars of all trains at once; the world positions with one lookup per line (the
    # trains of one path share it): np.interp works element by element, so the numbers
    # are those of one lookup per train.
    T = len(trains)
    counts = np.array([tr.car_front.shape[0] for tr in trains], dtype=np.int64)
    train_of = np.repeat(np.arange(T), counts)
    front = np.concatenate([tr.car_front for tr in trains])
    L = np.array([tr.line.length for tr in trains], dtype=np.float64)[train_of]
    lo = np.minimum(np.maximum(front - np.concatenate([tr.car_length for tr in trains]), 0.0), L)
    hi = np.minimum(np.maximum(front, 0.0), L)
    on = np.flatnonzero(hi - lo > _TOL)  # cars (partly) on the line
    if not len(on):
        return []
    owner_a = train_of[on]
    car_a = on - (np.cumsum(counts) - counts)[owner_a]
    lo, hi = lo[on], hi[on]
    ss = np.stack([lo, (lo + hi) / 2.0, hi], axis=1)
    P = np.empty((len(on), 3, 2))  # rear, middle, front
    H = np.empty(len(on))
    bounds = np.searchsorted(owner_a, np.arange(T + 1)).tolist()
    by_line: dict[int, tuple[TrackLine, list[int]]] = {}
    for k, tr in enumerate(trains):
        if bounds[k] < bounds[k + 1]:
            by_line.setdefault(id(tr.line), (tr.line, []))[1].append(k)
    for line, ks in by_line.values():
        rows = (
            slice(bounds[ks[0]], bounds[ks[0] + 1])
            if len(ks) == 1
            else np.concatenate([np.arange(bounds[k], bounds[k + 1]) for k in ks])
        )
        s3 = ss[rows]
        X, Z = line.world_xz(s3.reshape(-1))
        P[rows, :, 0] = X.reshape(-1, 3)
        P[rows, :, 1] = Z.reshape(-1, 3)
        H[rows] = line.heading_at(s3[:, 1])
    C = P[:, 1, :]
    half = np.hypot(*(P[:, 2] - P[:, 0]).T) / 2.0
    size = max(float(cell), float(2.0 * half.max() + clearance), 1.0)
    cx = np.floor(C[:, 0] / size).astype(np.int64)
    cz = np.floor(C[:, 1] / size).astype(np.int64)
    # Candidate pairs from the grid, all at once: for each of the 9 neighbouring cells,
    # the cars whose cell key matches (searchsorted over the sorted keys).
    kid: dict[Any, int] = {}
    line_id = np.array([kid.setdefault(t._key, len(kid)) for t in trains], dtype=np.int64)[owner_a]
    span = int(cz.max() - cz.min()) + 3
    key = (cx - cx.min() + 1) * span + (cz - cz.min() + 1)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    n = len(key)
    ia_parts, ib_parts = [], []
    for dx in (-1, 0, 1):
        for dz in (-1, 0, 1):
            q = key + dx * span + dz
            lo = np.searchsorted(skey, q, side="left")
            cnt = np.searchsorted(skey, q, side="right") - lo
            tot = int(cnt.sum())
            if not tot:
                continue
            ii = np.repeat(np.arange(n), cnt)
            within = np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            jj = order[np.repeat(lo, cnt) + within]
            keep = (jj > ii) & (line_id[ii] != line_id[jj])
            ia_parts.append(ii[keep])
            ib_parts.append(jj[keep])
    if not ia_parts or not sum(len(a) for a in ia_parts):
        return []
    ia_, ib_ = np.concatenate(ia_parts), np.concatenate(ib_parts)
    # Cheap first cut: centres further apart than both half-lengths and the clearance.
    dc = C[ia_] - C[ib_]
    close = np.hypot(dc[:, 0], dc[:, 1]) < half[ia_] + half[ib_] + clearance
    ia_, ib_ = ia_[close], ib_[close]
    if not len(ia_):
        return []
    # Distance between the two-segment centre lines of each candidate pair.
    # (the four segment pairs in one call: the same arithmetic row by row)
    uw = ((0, 0), (0, 1), (1, 0), (1, 1))
    Pa, Pb = P[ia_], P[ib_]
    d4 = _seg_dist(
        np.concatenate([Pa[:, u] for u, _w in uw]),
        np.concatenate([Pa[:, u + 1] for u, _w in uw]),
        np.concatenate([Pb[:, w] for _u, w in uw]),
        np.concatenate([Pb[:, w + 1] for _u, w in uw]),
    )
    dist = np.minimum.reduce(d4.reshape(4, len(ia_)), axis=0, initial=np.inf)
    # Longitudinal overlap: b's chord projected on a's axis overlaps a's chord.
    axis = P[ia_, 2] - P[ia_, 0]
    norm = np.hypot(*axis.T)
    u_ax = axis / np.where(norm > 0, norm, 1.0)[:, None]
    t0 = np.einsum("ij,ij->i", P[ib_, 0] - C[ia_], u_ax)
    t1 = np.einsum("ij,ij->i", P[ib_, 2] - C[ia_], u_ax)
    overlap = np.minimum(np.maximum(t0, t1), half[ia_]) - np.maximum(np.minimum(t0, t1), -half[ia_])
    hit = (dist < clearance) & (overlap > 0)
    groups: dict[tuple[int, int], list[tuple[float, int, int]]] = {}
    for i, j, d in zip(ia_[hit], ib_[hit], dist[hit]):
        a, b = (i, j) if owner_a[i] < owner_a[j] else (j, i)
        groups.setdefault((int(owner_a[a]), int(owner_a[b])), []).append((float(d), int(a), int(b)))
    out: list[SafetyEvent] = []
    for (ta, tb), hits in sorted(groups.items()):
        d, a, b = min(hits)
        A, B = trains[ta], trains[tb]
        sa = float(np.clip(A.car_front[car_a[a]] - A.car_length[car_a[a]] / 2.0, 0.0, A.line.length))
        loc = A.line.location(sa)
        node, _off, _dd = A.line.node_offset(np.array([sa]))
        va = A.car_speed(int(car_a[a])) * np.array([np.sin(H[a]), np.cos(H[a])])
        vb = B.car_speed(int(car_a[b])) * np.array([np.sin(H[b]), np.cos(H[b])])
        out.append(
            SafetyEvent(
                "side_collision",
                float(time),
                A.train,
                tuple(sorted({int(car_a[x]) for _d, x, _y in hits})),
                int(node[0]),
                loc,
                cause=f"cars {d:.2f} m apart (clearance {clearance} m) on different lines",
                other_train=B.train,
                other_cars=tuple(sorted({int(car_a[y]) for _d, _x, y in hits})),
                closing_speed=float(np.hypot(*(va - vb))),
                s=sa,
            )
        )
    return out


def _cells(
    lo_x: np.ndarray, hi_x: np.ndarray, lo_z: np.ndarray, hi_z: np.ndarray, grow: float, size: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """First grid cell (x, z) of each grown box and how many cells it spans each way."""
    size = max(size, 1.0)
    cx0 = np.floor((lo_x - grow) / size).astype(np.int64)
    cz0 = np.floor((lo_z - grow) / size).astype(np.int64)
    nx = np.floor((hi_x + grow) / size).astype(np.int64) - cx0 + 1
    nz = np.floor((hi_z + grow) / size).astype(np.int64) - cz0 + 1
    return cx0, cz0, nx, nz


@functools.lru_cache(maxsize=64)
def _triu(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of n (at most 64: kept, read-only; a check asks each time)."""
    ii, jj = np.triu_indices(n, 1)
    ii.flags.writeable = jj.flags.writeable = False
    return ii, jj


def _run_ends(sorted_keys: np.ndarray) -> np.ndarray:
    """For each entry of a sorted array, the index after the last entry equal to it."""
    n = len(sorted_keys)
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], change))
    return np.repeat(np.append(change, n), np.diff(np.append(starts, n)))


def box_pairs(
    lo_x: np.ndarray,
    hi_x: np.ndarray,
    lo_z: np.ndarray,
    hi_z: np.ndarray,
    pad: float,
    group: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of axis-aligned boxes within ``pad`` of each other:
    ``lo_x[i] - pad <= hi_x[j]`` and ``lo_x[j] - pad <= hi_x[i]``, the same in z, exactly
    as written; with ``group`` (integers >= 0), only pairs of different groups
    (docs/physics.md §5.4). Each box, grown by half the pad and a metre, goes into every
    cell of a uniform grid it covers; only boxes sharing a cell are compared, each pair
    in the first cell they share. The pairs come in no particular order."""
    lo_x, hi_x = np.asarray(lo_x, dtype=np.float64), np.asarray(hi_x, dtype=np.float64)
    lo_z, hi_z = np.asarray(lo_z, dtype=np.float64), np.asarray(hi_z, dtype=np.float64)
    n = len(lo_x)
    none = np.zeros(0, dtype=np.int64)
    if n < 2:
        return none, none
    if n <= 64:  # a few boxes: every pair costs less than the grid
        ii, jj = _triu(n)
        if group is not None:
            g = np.asarray(group)
            other = g[ii] != g[jj]
            ii, jj = ii[other], jj[other]
        return _within(lo_x, hi_x, lo_z, hi_z, pad, ii, jj)
    grow = 0.5 * pad + 1.0  # > pad / 2 by far more than any rounding
    ext = np.maximum(hi_x - lo_x, hi_z - lo_z)
    k90 = (9 * n) // 10
    # cells twice the size of most grown boxes: most boxes in one to four cells
    # (measured: fewer cells per box pay more than the extra pairs in each cell cost)
    size = 2.0 * (float(np.partition(ext, k90)[k90]) + 2.0 * grow)
    cx0, cz0, nx, nz = _cells(lo_x, hi_x, lo_z, hi_z, grow, size)
    if int((nx * nz).sum()) > 16 * n + 4096:
        # a few boxes far larger than most: cells as large as the largest (<= 4 each)
        cx0, cz0, nx, nz = _cells(lo_x, hi_x, lo_z, hi_z, grow, float(ext.max()) + 2.0 * grow)
    cells = nx * nz
    tot = int(cells.sum())
    if tot == n:
        box, ix, iz = np.arange(n), cx0, cz0
    else:
        box = np.repeat(np.arange(n), cells)
        w = np.arange(tot) - np.repeat(np.cumsum(cells) - cells, cells)
        nxb = nx[box]
        ix, iz = cx0[box] + w % nxb, cz0[box] + w // nxb
    ix_min, iz_min = int(ix.min()), int(iz.min())
    span_z = int(iz.max()) - iz_min + 1
    key = (ix - ix_min) * span_z + (iz - iz_min)
    g = np.arange(tot) if group is None else np.asarray(group, dtype=np.int64)[box]  # None: each its own
    groups = int(g.max()) + 1
    if (int(ix.max()) - ix_min + 1) * span_z * groups >= 2**62:  # (cells over a whole world)
        key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
    gkey = key * groups + g
    order = np.argsort(gkey)
    skey, gkey = key[order], gkey[order]
    # for each entry, the end of its run of one group in its cell and of its cell
    run_end, cell_end = _run_ends(gkey), _run_ends(skey)
    cnt = cell_end - run_end  # the later entries of other groups in the same cell
    m = int(cnt.sum())
    if not m:
        return none, none
    sel = np.flatnonzero(cnt)
    c = cnt[sel]
    p = np.repeat(sel, c)
    q = np.repeat(run_end[sel], c) + (np.arange(m) - np.repeat(np.cumsum(c) - c, c))
    sbox = box[order]
    a, b = sbox[p], sbox[q]
    if tot != n:  # each pair in the first cell both boxes cover only
        op = order[p]
        first = (ix[op] == np.maximum(cx0[a], cx0[b])) & (iz[op] == np.maximum(cz0[a], cz0[b]))
        a, b = a[first], b[first]
    return _within(lo_x, hi_x, lo_z, hi_z, pad, np.minimum(a, b), np.maximum(a, b))


def _within(
    lo_x: np.ndarray,
    hi_x: np.ndarray,
    lo_z: np.ndarray,
    hi_z: np.ndarray,
    pad: float,
    ii: np.ndarray,
    jj: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs whose boxes are within ``pad`` (box_pairs' test as written)."""
    keep = (
        (lo_x[ii] - pad <= hi_x[jj])
        & (lo_x[jj] - pad <= hi_x[ii])
        & (lo_z[ii] - pad <= hi_z[jj])
        & (lo_z[jj] - pad <= hi_z[ii])
    )
    return ii[keep], jj[keep]


def _apart(A: np.ndarray, B: np.ndarray, reach: float) -> np.ndarray:
    """Pairs of cars (rows: rear, middle, front world points, shape (k, 3, 2)) whose
    chords are provably more than ``reach`` apart: B's points all on one side of A's
    rear → front line, beyond A's middle's distance from it plus ``reach``. A car of no
    length is never apart."""
    u = A[:, 2] - A[:, 0]
    norm = np.hypot(u[:, 0], u[:, 1])
    ok = norm > 1e-6
    n = np.stack([-u[:, 1], u[:, 0]], axis=1) / np.where(ok, norm, 1.0)[:, None]
    o = A[:, 0]
    nx, nz = n[:, 0], n[:, 1]
    # B's points from A's line, and A's middle
    d0, d1, d2 = ((B[:, k, 0] - o[:, 0]) * nx + (B[:, k, 1] - o[:, 1]) * nz for k in range(3))
    w = np.abs((A[:, 1, 0] - o[:, 0]) * nx + (A[:, 1, 1] - o[:, 1]) * nz) + reach
    lo, hi = np.minimum(np.minimum(d0, d1), d2), np.maximum(np.maximum(d0, d1), d2)
    return ok & ((lo > w) | (hi < -w))


def chords_within(
    P: np.ndarray, reach: float, group: np.ndarray, owner: np.ndarray | None = None, *, compiled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``i < j`` of cars of different groups whose chords may come closer than
    ``reach``: a superset of the pairs :func:`side_collisions` finds within ``reach``
    (docs/physics.md §5.4). ``P``: each car's rear, middle and front world (X, Z),
    shape (n, 3, 2). Boxes (:func:`box_pairs`), then a band test (:func:`_apart`), then
    the distance between the chords. ``owner`` (optional; each owner's cars in a row
    and of one group): the boxes of whole owners are paired first and only their cars
    compared, the same pairs (a car's box lies inside its owner's). ``compiled``: pair
    the owners' cars with the compiled kernel when numba is there (the same pairs)."""
    X, Z = P[:, :, 0], P[:, :, 1]
    mn, mx = np.minimum, np.maximum  # (faster than reductions over 3 columns)
    lo_x, hi_x = mn(mn(X[:, 0], X[:, 1]), X[:, 2]), mx(mx(X[:, 0], X[:, 1]), X[:, 2])
    lo_z, hi_z = mn(mn(Z[:, 0], Z[:, 1]), Z[:, 2]), mx(mx(Z[:, 0], Z[:, 1]), Z[:, 2])
    if owner is None:
        ii, jj = box_pairs(lo_x, hi_x, lo_z, hi_z, reach, group=group)
    else:
        ii, jj = _owner_pairs(lo_x, hi_x, lo_z, hi_z, reach, np.asarray(group), np.asarray(owner), compiled)
    if len(ii):
        near = ~(_apart(P[ii], P[jj], reach) | _apart(P[jj], P[ii], reach))
        ii, jj = ii[near], jj[near]
    if len(ii):
        uw = ((0, 0), (0, 1), (1, 0), (1, 1))
        Pa, Pb = P[ii], P[jj]
        d4 = _seg_dist(
            np.concatenate([Pa[:, u] for u, _w in uw]),
            np.concatenate([Pa[:, u + 1] for u, _w in uw]),
            np.concatenate([Pb[:, w] for _u, w in uw]),
            np.concatenate([Pb[:, w + 1] for _u, w in uw]),
        )
        near = d4.reshape(4, len(ii)).min(axis=0) < reach
        ii, jj = ii[near], jj[near]
    return ii, jj


#: the compiled owner_cross, imported on first use (None without numba)
_CROSS = LazyKernel("_lookup_kernel", "owner_cross")


#: Up to this many box pairs from pairs of owners, every box of one owner is compared
#: with every box of the other; above, first only the boxes near the other owner's box
#: (the same pairs; measured: sorting out a few hundred costs more than it saves).
OWNER_CROSS_MAX = 8192


def _owner_pairs(
    lo_x: np.ndarray,
    hi_x: np.ndarray,
    lo_z: np.ndarray,
    hi_z: np.ndarray,
    pad: float,
    group: np.ndarray,
    owner: np.ndarray,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`box_pairs` of the boxes with ``group``, by way of their owners' boxes: a
    pair of boxes within ``pad`` has owners whose boxes (the boxes' bounds) are within
    ``pad``, and each box is within ``pad`` of the other's owner's box (the comparisons
    are monotonic); so only such boxes of such owners are compared, every one of one
    against every one of the other."""
    none = np.zeros(0, dtype=np.int64)
    n = len(owner)
    if n < 2:
        return none, none
    start = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
    size = np.diff(np.append(start, n))
    box = (
        np.minimum.reduceat(lo_x, start),
        np.maximum.reduceat(hi_x, start),
        np.minimum.reduceat(lo_z, start),
        np.maximum.reduceat(hi_z, start),
    )
    oi, oj = box_pairs(*box, pad, group=group[start])
    if not len(oi):
        return none, none
    cross = _CROSS() if compiled else None
    if cross is not None:  # (the same pairs in the same order, compiled)
        f8 = functools.partial(np.ascontiguousarray, dtype=np.float64)
        i8 = functools.partial(np.ascontiguousarray, dtype=np.int64)
        return cross(
            i8(oi), i8(oj), i8(start), i8(size), *map(f8, (lo_x, hi_x, lo_z, hi_z, *box)), float(pad)
        )

    def near_other(mine: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of each pair, the boxes of owner ``mine`` within ``pad`` of owner ``other``'s
        box (a box within pad of one of the other's is), pair by pair; and how many."""
        cnt = size[mine]
        tot = int(cnt.sum())
        c = np.repeat(start[mine], cnt) + (np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        o = np.repeat(other, cnt)
        olo_x, ohi_x, olo_z, ohi_z = box
        keep = (
            (lo_x[c] - pad <= ohi_x[o])
            & (olo_x[o] - pad <= hi_x[c])
            & (lo_z[c] - pad <= ohi_z[o])
            & (olo_z[o] - pad <= hi_z[c])
        )
        return c[keep], np.add.reduceat(keep, np.cumsum(cnt) - cnt).astype(np.int64)

    if int((size[oi] * size[oj]).sum()) <= OWNER_CROSS_MAX:
        ca = cb = np.arange(n)
        na, nb = size[oi], size[oj]
        ca_at, cb_at = start[oi], start[oj]
    else:
        ca, na = near_other(oi, oj)
        cb, nb = near_other(oj, oi)
        ca_at, cb_at = np.cumsum(na) - na, np.cumsum(nb) - nb
    cnt = na * nb
    tot = int(cnt.sum())
    if not tot:
        return none, none
    k = np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    nbr = np.repeat(nb, cnt)
    a = ca[np.repeat(ca_at, cnt) + k // nbr]
    b = cb[np.repeat(cb_at, cnt) + k % nbr]
    return _within(lo_x, hi_x, lo_z, hi_z, pad, np.minimum(a, b), np.maximum(a, b))


class Occupancy:
    """The positions of all trains, with collision checks that report each contact
    once (until the trains separate again).

    A position may be given as a function that makes it (:meth:`update_lazy`): it is
    called only when a check or :attr:`trains` needs the train, so a caller can keep
    hundreds of trains watched without making their positions at every check."""

    def __init__(self, trains: Iterable[TrainPosition] = ()) -> None:
        self._trains: dict[Hashable, TrainPosition | Callable[[], TrainPosition]] = {}
        self._contact: set[tuple[str, Hashable, Hashable]] = set()
        for t in trains:
            self.update(t)

    def update(self, position: TrainPosition) -> None:
        """Set (or replace) a train's position."""
        self._trains[position.train] = position

    def update_lazy(self, train: Hashable, source: Callable[[], TrainPosition]) -> None:
        """Set (or replace) a train's position by a function that returns it when asked
        (each time: nothing is kept)."""
        self._trains[train] = source

    def remove(self, train: Hashable) -> None:
        self._trains.pop(train, None)
        if self._contact:
            # A train no longer watched touches nothing: forget its contacts, or the next
            # contact of the same pair (after parting by more than a step) is not "new".
            self._contact = {c for c in self._contact if train not in (c[1], c[2])}

    def watched(self) -> list[Hashable]:
        """The trains watched, in the order the checks take them (first put in first)."""
        return list(self._trains)

    def _position(self, train: Hashable) -> TrainPosition:
        p = self._trains[train]
        return p if isinstance(p, TrainPosition) else p()

    @property
    def trains(self) -> list[TrainPosition]:
        return [self._position(k) for k in self._trains]

    def intervals(self, train: Hashable) -> list[tuple[int, float, float]]:
        """The node intervals a train occupies (:meth:`TrainPosition.intervals`)."""
        return self._position(train).intervals()

    def by_node(self) -> dict[int, list[tuple[Hashable, float, float]]]:
        """node → [(train, low offset, high offset), ...]."""
        out: dict[int, list[tuple[Hashable, float, float]]] = {}
        for t in self.trains:
            for node, a, b in t.intervals():
                out.setdefault(node, []).append((t.train, min(a, b), max(a, b)))
        return out

    def _new(self, kind: str, events: list[SafetyEvent], only_new: bool) -> list[SafetyEvent]:
        now = {(kind, e.train, e.other_train) for e in events}
        fresh = [e for e in events if (kind, e.train, e.other_train) not in self._contact]
        self._contact = {c for c in self._contact if c[0] != kind} | now
        return fresh if only_new else events

    def collisions(self, time: float, *, only_new: bool = True) -> list[SafetyEvent]:
        return self._new("collision", collisions(self.trains, time), only_new)

    def side_collisions(
        self,
        time: float,
        *,
        clearance: float = DEFAULT_CLEARANCE_M,
        cell: float = DEFAULT_CELL_M,
        only_new: bool = True,
    ) -> list[SafetyEvent]:
        return self._new(
            "side_collision", side_collisions(self.trains, time, clearance=clearance, cell=cell), only_new
        )

    def check_among(
        self, time: float, collide: Container[Hashable], side: Container[Hashable]
    ) -> list[SafetyEvent]:
        """The new events of :meth:`collisions` then :meth:`side_collisions` (defaults),
        worked out over the watched trains in ``collide`` (``side``) only: the caller
        vouches that no other watched train collides with (touches side by side) another
        (a conservative broad phase, docs/physics.md §5.4). The events and the contacts
        remembered are those of the two calls over every watched train: each pair's
        checks use only the two trains, and the trains keep their order; only a pair
        whose longest node overlap is as long on two nodes depends on the others (which
        node comes first), and then every train is taken."""
        sub = [self._position(k) for k in self._trains if k in collide]
        best, tied = _overlaps(sub)
        col = collisions(self.trains, time) if tied else _collision_events(sub, best, time)
        by_side = [self._position(k) for k in self._trains if k in side]
        return self._new("collision", col, True) + self._new(
            "side_collision", side_collisions(by_side, time), True
        )
