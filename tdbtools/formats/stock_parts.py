"""The units, Open Rails' defaults and the small records of a rolling-stock file: couplers,
tractive-force curves and brake-shoe friction (part of :mod:`tdbtools.formats.stock`,
which reads the files; docs/formats.md §10)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._records import fast_pickle

# -- constants (docs/formats.md §3, §10; docs/physics.md §3.2) --------------------------------------------------------

LBF_N = 4.44822162  # 1 lbf in N
MPH_MS = 0.44704  # 1 mph in m/s
LBF_PER_MPH = LBF_N / MPH_MS  # lbf/mph -> N/(m/s) = 9.950388
LBF_PER_MPH2 = LBF_N / MPH_MS**2  # lbf/mph² -> N/(m/s)² = 22.258385
SHORT_TON_KG = 907.18474  # 1 US short ton in kg
FT2_M2 = 0.09290304  # 1 ft² in m²
INCH_M = 0.0254

#: Friction blocks whose V2 lies in [0, this] (10 mph) are "FCalc" data and are fitted.
FCALC_V2_MAX = 4.4407
#: Upper end of the FCalc least-squares interval (80 mph).
FCALC_V_END = 80 * MPH_MS
#: Speed (0.0025 mph) at which a negative E1 evaluates the standstill force.
FCALC_V_STANDSTILL = 0.0025 * MPH_MS

#: Open Rails defaults when a field is missing (TrainCar / MSTSWagon).
DEFAULT_MASS_KG = 10000.0
DEFAULT_SIZE_M = (2.5, 4.0, 40.0)  # width, height, length
DEFAULT_WHEEL_RADIUS_M = 18 * INCH_M  # wagon wheels
DEFAULT_DRIVER_WHEEL_RADIUS_M = 30 * INCH_M  # locomotive drivers
DEFAULT_MAX_BRAKE_FORCE_N = 89e3
DEFAULT_MERGE_SPEED_MS = 5 * MPH_MS
#: ``ORTSBrakeShoeFriction`` tables longer than this many speed/μ pairs are refused.
MAX_BRAKE_SHOE_POINTS = 100
#: Open Rails clamps the brake-shoe factor μ(v)/μ(0) to this range (docs/physics.md §3.5).
BRAKE_SHOE_FACTOR_MIN = 0.01
BRAKE_SHOE_FACTOR_MAX = 1.0

#: Davis drag constant (lbf/mph² per ft²) by wagon type when ORTSDavisDragConstant is absent.
DRAG_CONSTANT = {"Engine": 0.0024, "Freight": 0.0005, "Passenger": 0.00034, "Tender": 0.0005}
DRAG_CONSTANT_OTHER = 0.0005

#: Simple-coupler values (current Open Rails; older builds used slack 0.012 / 0.12 m).
COUPLER_DEFAULT_STIFFNESS = (1e7, 2e7)  # MSTSCoupling k1, k2 (N/m)
COUPLER_DEFAULT_R0_DIFF = 0.012  # m
COUPLER_DEFAULT_BREAK = 1e10  # N
COUPLER_BREAK2_WHEN_ZERO = 2e7  # N: Break ( b1 0 ) reads as b2 = 2e7
CAR_STIFFNESS_NPM = 2e7  # CAR default simple-coupler stiffness
CAR_SLACK1_M = 0.03  # CAR default slack1 (no coupler)
CAR_SLACK2_M = 0.035  # CAR default slack2
RIGID_SLACK1_M = 0.0001
RIGID_SLACK2_M = 0.0002

WAGON_TYPES = {
    "engine": "Engine",
    "tender": "Tender",
    "freight": "Freight",
    "passenger": "Passenger",
    "carriage": "Passenger",
    "unknown": "Unknown",
}
ENGINE_TYPES = {"diesel": "Diesel", "electric": "Electric", "steam": "Steam", "control": "Control"}
BEARING_TYPES = {
    "default": "Default",
    "grease": "Grease",
    "friction": "Friction",
    "roller": "Roller",
    "low": "Low",
}

#: STFReader's ``UNITS.Any``: every family, tried in the spec's table order (so ``m`` is metres).
ANY_UNITS = (
    "mass",
    "distance",
    "area",
    "time",
    "speed",
    "force",
    "power",
    "stiffness",
    "resistance",
    "resistance_c",
    "frequency",
    "current",
    "voltage",
    "pressure",
    "angle",
    "temperature",
    "force_rate",
    "power_rate",
)


# -- records -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coupler:
    """One MSTS "simple" coupler, as the physics uses it (§10.3).

    ``r0x`` is the zero length (the gap added between two cars). ``slack1`` is the free play
    (rigid: 0.0001 m; else ``r0_diff``, which Open Rails works out *when r0 is read*, from the
    stiffness known at that moment: ``(r0y/2)·k2/(k1+k2)`` if r0x is 0, else 0.012, then
    clamped to [0.001, 0.1]). ``slack2`` is the hard limit (rigid 0.0002 m, else 0.035 m).
    ``stiffness`` is ``7·(k1+k2)`` if r0x is 0, else 2e7 N/m. ``break1`` (proof load) and
    ``break2`` (breaking load) are in N. The raw stiffness pair is kept as ``stiffness1`` /
    ``stiffness2``.
    """

    r0x: float
    r0y: float
    slack1: float
    slack2: float
    stiffness: float
    break1: float
    break2: float
    rigid: bool = False
    stiffness1: float = COUPLER_DEFAULT_STIFFNESS[0]
    stiffness2: float = COUPLER_DEFAULT_STIFFNESS[1]
    r0_diff: float = COUPLER_DEFAULT_R0_DIFF


#: What a car without any Coupling block uses (Open Rails' TrainCar defaults).
DEFAULT_COUPLER = Coupler(
    r0x=0.0,
    r0y=0.0,
    slack1=CAR_SLACK1_M,
    slack2=CAR_SLACK2_M,
    stiffness=CAR_STIFFNESS_NPM,
    break1=COUPLER_DEFAULT_BREAK,
    break2=COUPLER_DEFAULT_BREAK,
)


@dataclass(frozen=True, slots=True)
class TractiveForceCurve:
    """``ORTSMaxTractiveForceCurves``: maximum tractive force (N) by throttle fraction and
    speed (m/s). ``force[i][j]`` is the force at ``throttle[i]`` and ``speed[j]``.

    Open Rails stores one force-over-speed line per throttle value, each with its own
    speeds. Here every line is put on the union of all speeds; as the lines are piecewise
    linear (and extrapolated linearly past their ends, like Open Rails' Interpolator), this
    loses nothing. Iterating gives ``(throttle, speed, force)``.
    """

    throttle: tuple[float, ...]
    speed: tuple[float, ...]
    force: tuple[tuple[float, ...], ...]

    def __iter__(self):
        return iter((self.throttle, self.speed, self.force))

    def __call__(self, throttle: float, speed: float) -> float:
        """Force at a throttle fraction and speed, interpolated as Open Rails'
        InterpolatorDiesel2D does (linear in both, linear extrapolation at the ends).
        Not clamped: the physics clamps to ≥ 0 (docs/physics.md §3.4)."""
        t = self.throttle
        i = _segment(t, throttle)
        if len(t) == 1:
            return _line(self.speed, self.force[0], speed)
        d = t[i + 1] - t[i]
        a = (t[i + 1] - throttle) / d
        b = (throttle - t[i]) / d
        z = 0.0
        if a != 0:
            z += a * _line(self.speed, self.force[i], speed)
        if b != 0:
            z += b * _line(self.speed, self.force[i + 1], speed)
        return z


def _segment(xs: Sequence[float], x: float) -> int:
    """Index i of the segment [xs[i], xs[i+1]] used for x (the end segments extrapolate)."""
    n = len(xs)
    if n < 2 or x < xs[1]:
        return 0
    if x > xs[n - 2]:
        return n - 2
    lo, hi = 0, n - 1
    while hi - lo > 1:
        k = (lo + hi) // 2
        if xs[k] > x:
            hi = k
        else:
            lo = k
    return lo


def _line(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    if len(xs) == 1:
        return ys[0]
    i = _segment(xs, x)
    d = xs[i + 1] - xs[i]
    return ((xs[i + 1] - x) * ys[i] + (x - xs[i]) * ys[i + 1]) / d


@dataclass(frozen=True, slots=True)
class BrakeShoeFriction:
    """``ORTSBrakeShoeFriction ( v μ v μ … )``: the brake-shoe friction coefficient ``mu``
    by speed ``speed_kmh`` (km/h, increasing), as Open Rails reads it (docs/physics.md
    §3.5). Interpolated linearly and extrapolated linearly past the ends (Open Rails'
    Interpolator). The brake force is MaxBrakeForce × :meth:`factor`."""

    speed_kmh: tuple[float, ...]
    mu: tuple[float, ...]

    def __call__(self, speed_ms: float) -> float:
        """μ at ``|speed_ms|`` (m/s)."""
        return _line(self.speed_kmh, self.mu, abs(speed_ms) * 3.6)

    def factor(self, speed_ms: float) -> float:
        """``μ(v)/μ(0)`` clamped to [0.01, 1]: the share of MaxBrakeForce the brakes give."""
        f = self(speed_ms) / _line(self.speed_kmh, self.mu, 0.0)
        return min(max(f, BRAKE_SHOE_FACTOR_MIN), BRAKE_SHOE_FACTOR_MAX)

    def factors(self, speed_ms: np.ndarray) -> np.ndarray:
        """:meth:`factor` for an array of speeds (m/s)."""
        xs = np.asarray(self.speed_kmh)
        ys = np.asarray(self.mu)
        x = np.abs(np.asarray(speed_ms, dtype=np.float64)) * 3.6
        i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2)
        x0, x1 = xs[i], xs[i + 1]
        mu = ((x1 - x) * ys[i] + (x - x0) * ys[i + 1]) / (x1 - x0)
        mu0 = _line(self.speed_kmh, self.mu, 0.0)
        return np.clip(mu / mu0, BRAKE_SHOE_FACTOR_MIN, BRAKE_SHOE_FACTOR_MAX)


fast_pickle(Coupler, TractiveForceCurve, BrakeShoeFriction)
