"""Derailments and the safety events (docs/physics.md §5): a train's bogies and what derails
it. Collisions between trains are in :mod:`.collisions`, the broad phase that narrows
them down in :mod:`.proximity`.

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

Every event (:class:`SafetyEvent`) has the time, the train, the car indices (front → back,
0 = first car), the track node and the world location (tile_x, tile_z, x, y, z).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from ..track.geometry import WorldPoint
from .forces import CarModel
from .trackline import TrackLine

__all__ = ["DEFAULT_CELL_M", "DEFAULT_CLEARANCE_M", "BogieSet", "SafetyEvent", "derailments", "throw_switch"]

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
