"""The service driver of an activity train (docs/activities.md §4, §5): it waits for the
train's start, then drives the automatic driver to the nearest of its next station stop,
the end of its movement authority and the end of its path, dwells and departs."""

from __future__ import annotations

import math

from .activity_stops import Stop, departure
from .driver import AutoDriver, Controls, DriveState

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).


class ServiceDriver:
    """Drives one service: waits for its start, runs to its stops within its authority."""

    def __init__(
        self,
        name: str,
        auto: AutoDriver,
        t0: float,
        start: float,
        stops: list[Stop],
        path_end: float,
        passenger_cars: int,
        ai: bool,
        vmax: float | None,
        final_efficiency: float | None,
        signalled: bool = False,
    ) -> None:
        self.name = name
        # With signals the automatic driver also stops for a red: standing there is not
        # arriving at the target (docs/activities.md §4.3).
        self.signalled = signalled
        self.auto = auto
        self.t0 = t0  # clock time of replay time 0
        self.start = start
        self.stops = stops
        self.next_stop = 0
        self.path_end = path_end
        self.passenger_cars = passenger_cars
        self.ai = ai
        self.turns = False  # its path part ends at a reversal: it leaves the track there
        self.hold_until = -math.inf  # clock time: stands until then (the change of ends at a reversal)
        self.vmax = vmax
        self.final_efficiency = final_efficiency
        self.authority = math.inf  # line distance the front may reach
        self.state = "waiting"  # waiting | ready | running | dwell | done | stuck
        self.dwell_until = 0.0
        self.blocked_by: set[str] = set()
        self.blocked_blocks: set[tuple[str, int]] = set()
        self.finished = False
        self.delayed = False
        self._set_speed_cap()

    def _set_speed_cap(self) -> None:
        if self.vmax is None:
            return
        eff = None
        if self.next_stop < len(self.stops):
            eff = self.stops[self.next_stop].booked.efficiency
        if eff is None:
            eff = self.final_efficiency
        self.auto.max_speed = self.vmax * (eff if eff and eff > 0 else 1.0)

    def target(self) -> tuple[float, str]:
        cands = [(self.path_end, "end")]
        if self.next_stop < len(self.stops):
            cands.append((self.stops[self.next_stop].stop_s, "stop"))
        cands.append((self.authority, "authority"))
        return min(cands)

    @property
    def leaves(self) -> bool:
        """Taken off the track at its end: AI trains, and path parts before a reversal."""
        return self.ai or self.turns

    @property
    def events(self) -> list:
        """The automatic driver's events (waiting points); the replay collects them."""
        return self.auto.events

    @property
    def on_track(self) -> bool:
        """Started and not taken off: an AI train leaves the world at the end of its path
        (docs/activities.md §4); the player's train stays."""
        return self.state in ("running", "dwell", "stuck") or (self.state == "done" and not self.leaves)

    def __call__(self, st: DriveState) -> Controls:
        now = self.t0 + st.time
        if self.state == "waiting" and now + 1e-9 >= self.start:
            self.state = "ready"  # the dispatcher puts it on the track when that is free
        if self.state in ("waiting", "ready", "done", "stuck", "not_started"):
            return Controls(0.0, 1.0, 0.0)
        if self.state == "dwell":
            if now + 1e-9 < self.dwell_until:
                return Controls(0.0, 1.0, 0.0)
            stop = self.stops[self.next_stop]
            stop.depart = now
            self.next_stop += 1
            self._set_speed_cap()
            self.state = "running"
        if now + 1e-9 < self.hold_until:
            return Controls(0.0, 1.0, 0.0)
        s, kind = self.target()
        self.auto.stop_at = s + AutoDriver.STOP_SHORT
        self.auto.finished = False
        c = self.auto(st)
        if (
            self.auto.finished and self.signalled and s - st.front >= self.auto.ARRIVED_WITHIN
        ):  # held at a signal short of the target
            self.auto.finished = False
        if self.auto.finished:
            if kind == "stop":
                stop = self.stops[self.next_stop]
                stop.arrival = now
                self.dwell_until = departure(stop, now, self.passenger_cars, self.ai)
                self.state = "dwell"
            elif kind == "end":
                self.state = "done"
                self.finished = True
        return c
