"""One powered car's traction as Open Rails updates it each step (docs/physics.md §7.2):
the diesel engines' RPM, the effective throttle, the force available at it, the ramp
toward it, the continuous-force derating and the adhesion limit.

Facts from ``MSTSLocomotive.UpdateTractionForce`` (the order of the steps) and the
``GetAvailableTractionForceN`` of ``MSTSLocomotive`` and ``MSTSDieselLocomotive``.
"""

from __future__ import annotations

import math

import numpy as np

from ...formats.stock import Stock
from ...formats.stock_orts import TractionRamps
from ..kernels import LazyKernel
from . import diesel, steam, traction
from .adhesion import adhesion_limit_of
from .dynamic import DynamicBrake, engage_delay
from .gearbox import GearBox, gears_of

__all__ = ["PowerUnit"]

#: the compiled force and capacity of the simple units (None without numba; _orts_kernel)
_UNIT_FORCE = LazyKernel("_orts_kernel", "unit_force")
_UNIT_CAPACITY = LazyKernel("_orts_kernel", "unit_capacity")


class PowerUnit:
    """One powered car's traction state."""

    def __init__(self, stock: Stock) -> None:
        self.stock = stock
        o = stock.orts
        self.engines = diesel.establish(stock) if stock.engine_type == "Diesel" else ()
        #: what this unit's laws leave out (the run prints them)
        self.notes: list[str] = []
        self.boxes = self._gearboxes()
        self.rpm = [e.idle_rpm for e in self.engines]
        self.drpm = [0.0 for _ in self.engines]
        self.average = 0.0
        self.traction = 0.0  # the force of the last step before adhesion (Open Rails' TractionForceN)
        self.prev_speed = 0.0
        self.ramps = o.ramps if o is not None else TractionRamps()
        self.power_limited = bool(o is not None and o.power_limited and self.engines)
        cf = stock.max_continuous_force_n
        self.derate = (
            traction.ContinuousForce(
                stock.max_force_n or 0.0, cf, o.continuous_force_time_factor_s if o else 1800.0
            )
            if cf
            else None
        )
        self.drive_mass = (o.drive_wheel_weight_kg if o is not None else None) or stock.mass_kg
        power = stock.max_power_w or 0.0
        if o is not None and o.max_rail_power_w > 0:
            power = o.max_rail_power_w
        elif not power and self.engines:
            power = sum(e.max_power_w for e in self.engines)
        self.rail_power = power
        self.dynbrake = self._dynamic_brake()
        #: (force kernel, capacity kernel, packed spec) once :meth:`compile` took them
        self._ck: tuple | None = None

    def compile(self) -> bool:
        """Step this unit with the compiled kernels (``_orts_kernel.unit_force`` and
        ``unit_capacity``: the same operations, so the same numbers) when numba is there
        and the unit is one they cover: a diesel with at most one engine and no
        ``ThrottleRPMTab``, or an electric; no gearbox, no force curves, not power-
        limited, no dynamic brake. Returns whether it does; the other units keep this
        module's Python code (docs/physics.md §7.9)."""
        s, o = self.stock, self.stock.orts
        simple = (
            s.engine_type in ("Diesel", "Electric")
            and len(self.engines) <= 1
            and all(e.throttle_rpm is None for e in self.engines)
            and not self.boxes
            and s.tractive_force_curve is None
            and not self.power_limited
            and self.dynbrake is None
        )
        if not simple:
            return False
        force, capacity = _UNIT_FORCE(), _UNIT_CAPACITY()
        if force is None or capacity is None:
            return False
        from .. import _orts_kernel as K

        spec = np.zeros(K.N_UNIT_SPEC)
        spec[K.U_ENGINES] = len(self.engines)
        spec[K.U_DIESEL_LAW] = s.engine_type == "Diesel"
        for e in self.engines:
            spec[K.U_IDLE], spec[K.U_MAX_RPM] = e.idle_rpm, e.max_rpm
            spec[K.U_CHANGE_UP], spec[K.U_CHANGE_DOWN] = e.change_up, e.change_down
            spec[K.U_RATE_UP], spec[K.U_RATE_DOWN] = e.rate_up, e.rate_down
        spec[K.U_MAX_FORCE], spec[K.U_RAIL_POWER] = s.max_force_n or 0.0, self.rail_power
        spec[K.U_UNLOAD] = o.unloading_speed_ms if o else 0.0
        spec[K.U_MAX_VELOCITY] = s.max_velocity_ms or 0.0
        if self.derate is not None:
            d = self.derate
            spec[K.U_DERATE], spec[K.U_DERATE_FM], spec[K.U_DERATE_FC] = 1.0, d.max_force, d.continuous_force
            spec[K.U_DERATE_TAU] = d.tau
        spec[K.U_DRIVE_MASS] = self.drive_mass
        r = self.ramps
        spec[K.U_FORCE_UP], spec[K.U_FORCE_DOWN], spec[K.U_FORCE_TO_ZERO] = (
            r.force_up,
            r.force_down,
            r.force_to_zero,
        )
        spec[K.U_POWER_UP], spec[K.U_POWER_DOWN], spec[K.U_POWER_TO_ZERO] = (
            r.power_up,
            r.power_down,
            r.power_to_zero,
        )
        # (the state as floats, as the compiled calls take and give it)
        self.rpm, self.drpm = [float(r) for r in self.rpm], [float(d) for d in self.drpm]
        self.average, self.traction, self.prev_speed = (
            float(self.average),
            float(self.traction),
            float(self.prev_speed),
        )
        self._ck = (force, capacity, spec)
        return True

    def _gearboxes(self) -> list[GearBox]:
        o = self.stock.orts
        spec = o.gearbox if o is not None else None
        if spec is None or not self.engines:
            return []
        name = self.stock.name
        if not spec.fitted:
            self.notes.append(
                f"{name}: gearbox tokens incomplete (Open Rails needs three of four); no gearbox"
            )
            return []
        if spec.operation != "automatic":
            self.notes.append(
                f"{name}: {spec.operation} gearbox run as automatic (the driver's gear changes are not modelled)"
            )
        if spec.transmission == "mechanic":
            self.notes.append(
                f"{name}: ORTSDieselTransmissionType Mechanic run as the legacy gearbox (clutch types, freewheel, governor not modelled)"
            )
        n = len(self.engines)
        return [GearBox(gears_of(spec, e, n), e) for e in self.engines]

    @property
    def geared(self) -> bool:
        """The force comes from the gearbox (``MSTSDieselLocomotive``: a gearbox and no curves)."""
        return bool(self.boxes) and self.stock.tractive_force_curve is None

    # -- the laws ---------------------------------------------------------------------------

    def available(self, t: float, v: float) -> float:
        """The force at throttle ``t`` and speed ``v`` with no transient (Open Rails'
        ``GetAvailableTractionForceN``)."""
        s = self.stock
        if t <= 0:
            return 0.0
        if s.engine_type == "Steam" and s.orts is not None and s.orts.steam is not None:
            return steam.steam_force(s.orts.steam, s.driver_wheel_radius_m or 0.9, t, v, self.rail_power)
        if s.tractive_force_curve is not None:
            return traction.curve_force(s.tractive_force_curve, t, v)
        if s.engine_type == "Diesel":
            unload = s.orts.unloading_speed_ms if s.orts else 0.0
            return traction.basic_diesel_force(
                t, v, s.max_force_n or 0.0, self.rail_power, unload, s.max_velocity_ms or 0.0
            )
        return traction.basic_electric_force(
            t, v, s.max_force_n or 0.0, self.rail_power, s.max_velocity_ms or 0.0
        )

    def apparent(self) -> float | None:
        """The engines' apparent throttle (their plain mean, as ``DieselEngines``), None
        without engines."""
        if not self.engines:
            return None
        app = [diesel.apparent_throttle(e, r) for e, r in zip(self.engines, self.rpm)]
        # np.mean of one value is that value (x/1), bit for bit, without numpy's overhead
        return float(app[0]) if len(app) == 1 else float(np.mean(app))

    def _engine_power(self) -> float:
        return sum(diesel.output_power(e, r) for e, r in zip(self.engines, self.rpm))

    def _limits(self, throttle: float, v: float) -> tuple[float, float, float, float, float]:
        """(effective throttle, its limit, the largest force allowed, the available force
        at the throttle and at the limit) this step: :meth:`available` is a function of
        its arguments, so each is asked once (twice at the same throttle, once)."""
        app = self.apparent()
        limit = 1.0 if (app is None or self.power_limited) else min(1.0, app)
        t = traction.effective_throttle(throttle, app, self.power_limited)
        target = self.available(t, v)
        at_limit = target if limit == t else self.available(limit, v)
        cap = at_limit if at_limit >= target else math.inf
        if self.power_limited and v > 0:
            cap = min(cap, self._engine_power() / v)
        return t, limit, cap, target, at_limit

    # -- a step -----------------------------------------------------------------------------

    def force(self, throttle: float, v: float, dt: float) -> float:
        """The tractive force (N, ≥ 0) of a step of ``dt`` s at the handle's ``throttle``."""
        ck = self._ck
        if ck is not None:  # (compile: the same operations in one compiled call)
            rpm, drpm = self.rpm, self.drpm
            r0, d0 = (rpm[0], drpm[0]) if rpm else (0.0, 0.0)
            f, r, d, self.average, self.traction, self.prev_speed = ck[0](
                ck[2],
                float(throttle),
                float(v),
                float(dt),
                r0,
                d0,
                self.average,
                self.traction,
                self.prev_speed,
            )
            if rpm:
                rpm[0], drpm[0] = r, d
            return f
        v = abs(v)
        for k, e in enumerate(self.engines):
            if self.boxes:
                demand = self.boxes[k].demanded_rpm(throttle, v, self.rpm[k])
            else:
                demand = diesel.demanded_rpm(e, throttle)
            self.rpm[k], self.drpm[k] = diesel.step_engine(e, self.rpm[k], self.drpm[k], demand, dt)
            if self.boxes:
                self.boxes[k].update(throttle, v)
        if self.geared:
            f = sum(b.force(throttle, v, r) for b, r in zip(self.boxes, self.rpm))
            self.traction = f
            self.prev_speed = v
            return min(f, adhesion_limit_of(self.drive_mass, v))
        t, limit, cap, target, _ = self._limits(throttle, v)
        if limit > 0:
            f = traction.ramp_force(self.traction, dt, target, cap, v, self.prev_speed, self.ramps)
        else:
            f = 0.0
        self.prev_speed = v
        if self.derate is not None:
            f, self.average = self.derate.step(f, self.average, dt)
        self.traction = f
        return min(f, adhesion_limit_of(self.drive_mass, v))

    def capacity(self, v: float) -> float:
        """The force at full throttle with the engines as they run now (no state change)."""
        ck = self._ck
        if ck is not None:  # (compile)
            return ck[1](ck[2], float(v), self.rpm[0] if self.rpm else 0.0)
        v = abs(v)
        if self.geared:
            f = sum(b.force(1.0, v, r) for b, r in zip(self.boxes, self.rpm))
            return min(f, adhesion_limit_of(self.drive_mass, v))
        _, limit, cap, _, at_limit = self._limits(1.0, v)
        f = min(at_limit, cap) if limit > 0 else 0.0
        return min(f, adhesion_limit_of(self.drive_mass, v))

    def dynamic(self, setting: float, v: float) -> float:
        """The force law of the dynamic brake at ``setting`` and speed ``v`` (no state)."""
        o = self.stock.orts
        if o is None or (o.max_dynamic_brake_force_n <= 0 and o.dynamic_brake_curve is None):
            return 0.0
        return traction.dynamic_brake_force(
            setting, v, o.max_dynamic_brake_force_n, o.dynamic_brake_curve, o.dynamic_brake_min_speed_ms
        )

    def _dynamic_brake(self) -> DynamicBrake | None:
        o = self.stock.orts
        if o is None or (o.max_dynamic_brake_force_n <= 0 and o.dynamic_brake_curve is None):
            return None
        delay = engage_delay(o.dynamic_brake_delay_s, self.stock.engine_type)
        return DynamicBrake(self.dynamic, delay, o.dynamic_ramps)

    def step(self, throttle: float, dynamic: float, v: float, dt: float) -> tuple[float, float]:
        """(tractive force, dynamic-brake force) of a step: Open Rails' order, the
        traction first (none while the dynamic brake is engaged), then the dynamic brake
        (docs/physics.md §7.2, ``orts/dynamic.py``)."""
        db = self.dynbrake
        if db is None:
            return self.force(throttle, v, dt), 0.0
        ft = self.force(0.0 if db.engaged else throttle, v, dt)
        return ft, db.step(dynamic, throttle, self.traction, v, dt)
