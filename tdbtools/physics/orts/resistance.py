"""Open Rails' running resistance at low speed (docs/physics.md §7.5; facts from
``MSTSWagon.UpdateTrainBaseResistance`` and its ``_StartingFriction``/``_DavisLowSpeed``/
``_ORTS`` helpers).

Below the merge speed each car's resistance runs linearly from a standstill force ``F0``
to its Davis value at a merge speed ``v_m``: ``F0 + (davis(v_m) − F0)·|v|/v_m``.

* ``ORTSStandstillFriction`` given: ``F0`` = it × the static factor (1 with warm bearings,
  1.2 at −10 °C), ``v_m`` = ``ORTSMergeSpeed`` (5 mph);
* Davis values without it: ``F0`` = the bearing's starting resistance per UK ton (warm:
  friction 20, grease 30, roller 4.5, low-torque 2.5 lbf; at −10 °C 30, 45, 12, 7.5) × the
  wheel's radius over 18.5 in, × the mass in UK tons, plus the track's
  ``1120/g·axle load`` lbf (``g`` from 1 in 800 at 5 UK tons per axle to 1 in 400 at 26,
  never below 1 in 100), at least 1.2·A; ``v_m`` = 5 mph;
* an MSTS ``Friction`` block: ``F0`` its standstill force below 0.1 m/s (tdbtools: merged
  linearly into Davis by 0.1 m/s).

The bearings' temperature (Open Rails simulates it) is a parameter here, 25 °C or more
(warm) unless given.
"""

from __future__ import annotations

import math

import numpy as np

from ...formats.stock import Stock

__all__ = ["MPH5", "resistance", "starting_force", "starting_terms"]

LBF = 4.44822162
KG_TUK = 1016.0469088
MPH5 = 5.0 * 0.44704
#: The reference wheel (37 in diameter) of the starting-resistance figures.
REF_WHEEL_RADIUS_M = 37.0 / 2.0 * 0.0254
#: Starting resistance (lbf per UK ton) at −10 °C and above 25 °C by bearing type.
BEARING_LBF_PER_TON = {
    "Low": (7.5, 2.5),
    "Roller": (12.0, 4.5),
    "Grease": (45.0, 30.0),
    "Friction": (30.0, 20.0),
}
COLD_C, WARM_C = -10.0, 25.0
#: Below this speed (m/s) a car with an MSTS Friction block meets its standstill force.
STANDSTILL_MS = 0.1


def _between(temp_c: float, cold: float, warm: float) -> float:
    """Linear in the bearing temperature between −10 °C (cold) and 25 °C (warm)."""
    if temp_c < COLD_C:
        return cold
    if temp_c > WARM_C:
        return warm
    return cold + (warm - cold) * (temp_c - COLD_C) / (WARM_C - COLD_C)


def _axle_load_kg(s: Stock) -> float:
    if s.kind == "engine":
        drive = (s.orts.drive_wheel_weight_kg if s.orts is not None else None) or s.mass_kg
        return drive / s.num_drive_axles if s.num_drive_axles > 0 else 0.0
    wagon_axles = s.num_axles - s.num_drive_axles
    return s.mass_kg / wagon_axles if wagon_axles > 0 else 0.0


def starting_force(s: Stock, temp_c: float = WARM_C) -> float:
    """``F0`` (N) of a car with Davis values and no ``ORTSStandstillFriction``
    (``UpdateTrainBaseResistance_DavisLowSpeed``)."""
    if s.kind == "engine":
        wheel = (
            1.0
            if s.engine_type == "Steam"
            else (s.driver_wheel_radius_m or s.wheel_radius_m) / REF_WHEEL_RADIUS_M
        )
    else:
        wheel = s.wheel_radius_m / REF_WHEEL_RADIUS_M
    cold, warm = BEARING_LBF_PER_TON.get(s.bearing_type, BEARING_LBF_PER_TON["Friction"])
    internal = _between(temp_c, cold, warm) * LBF * wheel
    axle = _axle_load_kg(s)
    lo_kg, hi_kg = 5.0 * KG_TUK, 26.0 * KG_TUK
    grade = 800.0 + (400.0 - 800.0) * (axle - lo_kg) / (hi_kg - lo_kg)
    grade = max(grade, 100.0)
    track = 1120.0 / grade * axle / KG_TUK * LBF
    f0 = s.mass_kg / KG_TUK * internal + track
    floor = s.davis_a * _between(temp_c, 1.3, 1.0)
    return 1.2 * floor if f0 < floor else f0


def starting_terms(
    stocks: list[Stock] | tuple[Stock, ...], temp_c: float = WARM_C
) -> tuple[np.ndarray, np.ndarray]:
    """Per car (``F0`` in N, merge speed in m/s) as Open Rails applies them (see the
    module's note); ``F0`` NaN: plain Davis."""
    f0 = np.full(len(stocks), math.nan)
    vm = np.full(len(stocks), MPH5)
    for i, s in enumerate(stocks):
        if s.standstill_friction_n > 0:
            f0[i] = s.standstill_friction_n * _between(temp_c, 1.2, 1.0)
            vm[i] = max(s.merge_speed_ms, 1e-3)
        elif s.is_davis_friction:
            f0[i] = starting_force(s, temp_c)
        elif s.friction0_n is not None and s.friction0_n > 0:
            f0[i] = s.friction0_n
            vm[i] = STANDSTILL_MS
    return f0, vm


def resistance(
    stocks: list[Stock] | tuple[Stock, ...], f0: np.ndarray, vm: np.ndarray, c_factor: np.ndarray, v: float
) -> float:
    """The train's running resistance (N) at speed ``v``: per car Davis (C times
    ``c_factor``, a trailing engine's drag factor), below its merge speed the line from
    ``F0`` to the plain Davis value at the merge speed (Open Rails' low-speed branches do
    not apply the trailing factor)."""
    total = 0.0
    speed = abs(v)
    for i, s in enumerate(stocks):
        a, b, c = s.davis_a, s.davis_b, s.davis_c * c_factor[i]
        if not math.isnan(f0[i]) and speed < vm[i]:
            m = vm[i]
            at_merge = a + m * (b + m * s.davis_c)
            total += f0[i] + (at_merge - f0[i]) * speed / m
        else:
            total += a + speed * (b + speed * c)
    return total
