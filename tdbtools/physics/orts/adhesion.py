"""Adhesion of the driven wheels (docs/physics.md §7.5).

Curtius–Kniffler: ``μ(v) = 7.5/(v + 44) + 0.161`` (v in km/h), the curve Open Rails'
simple adhesion is built on; the force a locomotive can put on the rail is
``μ(v)·g·ORTSDriveWheelWeight`` (the whole mass when the file does not give it) times a
weather factor (1 dry, 0.7 wet). Simplified: Open Rails' advanced adhesion
(the axle model with creep and wheel slip) is not modelled; traction above the limit
is cut to the limit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["G", "adhesion_limit", "adhesion_limit_of", "curtius_kniffler"]

G = 9.80665
#: Weather factors (those of the engineers' profile, docs/running-time.md §6; not Open Rails').
WEATHER = {"dry": 1.0, "wet": 0.7}


def curtius_kniffler(speed_ms):
    """The Curtius–Kniffler adhesion coefficient at ``|speed_ms|``."""
    v = np.abs(np.asarray(speed_ms, dtype=np.float64)) * 3.6
    return 7.5 / (v + 44.0) + 0.161


def adhesion_limit(drive_mass_kg: float, speed_ms, weather: str = "dry"):
    """The largest tractive or braking force (N) the driven wheels carry."""
    return curtius_kniffler(speed_ms) * G * drive_mass_kg * WEATHER[weather]


def adhesion_limit_of(drive_mass_kg: float, speed_ms: float, weather: str = "dry") -> float:
    """:func:`adhesion_limit` at one speed in Python floats: the same operations in the
    same order, so the same bits, without numpy's fixed cost (a unit asks twice a step)."""
    v = abs(speed_ms) * 3.6
    return (7.5 / (v + 44.0) + 0.161) * G * drive_mass_kg * WEATHER[weather]
