"""Collisions between trains (docs/physics.md §5.3).

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

:class:`Occupancy` keeps the trains' positions and reports only *new* contacts.

Broad phase (docs/physics.md §5.4)
----------------------------------
For many trains the replay narrows the checks down first: :func:`box_pairs` (boxes
within a pad, by a grid) picks the trains to watch, :func:`chords_within` the cars that
may touch side by side, and :meth:`Occupancy.check_among` runs the two checks over only
the trains that may touch, with the events and contacts of the checks over all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .proximity import half_chord_dists
from .safety import DEFAULT_CELL_M, DEFAULT_CLEARANCE_M, SafetyEvent
from .trackline import TrackLine

__all__ = ["Occupancy", "TrainPosition", "collisions", "side_collisions"]

_TOL = 1e-6


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
    dist = np.minimum.reduce(half_chord_dists(P[ia_], P[ib_]), axis=0, initial=np.inf)
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
