"""A diesel's gearbox as Open Rails runs its legacy (MSTS) automatic gearbox
(docs/physics.md §7.11; facts from ``GearBox``/``MSTSGearBoxParams`` and
``DieselEngine.GetGearboxRPM``).

Each gear has a top speed ``V_i`` and a largest force ``F_i``; its ratio is ``V_i/MaxRPM``
(m/s per RPM), so the shaft turns at ``v·MaxRPM/V_i``. From standstill the box engages
gear 1 as soon as the throttle opens; the clutch slips (the engine runs to its throttle's
RPM) until the shaft reaches ``DownGearProportion·MaxRPM``, then locks and the engine RPM
follows the shaft. Above ``UpGearProportion·V_i`` it shifts up, below
``DownGearProportion·V_i`` down, each once the engine turns within 5 % of the shaft; with
the throttle closed it is in neutral. The force at throttle t in gear i:
``t·min(t·F_i·T(rpm)/T_max, P(rpm)/v)`` (T the torque table, P the power table), or while
the shaft overruns the engine by more than 20 % the drag ``−t·CoastingForce·(1 + slip)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...formats.stock_orts import DieselEngineSpec, GearBoxSpec
from . import diesel

__all__ = ["Gear", "GearBox", "gears_of"]

#: The engine must turn within this share of the shaft's speed for a shift (``clutch < 0.05``).
SHIFT_SLIP = 0.05


@dataclass(frozen=True, slots=True)
class Gear:
    max_speed_ms: float
    max_force_n: float
    ratio: float  # m/s per engine RPM
    up: float
    down: float
    coasting_n: float


def gears_of(spec: GearBoxSpec, engine: DieselEngineSpec, n_engines: int = 1) -> tuple[Gear, ...]:
    """The gears of ``spec`` for ``engine`` (``GearBox.Initialize``, legacy transmission):
    ``F_i`` = ``GearBoxMaxTractiveForceForGears`` / engines, or with
    ``ORTSGearBoxTractiveForceAtSpeed`` that force × T_max/T(MaxRPM) / engines."""
    torque = engine.torque
    t_max = max(torque.ys) if torque is not None else 1.0
    t_top = torque(engine.max_rpm) if torque is not None else 1.0
    out = []
    for i, v in enumerate(spec.max_speeds_ms):
        if spec.forces_at_speed_n:
            f = spec.forces_at_speed_n[i] * t_max / t_top / n_engines
        else:
            f = spec.max_forces_n[i] / n_engines if i < len(spec.max_forces_n) else 0.0
        out.append(
            Gear(v, f, v / engine.max_rpm, spec.up_proportion, spec.down_proportion, spec.coasting_force_n)
        )
    return tuple(out)


class GearBox:
    """The state of one engine's automatic gearbox: the gear in use (``current``, −1
    neutral), the gear selected next, the clutch."""

    def __init__(self, gears: tuple[Gear, ...], engine: DieselEngineSpec) -> None:
        self.gears = gears
        self.engine = engine
        self.current = -1
        self.next = -1
        self.geared_up = False
        self.geared_down = False
        self.clutch_on = False
        self.slip = 1.0  # (engine RPM − shaft RPM) / engine RPM, as of the last demand

    def shaft_rpm(self, speed: float, rpm: float) -> float:
        """The gearbox input shaft's RPM at train speed ``speed`` (the engine's in neutral)."""
        if self.current < 0:
            return rpm
        return abs(speed) / self.gears[self.current].ratio

    def _is_clutch_on(self, throttle: float, shaft: float) -> bool:
        if throttle > 0 and shaft >= self.gears[self.current].down * self.engine.max_rpm:
            self.clutch_on = True
        if shaft < self.engine.starting_rpm:
            self.clutch_on = False
        return self.clutch_on

    def demanded_rpm(self, throttle: float, speed: float, rpm: float) -> float:
        """The engine's demanded RPM (the throttle's, or the shaft's with the clutch in)."""
        target = diesel.demanded_rpm(self.engine, throttle)
        shaft = self.shaft_rpm(speed, rpm)
        self.slip = (rpm - shaft) / rpm if rpm > 0 else 1.0
        if self.current >= 0 and self._is_clutch_on(throttle, shaft):
            target = shaft
        return target

    def _neutral(self) -> None:
        self.current = self.next = -1
        self.clutch_on = self.geared_up = self.geared_down = False

    def _up(self) -> None:
        if self.slip < SHIFT_SLIP:
            if not self.geared_up:
                self.next += 1
                if self.next >= len(self.gears):
                    self.next = len(self.gears) - 1
                else:
                    self.geared_up = True
            else:
                self.geared_up = False

    def _down(self) -> None:
        if self.slip < SHIFT_SLIP:
            if not self.geared_down:
                self.next -= 1
                if self.next <= 0:
                    self.next = 0
                else:
                    self.geared_down = True
            else:
                self.geared_down = False

    def update(self, throttle: float, speed: float) -> None:
        """Shift (``GearBox.Update``, automatic): a selected change takes effect when the
        clutch is in step (or fully slipping), then the next change is selected."""
        c = self.slip
        if (c <= SHIFT_SLIP or c >= 1.0) and self.current < self.next:
            self.current = self.next
        if (c <= SHIFT_SLIP or c >= 0.5) and self.current > self.next:
            self.current = self.next
        v = abs(speed)
        if self.current >= 0:
            g = self.gears[self.current]
            if v > self.engine.max_rpm * g.up * g.ratio:
                self._up()
            elif v < self.engine.max_rpm * g.down * g.ratio:
                self._down()
            else:
                self.geared_up = self.geared_down = False
            if throttle <= 0:
                self._neutral()
        elif throttle > 0:
            self._up()
        else:
            self._neutral()

    def force(self, throttle: float, speed: float, rpm: float) -> float:
        """The force (N) this engine's gearbox gives at ``throttle`` (already times the
        throttle, as ``DieselEngines.TractiveForceN``); negative: coasting drag."""
        if self.current < 0:
            return 0.0
        g = self.gears[self.current]
        t = min(max(throttle, 0.0), 1.0)
        if self.slip * 100.0 < -20.0:
            return t * -g.coasting_n * (1.0 + self.slip)
        e = self.engine
        torque = e.torque
        share = torque(rpm) / max(torque.ys) if torque is not None else 1.0
        f = share * t * g.max_force_n
        v = abs(speed)
        if v > 0:
            f = min(f, diesel.output_power(e, rpm) / v)
        return t * f
