"""Brake shoes (docs/physics.md §7.3; facts from Open Rails' ``MSTSWagon`` /
``TrainCar`` brake-shoe code and ``AirSinglePipe.Update``).

Two ways a file gives its brake force:

* ``MaxBrakeForce`` is the force **at the wheel** at full cylinder pressure and
  standstill. The friction curve only *scales* it: factor ``μ(v)/μ(0)`` clamped to
  [0.01, 1] (``ORTSBrakeShoeFriction`` if given, else the default curve normalised by
  0.2, so the force starts falling above about 41 km/h).
* ``ORTSMaxBrakeShoeForce`` with a known ``ORTSBrakeShoeType`` is the force **on the
  shoes**; the wheel gets it times the friction coefficient ``μ(v)`` itself (from
  ``ORTSBrakeShoeFriction`` if given, else the default curve). Without a known shoe type
  Open Rails ignores it and uses MaxBrakeForce.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...formats.stock import Stock
from ...formats.stock_parts import BRAKE_SHOE_FACTOR_MAX, BRAKE_SHOE_FACTOR_MIN

__all__ = [
    "DEFAULT_SHOE_NORMALISER",
    "ShoeFactors",
    "brake_force_capacity",
    "cylinder_fraction",
    "default_shoe_mu",
    "default_shoe_mu_of",
    "shoe_factor",
    "shoe_factor_of",
]

#: The default curve is divided by this (its value at ≈ 41 km/h) to make a factor.
DEFAULT_SHOE_NORMALISER = 0.2
KNOWN_SHOE_TYPES = {"cast_iron_p10", "cast_iron_p6", "high_friction_composite", "disc_pads", "user_defined"}


def default_shoe_mu(speed_ms):
    """Open Rails' default shoe friction (a Curtius–Kniffler shoe curve):
    ``μ = 7.6/(v + 17.5) + 0.07`` with v in km/h."""
    v = np.abs(np.asarray(speed_ms, dtype=np.float64)) * 3.6
    return 7.6 / (v + 17.5) + 0.07


def default_shoe_mu_of(speed_ms: float) -> float:
    """:func:`default_shoe_mu` of one speed in Python floats (the same operations, so the
    same bits, without numpy's fixed cost)."""
    v = abs(speed_ms) * 3.6
    return 7.6 / (v + 17.5) + 0.07


def uses_shoe_force(stock: Stock) -> bool:
    """Whether the wheel force is shoe force × μ (``ORTSMaxBrakeShoeForce`` with a known
    ``ORTSBrakeShoeType``) rather than MaxBrakeForce × factor."""
    o = stock.orts
    return o is not None and o.max_brake_shoe_force_n > 0 and o.brake_shoe_type.lower() in KNOWN_SHOE_TYPES


def shoe_factor(stock: Stock, speed_ms):
    """What multiplies the full-pressure brake force at ``speed_ms``: μ(v) on the shoe-
    force path, else the clamped μ(v)/μ(0) (default curve / 0.2 without a table)."""
    table = stock.brake_shoe_friction
    if uses_shoe_force(stock):
        if table is not None:
            mu = np.array([table(float(v)) for v in np.atleast_1d(speed_ms)])
            return np.maximum(mu if np.ndim(speed_ms) else mu[0], 0.0)
        return default_shoe_mu(speed_ms)
    if table is not None:
        return table.factors(speed_ms)
    return np.clip(
        default_shoe_mu(speed_ms) / DEFAULT_SHOE_NORMALISER, BRAKE_SHOE_FACTOR_MIN, BRAKE_SHOE_FACTOR_MAX
    )


def shoe_factor_of(stock: Stock, speed_ms: float) -> float:
    """:func:`shoe_factor` of one speed as a float; a stock with the default curve (no
    friction table) in Python floats, np.clip as numpy's loop does it (the value unless
    below the low end or above the high one: a NaN stays), the same bits."""
    if stock.brake_shoe_friction is not None:
        return float(shoe_factor(stock, speed_ms))
    mu = default_shoe_mu_of(speed_ms)
    if uses_shoe_force(stock):
        return mu
    f = mu / DEFAULT_SHOE_NORMALISER
    if f < BRAKE_SHOE_FACTOR_MIN:
        return BRAKE_SHOE_FACTOR_MIN
    return BRAKE_SHOE_FACTOR_MAX if f > BRAKE_SHOE_FACTOR_MAX else f


class ShoeFactors:
    """:func:`shoe_factor` of every car of a train, one call per distinct law rather than
    per car (a 1,000-car train has a few stocks, and the stocks without a friction table
    share a law): the same values, since the factor depends on the stock's law and the
    speed alone and is computed element by element. ``groups``: (stock, its cars) per
    distinct stock object."""

    __slots__ = ("default_law", "groups", "laws", "n")

    def __init__(self, stocks: Sequence[Stock]) -> None:
        by_stock: dict[int, tuple[Stock, list[int]]] = {}
        for i, s in enumerate(stocks):
            by_stock.setdefault(id(s), (s, []))[1].append(i)
        self.n = len(stocks)
        self.groups = [(s, np.array(cars, dtype=np.intp)) for s, cars in by_stock.values()]
        # the stocks without a friction table share one of two laws (the default curve
        # as μ or as a factor), a function of the speed alone: one call over all their
        # cars (element by element, so the same numbers), none per stock
        by_law: dict[object, tuple[Stock, list[int]]] = {}
        for s, cars in by_stock.values():
            law = ("mu" if uses_shoe_force(s) else "factor") if s.brake_shoe_friction is None else id(s)
            by_law.setdefault(law, (s, []))[1].extend(cars)
        #: (a stock of the law, its cars; None: every car of the train)
        self.laws = [
            (s, None if len(cars) == self.n else np.array(sorted(cars), dtype=np.intp))
            for s, cars in by_law.values()
        ]
        #: every car on one default curve (no friction table): "mu" (the shoe-force path)
        #: or "factor"; None otherwise (what the compiled brake forces take)
        self.default_law: str | None = None
        if len(self.laws) == 1 and self.laws[0][1] is None and self.laws[0][0].brake_shoe_friction is None:
            self.default_law = "mu" if uses_shoe_force(self.laws[0][0]) else "factor"

    def __call__(self, speeds: np.ndarray) -> np.ndarray:
        """Each car's factor at its own speed (``speeds``: per car, m/s, either sign)."""
        laws = self.laws
        if len(laws) == 1 and laws[0][1] is None:
            return np.asarray(shoe_factor(laws[0][0], np.abs(speeds)), dtype=np.float64)
        out = np.empty(self.n)
        for s, cars in laws:
            out[cars] = shoe_factor(s, np.abs(speeds[cars]))
        return out


def brake_force_capacity(stock: Stock) -> float:
    """The force the friction factor multiplies (N): ORTSMaxBrakeShoeForce on the shoe-
    force path, else MaxBrakeForce."""
    if uses_shoe_force(stock):
        return stock.orts.max_brake_shoe_force_n  # type: ignore[union-attr]
    return stock.max_brake_force_n


def cylinder_fraction(cyl_psi, max_cyl_psi, spring_psi=0.0):
    """Share of the full brake force a cylinder pressure gives:
    ``clamp((p − spring)/(p_max − spring), 0, 1)``."""
    return np.clip((np.asarray(cyl_psi) - spring_psi) / (max_cyl_psi - spring_psi), 0.0, 1.0)
