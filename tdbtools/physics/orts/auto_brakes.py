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
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...formats.stock import Stock
from ..kernels import LazyKernel, replay_compiled
from .airbrake import Handle
from .brakes import ShoeFactors, brake_force_capacity, cylinder_fraction, shoe_factor, shoe_factor_of
from .run import _brake_train
from .vacuumbrake import ATM_PSI, INHG_PSI, VacuumBrakeTrain, cylinder_for

__all__ = ["BrakePlan", "StopGain", "brake_plan"]

#: The longest build-up measured (s); a slower brake counts as built up then.
HORIZON_S = 300.0
#: Settled: the force fraction moved less than this over the last second.
SETTLED = 1e-4
#: np.sum of a 1-D float array without its Python wrapper (the same reduction, the same bits)
_sum = np.add.reduce
#: np.add.reduce(a * f) compiled, without the product array (None without numba)
_SCALED_SUM = LazyKernel("_orts_kernel", "scaled_sum")


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
    #: a vacuum brake (:mod:`.vacuumbrake`): reductions are inHg of vacuum, ``aux`` the
    #: reservoirs' pressure (psia); its reservoir and cylinder volumes and full vacuum (psi)
    vacuum: VacuumBrakeTrain | None = None
    #: :meth:`full_force`'s sum compiled (``_orts_kernel.scaled_sum``, the same numbers):
    #: the plan's choice of code (:func:`brake_plan`'s ``compiled``)
    compiled: bool = False

    def full_force(self, v: float) -> float:
        """The train's brake force (N) of a full-service application at speed ``v``."""
        u = abs(v)
        last = self._last_full
        if u == last[0]:  # (the driver and the brakes ask at the same speed each step)
            return last[1]
        # one shoe_factor per distinct law, not per car (ShoeFactors), in Python floats
        laws = self.shoe_factors.laws
        if len(laws) == 1 and laws[0][1] is None:  # (one law: capacity × f, as below)
            f1 = shoe_factor_of(laws[0][0], u)
            kernel = _SCALED_SUM() if self.compiled else None
            full = _sum(self.capacity * f1) if kernel is None else kernel(self.capacity, float(f1))
        else:
            f = np.empty(len(self.stocks))
            for s, cars in laws:
                f[slice(None) if cars is None else cars] = shoe_factor_of(s, u)
            full = _sum(self.capacity * f)
        out = self.full_fraction * float(full)
        last[0], last[1] = u, out
        return out

    @functools.cached_property
    def _last_full(self) -> list[float]:
        """[speed, :meth:`full_force` there] of the last call (a NaN speed: none yet)."""
        return [math.nan, 0.0]

    @functools.cached_property
    def shoe_factors(self) -> ShoeFactors:
        """Each car's brake-shoe factor, one law at a time (the replay's brakes use it too)."""
        return ShoeFactors(self.stocks)

    def full_forces(self, speeds: np.ndarray) -> np.ndarray:
        """:meth:`full_force` at each of ``speeds`` (m/s)."""
        u = np.abs(np.asarray(speeds, dtype=np.float64))
        # one shoe_factor per distinct stock over all the speeds (ShoeFactors' groups)
        f = sum(
            float(np.sum(self.capacity[cars])) * np.broadcast_to(shoe_factor(s, u), u.shape)
            for s, cars in self.shoe_factors.groups
        )
        return self.full_fraction * np.asarray(f, dtype=np.float64)

    def reduction_for(self, share: float) -> float:
        """The pipe reduction (psi) whose cylinders give ``share`` (0–1) of the full-
        service force: each car's cylinder is reduction × TripleValveRatio, the force
        starts above the spring pressure (capacity-weighted mean of the cars'
        reductions; at most the full-service drop)."""
        if share <= 0.0:
            return 0.0
        if self.vacuum is not None:
            low = ATM_PSI - self.vacuum.max_vacuum_psi
            return self.reduction_now(
                share, self.full_drop, np.full(len(self.capacity), low), self.max_cyl * 0
            )
        q = min(share, 1.0) * self.full_fraction
        p = self.spring + q * (self.max_cyl - self.spring)
        w = self.capacity if float(np.sum(self.capacity)) > 0 else np.ones(len(self.capacity))
        r = float(np.sum(w * p / self.ratio) / np.sum(w))
        return min(r, self.full_drop)

    def reduction_now(self, share: float, max_psi: float, aux: np.ndarray, cyl: np.ndarray) -> float:
        """The pipe reduction (psi below ``max_psi``) whose cylinders give ``share`` of the
        full-service force from the reservoirs and cylinders as they are: an application
        moves a car's cylinder up by ``ratio`` psi for every psi its auxiliary reservoir
        falls, until the reservoir reaches the pipe, so the pipe pressure that leaves the
        cylinder at p is ``aux + (cyl − p)/ratio`` (capacity-weighted mean of the cars;
        0 to the full-service drop). With charged reservoirs and empty cylinders this is
        :meth:`reduction_for`; after a recent release the reservoirs are not recharged
        yet (the pipe recharges the train's reservoirs at about 1 psi/s on a 9-car
        train), and the same reduction would give a weaker brake."""
        if share <= 0.0:
            return 0.0
        q = min(share, 1.0) * self.full_fraction
        p = self.spring + q * (self.max_cyl - self.spring)
        w = self.capacity if float(np.sum(self.capacity)) > 0 else np.ones(len(self.capacity))
        if self.vacuum is not None:
            # a vacuum cylinder settles at the pipe's pressure, so the piston's difference
            # p needs the pipe at the cylinder pressure that gives it (psia), that vacuum
            vt = self.vacuum
            c = cylinder_for(aux, p, vt.res_vol, vt.cyl_vol, vt.max_vacuum_psi)
            vac = float(np.sum(w * (ATM_PSI - c)) / np.sum(w)) / INHG_PSI
            return min(max(max_psi - vac, 0.0), self.full_drop)
        bp = float(np.sum(w * (aux + (cyl - p) / self.ratio)) / np.sum(w))
        return min(max(max_psi - bp, 0.0), self.full_drop)


class StopGain:
    """How much less than the mean deceleration of a stop a brake held at one cylinder
    pressure gives at the present speed, where the shoes grip least (docs/physics.md
    §7.9): with a deceleration ``q·f(u)`` at speed u (f the full-service one, brakes and
    running resistance at rest, per unit of inertia), the train comes down from v to vk
    in ``(1/q)·∫_vk^v u/f(u) du`` m, so the q that stops it in d m gives at v
    ``f(v)·∫_vk^v u/f(u) du / d``: the mean need ``(v² − vk²)/(2d)`` times
    ``gain(v, vk) = f(v)·∫_vk^v u/f(u) du / ((v² − vk²)/2)`` (≤ 1 when f rises as the
    speed falls, 1 for a flat curve). The integral is tabulated once per train
    (trapezoids every ``step`` m/s up to ``top``; above it the last value)."""

    def __init__(
        self, plan: BrakePlan, davis0: float, inertia: float, top: float = 120.0, step: float = 0.25
    ):
        self.u = np.arange(0.0, top + step, step)
        self.f = (plan.full_forces(self.u) + davis0) / inertia
        g = self.u / np.maximum(self.f, 1e-9)
        self.cum = np.concatenate(([0.0], np.cumsum(0.5 * (g[1:] + g[:-1]) * step)))

    def __call__(self, v: float, vk: float) -> float:
        v, vk = abs(v), max(vk, 0.0)
        half = 0.5 * (v * v - vk * vk)
        if half <= 1e-9:
            return 1.0
        integral = float(np.interp(v, self.u, self.cum) - np.interp(vk, self.u, self.cum))
        return min(float(np.interp(v, self.u, self.f)) * integral / half, 1.0)


def brake_plan(stocks: Sequence[Stock], dt: float = 0.1, *, compiled: bool | None = None) -> BrakePlan:
    """Measure the train's full-service application (standing, from charged).
    ``compiled``: step the air brakes with the compiled kernels (the same numbers); None:
    when the work, cars × steps, is large enough for them (kernels.replay_compiled), so
    that a short train's replay never imports numba."""
    stocks = tuple(stocks)
    if compiled is None:
        compiled = replay_compiled(len(stocks), HORIZON_S / dt)
    air, max_cyl, spring = _brake_train(stocks, compiled)
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
        stocks,
        capacity,
        final,
        lag,
        build,
        max_cyl,
        spring,
        air.ratio.copy(),
        air.full_service_drop,
        rob,
        air if isinstance(air, VacuumBrakeTrain) else None,
        compiled=compiled,
    )
