"""The dynamic brake's state as Open Rails runs it (docs/physics.md §7.2; facts from
``MSTSLocomotive.UpdateDynamicBrakeForce``, ``UpdateTractionForce`` and
``CorrectBrakingParams``).

* **Engaging**: the brake engages once the driver has asked for it (setting above 0)
  with the throttle closed and no tractive force, for longer than
  ``DynamicBrakesDelayTimeBeforeEngaging`` (counted from the first step these hold; an
  electric locomotive's delay above 4 s is taken as 2 s). It disengages once its
  force is back to 0 while those conditions no longer hold.
* **Throttle and dynamic brake exclude each other**: while it is engaged the throttle
  gives no traction; a throttle open (or traction still there) keeps it from engaging.
* **Force**: the force law (:func:`.traction.dynamic_brake_force`) at the setting, which
  the force follows through the ``ORTSDynamicBrake{Force,Power}Ramp…Rate`` limits as the
  tractive force does (:func:`.traction.ramp_force`); 0 when not engaged.
"""

from __future__ import annotations

from collections.abc import Callable

from ...formats.stock_orts import TractionRamps
from .traction import ramp_force

__all__ = ["DynamicBrake", "engage_delay"]

#: Open Rails' cap on an electric locomotive's engaging delay: above LONG it is SHORT.
ELECTRIC_LONG_DELAY_S = 4.0
ELECTRIC_SHORT_DELAY_S = 2.0


def engage_delay(delay: float, engine_type: str | None) -> float:
    """The engaging delay Open Rails uses for a file's ``delay`` (s)."""
    if engine_type == "Electric" and delay > ELECTRIC_LONG_DELAY_S:
        return ELECTRIC_SHORT_DELAY_S
    return max(delay, 0.0)


class DynamicBrake:
    """One locomotive's dynamic brake: engaged or not, and its present force (N)."""

    def __init__(self, law: Callable[[float, float], float], delay: float, ramps: TractionRamps) -> None:
        """``law(setting, speed)``: the force the brake gives at a setting (0–1)."""
        self.law = law
        self.delay = delay
        self.ramps = ramps
        self.engaged = False
        self.waited: float | None = None  # s since the engaging conditions first held
        self.force = 0.0
        self.prev_speed = 0.0

    def step(self, setting: float, throttle: float, traction: float, speed: float, dt: float) -> float:
        """The force after a step of ``dt`` s with the handle at ``setting``, the throttle
        handle at ``throttle`` and the step's tractive force ``traction`` (before it)."""
        v = abs(speed)
        if setting > 0 and throttle <= 0 and traction == 0:
            self.waited = 0.0 if self.waited is None else self.waited + dt
            if not self.engaged and self.waited > self.delay:
                self.engaged = True
        elif self.force == 0:
            self.engaged = False
            self.waited = None
        if self.engaged and v > 0:
            target = self.law(min(max(setting, 0.0), 1.0), v)
            limit = self.law(1.0, v)
            cap = limit if limit >= target else float("inf")
            self.force = ramp_force(self.force, dt, target, cap, v, self.prev_speed, self.ramps)
        else:
            self.force = 0.0
        self.prev_speed = v
        return self.force
