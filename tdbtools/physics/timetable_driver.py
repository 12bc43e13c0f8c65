"""Timetable replay parts the policy uses (docs/timetables.md §5): its events (a train
formed out of another, pools, holds) and the :class:`TimetableDriver`, a service driver
that can be held standing; and where a wait applies (:func:`first_rejoin`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..signals.events import ReplayEvent
from .activity import ServiceDriver
from .driver import Controls, DriveState


@dataclass(frozen=True, slots=True, kw_only=True)
class Formed(ReplayEvent):
    """``train`` ended and ``new_train`` is formed (or triggered) out of it."""

    kind: ClassVar[str] = "formed"
    clock: str
    train: str
    new_train: str
    how: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolEvent(ReplayEvent):
    """A train stored into (``action`` "in") or taken out of ("out") a pool, or a
    pool that was empty when a train should come out of it ("underflow")."""

    kind: ClassVar[str] = "pool"
    clock: str
    train: str
    pool: str
    action: str
    unit: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Held(ReplayEvent):
    """A train held for another (``$wait``, ``$follow``, ``$connect``) at ``station``
    (None: at its start), from ``clock`` for ``seconds``."""

    kind: ClassVar[str] = "held"
    clock: str
    train: str
    reason: str
    other: str
    station: str | None
    seconds: float


class TimetableDriver(ServiceDriver):
    """A :class:`ServiceDriver` that can also be held standing while "running": before
    its booked start after ``$create``, and while a ``$wait``/``$follow`` holds it at
    its start."""

    def __init__(self, base: ServiceDriver) -> None:
        super().__init__(
            base.name,
            base.auto,
            base.t0,
            base.start,
            base.stops,
            base.path_end,
            base.passenger_cars,
            base.ai,
            base.vmax,
            base.final_efficiency,
            base.signalled,
        )
        self.hold_until = -math.inf
        self.held = False
        #: $wait/$follow on the line: the front stops short of this line distance
        self.wait_limit = math.inf

    def target(self) -> tuple[float, str]:
        s, kind = super().target()
        return (self.wait_limit, "wait") if self.wait_limit < s else (s, kind)

    def __call__(self, st: DriveState) -> Controls:
        now = self.t0 + st.time
        if self.state == "running" and (self.held or now + 1e-9 < self.hold_until):
            return Controls(0.0, 1.0, 0.0)
        return super().__call__(st)


def wait_position(line, s_from: float, node: int) -> float | None:  # noqa: ANN001
    """The line distance where ``node`` begins on ``line`` beyond ``s_from``."""
    for i in range(len(line.seg_node)):
        if int(line.seg_node[i]) == node and float(line.seg_s1[i]) > s_from:
            return float(line.seg_s0[i])
    return None


def first_rejoin(line_a, s_from: float, nodes_b: set[int]) -> int | None:  # noqa: ANN001
    """The first node of ``line_a`` beyond ``s_from`` that ``nodes_b`` holds, after a
    part that it does not hold (Open Rails' wait position: the first common section
    beyond where the paths differ)."""
    i = 0
    n = len(line_a.seg_node)
    while i < n and float(line_a.seg_s1[i]) <= s_from:
        i += 1
    seen_apart = False
    while i < n:
        node = int(line_a.seg_node[i])
        if node not in nodes_b:
            seen_apart = True
        elif seen_apart:
            return node
        i += 1
    return None


__all__ = ["Formed", "Held", "PoolEvent", "TimetableDriver", "first_rejoin", "wait_position"]
