"""What the automatic driver can count on from a train's Open Rails brakes
(docs/physics.md §7.9): how much a full-service application gives once it has built
up, how late it comes, and which pipe reduction gives a wanted share of the force.

The automatic driver plans its braking with a linear build-up of the deceleration
(docs/running-time.md §2): a full application reaches its level after
``2·brake_delay`` s, so its lag (the dead time of an instant application with the
same stopping distance) is ``brake_delay``. Here that lag is *measured* on the train's
own brake pipe, valves and cylinders (:class:`~.airbrake.AirBrakeTrain`, standing, a
full-service application from charged): the area between the final force and the force
as it builds up, divided by the final force. The same pipe and valves then brake the
train in the replay, so the plan and the brakes agree without a per-train constant.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...formats.stock import Stock
from .airbrake import Handle
from .brakes import ShoeFactors, brake_force_capacity, cylinder_fraction, shoe_factor
from .run import _brake_train

__all__ = ["BrakePlan", "brake_plan"]

#: The longest build-up measured (s); a slower brake counts as built up then.
HORIZON_S = 300.0
#: Settled: the force fraction moved less than this over the last second.
SETTLED = 1e-4


@dataclass(frozen=True)
class BrakePlan:
    """One train's brakes as the automatic driver sees them."""

    stocks: tuple[Stock, ...]
    capacity: np.ndarray  # per car: the force the friction factor multiplies (N)
    #: the capacity-weighted cylinder fraction a full-service application settles at
    full_fraction: float
    #: s: the lag of a full-service application from release (pipe, valves, cylinders)
    lag_s: float
    #: s: until the force settles (within 1 %) after a full-service handle
    build_s: float
    max_cyl: np.ndarray
    spring: np.ndarray
    ratio: np.ndarray
    full_drop: float
    #: how many times longer the cylinders take to empty than to fill (rates' ratio)
    release_over_build: float

    def full_force(self, v: float) -> float:
        """The train's brake force (N) of a full-service application at speed ``v``."""
        # one shoe_factor per distinct stock, not per car (ShoeFactors)
        f = np.empty(len(self.stocks))
        u = abs(v)
        for s, cars in self._shoe.groups:
            f[cars] = float(shoe_factor(s, u))
        return self.full_fraction * float(np.sum(self.capacity * f))

    @functools.cached_property
    def _shoe(self) -> ShoeFactors:
        return ShoeFactors(self.stocks)

    def reduction_for(self, share: float) -> float:
        """The pipe reduction (psi) whose cylinders give ``share`` (0–1) of the full-
        service force: each car's cylinder is reduction × TripleValveRatio, the force
        starts above the spring pressure (capacity-weighted mean of the cars'
        reductions; at most the full-service drop)."""
        if share <= 0.0:
            return 0.0
        q = min(share, 1.0) * self.full_fraction
        p = self.spring + q * (self.max_cyl - self.spring)
        w = self.capacity if float(np.sum(self.capacity)) > 0 else np.ones(len(self.capacity))
        r = float(np.sum(w * p / self.ratio) / np.sum(w))
        return min(r, self.full_drop)


def brake_plan(stocks: Sequence[Stock], dt: float = 0.1) -> BrakePlan:
    """Measure the train's full-service application (standing, from charged)."""
    stocks = tuple(stocks)
    air, max_cyl, spring = _brake_train(stocks)
    capacity = np.array([brake_force_capacity(s) for s in stocks], dtype=np.float64)
    w = capacity if float(capacity.sum()) > 0 else np.ones(len(stocks))
    handle = Handle("service", air.full_service_drop)
    fr = [0.0]
    n = int(HORIZON_S / dt)
    per_s = max(int(round(1.0 / dt)), 1)
    for i in range(n):
        air.step(handle, dt)
        fr.append(float(np.sum(w * cylinder_fraction(air.cyl, max_cyl, spring)) / np.sum(w)))
        if i >= per_s and fr[-1] > 0 and abs(fr[-1] - fr[-1 - per_s]) < SETTLED:
            break
    f = np.array(fr)
    final = float(f[-1])
    if final <= 0.0:
        lag = build = 0.0
    else:
        # the trapezoid rule over the samples: the dead time of the same impulse
        short = 1.0 - f / final
        lag = float(dt * (short[:-1] + short[1:]).sum() / 2.0)
        build = float(dt * np.argmax(f >= 0.99 * final))
    rob = float(np.sum(w * air.app_rate) / np.sum(w * air.rel_rate))
    return BrakePlan(
        stocks, capacity, final, lag, build, max_cyl, spring, air.ratio.copy(), air.full_service_drop, rob
    )
