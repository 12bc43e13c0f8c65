"""Platforms and station stops of an activity's trains (docs/activities.md §5): where
each booked stop is on a train's line, how long boarding takes, when the train leaves."""

from __future__ import annotations

from dataclasses import dataclass

from ..formats.activity import StopItem
from ..formats.route import Route
from ..track.pathbuild import platforms

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).

BOARDING_PER_PASSENGER_S = 10.0
MIN_BOARDING_S = 20.0
#: A booked AI stop with arrival == departure this far from the actual arrival is not credible.
INCREDIBLE_S = 4 * 3600.0


@dataclass(frozen=True, slots=True)
class Platform:
    ids: tuple[int, int]
    name: str
    station: str
    node: int
    near: float  # node offsets of its two ends
    far: float
    min_wait: int
    passengers: int

    @property
    def length(self) -> float:
        return self.far - self.near


def route_platforms(route: Route) -> dict[int, Platform]:
    """Platforms by either of their item ids."""
    out: dict[int, Platform] = {}
    for idx, (node, a, b, it, other) in platforms(route).items():
        ids = (
            it.item_id if it.item_id is not None else idx,
            other.item_id if other.item_id is not None else other.index,
        )
        p = Platform(
            ids, it.platform_name, it.station, node, a, b, it.min_waiting_time, it.passengers_waiting
        )
        for i in (*ids, idx, other.index):
            out[i] = p
    return out


@dataclass(slots=True)
class Stop:
    """A station stop on a train's line: where the front stops, and what happened."""

    platform: Platform
    booked: StopItem
    stop_s: float  # line distance of the front at the stop
    arrival: float | None = None  # actual, seconds since midnight
    depart: float | None = None


def place_stops(
    line,
    front0: float,
    train_length: float,
    booked: tuple[StopItem, ...],  # noqa: ANN001
    plats: dict[int, Platform],
) -> tuple[list[Stop], list[str]]:
    """The booked stops found on the line, in order (docs/activities.md §5)."""
    stops: list[Stop] = []
    warnings: list[str] = []
    after = front0 - 1e-6
    end = float(line.path_length)
    for item in booked:
        p = plats.get(item.platform_id)
        if p is None:
            warnings.append(f"platform id {item.platform_id} is not a platform of the route")
            continue
        a = line.locate(p.node, p.near)
        b = line.locate(p.node, p.far)
        found = None
        for sa in a:
            for sb in b:
                lo, hi = sorted((float(sa), float(sb)))
                if abs((hi - lo) - p.length) < 1.0 and hi > after and lo <= end:
                    if found is None or hi < found[1]:
                        found = (lo, hi)
        if found is None:
            warnings.append(f"platform {p.name!r} (id {item.platform_id}) is not on the path")
            continue
        lo, hi = found
        stop_s = hi - (p.length - train_length) / 2.0
        stop_s = min(stop_s, end)
        stops.append(Stop(p, item, stop_s))
        after = stop_s
    return stops, warnings


def boarding_time(passengers: int, passenger_cars: int) -> float:
    if passenger_cars <= 0:
        return MIN_BOARDING_S
    # whole seconds, as Open Rails computes it (7 passengers, 3 cars: 23 s)
    return max(float(int(BOARDING_PER_PASSENGER_S * passengers) // passenger_cars), MIN_BOARDING_S)


def departure(stop: Stop, arrival: float, passenger_cars: int, ai: bool) -> float:
    """When a train that arrived at ``arrival`` leaves (docs/activities.md §5)."""
    board = boarding_time(stop.platform.passengers, passenger_cars)
    b = stop.booked
    if b.depart is None:
        return arrival + max(board, float(stop.platform.min_wait))
    if ai and b.arrival == b.depart and abs(arrival - b.depart) > INCREDIBLE_S:
        return arrival + board
    return max(float(b.depart), arrival + board)
