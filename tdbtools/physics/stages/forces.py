"""The forces stage of a replay: per car, each step, gravity, Davis and curve resistance,
traction and brakes from the drivers' controls (docs/running-time.md §2–§7), and after
the engine moved the cars, their energy sums and bogies.

This is the one place of a step that picks between the numpy reference and a compiled
kernel (:mod:`tdbtools.physics.kernels` says which are usable): the step kernel
(``_step_kernel``: the per-car arithmetic, and for a few trains without brake-shoe
curves the per-train loop too), the batch controls kernel (``_driver_kernel.controls``)
and numpy. Every path gives the same bits (tests/test_step_kernel.py,
tests/test_replay_fast_paths.py). The force laws themselves are in
:mod:`tdbtools.physics.forces`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import forces as laws
from ..driver import Controls
from ..kernels import LazyKernel
from ..scenario import Scenario
from .driving import ControlArrays
from .setup import RELEASE_OVER_BUILD_UP, Layout, build_up


def pmax(a, b):  # noqa: ANN001, ANN202
    """Python's ``max(a, b)`` elementwise: ``b`` only where ``b > a`` (so NaN and the
    sign of a zero come out as the scalar code's)."""
    return np.where(b > a, b, a)


def pmin(a, b):  # noqa: ANN001, ANN202
    """Python's ``min(a, b)`` elementwise."""
    return np.where(b < a, b, a)


#: the compiled per-train controls, imported on first use (None without numba)
_CONTROLS = LazyKernel("_driver_kernel", "controls")


def taper_factors(force, other, inertia, v, vmax, dt: float) -> np.ndarray:  # noqa: ANN001
    """:func:`~tdbtools.physics.forces.taper_factor` over all trains (the same operations per element)."""
    on = (force > 0.0) & (v + dt * (force + other) / inertia > vmax - laws.TAPER_MS)
    if not np.logical_or.reduce(on):  # (no train near its top speed: most steps)
        return np.ones(len(on))
    slope = 1.0 / laws.TAPER_MS
    dv = (other + slope * force * (vmax - v)) / (inertia / dt + slope * force)
    return np.where(on, pmin(pmax(slope * (vmax - v - dv), 0.0), 1.0), 1.0)


@dataclass(slots=True)
class StepKernel:
    """tdbtools.physics._step_kernel and a replay's fixed arguments to it (see there)."""

    K: Any
    cars: np.ndarray
    ctab: np.ndarray  # the distinct columns of ``cars``
    ctype: np.ndarray  # per car, its column of ``ctab``
    consts: np.ndarray
    lines: np.ndarray
    pieces: np.ndarray
    rows: np.ndarray
    work: np.ndarray
    trains: np.ndarray | None  # None: the per-train loop stays in Python (brake-shoe curves)
    bounds: np.ndarray
    engines: np.ndarray | None


@dataclass(slots=True, eq=False)
class TrainTable:
    """Per train, what its traction and brakes need (arrays over the trains, and plain
    lists of them for the per-train scalar loop of a few trains)."""

    inertia: np.ndarray
    maxbrake: np.ndarray
    vmax: np.ndarray  # the least top speed of its engines (NaN: none)
    spec_decel: np.ndarray  # the scenario's deceleration
    decel_mode: np.ndarray  # bool: brakes by the hourly deceleration model
    build: np.ndarray  # brake build-up time (s)
    release: np.ndarray  # brake release time (s)
    any_decel_mode: bool
    # (the lists: Python floats in the loop cost several times less than numpy scalars)
    inertia_l: list
    maxbrake_l: list
    vmax_l: list
    decel_mode_l: list
    build_l: list
    release_l: list

    @classmethod
    def of(cls, trains: list) -> TrainTable:  # noqa: ANN102
        inertia = np.array([float(t.model.inertial_mass.sum()) for t in trains])
        maxbrake = np.array([max(float(t.model.max_brake.sum()), 1.0) for t in trains])
        vmax = np.array(
            [
                float(np.nanmin(np.where(t.model.is_engine, t.model.max_velocity, np.nan)))
                if (t.model.is_engine & np.isfinite(t.model.max_velocity)).any()
                else np.nan
                for t in trains
            ]
        )
        spec_decel = np.array([t.spec.deceleration for t in trains], dtype=np.float64)
        decel_mode = np.array([t.spec.brake_mode == "deceleration" for t in trains])
        build = np.array([max(build_up(t), 1e-6) for t in trains])
        release = np.array([max(build_up(t) * RELEASE_OVER_BUILD_UP, 1e-6) for t in trains])
        return cls(
            inertia, maxbrake, vmax, spec_decel, decel_mode, build, release, bool(decel_mode.any()),
            inertia.tolist(), maxbrake.tolist(), vmax.tolist(), decel_mode.tolist(), build.tolist(),
            release.tolist(),
        )  # fmt: skip


def car_types(cars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of ``cars`` (bit for bit: a zero's sign and a NaN's bits
    count) as the columns of a table, and per column of ``cars`` its column there. A long
    train's wagons share a few: a compiled step then reads one index per car and a small
    table instead of a dozen long rows (the memory a step touches, most of its time on a
    long train)."""
    cols = np.ascontiguousarray(cars.T)
    keys = cols.view(np.dtype((np.void, cols.shape[1] * cols.itemsize))).ravel()
    _, first, ctype = np.unique(keys, return_index=True, return_inverse=True)
    return np.ascontiguousarray(cols[first].T), ctype.astype(np.int64).ravel()


class CurveCache:
    """Per car, the curve resistance at the cars' middles, kept between steps: looked up
    anew only for the cars whose middle left its curvature piece since the last step (an
    element's value depends only on its piece)."""

    #: From this many cars on the cache pays (below, looking all up costs less than the check).
    KEEP_CURVES_MIN_CARS = 256

    def __init__(self, prepared: laws.Prepared, lines: Any) -> None:
        self.prepared, self.lines = prepared, lines
        self.lo = self.hi = self.crv = np.zeros(0)
        self.filled = False

    def __call__(self, gm: np.ndarray) -> np.ndarray:
        """``forces.Prepared.curve(lines.curvature(gm))`` at table distances ``gm`` of the
        cars' middles."""
        lines = self.lines
        if len(gm) < self.KEEP_CURVES_MIN_CARS:  # (a few cars: the lookup costs less than the check)
            return self.prepared.curve(lines.curvature(gm))
        if not self.filled:
            i = np.searchsorted(lines.P1, gm, side="left")
            self.lo, self.hi = lines.P1_lo[i], lines.P1_hi[i]
            self.crv = self.prepared.curve(lines.PC[np.minimum(i, len(lines.PC) - 1)])
            self.filled = True
            return self.crv
        # lo < g <= hi: the same count of piece ends below g (a NaN g is looked up)
        same = np.less(self.lo, gm)
        same &= gm <= self.hi
        if not np.logical_and.reduce(same):
            idx = np.flatnonzero(~same)
            i = np.searchsorted(lines.P1, gm[idx], side="left")
            self.lo[idx] = lines.P1_lo[i]
            self.hi[idx] = lines.P1_hi[i]
            self.crv[idx] = self.prepared.curve_rows(lines.PC[np.minimum(i, len(lines.PC) - 1)], idx)
        return self.crv


class ForceStage:
    """The forces of every car of a replay, each step (module docstring)."""

    def __init__(self, layout: Layout, scenario: Scenario) -> None:
        L = self.L = layout
        self.model = m = layout.model
        self.trains = layout.trains
        self.train_start = layout.train_start
        self.car_train = layout.car_train
        self.inertial = layout.inertial
        self.fbrb = layout.fbrb
        self.prepared = laws.Prepared(m)
        self.adhesion = None if scenario.adhesion == "off" else scenario.adhesion
        adhesive_g = (m.adhesive_mass if m.adhesive_mass is not None else np.zeros(len(m.mass))) * laws.G
        self.per_train = TrainTable.of(self.trains)
        self.engines = self.prepared.engines
        self.engine_train = np.repeat(
            np.arange(len(self.trains)), [int(t.model.is_engine.sum()) for t in self.trains]
        )
        self.adhesive_g_eng = adhesive_g[self.engines] * (
            1.0 if self.adhesion != "wet" else laws.WET_RAIL_FACTOR
        )
        self.adhesive_g_eng_l = None if self.adhesion is None else self.adhesive_g_eng.tolist()
        self.brake_applied = np.zeros(len(self.trains))
        #: per train: the fraction of full traction the last step gave (the traces' throttle)
        self.scale = np.zeros(len(self.trains))
        self.last_forces = (np.zeros(0),) * 2  # gravity and resistance of the last step
        self.curves = CurveCache(self.prepared, L.lines)
        # step's table distances: every car's bogies, rear then front from the last car
        # on (each train's points rise along the table, so np.interp finds each next to
        # the last: the numbers do not depend on the order), then the middles of the cars
        n = len(L.engine.x)
        self.pairs = 2 * n
        self.len3 = np.concatenate((np.repeat(L.car_line_len, 2)[::-1], L.car_line_len))
        self.base3 = np.concatenate((np.repeat(L.car_base, 2)[::-1], L.car_base))
        # per car: traction and brake energy, top speed (one array: one kernel argument)
        self.sums = np.zeros((3, n))
        self._batch_dt: float | None = None
        self._steps = (np.zeros(0), np.zeros(0))  # the batch's release and build-up steps at _batch_dt
        #: the Open Rails profile's traction and brakes (docs/physics.md §7.9); None: the
        #: engineers' laws of this module. Its brakes take the replay's choice of code.
        self.orts = None
        if layout.physics == "openrails":
            from ..orts.replay_forces import OrtsTrainForces

            self.orts = OrtsTrainForces(
                [t.stocks for t in self.trains],
                layout.train_start,
                self.per_train.inertia,
                [t.spec.driver == "schedule" for t in self.trains],
                [t.orts_plan for t in self.trains],
                compiled=layout.compiled,
            )
            for k, t in enumerate(self.trains):
                if t.auto is not None:
                    # the automatic driver reads the brakes it has, not its ramp
                    t.auto.brakes_now = functools.partial(self.orts.brake_decel_of, k)
        # (the Open Rails profile works out traction and brakes itself: of the kernels it
        # takes the per-car forces and the bookkeeping after the engine's step)
        self.ck = self.step_kernel_args(n, train_loop=self.orts is None)
        #: per train, the sums of its cars' gravity and resistance (the Open Rails profile's
        #: compiled step writes them)
        self.train_sums = np.zeros((2, len(self.trains)))

    def step_kernel_args(self, n: int, train_loop: bool = True) -> StepKernel | None:
        """The compiled arithmetic of a step around the engine (tdbtools.physics.
        _step_kernel, the same numbers) and its fixed arguments; None without numba, or
        when a table is not what the kernel takes for granted (float64, sorted piece ends
        without NaN, one curvature per piece end). ``train_loop`` False: only the per-car
        kernels (``car_forces``, ``after_step``; the Open Rails profile's step)."""
        if not self.L.compiled:
            return None
        L = self.L
        cols = self.prepared.columns()
        ln = L.lines
        P1, PC = ln.P1, ln.PC
        if (
            cols is None
            or any(a.dtype != np.float64 for a in (ln.S, ln.Y, P1, PC))
            or not PC.size
            or P1.size != PC.size
            or bool(np.isnan(P1).any())
            or not bool((P1[1:] >= P1[:-1]).all())
        ):
            return None
        from .. import _step_kernel as K
        from ..compiled import load_step_kernels

        load_step_kernels()  # (in the set-up, not in the first step)
        neg_mg, spacing, da, db, dc, start, f0, vm, slope, mg_curve = cols
        per_car = {
            K.C_LINE_LEN: L.car_line_len, K.C_BASE: L.car_base, K.C_HALF: L.half_length,
            K.C_NEG_MG: neg_mg, K.C_SPACING: spacing, K.C_DA: da, K.C_DB: db, K.C_DC: dc, K.C_F0: f0,
            K.C_VM: vm, K.C_SLOPE: slope, K.C_MG_CURVE: mg_curve, K.C_FULL_BRAKE: self.model.max_brake,
            K.C_INERTIAL: self.inertial, K.C_FRONT_BOGIE: L.front_bogie, K.C_LEN_TOL: L.line_len_tol,
        }  # fmt: skip
        cars = np.empty((K.N_CAR_ROWS, n))
        for row, col in per_car.items():
            if np.asarray(col).dtype != np.float64:
                return None
            cars[row] = col
        # the per-train loop's (trains without brake-shoe curves)
        trains = engines = None
        traction_here = False
        if train_loop and not self.prepared.has_shoe_curves:
            pt = self.per_train
            per_train = {
                K.T_INERTIA: pt.inertia, K.T_MAXBRAKE: pt.maxbrake, K.T_DECEL_MODE: pt.decel_mode,
                K.T_RELEASE: pt.release, K.T_BUILD: pt.build, K.T_VMAX: pt.vmax, K.T_SPEC_DECEL: pt.spec_decel,
            }  # fmt: skip
            trains = np.empty((K.N_TRAIN_ROWS, len(self.trains)))
            for row, col in per_train.items():
                trains[row] = col
            force, power, has_power, curves = self.prepared.engine_table()
            eng = self.engines
            engines = np.empty((K.N_ENGINE_ROWS, len(eng)))
            engines[K.E_ROW], engines[K.E_TRAIN] = eng, self.engine_train
            engines[K.E_FORCE], engines[K.E_POWER], engines[K.E_HAS_POWER] = force, power, has_power
            engines[K.E_ADHESIVE] = 0.0 if self.adhesion is None else self.adhesive_g_eng
            # (as traction_and_brakes: Prepared.traction_few's operations up to 4 engines)
            traction_here = len(eng) <= 4 and not curves
        ctab, ctype = car_types(cars)
        return StepKernel(
            K,
            cars,
            ctab,
            ctype,
            np.array([start, traction_here, self.adhesion is not None, laws.EMERGENCY_FACTOR, laws.TAPER_MS]),
            K.line_table(ln.S, ln.Y),
            np.array([P1, PC]),
            np.full(3 * n, -1, dtype=np.int64),
            np.empty(4 * n),
            trains,
            np.append(L.train_start, n),
            engines,
        )

    # -- a step ---------------------------------------------------------------------------
    def evaluate(
        self, ctl: Any, speeds: list | None, x: np.ndarray, v: np.ndarray, dt: float, batch: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per car: traction, brakes, and the engine's drive and opposing forces, from
        the drivers' controls ``ctl`` (a list of :class:`Controls`, or
        :class:`ControlArrays` when ``batch``; ``speeds``: the trains' speeds as floats
        for the per-train loop)."""
        if self.orts is not None:
            return self.orts_forces(ctl, x, v, dt, batch)
        ck = self.ck
        if not batch and ck is not None and ck.trains is not None:
            return self.few_train_forces(ctl, x, v, dt)
        grav, dav, crv, resist = self.car_forces(x, v)
        if batch:
            trac, brk, self.scale, _ = self.traction_and_brakes_batch(
                ctl, x, v, v[self.train_start], grav, dav, crv, dt, resist
            )
        else:
            assert speeds is not None
            trac, brk, self.scale, _ = self.traction_and_brakes(ctl, x, v, speeds, grav, dav, crv, dt, resist)
        grav, resist = self.last_forces  # (resist: dav + crv)
        return trac, brk, trac + grav, resist + brk

    def orts_forces(
        self, ctl: Any, x: np.ndarray, v: np.ndarray, dt: float, batch: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`evaluate` by the Open Rails profile (``OrtsTrainForces``)."""
        assert self.orts is not None
        if batch:  # the per-train controls back from their arrays
            ctl = [
                Controls(
                    float(ctl.throttle[k]), float(ctl.brake[k]), float(ctl.deceleration[k]),
                    None if np.isnan(ctl.target[k]) else float(ctl.target[k]), bool(ctl.emergency[k]),
                    0.0 if ctl.dynamic is None else float(ctl.dynamic[k]),
                )
                for k in range(len(ctl.throttle))
            ]  # fmt: skip
        ck = self.ck
        if ck is not None:  # (per train one compiled call, the first with every car's forces)
            K = ck.K
            out = np.empty((K.N_OUT_ROWS, len(x)))
            cars = (
                x,
                self.fbrb,
                ck.ctab,
                ck.ctype,
                ck.consts,
                ck.lines,
                ck.pieces,
                ck.rows,
                ck.work,
                ck.bounds,
            )
            self.scale, applied = self.orts.step_fused(ctl, v, dt, out, self.train_sums, cars)
            self.brake_applied[:] = applied
            self.last_forces = (out[K.F_GRAV], out[K.F_RESIST])
            return out[K.F_TRAC], out[K.F_BRAKE], out[K.F_DRIVE], out[K.F_OPPOSED]
        grav, dav, crv, resist = self.car_forces(x, v)
        if resist is None:
            resist = dav + crv
        self.last_forces = (grav, resist)
        trac, brk, self.scale, applied = self.orts.forces(ctl, v, grav, resist, dt, None)
        self.brake_applied[:] = applied
        return trac, brk, trac + grav, resist + brk

    def account(
        self, x: np.ndarray, x1: np.ndarray, v1: np.ndarray, trac: np.ndarray, brk: np.ndarray
    ) -> bool:
        """After the engine moved the cars from ``x`` to ``x1``: energy and top speed per
        car, in place, and the bogies following their cars; whether a bogie is past its
        line's far end or before its start (the watching stage looks closer)."""
        L = self.L
        ck = self.ck
        if ck is not None:
            past = ck.K.after_step(x, x1, v1, trac, brk, self.sums, self.fbrb, ck.ctab, ck.ctype)
            return bool(past[0] or past[1])
        dx = x1 - x
        trac_car, brake_car, vmax_car = self.sums
        trac_car += np.maximum(trac * dx, 0.0)
        brake_car += brk * np.abs(dx)
        np.maximum(vmax_car, np.abs(v1), out=vmax_car)
        L.bogies_at(x1)
        any_ = np.logical_or.reduce  # ndarray.any without its Python wrapper
        return bool(any_(L.fb > L.line_len_tol) or any_(L.rb < -1e-9))

    def car_forces(self, x: np.ndarray, v: np.ndarray) -> tuple:
        """Per car at positions ``x`` and speeds ``v``, with the bogies where the last step
        left them: gravity, Davis and curve resistance, and their sum (None: not summed)."""
        ck = self.ck
        if ck is not None:
            out = np.empty((4, len(x)))
            ck.K.car_forces(
                x, v, self.fbrb, ck.ctab, ck.ctype, ck.consts, ck.lines, ck.pieces, ck.rows, ck.work, out
            )  # fmt: skip
            return out[0], out[1], out[2], out[3]
        # _g of three per-car arrays in place: the bogies (the measures the last step
        # left, of these x; backwards, see __init__) and the middle of every car
        g = np.concatenate((self.fbrb.ravel()[::-1], x - self.L.half_length))
        np.maximum(g, 0.0, out=g)
        np.minimum(g, self.len3, out=g)
        g += self.base3
        y = self.L.lines.elevation(g[: self.pairs], "bogies")[::-1]  # front, rear of car 0, 1, ...
        pre = self.prepared
        crv = self.curves(g[self.pairs :])
        return pre.gravity(y[0::2], y[1::2]), pre.davis(v), crv, None

    def engine_traction(self, thr: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Per car, the traction without the taper at the trains' throttles ``thr``: the
        engines' only (wagons give 0), and with adhesion at most Curtius–Kniffler's μ(v)
        times the adhesive weight (docs/running-time.md §6). Prepared.traction_few's
        Python floats up to four engines, else Prepared.traction."""
        eng = self.engines
        trac0 = np.zeros(len(v))
        if len(eng) <= 4:
            trac0[eng] = self.prepared.traction_few(
                thr[self.engine_train].tolist(), v[eng].tolist(), self.adhesive_g_eng_l
            )
        else:
            trac0[eng] = self.prepared.traction(
                thr[self.engine_train], v[eng], None if self.adhesion is None else self.adhesive_g_eng
            )
        return trac0

    def few_train_forces(
        self, ctrl: list[Controls], x: np.ndarray, v: np.ndarray, dt: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`car_forces` and :meth:`traction_and_brakes` for trains without
        brake-shoe curves, compiled (``_step_kernel.few_train_forces``, the same
        operations): traction, brakes, and the engine's drive and opposing forces."""
        ck = self.ck
        assert ck is not None and ck.trains is not None
        n = len(v)
        K = ck.K
        out = np.empty((K.N_OUT_ROWS, n))
        table = np.array(
            [
                (
                    c.speed_target is not None,
                    0.0 if c.speed_target is None else c.speed_target,
                    1.0 if c.speed_target is not None else c.throttle,
                    c.brake,
                    c.deceleration,
                    c.emergency,
                )
                for c in ctrl
            ],
            dtype=np.float64,
        )
        if not ck.consts[1]:  # the engines' traction in Python, as traction_and_brakes
            out[K.F_TRAC] = self.engine_traction(table[:, 2], v)
        self.scale = np.empty(len(ctrl))
        K.few_train_forces(
            x, v, self.fbrb, table, dt, ck.cars, ck.ctab, ck.ctype, ck.consts, ck.lines, ck.pieces, ck.rows, ck.work,
            ck.trains, ck.bounds, ck.engines, self.brake_applied, out, self.scale,
        )  # fmt: skip
        self.last_forces = (out[K.F_GRAV], out[K.F_RESIST])
        return out[K.F_TRAC], out[K.F_BRAKE], out[K.F_DRIVE], out[K.F_OPPOSED]

    def traction_and_brakes(
        self,
        ctrl: list[Controls],
        x: np.ndarray,
        v: np.ndarray,
        speeds: list,
        grav: np.ndarray,
        dav: np.ndarray,
        crv: np.ndarray,
        dt: float,
        resist: np.ndarray | None = None,
    ):
        """Per-car traction and brake forces from the drivers' controls
        (docs/running-time.md §2–§7): the automatic driver's speed target becomes the
        traction fraction that reaches it by the end of the step (at most full power);
        brakes by the train's brake mode (force: a fraction of the brake force with
        build-up and release; deceleration: the hourly model); then the top-speed taper,
        solved implicitly per train. Per-train work is scalar Python (a few trains, a
        few numbers each: cheaper than numpy calls)."""
        m = self.model
        ct = self.car_train
        pt = self.per_train
        thr = [1.0 if c.speed_target is not None else c.throttle for c in ctrl]
        trac0 = self.engine_traction(np.array(thr), v)
        n = len(v)
        if resist is None:
            resist = dav + crv
        self.last_forces = (grav, resist)
        rows = np.concatenate((trac0, grav, resist)).reshape(3, n)
        sums = np.add.reduceat(rows, self.train_start, axis=1).tolist()
        Fs, Gs, Rs = sums
        M = pt.inertia_l
        # Python floats in the loop: a numpy scalar costs several times more per
        # operation, and the IEEE results are the same.
        applied = self.brake_applied.tolist()
        decel_mode, maxbrake, release = pt.decel_mode_l, pt.maxbrake_l, pt.release_l
        mb_car = self.prepared.max_brake(v)  # None: no friction curves, MaxBrakeForce as is
        if mb_car is not None:
            maxbrake = np.maximum(np.add.reduceat(mb_car, self.train_start), 1.0).tolist()
        build, vmax = pt.build_l, pt.vmax_l
        emergency_factor = laws.EMERGENCY_FACTOR
        taper_factor = laws.taper_factor
        scale = [0.0] * len(ctrl)
        decel_car = None
        any_decel = False
        for k, c in enumerate(ctrl):
            vk = speeds[k]
            fwd = -1.0 if vk < 0.0 else 1.0
            other = Gs[k] - fwd * Rs[k]
            b_force = 0.0
            hold = 0.0
            if c.speed_target is not None:
                # Brakes to hold the target when even no traction would run over it
                # (a falling grade).
                hold = max(fwd * other - M[k] * (c.speed_target - vk) / dt, 0.0)
            if decel_mode[k]:
                a_b = c.deceleration if c.deceleration > 0 else c.brake * self.trains[k].spec.deceleration
                if hold > 0.0:
                    a_b = hold / M[k] - fwd * other / M[k]
                if a_b > 0:
                    any_decel = True
                    if decel_car is None:
                        decel_car = [0.0] * len(ctrl)
                    decel_car[k] = a_b
                    b_force = max(M[k] * a_b + fwd * other, 0.0)  # what the hourly brake adds
            else:
                if c.emergency:
                    demand = emergency_factor
                elif hold > 0.0:
                    demand = min(hold / maxbrake[k], 1.0)
                elif c.brake > 0 or c.deceleration <= 0:
                    demand = c.brake
                else:
                    demand = min(max((M[k] * c.deceleration + fwd * other) / maxbrake[k], 0.0), 1.0)
                a = applied[k]
                a += min(max(demand - a, -dt / release[k]), dt / build[k])
                a = min(max(a, 0.0), emergency_factor)
                applied[k] = a
                b_force = a * maxbrake[k]
            net = other - fwd * b_force
            F = Fs[k]
            q = 1.0
            if c.speed_target is not None:
                q = min(max((M[k] * (c.speed_target - vk) / dt - net) / F, 0.0), 1.0) if F > 0 else 0.0
            scale[k] = q * taper_factor(F * q, net, M[k], vk, vmax[k], dt) * thr[k]
        self.brake_applied[:] = applied
        applied = self.brake_applied
        sc = np.array(scale)
        # (what np.where(thr > 0, thr, 1) and the division gave, in Python floats)
        ratio = [q / (t if t > 0 else 1.0) for q, t in zip(scale, thr)]
        full = m.max_brake if mb_car is None else mb_car
        if len(ratio) == 1:  # (one train: its factors as scalars, the same products)
            trac = trac0 * ratio[0]
            brk = full * (0.0 if pt.decel_mode_l[0] else float(applied[0]))
        else:
            trac = trac0 * np.array(ratio, dtype=np.float64)[ct]
            brk = full * (applied if not pt.any_decel_mode else np.where(pt.decel_mode, 0.0, applied))[ct]
        if any_decel:
            opp = laws.opposing_resistance(v, dav, crv, grav)
            dc = np.array(decel_car)[ct]
            brk = brk + np.maximum(self.inertial * dc - opp, 0.0) * (dc > 0)
        return trac, brk, sc, applied

    def traction_and_brakes_batch(
        self,
        ctl: ControlArrays,
        x: np.ndarray,
        v: np.ndarray,
        vk: np.ndarray,
        grav: np.ndarray,
        dav: np.ndarray,
        crv: np.ndarray,
        dt: float,
        resist: np.ndarray | None = None,
    ):
        """:meth:`traction_and_brakes` with the per-train part as numpy calls over all
        trains (the controls as arrays): every branch of the scalar loop is an
        ``np.where`` of the same IEEE operations in the same order, so the forces are the
        same bits (docs/running-time.md §2.1). Python's ``min(x, c)`` / ``max(x, c)``
        are ``np.minimum`` / ``np.maximum`` where they agree: both keep a NaN ``x``, and
        they differ only on a tie of two zeros of different sign (``max(-0.0, 0.0)`` is
        −0.0 in Python), so :func:`_pmax` stands where such a zero could reach a result."""
        m = self.model
        ct = self.car_train
        pt = self.per_train
        tgt = ctl.target
        has_t = tgt == tgt  # (not NaN: a speed target)
        thr = np.where(has_t, 1.0, ctl.throttle)
        trac0 = self.engine_traction(thr, v)
        n = len(v)
        if resist is None:
            resist = dav + crv
        self.last_forces = (grav, resist)
        rows = np.concatenate((trac0, grav, resist)).reshape(3, n)
        F, Gs, Rs = np.add.reduceat(rows, self.train_start, axis=1)
        M = pt.inertia
        applied = self.brake_applied
        maxbrake = pt.maxbrake
        mb_car = self.prepared.max_brake(v)
        if mb_car is not None:
            maxbrake = np.maximum(np.add.reduceat(mb_car, self.train_start), 1.0)
        emergency = laws.EMERGENCY_FACTOR
        if self._batch_dt != dt:
            self._batch_dt = dt
            self._steps = (-dt / pt.release, dt / pt.build)
        release_step, build_step = self._steps
        kernel = None if pt.any_decel_mode or not self.L.compiled else _CONTROLS()
        if kernel is not None:  # (the same numbers train by train, compiled)
            a, scale, ratio = np.empty(len(vk)), np.empty(len(vk)), np.empty(len(vk))
            kernel(
                vk, Gs, Rs, F, M, tgt, ctl.brake, ctl.deceleration, ctl.emergency, ctl.throttle,
                applied, maxbrake, release_step, build_step, pt.vmax, dt,
                emergency, laws.TAPER_MS, a, scale, ratio,
            )  # fmt: skip
            self.brake_applied = a
            trac = trac0 * ratio[ct]
            brk = (m.max_brake if mb_car is None else mb_car) * a[ct]
            return trac, brk, scale, a
        with np.errstate(all="ignore"):  # the branches not taken may divide by 0
            fwd = np.where(vk < 0.0, -1.0, 1.0)
            other = Gs - fwd * Rs
            f_other = fwd * other
            reach_t = M * (tgt - vk) / dt  # (NaN without a target)
            # brakes to hold the target when no traction would run over it (only > 0 counts)
            hold = np.maximum(f_other - reach_t, 0.0)
            held = hold > 0.0
            # force mode: a fraction of the brake force, built up and released (the
            # applied fraction is never −0.0: it starts at +0.0 and only adds steps)
            demand = np.where(
                (ctl.brake > 0) | (ctl.deceleration <= 0),
                ctl.brake,
                np.minimum(np.maximum((M * ctl.deceleration + f_other) / maxbrake, 0.0), 1.0),
            )
            demand = np.where(held, np.minimum(hold / maxbrake, 1.0), demand)
            demand = np.where(ctl.emergency, emergency, demand)
            a = applied + np.minimum(np.maximum(demand - applied, release_step), build_step)
            a = np.minimum(np.maximum(a, 0.0), emergency)
            b_force = a * maxbrake
            decel_on = None
            if pt.any_decel_mode:
                # deceleration mode: the hourly model's deceleration
                dmode = pt.decel_mode
                a_b = np.where(ctl.deceleration > 0, ctl.deceleration, ctl.brake * pt.spec_decel)
                a_b = np.where(held, hold / M - f_other / M, a_b)
                decel_on = dmode & (a_b > 0)
                b_dec = np.where(decel_on, pmax(M * a_b + f_other, 0.0), 0.0)
                a = np.where(dmode, applied, a)
                b_force = np.where(dmode, b_dec, b_force)
            net = other - fwd * b_force
            q = np.where(F > 0, np.minimum(pmax((reach_t - net) / F, 0.0), 1.0), 0.0)
            q = np.where(has_t, q, 1.0)
            scale = q * taper_factors(F * q, net, M, vk, pt.vmax, dt) * thr
            ratio = scale / np.where(thr > 0, thr, 1.0)
        self.brake_applied = a
        trac = trac0 * ratio[ct]
        brk = (m.max_brake if mb_car is None else mb_car) * (
            a if decel_on is None else np.where(pt.decel_mode, 0.0, a)
        )[ct]
        if decel_on is not None and np.logical_or.reduce(decel_on):
            opp = laws.opposing_resistance(v, dav, crv, grav)
            dc = np.where(decel_on, a_b, 0.0)[ct]
            brk = brk + np.maximum(self.inertial * dc - opp, 0.0) * (dc > 0)
        return trac, brk, scale, a


__all__ = ["ForceStage", "StepKernel", "TrainTable", "car_types", "pmax", "pmin"]
