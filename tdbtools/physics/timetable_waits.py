"""Waiting for other trains in a timetable replay (docs/timetables.md §5.4): the part of
the timetable policy that decides whether ``$wait``, ``$follow``, ``$waitany`` and
``$connect`` hold a train, and where — at its start or station, or at the wait position
on the line (the start of the stretch two paths share) — and records how long
(:class:`~tdbtools.physics.timetable_driver.Held`)."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from .activity import ActivityPlan, ActivityPolicy, clock
from .events import SetupWarning
from .timetable_driver import Held, TimetableDriver, first_rejoin, wait_position
from .timetable_plan import TTLink

#: A wait position less than this far ahead of a train is where it stands: held there.
LINE_WAIT_MIN_M = 50.0


class TimetableWaits(ActivityPolicy):
    """The activity policy with the timetable's waits (module docstring); the
    :class:`~tdbtools.physics.timetable.TimetablePolicy` decides when they are
    evaluated."""

    def __init__(self, aplan: ActivityPlan, route: Route, t0: float, stuck_after: float) -> None:
        super().__init__(aplan, route, t0, stuck_after)
        #: Open Rails' running delay of each train (seconds, never going down)
        self.delay: dict[str, float] = {}
        self._holds: dict[tuple[str, str, str], float] = {}  # (train, reason, other) -> since
        self._wait_nodes: dict[tuple[str, int, str | None], int | None] = {}
        #: waits on the line: (train, id of its link) -> (node, wait position, link)
        self._armed: dict[tuple[int, int], tuple[int, float, TTLink]] = {}
        self._waitany_paths: dict[str, set[tuple[int, int]]] = {}  # path -> its (node, direction)s

    def _tt_drivers(self) -> list[TimetableDriver]:
        """The drivers, every one a TimetableDriver once the stops are placed."""
        return cast("list[TimetableDriver]", self.drivers)

    def _now(self) -> float:
        return self.t0 + self.time

    def _gone(self, k: int) -> bool:
        return self.drivers[k].finished or self.drivers[k].state in ("stuck", "not_started")

    def _at_start(self, k: int) -> bool:
        t = self.trains[k]
        front = float(self.engine.x[self.train_start[k]])
        return front - float(t.front0) < 5.0

    def _note_hold(self, k: int, link: TTLink | None, station: str | None) -> None:
        name = self.trains[k].spec.name
        now = self._now()
        for key in [x for x in self._holds if x[0] == name]:
            if link is None or key != (name, link.kind, link.train):
                since = self._holds.pop(key)
                self.log.add(
                    Held(
                        time=self.time,
                        clock=clock(since),
                        train=name,
                        reason=key[1],
                        other=key[2],
                        station=station,
                        seconds=now - since,
                    )
                )
        if link is not None:
            self._holds.setdefault((name, link.kind, link.train), now)

    def _wait_holds(self, k: int, link: TTLink, node: int | None = None) -> bool:
        """Does ``link`` ($wait/$follow) hold train ``k`` now: the other train has not yet
        passed the first stretch both paths share (``node``: that stretch's node, else
        worked out from where the train stands)?"""
        ko = self.index.get(link.train)
        if ko is None:
            return False
        od = self.drivers[ko]
        if self._gone(ko):
            return False
        if od.state in ("waiting", "ready") and not link.notstarted:
            return False
        name = self.trains[k].spec.name
        own = self.delay.get(name, 0.0)
        if link.owndelay is not None and own < link.owndelay:
            return False
        maxdelay = link.maxdelay if link.maxdelay is not None else 0.0
        if self.delay.get(link.train, 0.0) - own > maxdelay + 1e-9:
            return False
        if node is None:
            node = self._wait_node(k, link)
        if node is None:
            return False
        # has the other train's rear passed the end of that node on its own line?
        ol = self.trains[ko].line
        ends = [float(ol.seg_s1[i]) for i in range(len(ol.seg_node)) if int(ol.seg_node[i]) == node]
        if not ends:
            return False
        orear = float(self.engine.x[self.train_end[ko]] - self.bodies.length[self.train_end[ko]])
        if od.state in ("waiting", "ready"):
            return True
        return orear < min(ends) - 1e-6

    def _waitany_holds(self, k: int, link: TTLink) -> bool:
        """$waitany (manual): is any other train on the track of ``link``'s path — in
        the path's direction, the opposite one with /opposite, either with /both?"""
        if link.train not in self._waitany_paths:
            from ..track.paths import resolve_path

            try:
                rp = resolve_path(self.route, link.train)
            except (TdbToolsError, OSError) as exc:
                self.log.add(
                    SetupWarning(time=self.time, train=self.trains[k].spec.name, message=f"$waitany: {exc}")
                )
                rp = None
            self._waitany_paths[link.train] = (
                {(tv.node, tv.direction) for leg in rp.legs for tv in leg.traversals}
                if rp is not None
                else set()
            )
        track = self._waitany_paths[link.train]
        for ko, t in enumerate(self.trains):
            if ko == k or not self.drivers[ko].on_track:
                continue
            line = t.line
            front = float(self.engine.x[self.train_start[ko]])
            rear = front - float(t.length)
            i0 = max(int(np.searchsorted(line.seg_s1, rear, side="right")), 0)
            i1 = min(int(np.searchsorted(line.seg_s0, front, side="left")), len(line.seg_node))
            for i in range(i0, i1):
                node, dirn = int(line.seg_node[i]), 1 if int(line.seg_dir[i]) == 1 else 0
                same, other = (node, dirn) in track, (node, 1 - dirn) in track
                if (
                    (link.both and (same or other))
                    or (same and not link.opposite)
                    or (other and link.opposite)
                ):
                    return True
        return False

    def _wait_node(self, k: int, link: TTLink) -> int | None:
        """The node of the first stretch train ``k`` shares with ``link``'s train beyond
        a part it does not share, searched from where it stands (cached per stop)."""
        ko = self.index[link.train]
        name = self.trains[k].spec.name
        key = (name, self.drivers[k].next_stop, link.train)
        if key not in self._wait_nodes:
            front = float(self.engine.x[self.train_start[k]])
            other = self.trains[ko]
            self._wait_nodes[key] = first_rejoin(
                self.trains[k].line, front, {int(n) for n in other.line.seg_node}
            )
        return self._wait_nodes[key]

    def _line_wait(self, k: int, link: TTLink) -> tuple[int, float] | None:
        """Where on the line train ``k`` waits for ``link``'s train (Open Rails' wait
        position, manual "$wait"): the start of the shared stretch, moved back clear of
        the junction there; None when that is not ahead of it."""
        node = self._wait_node(k, link)
        if node is None:
            return None
        pos = wait_position(self.trains[k].line, float(self.engine.x[self.train_start[k]]), node)
        if pos is None:
            return None
        pos = self.clear_of_junctions(self.trains[k].line, pos)
        front = float(self.engine.x[self.train_start[k]])
        d = self._tt_drivers()[k]
        if pos < front + LINE_WAIT_MIN_M:
            return None
        if d.next_stop < len(d.stops) and d.state == "running" and d.stops[d.next_stop].stop_s < pos:
            return None  # a stop comes first: it waits there, as before
        return node, pos

    def _line_waits(self, k: int) -> TTLink | None:
        """Train ``k``'s waits on the line: its wait limit is the nearest wait position
        whose other train has not passed yet; the link it stands waiting for, or None."""
        d = self._tt_drivers()[k]
        limit = math.inf
        standing = None
        front = float(self.engine.x[self.train_start[k]])
        for key in [x for x in self._armed if x[0] == k]:
            node, pos, link = self._armed[key]
            if d.state not in ("running", "dwell") or not self._wait_holds(k, link, node):
                del self._armed[key]
                continue
            limit = min(limit, pos)
            if front >= pos - LINE_WAIT_MIN_M:
                standing = link
        d.wait_limit = limit
        return standing

    def _connect_until(self, k: int, link: TTLink, station: str) -> float | None:
        ko = self.index.get(link.train)
        if ko is None:
            return None
        stop = next((s for s in self.drivers[ko].stops if s.platform.station == station), None)
        if stop is None:
            return None
        if stop.arrival is not None:
            return stop.arrival + link.hold
        if self._gone(ko):
            return None
        due = stop.booked.arrival if stop.booked.arrival is not None else stop.booked.depart
        late = max(0.0, self._now() - due) if due is not None else 0.0
        late = max(late, self.delay.get(link.train, 0.0))
        if link.maxdelay is not None and late > link.maxdelay:
            return None
        return math.inf


__all__ = ["LINE_WAIT_MIN_M", "TimetableWaits"]
