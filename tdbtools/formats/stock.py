"""Rolling stock ``.eng`` / ``.wag`` (docs/formats.md §10), with the load-time resistance and coupler
processing Open Rails does (docs/formats.md §10.3, docs/physics.md §3.2).

Parsing model (§10.1): every block is known by its *block path*, the lower-cased names of
the enclosing blocks joined by ``(`` (``wagon(mass``, ``engine(maxforce``,
``wagon(coupling(spring(r0``). The file is walked in order, a handler runs for each block
whose path it knows, and everything else is walked over. As in Open Rails each occurrence
of a field overwrites the one before (**the last one wins**); this is what makes an
``OpenRails/<file>.eng`` that includes the original and then redefines a few fields work.
``Coupling`` blocks add couplers instead (see :class:`Coupler`).

Every physical value goes through the unit families of :mod:`tdbtools.stf.units`, so
``84t``, ``300kN``, ``200km/h``, ``26.4m`` and bare numbers in the default unit all read
to SI. A value that does not parse, or an unknown unit, is a
:class:`~tdbtools.errors.FormatError` / :class:`~tdbtools.errors.UnitError` in strict mode
and a recorded finding (Open Rails' default or factor 1) in lenient mode.

Running resistance (docs/physics.md §3.2), done once here so that :class:`Stock` carries the Davis
coefficients the physics uses:

1. With an ``ORTSBearingType`` other than ``Default``, a missing (≤ 0) ``ORTSDavis_A`` /
   ``ORTSDavis_B`` is estimated from the bearing type, mass (short tons) and axle count
   (:func:`davis_a_estimate`, :func:`davis_b_estimate`). A missing ``ORTSDavis_C`` is
   always ``22.258·area_ft²·DragConstant`` (area defaults to width × height).
2. If A, B or C is still 0 (``is_davis_friction`` False), Open Rails ignores them and
   converts the MSTS ``Friction`` block: with V2 outside [0, 10 mph] the plain-bearing
   Davis formulas are used (standstill force 2·A); otherwise A, B, C are the continuous
   least-squares fit of ``A + B·v + C·v²`` to ``y0 + C2·v^E2`` on [V2, 80 mph]
   (:func:`fcalc_davis`), standstill force C1 (scaled when E1 < 0).

Axle counts follow Open Rails: non-engines without ``ORTSNumberAxles`` take ``NumWheels``
when it is 1…5, else 4; engines add their drive axles (``ORTSNumberDriveAxles``, else the
engine's ``NumWheels`` when it is 1…6, else 4) to ``ORTSNumberAxles`` (0 if missing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostics
from ..stf import parse_file
from ..stf.tree import Block, Document
from ._read import Reader, to_float, to_int, to_int32
from ._records import fast_pickle
from .stock_orts import OrtsStock, read_orts

__all__ = [
    "BrakeShoeFriction",
    "Coupler",
    "DEFAULT_COUPLER",
    "Stock",
    "TractiveForceCurve",
    "davis_a_estimate",
    "davis_b_estimate",
    "davis_c_estimate",
    "fcalc_davis",
    "read_stock",
    "stock_from_document",
]

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


@dataclass(frozen=True, slots=True)
class Stock:
    """One rolling-stock file with the values the physics replay needs, in SI units.

    ``davis_a`` (N), ``davis_b`` (N/(m/s)), ``davis_c`` (N/(m/s)²) are final: filled at load
    time and, when ``is_davis_friction`` is False, converted from the MSTS ``Friction`` block
    (``friction0_n`` is then the standstill force). ``wagon_type`` is Open Rails' type
    (``Engine``, ``Tender``, ``Freight``, ``Passenger`` — ``Carriage`` reads as
    ``Passenger`` — or ``Unknown``). Engine fields are None for wagons and when absent.
    ``couplers`` are in Open Rails' slot order (see :meth:`coupler`). ``num_axles`` is the
    total used for resistance (wagon axles + drive axles).
    """

    path: str
    name: str
    kind: str  # "engine" | "wagon"
    wagon_type: str
    engine_type: str | None
    mass_kg: float
    length_m: float
    width_m: float
    height_m: float
    davis_a: float
    davis_b: float
    davis_c: float
    is_davis_friction: bool
    max_force_n: float | None
    max_continuous_force_n: float | None
    max_power_w: float | None
    max_velocity_ms: float | None
    max_brake_force_n: float
    tractive_force_curve: TractiveForceCurve | None
    couplers: tuple[Coupler, ...]
    bogie_spacing_m: float | None
    num_axles: int
    wheel_radius_m: float
    # -- further values (resistance details) -------------------------------------------
    num_drive_axles: int = 0
    driver_wheel_radius_m: float | None = None
    bearing_type: str = "Default"
    drag_constant: float = DRAG_CONSTANT_OTHER
    frontal_area_m2: float = 0.0
    trail_loco_resistance_factor: float = 1.0
    #: Standstill force of the MSTS Friction path (None on the Davis path).
    friction0_n: float | None = None
    standstill_friction_n: float = 0.0
    merge_speed_ms: float = DEFAULT_MERGE_SPEED_MS
    max_handbrake_force_n: float = 0.0
    label: str = ""
    #: ``ORTSBrakeShoeFriction`` if the file gives a usable one; None: constant brake force.
    brake_shoe_friction: BrakeShoeFriction | None = None
    #: The Open Rails values (diesel engines, brake system, …: formats/stock_orts.py);
    #: None for the generic stand-ins.
    orts: OrtsStock | None = None

    # -- helpers ------------------------------------------------------------------------
    def coupler(self, flipped: bool = False) -> Coupler:
        """The coupler the physics uses: slot 0, or slot 1 when the car is flipped and has
        two; :data:`DEFAULT_COUPLER` when the file has none."""
        if not self.couplers:
            return DEFAULT_COUPLER
        if flipped and len(self.couplers) >= 2:
            return self.couplers[1]
        return self.couplers[0]

    def davis_force_n(self, speed_ms: float) -> float:
        """Running resistance ``A + v·(B + v·C)`` at ``|speed|`` (no low-speed treatment)."""
        v = abs(speed_ms)
        return self.davis_a + v * (self.davis_b + v * self.davis_c)

    @property
    def bogie_spacing_or_default_m(self) -> float:
        """``bogie_spacing_m`` if the file gives it, else 0.65·length (docs/physics.md §3.1)."""
        return self.bogie_spacing_m if self.bogie_spacing_m is not None else 0.65 * self.length_m

    @classmethod
    def generic(cls, kind: str, variant: str | None = None) -> Stock:
        """A generic stand-in with realistic values (used when a consist names missing stock).

        * ``("engine", "electric")`` (the default engine): a four-axle Bo'Bo' AC electric
          like the Bombardier TRAXX AC / Siemens Vectron families: 85 t, 18.9 m × 2.98 m ×
          4.28 m, 5.6 MW, 300 kN starting force, 160 km/h, roller bearings (Davis A and B
          from the bearing formulas, C from the engine drag constant 0.0024 × frontal area),
          1250 mm wheels.
        * ``("engine", "diesel")``: a six-axle Co'Co' freight diesel like the EMD Class 66:
          126 t, 21.35 m × 2.65 m × 3.91 m, 2.4 MW, 409 kN starting, 260 kN continuous,
          120 km/h, roller bearings, 1067 mm wheels.
        * ``("engine", "dmu")``: a power car of a diesel multiple unit like one car of an
          Alstom Coradia LINT 41 or an IC3 end car: 40 t, 24.5 m × 2.9 m × 3.9 m, 400 kW,
          50 kN starting force, 140 km/h, 2 driven axles, 840 mm wheels (a three-car unit
          with a trailer reaches 40 km/h in about 20 s, as real DMUs do).
        * ``("engine", "emu")``: a power car of an electric multiple unit like a Stadler
          FLIRT or Bombardier Talent 2 car: 45 t, 24 m × 2.9 m × 4.1 m, 1 MW, 100 kN
          starting force, 160 km/h, 4 driven axles, 850 mm wheels.
        * ``("wagon", "passenger")`` (the default wagon; also ``"coach"``): a UIC-Z type
          corridor coach: 45 t, 26.4 m × 2.825 m × 4.05 m, four axles, roller bearings,
          920 mm wheels.
        * ``("wagon", "freight")``: a four-axle bogie freight wagon with an average load:
          60 t (between ~22 t tare and 90 t at 22.5 t/axle), 15.7 m × 3.0 m × 3.2 m, roller
          bearings, 920 mm wheels.

        All have two UIC screw couplings (stiffness 1e6 / 5e6 N/m, r0 ( 0 0.1 m ), break
        850 / 1000 kN) and Open Rails' 89 kN default brake force.
        """
        name = (variant or ("electric" if kind == "engine" else "passenger")).lower()
        key = (kind, {"coach": "passenger", "carriage": "passenger", "goods": "freight"}.get(name, name))
        spec = _GENERIC.get(key)
        if spec is None:
            known = ", ".join(f"{k}/{v}" for k, v in _GENERIC)
            raise ValueError(f"no generic stock {kind!r}/{variant!r}; known: {known}")
        raw = _Raw()
        for name, value in spec.items():
            setattr(raw, name, value)
        for _ in range(2):
            raw.couplers.append(_uic_screw_coupling())
        diags = Diagnostics(strict=True)
        label = f"generic {key[1]} {kind}"
        return _finish(raw, f"<generic:{kind}/{key[1]}>", kind, diags, Reader(diags), label)


# -- the raw, mutable state while walking a file ------------------------------------------


class _CouplerState:
    __slots__ = ("rigid", "r0x", "r0y", "r0_diff", "k1", "k2", "b1", "b2")

    def __init__(self) -> None:
        self.rigid = False
        self.r0x = 0.0
        self.r0y = 0.0
        self.r0_diff = COUPLER_DEFAULT_R0_DIFF
        self.k1, self.k2 = COUPLER_DEFAULT_STIFFNESS
        self.b1 = self.b2 = COUPLER_DEFAULT_BREAK

    def set_r0(self, a: float, b: float) -> bool:
        """Open Rails' SetSimpleR0: uses the stiffness known *now*. False if k1 + k2 is 0."""
        self.r0x, self.r0y = a, b
        ok = True
        if a == 0:
            if self.k1 + self.k2 == 0:
                diff, ok = COUPLER_DEFAULT_R0_DIFF, False
            else:
                diff = b / 2 * self.k2 / (self.k1 + self.k2)
        else:
            diff = COUPLER_DEFAULT_R0_DIFF
        self.r0_diff = min(max(diff, 0.001), 0.1)
        return ok

    def freeze(self) -> Coupler:
        rigid = self.rigid
        return Coupler(
            r0x=self.r0x,
            r0y=self.r0y,
            slack1=RIGID_SLACK1_M if rigid else self.r0_diff,
            slack2=RIGID_SLACK2_M if rigid else CAR_SLACK2_M,
            stiffness=7 * (self.k1 + self.k2) if self.r0x == 0 else CAR_STIFFNESS_NPM,
            break1=self.b1,
            break2=self.b2,
            rigid=rigid,
            stiffness1=self.k1,
            stiffness2=self.k2,
            r0_diff=self.r0_diff,
        )


def _uic_screw_coupling() -> _CouplerState:
    c = _CouplerState()
    c.k1, c.k2 = 1e6, 5e6
    c.set_r0(0.0, 0.1)
    c.b1, c.b2 = 850e3, 1000e3
    return c


class _Raw:
    """Field values as read (None = not given), before the load-time processing."""

    def __init__(self) -> None:
        self.has_wagon = False
        self.has_engine = False
        self.wagon_label: str | None = None
        self.engine_label: str | None = None
        self.wagon_name: str | None = None
        self.engine_name: str | None = None
        self.wagon_type: str | None = None
        self.engine_type: str | None = None
        self.size: tuple[float, float, float] | None = None
        self.mass: float | None = None
        self.wheel_radius: float | None = None
        self.driver_wheel_radius: float | None = None
        self.wagon_num_wheels = 0.0
        self.wagon_num_axles = 0
        self.engine_num_wheels = 0.0
        self.drive_axles = 0
        self.drive_wheel_weight: float | None = None
        self.friction: tuple[float, float, float, float, float] | None = None
        self.friction_block: Block | None = None
        self.davis_a = 0.0
        self.davis_b = 0.0
        self.davis_c = 0.0
        self.drag_constant = 0.0
        self.frontal_area = 0.0
        self.trail_factor = 0.0
        self.bearing = "Default"
        self.standstill = 0.0
        self.merge_speed = DEFAULT_MERGE_SPEED_MS
        self.max_brake = DEFAULT_MAX_BRAKE_FORCE_N
        self.max_handbrake = 0.0
        self.bogie_spacing: float | None = None
        self.couplers: list[_CouplerState] = []
        self.true_coupler_count = 0
        self.coupler_at = 0
        self.max_power: float | None = None
        self.max_force: float | None = None
        self.max_cont_force: float | None = None
        self.max_velocity: float | None = None
        self.curve: TractiveForceCurve | None = None
        self.brake_shoe: BrakeShoeFriction | None = None


# -- handlers (one per block path) ----------------------------------------------------------


def _label(blk: Block) -> str | None:
    items = blk.items
    return str(items[0]) if items and items[0].__class__ is not Block else None


def _q(rd: Reader, blk: Block, family: str, default: float, index: int = 0) -> float:
    return rd.quantity(blk, index, family, default=default)


def _h_wagon(raw: _Raw, blk: Block, rd: Reader) -> bool:
    raw.has_wagon = True
    if raw.wagon_label is None:
        raw.wagon_label = _label(blk)
    return True


def _h_engine(raw: _Raw, blk: Block, rd: Reader) -> bool:
    raw.has_engine = True
    if raw.engine_label is None:
        raw.engine_label = _label(blk)
    return True


def _enum(rd: Reader, blk: Block, table: dict[str, str], what: str) -> str | None:
    text = rd.string(blk, 0, "")
    value = table.get(text.lower())
    if value is None and text:
        rd.problem(
            blk, f"{blk.name}: unknown {what} {text!r}; known: {', '.join(sorted(set(table.values())))}", 0
        )
    return value


def _enum_handler(table: dict[str, str], what: str, attr: str):
    """A handler that stores the value of a named-choice block (``Type ( Freight )``)."""

    def handler(raw: _Raw, blk: Block, rd: Reader) -> bool:
        value = _enum(rd, blk, table, what)
        if value is not None:
            setattr(raw, attr, value)
        return False

    return handler


_h_wagon_type = _enum_handler(WAGON_TYPES, "wagon type", "wagon_type")
_h_engine_type = _enum_handler(ENGINE_TYPES, "engine type", "engine_type")
_h_bearing = _enum_handler(BEARING_TYPES, "bearing type", "bearing")


def _h_size(raw: _Raw, blk: Block, rd: Reader) -> bool:
    w, h, length = DEFAULT_SIZE_M if raw.size is None else raw.size
    raw.size = (
        _q(rd, blk, "distance", w, 0),
        _q(rd, blk, "distance", h, 1),
        _q(rd, blk, "distance", length, 2),
    )
    return False


def _h_mass(raw: _Raw, blk: Block, rd: Reader) -> bool:
    raw.mass = max(_q(rd, blk, "mass", DEFAULT_MASS_KG), 0.1)
    return False


def _h_friction(raw: _Raw, blk: Block, rd: Reader) -> bool:
    c1 = _q(rd, blk, "resistance", 0.0, 0)
    e1 = rd.value(blk, 1, to_float, 0.0, "Friction E1")
    v2 = _q(rd, blk, "speed", 0.0, 2)
    c2 = _q(rd, blk, "resistance", 0.0, 3)
    e2 = rd.value(blk, 4, to_float, 0.0, "Friction E2")
    raw.friction = (c1, e1, v2, c2, e2)
    raw.friction_block = blk
    return False


def _h_coupling(raw: _Raw, blk: Block, rd: Reader) -> bool:
    # Open Rails (MSTSWagon.Parse, "wagon(coupling"): every Coupling block appends a coupler.
    # A third one (e.g. from an include or an OpenRails/ override) removes slot 0 and its
    # values then go to the coupler now in slot 0 (the old slot 1); a fourth one removes
    # slot 1 and fills the new coupler. Reproduced as is.
    cs = raw.couplers
    cs.append(_CouplerState())
    raw.true_coupler_count += 1
    if len(cs) > 2 and raw.true_coupler_count == 3:
        del cs[0]
        raw.coupler_at = 0
    elif len(cs) > 2 and raw.true_coupler_count == 4:
        del cs[1]
        raw.coupler_at = 1
    else:
        raw.coupler_at = len(cs) - 1
    return True


def _pair(rd: Reader, blk: Block, family: str) -> tuple[float, float]:
    return _q(rd, blk, family, 0.0, 0), _q(rd, blk, family, 0.0, 1)


def _h_stiffness(raw: _Raw, blk: Block, rd: Reader) -> bool:
    a, b = _pair(rd, blk, "stiffness")
    if a + b >= 0:  # Open Rails ignores a negative pair
        c = raw.couplers[raw.coupler_at]
        c.k1, c.k2 = a, b
    return False


def _h_r0(raw: _Raw, blk: Block, rd: Reader) -> bool:
    a, b = _pair(rd, blk, "distance")
    if not raw.couplers[raw.coupler_at].set_r0(a, b):
        rd.problem(
            blk,
            "r0: the coupler stiffness known at this point is Stiffness ( 0 0 ); "
            "Open Rails would compute a NaN slack (0.012 m used)",
        )
    return False


def _h_break(raw: _Raw, blk: Block, rd: Reader) -> bool:
    a, b = _pair(rd, blk, "force")
    if a + b >= 0:
        c = raw.couplers[raw.coupler_at]
        c.b1 = a
        c.b2 = COUPLER_BREAK2_WHEN_ZERO if b == 0 else b
    return False


def _bool_block(rd: Reader, blk: Block, default: bool) -> bool:
    """STFReader.ReadBoolBlock: empty → default; true/false; else an integer ≠ 0."""
    items = blk.values
    if not items:
        return default
    text = str(items[0]).lower()
    if text in ("true", "false"):
        return text == "true"
    try:
        return to_int(text) != 0
    except ValueError:
        rd.problem(blk, f"{blk.name}: expected 0, 1, true or false, found {items[0]!r}", 0)
        return default


def _h_rigid(raw: _Raw, blk: Block, rd: Reader) -> bool:
    raw.couplers[raw.coupler_at].rigid = _bool_block(rd, blk, True)
    return False


def _setter(attr: str, family: str | None, default: Any = 0.0, conv=to_float):
    """A handler that reads the first value of the block into ``raw.<attr>``."""
    if family is None:

        def handler(raw: _Raw, blk: Block, rd: Reader) -> bool:
            setattr(raw, attr, rd.value(blk, 0, conv, default, blk.name))
            return False
    else:

        def handler(raw: _Raw, blk: Block, rd: Reader) -> bool:
            setattr(raw, attr, _q(rd, blk, family, default))
            return False

    return handler


def _any(rd: Reader, blk: Block, raw: str, index: int | None) -> float | None:
    """A number in STFReader's ``UNITS.Any``; None (after reporting) if unreadable.
    ``index`` locates the value in ``blk`` (None: the block itself)."""
    return rd.quantity_of(blk, raw, index, ANY_UNITS, None)


def _h_curves(raw: _Raw, blk: Block, rd: Reader) -> bool:
    """``ORTSMaxTractiveForceCurves ( t0 ( v f v f … ) t1 ( … ) … )`` (InterpolatorDiesel2D,
    non-tabular form): throttle fractions, each with speed/force pairs, all ``UNITS.Any``.
    In the tree each line is a block named by its throttle value."""
    throttles: list[float] = []
    rows: list[tuple[list[float], list[float]]] = []
    for k, it in enumerate(blk.items):
        if it.__class__ is not Block or not it.name:
            rd.problem(
                blk,
                f"{blk.name}: expected 'throttle ( speed force … )', found "
                f"{it.name if it.__class__ is Block else it!r}",
                k,
            )
            continue
        t = _any(rd, it, it.name, None)
        line = it.items
        read = [None if v.__class__ is Block else _any(rd, it, str(v), j) for j, v in enumerate(line)]
        values = [v for v in read if v is not None]
        if t is None or len(values) != len(read):
            rd.problem(it, f"{blk.name}: unreadable line for throttle {it.name!r}")
            continue
        if len(values) % 2:
            rd.problem(
                it,
                f"{blk.name}: odd number of values for throttle {it.name!r} "
                f"(Open Rails ignores the last one)",
            )
            values = values[:-1]
        xs, ys = values[0::2], values[1::2]
        if len(xs) < 2:
            rd.problem(it, f"{blk.name}: throttle {it.name!r} needs at least two speed/force pairs")
            if not xs:
                continue
        if any(b <= a for a, b in zip(xs, xs[1:])):
            rd.problem(it, f"{blk.name}: speeds for throttle {it.name!r} must increase")
            continue
        throttles.append(t)
        rows.append((xs, ys))
    if len(throttles) < 2:
        rd.problem(blk, f"{blk.name}: at least two throttle values are needed")
    if any(b <= a for a, b in zip(throttles, throttles[1:])):
        rd.problem(blk, f"{blk.name}: throttle values must increase")
        order = sorted(range(len(throttles)), key=throttles.__getitem__)
        throttles = [throttles[k] for k in order]
        rows = [rows[k] for k in order]
    if not throttles:
        raw.curve = None
        return False
    speeds = sorted({x for xs, _ in rows for x in xs})
    force = tuple(tuple(_line(xs, ys, v) for v in speeds) for xs, ys in rows)
    raw.curve = TractiveForceCurve(tuple(throttles), tuple(speeds), force)
    return False


def _h_brake_shoe(raw: _Raw, blk: Block, rd: Reader) -> bool:
    """``ORTSBrakeShoeFriction ( v μ v μ … )``: speed (km/h) / friction coefficient pairs
    (docs/physics.md §3.5). Bare numbers only: Open Rails reads any unit here but then looks
    the table up in km/h, so ``10km/h`` would silently mean 2.78 km/h. A table that cannot
    be used (too long, too short, a speed not increasing, a negative value, μ(0) ≤ 0) is
    reported and dropped: the brake force then stays constant, as without one."""
    raw.brake_shoe = None  # the last occurrence wins, also when it is unusable
    items = blk.items
    what = blk.name
    if len(items) > 2 * MAX_BRAKE_SHOE_POINTS + 1:
        rd.problem(
            blk, f"{what}: {len(items) // 2} speed/friction pairs; at most {MAX_BRAKE_SHOE_POINTS} are read"
        )
        return False
    values: list[float] = []
    for j, it in enumerate(items):
        v = rd.value(blk, j, to_float, None, "a speed in km/h or a friction coefficient")
        if v is None:
            return False
        if v < 0:
            rd.problem(blk, f"{what}: negative value {it}", j)
            return False
        values.append(v)
    if len(values) % 2:
        rd.problem(blk, f"{what}: odd number of values (Open Rails ignores the last one)", len(values) - 1)
        values.pop()
    xs, ys = values[0::2], values[1::2]
    if len(xs) < 2:
        rd.problem(blk, f"{what}: at least two speed/friction pairs are needed")
        return False
    for k in range(1, len(xs)):
        if not xs[k] > xs[k - 1]:
            rd.problem(blk, f"{what}: speeds must increase ({xs[k - 1]:g} then {xs[k]:g} km/h)", 2 * k)
            return False
    curve = BrakeShoeFriction(tuple(xs), tuple(ys))
    if not _line(curve.speed_kmh, curve.mu, 0.0) > 0.0:
        rd.problem(blk, f"{what}: the friction at 0 km/h must be positive (it scales the brake force)")
        return False
    raw.brake_shoe = curve
    return False


_HANDLERS = {
    "wagon": _h_wagon,
    "engine": _h_engine,
    "wagon(name": _setter("wagon_name", None, "", str),
    "engine(name": _setter("engine_name", None, "", str),
    "wagon(type": _h_wagon_type,
    "wagon(size": _h_size,
    "wagon(mass": _h_mass,
    "wagon(wheelradius": _setter("wheel_radius", "distance", DEFAULT_WHEEL_RADIUS_M),
    "engine(wheelradius": _setter("driver_wheel_radius", "distance", DEFAULT_DRIVER_WHEEL_RADIUS_M),
    "wagon(numwheels": _setter("wagon_num_wheels", None, 0.0),
    "wagon(ortsnumberaxles": _setter("wagon_num_axles", None, 0, to_int32),
    "wagon(friction": _h_friction,
    "wagon(ortsdavis_a": _setter("davis_a", "force"),
    "wagon(ortsdavis_b": _setter("davis_b", "resistance"),
    "wagon(ortsdavis_c": _setter("davis_c", "resistance_c"),
    "wagon(ortsdavisdragconstant": _setter("drag_constant", None),
    "wagon(ortswagonfrontalarea": _setter("frontal_area", "area"),
    "wagon(ortstraillocomotiveresistancefactor": _setter("trail_factor", None),
    "wagon(ortsbearingtype": _h_bearing,
    "wagon(ortsstandstillfriction": _setter("standstill", "force"),
    "wagon(ortsmergespeed": _setter("merge_speed", "speed", DEFAULT_MERGE_SPEED_MS),
    "wagon(maxbrakeforce": _setter("max_brake", "force", DEFAULT_MAX_BRAKE_FORCE_N),
    "wagon(maxhandbrakeforce": _setter("max_handbrake", "force"),
    "wagon(ortsbrakeshoefriction": _h_brake_shoe,
    "wagon(ortslengthbogiecentre": _setter("bogie_spacing", "distance"),
    "wagon(coupling": _h_coupling,
    "wagon(coupling(spring(stiffness": _h_stiffness,
    "wagon(coupling(spring(r0": _h_r0,
    "wagon(coupling(spring(break": _h_break,
    "wagon(coupling(couplinghasrigidconnection": _h_rigid,
    "engine(type": _h_engine_type,
    "engine(maxpower": _setter("max_power", "power"),
    "engine(maxforce": _setter("max_force", "force"),
    "engine(maxcontinuousforce": _setter("max_cont_force", "force"),
    "engine(maxvelocity": _setter("max_velocity", "speed"),
    "engine(numwheels": _setter("engine_num_wheels", None, 4.0),
    "engine(ortsnumberdriveaxles": _setter("drive_axles", None, 0, to_int32),
    "engine(ortsdrivewheelweight": _setter("drive_wheel_weight", "mass"),
    "engine(ortsmaxtractiveforcecurves": _h_curves,
    # The spec's table names the MSTS spelling; Open Rails reads the ORTS one. Both accepted.
    "engine(maxtractiveforcecurves": _h_curves,
}

#: Block paths with a handler somewhere below them. Nothing else can match a handler, so
#: the walk does not go into it: the recursion is at most as deep as the longest path
#: (a file nested 100,000 blocks deep cannot exhaust the stack).
_WALK_INTO = frozenset(k.rsplit("(", i)[0] for k in _HANDLERS for i in range(1, k.count("(") + 1))


def _walk(block: Block, path: str, raw: _Raw, rd: Reader, kind: str) -> None:
    for it in block.items:
        if it.__class__ is not Block:
            continue
        p = f"{path}({it.key}" if path else it.key
        handler = _HANDLERS.get(p)
        if handler is not None and kind == "wagon" and p.startswith("engine"):
            handler = None  # a .wag is read by MSTSWagon, which ignores engine(…) paths
        if handler is not None and not handler(raw, it, rd):
            continue
        if p in _WALK_INTO:
            _walk(it, p, raw, rd, kind)


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


# -- building the record --------------------------------------------------------------------


def _finish(raw: _Raw, path: str, kind: str, diags: Diagnostics, rd: Reader, file_label: str) -> Stock:
    wagon_type = raw.wagon_type or "Unknown"
    engine = kind == "engine"
    width, height, length = DEFAULT_SIZE_M if raw.size is None else raw.size
    mass = DEFAULT_MASS_KG if raw.mass is None else raw.mass

    # Axles (MSTSWagon.LoadFromWagFile / MSTSLocomotive).
    if raw.wagon_num_axles == 0 and wagon_type != "Engine":
        nw = raw.wagon_num_wheels
        wagon_axles = int(nw) if 0 < nw < 6 else 4
    else:
        wagon_axles = raw.wagon_num_axles
    drive_axles = 0
    if engine:
        if raw.drive_axles > 0:
            drive_axles = raw.drive_axles
        else:
            nw = raw.engine_num_wheels
            drive_axles = int(nw) if 0 < nw < 7 else 4
    axles = wagon_axles + drive_axles

    # Davis values, step 1 (load time).
    bearing = raw.bearing
    a, b, c = raw.davis_a, raw.davis_b, raw.davis_c
    if bearing != "Default" and a <= 0:
        a = davis_a_estimate(bearing, mass, axles)
        if engine and raw.engine_type == "Steam":  # running-gear drag: 20 lbf per short ton on drivers
            drive = raw.drive_wheel_weight if raw.drive_wheel_weight is not None else mass
            a += LBF_N * 20.0 * drive / SHORT_TON_KG
    if bearing != "Default" and b <= 0:
        b = davis_b_estimate(bearing, mass, axles, wagon_type)
    drag = raw.drag_constant or DRAG_CONSTANT.get(wagon_type, DRAG_CONSTANT_OTHER)
    area = raw.frontal_area or width * height
    if c <= 0:
        c = davis_c_estimate(area, drag)
    is_davis = a != 0 and b != 0 and c != 0

    # Step 2: the MSTS Friction path.
    friction0 = None
    if not is_davis:
        c1, e1, v2, c2, e2 = raw.friction or (0.0, 0.0, 0.0, 0.0, 0.0)
        if raw.friction is None:
            diags.note(
                f"{path}: no ORTSDavis values and no Friction block; Open Rails "
                "then fits an all-zero Friction, i.e. no running resistance"
            )
        fcalc = 0 <= v2 <= FCALC_V2_MAX
        if fcalc:
            try:
                a, b, c, friction0 = fcalc_davis(c1, e1, v2, c2, e2)
            except ValueError as exc:
                blk = raw.friction_block
                message = f"Friction: {exc}; the plain-bearing Davis formulas are used instead"
                if blk is not None:
                    rd.problem(blk, message)
                else:
                    diags.note(f"{path}: {message}")
                fcalc = False
        if not fcalc:
            a = davis_a_estimate("Friction", mass, axles)
            b = davis_b_estimate("Friction", mass, axles, wagon_type)
            c = davis_c_estimate(area, drag)
            friction0 = 2.0 * a

    trail = raw.trail_factor or (0.2083 if wagon_type == "Engine" else 1.0)
    name = (
        (raw.engine_name if engine and raw.engine_name else None)
        or raw.wagon_name
        or (raw.engine_label if engine and raw.engine_label else None)
        or raw.wagon_label
        or file_label
    )
    return Stock(
        path=path,
        name=name,
        kind=kind,
        wagon_type=wagon_type,
        engine_type=raw.engine_type if engine else None,
        mass_kg=mass,
        length_m=length,
        width_m=width,
        height_m=height,
        davis_a=a,
        davis_b=b,
        davis_c=c,
        is_davis_friction=is_davis,
        max_force_n=raw.max_force if engine else None,
        max_continuous_force_n=raw.max_cont_force if engine else None,
        max_power_w=raw.max_power if engine else None,
        max_velocity_ms=raw.max_velocity if engine else None,
        max_brake_force_n=raw.max_brake,
        tractive_force_curve=raw.curve if engine else None,
        couplers=tuple(cs.freeze() for cs in raw.couplers),
        bogie_spacing_m=raw.bogie_spacing,
        num_axles=axles,
        wheel_radius_m=DEFAULT_WHEEL_RADIUS_M if raw.wheel_radius is None else raw.wheel_radius,
        num_drive_axles=drive_axles,
        driver_wheel_radius_m=(
            DEFAULT_DRIVER_WHEEL_RADIUS_M if raw.driver_wheel_radius is None else raw.driver_wheel_radius
        )
        if engine
        else None,
        bearing_type=bearing,
        drag_constant=drag,
        frontal_area_m2=area,
        trail_loco_resistance_factor=trail,
        friction0_n=friction0,
        standstill_friction_n=raw.standstill,
        merge_speed_ms=raw.merge_speed,
        max_handbrake_force_n=raw.max_handbrake,
        label=(raw.wagon_label or ""),
        brake_shoe_friction=raw.brake_shoe,
    )


def read_stock(
    path: str | Path,
    *,
    strict: bool = True,
    diagnostics: Diagnostics | None = None,
    root: str | Path | None = None,
) -> Stock:
    """Read one ``.eng`` or ``.wag`` file (``include`` followed, confined to ``root``,
    default: the install root above the file)."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return stock_from_document(parse_file(path, diagnostics=diags, root=root), diags)


def stock_from_document(doc: Document, diags: Diagnostics, kind: str | None = None) -> Stock:
    """Build a :class:`Stock` from a parsed file. ``kind`` ("engine"/"wagon") defaults to
    the file extension (.eng/.wag), else to whether an ``Engine`` block is present."""
    rd = Reader(diags)
    path = doc.path
    suffix = Path(path).suffix.lower()
    if kind is None:
        kind = {".eng": "engine", ".wag": "wagon"}.get(suffix)
    if kind is None:
        kind = "engine" if doc.find("Engine") is not None else "wagon"
    if kind not in ("engine", "wagon"):
        raise ValueError(f"kind must be 'engine' or 'wagon', not {kind!r}")
    raw = _Raw()
    _walk(doc, "", raw, rd, kind)
    if not raw.has_wagon:
        rd.problem(doc, "no Wagon block in rolling-stock file")
    if kind == "engine" and not raw.has_engine:
        rd.problem(doc, "no Engine block in an engine file")
    orts = read_orts(doc, rd, kind, _read_curve)
    return replace(_finish(raw, path, kind, diags, rd, Path(path).stem), orts=orts)


def _read_curve(rd: Reader, blk: Block) -> TractiveForceCurve | None:
    """A 2-D force-curve block read as ``ORTSMaxTractiveForceCurves`` is (for the dynamic
    brake's curves in formats/stock_orts.py)."""
    holder = _Raw()
    _h_curves(holder, blk, rd)
    return holder.curve


# -- generic stand-ins ----------------------------------------------------------------------

_GENERIC: dict[tuple[str, str], dict] = {
    ("engine", "electric"): dict(
        wagon_label="GENERIC_ELECTRIC",
        wagon_name="Generic Bo'Bo' electric locomotive (stand-in)",
        wagon_type="Engine",
        engine_type="Electric",
        size=(2.98, 4.28, 18.9),
        mass=85e3,
        wheel_radius=0.625,
        driver_wheel_radius=0.625,
        drive_axles=4,
        bearing="Roller",
        max_power=5.6e6,
        max_force=300e3,
        max_velocity=160 / 3.6,
        has_wagon=True,
        has_engine=True,
    ),
    ("engine", "diesel"): dict(
        wagon_label="GENERIC_DIESEL",
        wagon_name="Generic Co'Co' diesel locomotive (stand-in)",
        wagon_type="Engine",
        engine_type="Diesel",
        size=(2.65, 3.91, 21.35),
        mass=126e3,
        wheel_radius=0.5335,
        driver_wheel_radius=0.5335,
        drive_axles=6,
        bearing="Roller",
        max_power=2.4e6,
        max_force=409e3,
        max_cont_force=260e3,
        max_velocity=120 / 3.6,
        has_wagon=True,
        has_engine=True,
    ),
    ("engine", "dmu"): dict(
        wagon_label="GENERIC_DMU",
        wagon_name="Generic diesel multiple-unit power car (stand-in)",
        wagon_type="Engine",
        engine_type="Diesel",
        size=(2.9, 3.9, 24.5),
        mass=40e3,
        wheel_radius=0.42,
        driver_wheel_radius=0.42,
        drive_axles=2,
        wagon_num_axles=2,
        bearing="Roller",
        max_power=400e3,
        max_force=50e3,
        max_velocity=140 / 3.6,
        has_wagon=True,
        has_engine=True,
    ),
    ("engine", "emu"): dict(
        wagon_label="GENERIC_EMU",
        wagon_name="Generic electric multiple-unit power car (stand-in)",
        wagon_type="Engine",
        engine_type="Electric",
        size=(2.9, 4.1, 24.0),
        mass=45e3,
        wheel_radius=0.425,
        driver_wheel_radius=0.425,
        drive_axles=4,
        bearing="Roller",
        max_power=1.0e6,
        max_force=100e3,
        max_velocity=160 / 3.6,
        has_wagon=True,
        has_engine=True,
    ),
    ("wagon", "passenger"): dict(
        wagon_label="GENERIC_COACH",
        wagon_name="Generic passenger coach (stand-in)",
        wagon_type="Passenger",
        size=(2.825, 4.05, 26.4),
        mass=45e3,
        wheel_radius=0.46,
        wagon_num_axles=4,
        bearing="Roller",
        has_wagon=True,
    ),
    ("wagon", "freight"): dict(
        wagon_label="GENERIC_FREIGHT",
        wagon_name="Generic bogie freight wagon (stand-in)",
        wagon_type="Freight",
        size=(3.0, 3.2, 15.7),
        mass=60e3,
        wheel_radius=0.46,
        wagon_num_axles=4,
        bearing="Roller",
        has_wagon=True,
    ),
}


fast_pickle(Coupler, TractiveForceCurve, BrakeShoeFriction, Stock)
