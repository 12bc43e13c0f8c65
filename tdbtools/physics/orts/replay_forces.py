"""The Open Rails profile inside a route replay (``physics = "openrails"``;
docs/physics.md §7.9): per train, each step, the traction of its powered cars and the
brake force of every car from the driver's controls, by the laws of this package.

The driver's controls map onto Open Rails' controls: ``throttle`` is the throttle (a
diesel's engines then run up to it); ``brake`` (a fraction) is a service application
of that fraction of the full-service pipe reduction on the train-brake handle, an
emergency the emergency position; the automatic driver's deceleration demand becomes
the reduction whose full cylinder force would give it at the present speed, and its
speed target the throttle whose force (at the engines' present apparent throttle)
reaches it within the step. The brakes then act through the brake pipe, valves and
cylinders, so they lag behind the handle as Open Rails' do. ``dynamic`` (a schedule's)
is the dynamic-brake handle through the lead's ``Brake_Dynamic`` controller; the
locomotives that have one brake with it after Open Rails' engaging delay, and their
throttle gives nothing while it is engaged (§7.2). numpy/Python only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...formats.stock import Stock
from ...formats.stock_parts import BRAKE_SHOE_FACTOR_MAX, BRAKE_SHOE_FACTOR_MIN
from ..kernels import LazyKernel, entry_point
from .airbrake import SETTLED_PSI, AirBrakeTrain, Handle
from .auto_brakes import BrakePlan, brake_plan
from .brakes import DEFAULT_SHOE_NORMALISER, cylinder_fraction
from .controllers import (
    brake_handle,
    dynamic_value,
    lead_controllers,
    lead_dynamic_controller,
    throttle_value,
)
from .run import _brake_train, _Unit

__all__ = ["OrtsTrainForces"]


#: The automatic driver takes no traction while the train's mean cylinder force share
#: is above this (the brakes are still applied or releasing).
BRAKES_ON = 0.02
#: m/s: above this a train runs (below it is starting)
MOVING = 0.5
#: the train-brake handle in emergency (a Handle is immutable: one serves every train)
_EMERGENCY = Handle("emergency")
#: np.sum of a 1-D float array without its Python wrapper (the same reduction, the same bits)
_sum = np.add.reduce
#: the compiled per-car brake forces (None without numba; physics/_orts_kernel.py)
_BRAKE_FORCES = LazyKernel("_orts_kernel", "brake_forces")
#: the compiled pipe, valves and forces of a train's step in one call (None without numba)
_TRAIN_BRAKES = LazyKernel("_orts_kernel", "train_brakes")
#: a train's sums of gravity and resistance in one compiled call (None without numba)
_TWO_SUMS = LazyKernel("_orts_kernel", "two_sums")
_LAWS = {"factor": 0, "mu": 1}  # (_orts_kernel's LAW_FACTOR, LAW_MU)


class _Memo:
    """A pure function of one float (a cab controller's law, which also takes constants)
    with its last argument and value: asked again with the same bits, the same value
    without the call (a driver's handles stay put for many steps)."""

    __slots__ = ("f", "arg", "value")

    def __init__(self, f: Callable[[float], Any]) -> None:
        self.f = f
        self.arg = math.nan  # (never the same bits: the first call calls)
        self.value: Any = None

    def __call__(self, x: float) -> Any:
        last = self.arg
        if x == last and (x != 0.0 or math.copysign(1.0, x) == math.copysign(1.0, last)):
            return self.value
        self.arg = x
        self.value = self.f(x)
        return self.value


class _TrainBrakes:
    def __init__(self, stocks: Sequence[Stock], plan: BrakePlan | None = None, compiled: bool = True) -> None:
        self.stocks = list(stocks)
        self.air, self.max_cyl, self.spring = _brake_train(stocks, compiled)  # (this train's own, charged)
        self.plan = plan if plan is not None else brake_plan(stocks, compiled=None if compiled else False)
        # the plan's capacities and shoe laws are the cars' (read only here)
        self.capacity = self.plan.capacity
        self.shoe = self.plan.shoe_factors
        self.applied = 0.0  # the last step's mean cylinder force share
        #: the forces with the compiled kernel when numba is there (the same numbers)
        self.compiled = compiled
        #: the one-call compiled step's kernel and packed constants (``_fuse``); None: the
        #: numpy code or the separate kernels; decided at the first step
        self._fused: tuple[Any, np.ndarray, np.ndarray, np.ndarray, AirBrakeTrain, np.ndarray] | None = None
        self._fuse_decided = False
        #: the last handle the fused step had and its (target, has target, emergency)
        self._handle: Handle | None = None
        self._target = (0.0, False, False)

    def full(self, v: float) -> float:
        """The train's brake force of a full-service application at speed ``v``."""
        return self.plan.full_force(v)

    def _fuse(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, AirBrakeTrain, np.ndarray] | None:
        """(the kernel, per-car constants, train constants, a per-car buffer, the air
        brakes, the kernel's memo of its last call) of ``_orts_kernel.train_brakes`` when
        the step can take it: compiled
        code chosen and usable, air brakes stepped compiled, every car on a default shoe
        curve. The constants are packed once: the air brakes' rates, ratios and volumes,
        the cylinders' and the plan's capacities do not change after they are made."""
        air, law = self.air, self.shoe.default_law
        if not (self.compiled and isinstance(air, AirBrakeTrain) and air.compiled and law is not None):
            return None
        kernel = _TRAIN_BRAKES()
        if kernel is None:
            return None
        from .. import _orts_kernel as K

        n = air.bp.size
        cars = np.empty((K.N_BRAKE_ROWS, n))
        cars[K.B_VOL], cars[K.B_APP_RATE], cars[K.B_REL_RATE] = air.vol, air.app_rate, air.rel_rate
        cars[K.B_AUX_RATE], cars[K.B_RATIO] = air.aux_rate, air.ratio
        cars[K.B_MAX_CYL], cars[K.B_SPRING], cars[K.B_CAPACITY] = self.max_cyl, self.spring, self.capacity
        consts = np.empty(K.N_BRAKE_CONSTS)
        consts[K.P_CHARGING], consts[K.P_TAU] = air.charging_rate, air.tau
        consts[K.P_SERVICE_TAU], consts[K.P_EMERGENCY_TAU] = air.service_tau, air.emergency_tau
        consts[K.P_SETTLED] = SETTLED_PSI
        # (AirBrakeTrain.step_valves' Python float arithmetic)
        consts[K.P_FULL_SERVICE_BP] = air.max_psi - air.full_service_drop
        consts[K.P_LAW], consts[K.P_NORMALISER] = _LAWS[law], DEFAULT_SHOE_NORMALISER
        consts[K.P_SHOE_MIN], consts[K.P_SHOE_MAX] = BRAKE_SHOE_FACTOR_MIN, BRAKE_SHOE_FACTOR_MAX
        return kernel, cars, consts, np.empty(n), air, np.zeros(K.N_BRAKE_MEMO)

    def step(
        self, handle: Handle, dt: float, v_cars: np.ndarray, out: np.ndarray
    ) -> tuple[float, float | None]:
        """Each car's brake force after ``dt`` s at ``handle`` into ``out``; returns the
        mean cylinder fraction and ``np.add.reduce(out)`` (None: not worked out)."""
        if not self._fuse_decided:
            self._fused, self._fuse_decided = self._fuse(), True
        fused = self._fused
        if fused is not None:  # (the pipe, the valves and the forces in one compiled call)
            kernel, cars, consts, frac, air, memo = fused
            if handle is not self._handle:  # (a schedule's handle is one object while it stays)
                target = handle.target(air.max_psi, air.full_service_drop)
                self._handle = handle
                self._target = (
                    0.0 if target is None else float(target),
                    target is not None,
                    handle.position == "emergency",
                )
            target, has_target, emergency = self._target
            self.applied, total = kernel(
                air.bp, air.aux, air.cyl, air.state, cars, consts, target, has_target, emergency, float(dt),
                v_cars, out, frac, memo,
            )  # fmt: skip
            return self.applied, total
        self.air.step(handle, dt)
        law = self.shoe.default_law
        kernel = _BRAKE_FORCES() if self.compiled else None
        if kernel is not None and law is not None:  # (the same numbers in one pass over the cars)
            frac = np.empty(v_cars.size)
            kernel(
                v_cars, self.air.cyl, self.max_cyl, self.spring, self.capacity, _LAWS[law],
                DEFAULT_SHOE_NORMALISER, BRAKE_SHOE_FACTOR_MIN, BRAKE_SHOE_FACTOR_MAX, out, frac,
            )  # fmt: skip
            self.applied = float(_sum(frac) / frac.size)
            return self.applied, None
        factor = self.shoe(v_cars)
        frac = cylinder_fraction(self.air.cyl, self.max_cyl, self.spring)
        # np.mean's bits: numpy's sum (the same pairwise additions) over the count
        self.applied = float(_sum(frac) / frac.size)
        out[:] = self.capacity * frac * factor
        return self.applied, None


class OrtsTrainForces:
    """Traction and brakes of every train of a replay by the Open Rails profile."""

    def __init__(
        self,
        stocks_per_train: Sequence[Sequence[Stock]],
        train_start: np.ndarray,
        inertia,  # noqa: ANN001
        schedule: Sequence[bool] | None = None,
        plans: Sequence[BrakePlan | None] | None = None,
        *,
        compiled: bool = True,
    ) -> None:
        """``schedule[k]``: train k is driven by a schedule of handle positions (its
        throttle and brake go through the lead's cab controllers); default all.
        ``plans[k]``: train k's :func:`~.auto_brakes.brake_plan` if made already (its
        automatic driver's; a plan is read only), None: made here. ``compiled``: the
        brakes with the compiled kernels when numba is there (the replay's choice,
        kernels.replay_compiled; the same numbers); False: numpy only, numba not imported."""
        self.start = [int(s) for s in train_start]
        #: per train: (car row, its power unit) of every powered car, front first; the
        #: cars of one stock object share one unit (see ``groups``)
        self.units: list[list[tuple[int, _Unit]]] = []
        #: per train: (unit, its cars' rows) per distinct stock. Every powered car of a
        #: train gets the same inputs each step (the train's speed, throttle, dynamic-
        #: brake handle, dt) and starts in the same state, and a unit's state is a
        #: function of its stock and those inputs alone: so the cars of one stock stay
        #: in one state, bit for bit, and one unit steps for all of them (a 1,000-car
        #: train with 40 Class 66 steps one; docs/physics.md §7.9)
        self.groups: list[list[tuple[_Unit, np.ndarray]]] = []
        #: per train: each powered car's group, front first (the sums over the cars keep
        #: their order, so their bits)
        self.member_group: list[list[int]] = []
        self.brakes: list[_TrainBrakes] = []
        for k, stocks in enumerate(stocks_per_train):
            base = self.start[k]
            by_stock: dict[int, int] = {}
            groups: list[tuple[_Unit, list[int]]] = []
            units, member = [], []
            for i, s in enumerate(stocks):
                if s.kind != "engine" or s.engine_type not in ("Diesel", "Electric", "Steam"):
                    continue
                g = by_stock.get(id(s))
                if g is None:
                    g = by_stock[id(s)] = len(groups)
                    unit = _Unit(s)
                    if compiled:  # (the units the compiled kernels cover; the same numbers)
                        unit.compile()
                    groups.append((unit, []))
                groups[g][1].append(base + i)
                units.append((base + i, groups[g][0]))
                member.append(g)
            self.units.append(units)
            self.groups.append([(u, np.array(rows, dtype=np.intp)) for u, rows in groups])
            self.member_group.append(member)
            self.brakes.append(_TrainBrakes(stocks, None if plans is None else plans[k], compiled))
        self.inertia = [float(m) for m in inertia]
        #: the per-train sums compiled (the replay's choice of code)
        self.compiled = compiled
        self.full_drop = [b.air.full_service_drop for b in self.brakes]
        # the lead's cab controllers (docs/physics.md §7.10): what a schedule's handle
        # positions give
        # (a train an automatic driver drives, or holds: its brake fraction is a share of
        # the full-service reduction, 1 = full service, as a driver holds a train)
        none = (None, None, 0.0)
        #: per train: the lead's dynamic-brake controller (a schedule's dynamic handle)
        self.dynamic_cab = [lead_dynamic_controller(stocks) for stocks in stocks_per_train]
        self.cab = [
            lead_controllers(stocks) if handles else none
            for stocks, handles in zip(
                stocks_per_train, schedule if schedule is not None else [True] * len(stocks_per_train)
            )
        ]
        #: per train: the throttle, dynamic-brake and train-brake controllers' laws with
        #: their last handle position and value (``_Memo``)
        self.throttle_of = [_Memo(functools.partial(throttle_value, cab[0])) for cab in self.cab]
        self.dynamic_of = [_Memo(functools.partial(dynamic_value, spec)) for spec in self.dynamic_cab]
        self.handle_of = [
            _Memo(functools.partial(brake_handle, cab[1], full_drop=drop, min_drop=cab[2]))
            for cab, drop in zip(self.cab, self.full_drop)
        ]
        #: (the cars' count, per train the end of its cars) as the last step had them
        self._ends: tuple[int, list[int]] = (-1, [])
        #: per train: the pipe reduction the automatic driver's handle stands at (psi)
        self.held = [0.0] * len(self.brakes)
        #: per train: the one-call compiled step (orts/fused_step.py; None: the reference),
        #: made at the first :meth:`step_fused`
        self.fused: list | None = None
        #: per train: the last step's deceleration but for traction (m/s²: the brakes,
        #: running resistance and the grade; what the automatic driver brakes with)
        self.brake_decel = [0.0] * len(self.brakes)

    def brake_decel_of(self, k: int) -> float:
        """Train ``k``'s deceleration of the last step but for traction (m/s²: brakes,
        resistance and grade): the driver plans its stops with what slows the train,
        and a plan with the brakes alone came down too early uphill and at speed (its
        further reductions then overshot what the stop needed)."""
        return self.brake_decel[k]

    def forces(
        self,
        ctl: Sequence,
        v: np.ndarray,
        grav: np.ndarray,
        resist: np.ndarray,
        dt: float,
        sums: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per car traction (signed along the train) and brake force (≥ 0); per train the
        throttle used and the mean cylinder fraction (the traces' throttle and brake).
        ``sums``: per train the sums of ``grav`` and ``resist`` over its cars (rows 0, 1),
        each ``np.add.reduce`` of its slice, if the caller has them (the compiled step's
        ``car_forces_sums``); None: summed here."""
        n = len(v)
        trac = np.zeros(n)
        brk = np.zeros(n)
        T = len(ctl)
        scale = [0.0] * T
        applied = [0.0] * T
        if self._ends[0] != n:
            self._ends = (n, [*self.start[1:], n])
        ends = self._ends[1]
        if sums is not None:
            gsum, rsum = sums.tolist()
        else:
            two = _TWO_SUMS() if self.compiled else None
            gsum, rsum = [0.0] * T, [0.0] * T
            for k in range(T):
                a, b = self.start[k], ends[k]
                if two is not None:  # (the same two np.add.reduce, compiled in one call)
                    gsum[k], rsum[k] = two(grav, resist, a, b)
                else:
                    gsum[k], rsum[k] = float(_sum(grav[a:b])), float(_sum(resist[a:b]))
        for k, c in enumerate(ctl):
            scale[k], applied[k] = self._train(k, c, v, dt, trac, brk, gsum[k], rsum[k], ends[k])
        return trac, brk, np.array(scale, dtype=np.float64), np.array(applied, dtype=np.float64)

    def step_fused(
        self, ctl: Sequence, v: np.ndarray, dt: float, out: np.ndarray, sums: np.ndarray, cars: tuple
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`forces` with each train's part in one compiled call where the kernels
        cover it (orts/fused_step.py), the reference's :meth:`_train` elsewhere, and the
        cars' gravity and resistance worked out here: ``cars`` holds
        ``_step_kernel.car_forces_sums``' arguments but ``v``, ``out`` and ``sums``
        (``x, fbrb, ctab, ctype, consts, lines, pieces, rows, work, bounds``). ``out``:
        the ``_step_kernel.F_*`` rows per car, all written (traction, brakes, the
        engine's drive and opposing forces); ``sums``: per train its sums of gravity and
        resistance (written). Returns per train the throttle used and the mean cylinder
        share."""
        if self.fused is None:
            from .fused_step import fused_train

            self.fused = [
                fused_train(tb, g, m, M, s, (BRAKES_ON, MOVING)) if self.compiled else None
                for tb, g, m, M, s in zip(
                    self.brakes, self.groups, self.member_group, self.inertia, self.start
                )
            ]
        n = len(v)
        T = len(ctl)
        scale = np.empty(T)
        applied = np.empty(T)
        if self._ends[0] != n:
            self._ends = (n, [*self.start[1:], n])
        ends = self._ends[1]
        x, fbrb, ctab, ctype, consts, lines, pieces, rows, work, bounds = cars
        do_cars = True
        later = []
        for k, c in enumerate(ctl):
            ft = self.fused[k]
            if ft is None or c.deceleration > 0:
                later.append(k)
                continue
            throttle = self.throttle_of[k](float(c.throttle))
            emergency = bool(c.emergency)
            h_target, h_has, h_emergency = ft.handle_target(
                _EMERGENCY if emergency else self.handle_of[k](float(c.brake))
            )
            target = c.speed_target
            args = (
                do_cars, x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, bounds, out, sums, k,
                float(throttle), target is not None, 0.0 if target is None else float(target), emergency,
                h_target, h_has, h_emergency, float(dt), ft.tconst, ft.units_a, ft.uidx, ft.caps, *ft.brake_args,
            )  # fmt: skip
            if ft.call is None:  # (the first call through numba's dispatcher, then its machine code)
                status, thr, app, decel = ft.kernel(*args)
                ft.call = entry_point(ft.kernel, args)
            else:
                status, thr, app, decel = ft.call(*args)
            do_cars = False
            if status:
                later.append(k)
                continue
            if target is not None and not emergency:
                self.held[k] = 0.0
            self.brake_decel[k] = decel
            scale[k], applied[k] = thr, app
        if later:
            from .. import _step_kernel as S

            if do_cars:
                S.car_forces_sums(
                    x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out, bounds, sums
                )
            gsum, rsum = sums.tolist()
            for k in later:
                a, b = self.start[k], ends[k]
                ft = self.fused[k]
                if ft is not None:
                    ft.to_objects()
                out[S.F_TRAC, a:b] = 0.0
                scale[k], applied[k] = self._train(
                    k, ctl[k], v, dt, out[S.F_TRAC], out[S.F_BRAKE], gsum[k], rsum[k], b
                )
                if ft is not None:
                    ft.from_objects()
                np.add(out[S.F_TRAC, a:b], out[S.F_GRAV, a:b], out=out[S.F_DRIVE, a:b])
                np.add(out[S.F_RESIST, a:b], out[S.F_BRAKE, a:b], out=out[S.F_OPPOSED, a:b])
        return scale, applied

    def _train(
        self,
        k: int,
        c: Any,
        v: np.ndarray,
        dt: float,
        trac: np.ndarray,
        brk: np.ndarray,
        gsum: float,
        rsum: float,
        b: int,
    ) -> tuple[float, float]:
        """Train ``k``'s part of :meth:`forces` (its cars ``start[k]:b``) with its sums of
        gravity and resistance: its cars' traction and brakes into ``trac`` and ``brk``;
        returns its throttle and mean cylinder share."""
        a = self.start[k]
        vk = float(v[a])
        speed = abs(vk)
        # the net force along the train's forward direction but for traction and
        # brakes (resistance opposes the motion); traction always pulls forward
        fwd = -1.0 if vk < 0.0 else 1.0
        other = gsum - fwd * rsum
        M = self.inertia[k]
        groups = self.groups[k]
        tb = self.brakes[k]
        throttle = self.throttle_of[k](float(c.throttle))
        hold = 0.0
        if c.speed_target is not None:
            need = M * (c.speed_target - vk) / dt - other
            caps = [u.capacity(speed) for u, _ in groups]
            cap = sum(map(caps.__getitem__, self.member_group[k]))
            throttle = min(max(need / cap, 0.0), 1.0) if cap > 0 else (1.0 if need > 0 else 0.0)
            hold = max(-need, 0.0)
        if c.emergency:
            handle = _EMERGENCY
        else:
            # a schedule's brake: the handle at that position of the lead's controller
            scheduled = self.handle_of[k](float(c.brake))
            reduction = scheduled.reduction if scheduled.position == "service" else 0.0
            share = 0.0
            if c.deceleration > 0 or hold > 0:  # (else neither reads the full force)
                full = tb.full(speed)
                if c.deceleration > 0 and full > 0:
                    share = (M * c.deceleration + other) / full
                if hold > 0 and full > 0:
                    share = max(share, hold / full)
            if share > 0 or c.deceleration > 0:
                # The automatic driver brakes as one does with a brake that releases
                # fully as soon as the pipe rises (AirSinglePipe's triple valve):
                # it makes a further reduction when it needs more, laps the handle
                # when it needs less, and releases only to drive on.
                air = tb.air
                wanted = tb.plan.reduction_now(share, air.max_psi, air.aux, air.cyl)
                reduction = max(reduction, self.held[k], wanted)
                self.held[k] = reduction
                handle = Handle("service", reduction)
            else:
                if c.speed_target is not None:
                    self.held[k] = 0.0
                handle = scheduled
        if c.speed_target is not None and tb.applied > BRAKES_ON and vk > MOVING:
            # no traction against brakes still applied (or releasing) while running;
            # to start, the driver opens the throttle as it releases (no rolling back)
            throttle = 0.0
        dyn = self.dynamic_of[k](float(c.dynamic))
        dyn_force = []
        for u, rows in groups:
            trac[rows], fd = u.step(throttle, dyn, speed, dt)
            dyn_force.append((rows, fd))
        applied, total = tb.step(handle, dt, v[a:b], brk[a:b])
        for rows, fd in dyn_force:  # the dynamic brake opposes the motion as the brakes do
            brk[rows] += fd
            if not fd == 0.0:
                total = None
        if total is None:
            total = float(_sum(brk[a:b]))
        # (else the sum of the brakes alone: adding ±0.0 changes at most the sign of a
        # zero, and np.add.reduce's sum, from +0.0, is the same with either sign)
        self.brake_decel[k] = (total - fwd * other) / M
        return throttle, applied
