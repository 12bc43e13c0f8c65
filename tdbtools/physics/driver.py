"""Drivers: who sets throttle and brakes (docs/running-time.md §2).

* :class:`ScheduleDriver` plays a fixed schedule of throttle/brake settings by time or
  by distance travelled.
* :class:`AutoDriver` drives for the minimum running time: flat out up to the permitted
  speed, holds it exactly (the replay works out the traction that reaches the speed it
  asks for, :attr:`Controls.speed_target`), and brakes just in time along a braking
  curve of the planned deceleration for every lower limit ahead and every stop. A limit
  holds over the whole train: a lower one from the moment the front reaches its post, a
  higher one once the rear has passed it. Optionally it runs slower to meet a running
  time allowance (a speed ceiling) or coasts before braking points (energy saving).

What the automatic driver must respect is a plain list of :class:`Target` (a speed the
front must not exceed from a line distance on) and :class:`Stop` (stand with the front
at a line distance, then wait). Speed posts, the end of the path and waiting points are
the ones built here; signals can add their own.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .events import DepartedPoint, ReplayEvent, WaitingAtPoint
from .scenario import Command

__all__ = ["AutoDriver", "Controls", "DriveState", "ScheduleDriver", "Stop", "Target"]

#: Force-mode brakes release this many times slower than they build up (as the replay's).
RELEASE_OVER_BUILD_UP = 1.5

#: The automatic driver uses the emergency brake when a target needs more than this
#: many times its planned deceleration.
EMERGENCY_OVER = 2.0


@dataclass(slots=True)
class Controls:
    throttle: float = 0.0  # 0..1 (schedule driver)
    brake: float = 0.0  # 0..1 of the service brake (schedule driver)
    deceleration: float = 0.0  # m/s² the brakes must give (automatic driver), 0 = none
    #: Automatic driver: the speed (m/s) to reach by the end of the step with traction
    #: (at most full power); None = use ``throttle``.
    speed_target: float | None = None
    emergency: bool = False


@dataclass(slots=True)
class DriveState:
    time: float  # s since the start
    travelled: float  # m the front has moved since the start
    speed: float  # m/s, + = forward along the line
    front: float  # line distance of the front of the train
    rear: float  # line distance of the rear
    dt: float = 0.1  # the replay's step (s)


@dataclass(frozen=True, slots=True)
class Target:
    """From line distance ``s`` on (front of the train), the speed must be ≤ ``v``."""

    s: float
    v: float
    kind: str = "limit"


@dataclass(slots=True)
class Stop:
    """Stand with the front at line distance ``s`` (within :attr:`AutoDriver.ARRIVED_WITHIN`),
    then wait ``wait`` seconds (``math.inf``: the end of the run)."""

    s: float
    wait: float = math.inf
    kind: str = "stop"
    arrived_at: float | None = None


class ScheduleDriver:
    def __init__(self, commands: tuple[Command, ...], by: str = "time") -> None:
        self.at = [c.at for c in commands]
        self.commands = commands
        self.by = by

    def __call__(self, st: DriveState) -> Controls:
        key = st.time if self.by == "time" else st.travelled
        i = bisect.bisect_right(self.at, key) - 1
        if i < 0:
            return Controls()
        c = self.commands[i]
        return Controls(c.throttle, c.brake, 0.0)


class AutoDriver:
    """Minimum-time driving under the limits ``limit_v[k]`` (from ``limit_s[k]`` on) and
    the stops; the end of the run is the stop ``stop_at`` (front line distance)."""

    #: Where the front stops short of the end of the path (m).
    STOP_SHORT = 2.0
    #: Standing this close to a stopping point counts as arrived (m).
    ARRIVED_WITHIN = 0.5
    #: Speed under which the train counts as standing (m/s).
    STANDING = 0.05
    #: Below the permitted speed by less than this (m/s), the train is "at" it: the
    #: speed target then follows the braking curve instead of the limit.
    ON_CURVE = 0.02
    #: Final approach to a stop: creep speed (m/s) kept until the braking curve to the
    #: stop asks for less, so that a stop is reached in finite time.
    CREEP = 0.3

    def __init__(
        self,
        limit_s,
        limit_v,
        stop_at: float | None,
        *,  # noqa: ANN001
        max_speed: float | None,
        deceleration: float,
        stops: list[Stop] | tuple[Stop, ...] = (),
        train_length: float = 0.0,
        speed_factor: float = 1.0,
        coast_before: float = 0.0,
    ) -> None:
        self.limit_s = [float(x) for x in np.asarray(limit_s, dtype=np.float64)]
        self.limit_v = [float(x) for x in np.asarray(limit_v, dtype=np.float64)]
        self.max_speed = max_speed if max_speed is not None else math.inf
        self.decel = float(deceleration)
        self.train_length = float(train_length)
        #: Allowance by speed ceiling: every limit is multiplied by this (≤ 1).
        self.speed_factor = float(speed_factor)
        #: Energy saving: cut traction when the braking point of a lower target is less
        #: than this many seconds ahead at the current speed (0 = never coast).
        self.coast_before = float(coast_before)
        self.stops: list[Stop] = sorted(stops, key=lambda p: p.s)
        self._stop_at: float | None = None
        self.stop_at = stop_at
        #: Extra targets (signals, …): kept sorted by s.
        self.targets: list[Target] = []
        #: Force-mode brakes build up: braking starts this many seconds earlier (s).
        self.brake_delay = 0.0
        #: Force mode: the deceleration (m/s²) a full service application gives on the
        #: level; the brakes build up at this over 2·brake_delay per second.
        self.brake_level: float | None = None
        #: Force mode with brake-shoe friction curves: ``(planned deceleration, full
        #: application's deceleration)`` at a speed (m/s); sets :attr:`decel` and
        #: :attr:`brake_level` each step.
        self.brakes_at: Callable[[float], tuple[float, float]] | None = None
        #: What the brakes give now, as far as the driver can tell (m/s²).
        self._applied = 0.0
        self.finished = False
        #: The train's name in the events below (the replay sets it).
        self.train = ""
        #: Arrived at and left waiting points; the replay collects and clears them.
        self.events: list[ReplayEvent] = []

    @property
    def stop_at(self) -> float | None:
        """Where the run ends (front line distance; the front stops
        :attr:`STOP_SHORT` before it), None for no end. Setting it moves the final stop
        (a caller driving from stop to stop, such as an activity's service)."""
        return self._stop_at

    @stop_at.setter
    def stop_at(self, value: float | None) -> None:
        if value == self._stop_at and value is not None:
            return
        self._stop_at = value
        self.stops = [p for p in self.stops if p.kind != "end"]
        if value is not None:
            bisect.insort(self.stops, Stop(value - self.STOP_SHORT, math.inf, "end"), key=lambda p: p.s)

    # -- what must be respected ---------------------------------------------------------
    def add_target(self, target: Target) -> None:
        """A further speed target (e.g. a signal's); kept until the front passes it."""
        bisect.insort(self.targets, target, key=lambda t: t.s)

    def _limit_over(self, rear: float, front: float) -> float:
        """The lowest line limit over [rear, front] (a limit holds over the whole train)."""
        s, v = self.limit_s, self.limit_v
        a = max(bisect.bisect_right(s, rear) - 1, 0)
        b = max(bisect.bisect_right(s, front) - 1, 0)
        return min(v[a : b + 1]) * self.speed_factor

    def constraints(self, st: DriveState) -> list[tuple[float, float]]:
        """(speed, metres ahead of the front where it must hold) for everything that
        matters now: the limit over the train (0 m ahead), lower limits ahead, the next
        stop, extra targets ahead."""
        # (_limit_over inlined: this runs every step for every train)
        front, speed = st.front, st.speed
        s, v = self.limit_s, self.limit_v
        factor = self.speed_factor
        first = bisect.bisect_right(s, front)  # the first limit post ahead of the front
        a = max(bisect.bisect_right(s, st.rear) - 1, 0)
        b = max(first - 1, 0)
        cap = min(self.max_speed, min(v[a : b + 1]) * factor)
        out = [(cap, 0.0)]
        reach = (
            max(speed, cap) ** 2 / (2.0 * self.decel)
            + 50.0
            + speed * (st.dt + self.brake_delay + self.coast_before)
        )
        for k in range(max(first, 0), len(s)):
            ahead = s[k] - front
            if ahead > reach:
                break
            if v[k] * factor < cap:
                out.append((v[k] * factor, ahead))
        for t in self.targets:
            ahead = t.s - front
            if ahead > reach:
                break
            if ahead >= 0.0:
                out.append((t.v, ahead))
        if self.stops:
            out.append((0.0, max(self.stops[0].s - front, 0.0)))
        return out

    def _next_stop(self) -> Stop | None:
        return self.stops[0] if self.stops else None

    # -- driving ------------------------------------------------------------------------
    def _delay_left(self) -> float:
        """The lag (s) of the brake build-up still to come: building up linearly from
        what the brakes give now, b, to the planned deceleration a at the rate r of
        :meth:`_follow_brakes` lags (a − b)²/(2·a·r) (docs/running-time.md §2). From
        nothing to a full application that is :attr:`brake_delay`."""
        if self.brake_delay <= 0.0 or self.decel <= 0.0:
            return 0.0
        short = max(self.decel - self._applied, 0.0)
        return short * short / (2.0 * self.decel * self._build_rate())

    def _build_rate(self) -> float:
        """m/s³: a full application (:attr:`brake_level`) in 2·brake_delay seconds."""
        return max(self.brake_level or self.decel, self.decel) / (2.0 * self.brake_delay)

    def _follow_brakes(self, asked: float, dt: float) -> None:
        """Track the brake application the way the replay builds it up and releases it."""
        if self.brake_delay <= 0.0:
            self._applied = asked
            return
        rate = self._build_rate()
        step = asked - self._applied
        self._applied += min(max(step, -dt * rate / RELEASE_OVER_BUILD_UP), dt * rate)

    def __call__(self, st: DriveState) -> Controls:
        v = st.speed
        if self.brakes_at is not None:
            self.decel, self.brake_level = self.brakes_at(v)
        stops = self.stops
        stop = stops[0] if stops else None
        if stop is not None and stop.arrived_at is not None:
            # Standing at a stop: hold the brakes until the wait is over.
            if stop.wait != math.inf and st.time - stop.arrived_at >= stop.wait - 1e-9:
                self.stops.pop(0)
                self.events.append(DepartedPoint(time=st.time, at=stop.s, train=self.train))
                stop = self._next_stop()
            else:
                if stop.wait == math.inf:
                    self.finished = True  # (a caller may have reset it)
                self._applied = self.decel
                return Controls(0.0, 1.0, self.decel)
        if stop is not None and abs(v) < self.STANDING and stop.s - st.front < self.ARRIVED_WITHIN:
            stop.arrived_at = st.time
            if stop.wait == math.inf:
                self.finished = True
            else:
                self.events.append(WaitingAtPoint(time=st.time, at=stop.s, wait=stop.wait, train=self.train))
            return Controls(0.0, 1.0, self.decel)
        # Targets passed by the front are done with.
        targets = self.targets
        while targets and targets[0].s < st.front - 1e-6:
            targets.pop(0)
        cons = self.constraints(st)
        decel = self.decel
        two_a = 2.0 * decel
        dt = st.dt
        # The braking curves are checked where the front will be at the end of this
        # step, so that braking starts in time rather than a step late, plus the lag of
        # the brake build-up still to come. Dropping that lag at once when braking begins
        # put the train back under its curve the next step: the driver released, braked,
        # released ... and the brakes never built up (an overrun of the stop).
        # _delay_left and _build_rate, inlined
        bd = self.brake_delay
        rate = delay = 0.0
        if bd > 0.0:
            rate = max(self.brake_level or decel, decel) / (2.0 * bd)
            if decel > 0.0:
                short = max(decel - self._applied, 0.0)
                delay = short * short / (2.0 * decel * rate)
        ahead = max(v, 0.0) * (dt + delay)
        best, k_best = math.inf, 0
        coast = False
        coast_before = self.coast_before
        sqrt = math.sqrt
        for k, (vk, d) in enumerate(cons):
            p = sqrt(vk * vk + two_a * max(d - ahead, 0.0)) if d > 0.0 else vk
            if p < best:
                best, k_best = p, k
            if coast_before > 0.0 and d > 0.0 and vk < v:
                # Energy saving: coast once the braking point is this close.
                coast |= d - (v * v - vk * vk) / two_a < v * coast_before
        vk, d = cons[k_best]
        if d > 0.0 and vk < v and v > best - self.ON_CURVE:
            # On (or over) the braking curve of a lower target: brake with what it needs.
            # (the distance left once the brakes are built up)
            room = d - max(v, 0.0) * delay
            need = (v * v - vk * vk) / (2.0 * room) if room > 1e-3 else 3.0 * decel
            asked = min(need, 3.0 * decel)
            self._follow_brakes(asked, dt)
            # Far over the curve (a target appeared late, e.g. a signal): emergency.
            return Controls(deceleration=asked, emergency=d > 1e-3 and need > EMERGENCY_OVER * decel)
        if v > best + 1e-6:
            # Over the limit that holds now (a lower one has reached the train).
            asked = min((v - best) / max(dt, 1e-3), 3.0 * decel)
            self._follow_brakes(asked, dt)
            return Controls(deceleration=asked)
        # _follow_brakes(0.0, dt), inlined
        if bd <= 0.0:
            self._applied = 0.0
        else:
            step = 0.0 - self._applied
            self._applied += min(max(step, -dt * rate / RELEASE_OVER_BUILD_UP), dt * rate)
        if coast:
            return Controls()
        return Controls(0.0, 0.0, 0.0, best)
