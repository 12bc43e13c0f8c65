"""Drivers: who sets throttle and brakes.

* :class:`ScheduleDriver` plays a fixed schedule of throttle/brake settings by time or
  by distance travelled.
* :class:`AutoDriver` drives like a careful driver: it keeps to the speed limit over the
  whole train (a limit holds until the rear has passed the post), slows in time for a
  lower limit ahead and for the end of the path, where it stops, all with a planned
  braking deceleration. It accelerates with throttle proportional to the speed deficit
  and brakes in the "deceleration" mode (the brakes give what the plan needs).
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from .scenario import Command


@dataclass(slots=True)
class Controls:
    throttle: float = 0.0       # 0..1
    brake: float = 0.0          # 0..1 of the maximum brake force ("force" mode)
    deceleration: float = 0.0   # m/s² the brakes must give ("deceleration" mode), 0 = none


@dataclass(slots=True)
class DriveState:
    time: float                 # s since the start
    travelled: float            # m the front has moved since the start
    speed: float                # m/s, + = forward along the line
    front: float                # line distance of the front of the train
    rear: float                 # line distance of the rear


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
    """Keep to the limits and stop at ``stop_at`` (a line distance for the front)."""

    #: Speed below the permitted speed at which full throttle is used (m/s).
    FULL_THROTTLE_BELOW = 3.0
    #: Margin kept under the permitted speed (m/s).
    MARGIN = 0.5
    #: Where the front stops short of the end of the path (m).
    STOP_SHORT = 2.0
    #: Standing this close to the stopping point counts as arrived (m): braking to a
    #: stand may end a few millimetres short, where the permitted speed is not yet 0.
    ARRIVED_WITHIN = 0.5

    def __init__(self, limit_s: np.ndarray, limit_v: np.ndarray, stop_at: float | None, *,
                 max_speed: float | None, deceleration: float) -> None:
        # The line's speed limit as steps: limit_v[k] holds from limit_s[k] on. Plain
        # lists: a handful of entries, read every step (bisect beats numpy here).
        self.limit_s = [float(x) for x in np.asarray(limit_s, dtype=np.float64)]
        self.limit_v = [float(x) for x in np.asarray(limit_v, dtype=np.float64)]
        self.stop_at = stop_at
        self.max_speed = max_speed if max_speed is not None else math.inf
        self.decel = deceleration
        self.finished = False

    def constraints(self, st: DriveState) -> list[tuple[float, float]]:
        """(speed, metres ahead of the front where it must hold) for every limit that
        matters now: the lowest limit over the train, lower limits ahead, the stop."""
        s, v = self.limit_s, self.limit_v
        a = max(bisect.bisect_right(s, st.rear) - 1, 0)
        b = max(bisect.bisect_right(s, st.front) - 1, 0)
        out = [(min(min(v[a:b + 1]), self.max_speed), 0.0)]
        two_a = 2.0 * self.decel
        reach = (max(st.speed, out[0][0]) ** 2) / two_a + 50.0
        for k in range(b + 1, len(s)):
            ahead = s[k] - st.front
            if ahead > reach:
                break
            out.append((v[k], max(ahead, 0.0)))
        if self.stop_at is not None:
            out.append((0.0, max(self.stop_at - self.STOP_SHORT - st.front, 0.0)))
        return out


    def __call__(self, st: DriveState) -> Controls:
        cons = self.constraints(st)
        two_a = 2.0 * self.decel
        allowed = [math.sqrt(vk * vk + two_a * d) for vk, d in cons]
        k = min(range(len(cons)), key=allowed.__getitem__)
        target = allowed[k]
        v = st.speed
        if self.stop_at is not None and v < 0.05 and (
                target < 0.05 or self.stop_at - self.STOP_SHORT - st.front < self.ARRIVED_WITHIN):
            self.finished = True
            return Controls(0.0, 1.0, 0.0)  # stopped at the end: hold the train
        if v > target - 0.1 * self.MARGIN:
            # Brake with what the binding limit needs: (v² − v_k²) / 2d, at least the
            # planned rate once over the curve, so a late start is caught up.
            vk, d = cons[k]
            if d > 0.5:
                need = max(v * v - vk * vk, 0.0) / (2.0 * d)
            else:
                need = 2.0 * self.decel
            if v <= target:
                need = min(need, self.decel * (v - target + 0.1 * self.MARGIN) / (0.1 * self.MARGIN))
            return Controls(0.0, 0.0, min(max(need, 0.0), 3.0 * self.decel))
        deficit = target - self.MARGIN - v
        if deficit <= 0:
            return Controls()
        return Controls(min(1.0, deficit / self.FULL_THROTTLE_BELOW + 0.05), 0.0, 0.0)
