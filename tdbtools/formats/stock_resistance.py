"""Running resistance from a rolling-stock file as Open Rails works it out at load time:
the Davis estimates from bearings, mass and axles, and the fit of the MSTS ``Friction``
block (docs/physics.md §3.2; used by :mod:`tdbtools.formats.stock`)."""

from __future__ import annotations

import math

import numpy as np

from .stock_parts import (
    FCALC_V_END,
    FCALC_V_STANDSTILL,
    FT2_M2,
    LBF_N,
    LBF_PER_MPH,
    LBF_PER_MPH2,
    SHORT_TON_KG,
)

# -- resistance formulas (docs/physics.md §3.2) -----------------------------------------------------------


def davis_a_estimate(bearing: str, mass_kg: float, axles: int) -> float:
    """Davis A (N) from bearing type, mass and axle count (Open Rails' CalcDavisAValue):
    ``lbf→N(cT·T + cN·axles)`` with T in short tons. Friction/Grease: cT = 9.4·√T, cN = 12.5
    when T/axles < 5, else 1.3 and 29 (Davis 1926); Roller 1.5, 18 (CN 1992); Low 1.5, 11;
    anything else 1.5, 20."""
    t = mass_kg / SHORT_TON_KG
    ct, cn = 1.5, 20.0
    if bearing in ("Friction", "Grease"):
        if axles > 0 and t / axles < 5.0:
            ct, cn = 9.4 * math.sqrt(t), 12.5
        else:
            ct, cn = 1.3, 29.0
    elif bearing == "Roller":
        ct, cn = 1.5, 18.0
    elif bearing == "Low":
        ct, cn = 1.5, 11.0
    return LBF_N * (ct * t + cn * axles)


def davis_b_estimate(bearing: str, mass_kg: float, axles: int, wagon_type: str = "Freight") -> float:
    """Davis B (N/(m/s)) (Open Rails' CalcDavisBValue): ``lbf/mph→N/(m/s)(cB·T)``.
    Friction/Grease: 0.009 when T/axles < 5, else 0.045 freight/tender, 0.03
    engine/passenger; Roller 0.03 / 0.02; Low 0.02 / 0.015; otherwise 0.03."""
    t = mass_kg / SHORT_TON_KG
    heavy = wagon_type in ("Freight", "Tender")
    light = wagon_type in ("Engine", "Passenger")
    cb = 0.03
    if bearing in ("Friction", "Grease"):
        if axles > 0 and t / axles < 5.0:
            cb = 0.009
        elif heavy:
            cb = 0.045
        elif light:
            cb = 0.03
    elif bearing == "Roller":
        cb = 0.03 if heavy else 0.02 if light else 0.03
    elif bearing == "Low":
        cb = 0.02 if heavy else 0.015 if light else 0.03
    return LBF_PER_MPH * cb * t


def davis_c_estimate(frontal_area_m2: float, drag_constant: float) -> float:
    """Davis C (N/(m/s)²) = lbf/mph²→N/(m/s)²(area_ft² · drag constant)."""
    return LBF_PER_MPH2 * (frontal_area_m2 / FT2_M2) * drag_constant


def fcalc_davis(c1: float, e1: float, v2: float, c2: float, e2: float) -> tuple[float, float, float, float]:
    """Davis ``(A, B, C, F0)`` from MSTS ``Friction`` "FCalc" data (V2 in [0, 10 mph]).

    A + B·v + C·v² is the continuous least-squares fit of ``f(v) = y0 + C2·v^E2`` with
    ``y0 = C1·V2^E1 + C2·V2`` over [V2, 80 mph] (Open Rails' closed form; solved here from
    the same moment integrals in float64). F0, the standstill force, is C1, times
    ``(0.0025 mph)^E1`` when E1 < 0. Raises ValueError when the data make the integrals
    non-finite (V2 = 0 with E1 < 0, E2 ∈ {−1, −2, −3}, V2 ≥ 80 mph).
    """
    a, b = v2, FCALC_V_END
    if not a < b:
        raise ValueError(f"V2 = {v2} m/s is not below 80 mph")
    for k in (1, 2, 3):
        if e2 + k == 0:
            raise ValueError(f"E2 = {e2} makes the fit integrals diverge")
    try:
        y0 = c1 * a**e1 + c2 * a
    except ZeroDivisionError:
        raise ValueError("V2 = 0 with E1 < 0 gives an infinite force") from None
    except OverflowError:  # e.g. E1 = 1e300
        raise ValueError("the Friction values give non-finite fit integrals") from None

    def mom(n: int) -> float:  # ∫_a^b v^n dv
        return (b ** (n + 1) - a ** (n + 1)) / (n + 1)

    def fmom(n: int) -> float:  # ∫_a^b f(v)·v^n dv
        p = e2 + n + 1
        return y0 * mom(n) + c2 * (b**p - a**p) / p

    try:
        m = np.array([[mom(i + j) for j in range(3)] for i in range(3)])
        r = np.array([fmom(i) for i in range(3)])
    except (ZeroDivisionError, OverflowError):
        raise ValueError("the Friction values give non-finite fit integrals") from None
    if not (np.isfinite(m).all() and np.isfinite(r).all()):
        raise ValueError("the Friction values give non-finite fit integrals")
    try:
        with np.errstate(all="ignore"):  # huge but finite values: checked just below
            da, db, dc = (float(x) for x in np.linalg.solve(m, r))
        f0 = c1 * FCALC_V_STANDSTILL**e1 if e1 < 0 else c1
    except (np.linalg.LinAlgError, OverflowError, ZeroDivisionError):
        raise ValueError("the Friction values give non-finite fit integrals") from None
    if not all(map(math.isfinite, (da, db, dc, f0))):
        raise ValueError("the Friction values give a non-finite Davis fit")
    return da, db, dc, f0
