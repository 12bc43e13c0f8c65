"""Per-car forces, vectorised over all the cars of a train (docs/physics.md §3).

A :class:`CarModel` holds one numpy array per quantity, cars front → back. Every force
function takes the model and per-car (or broadcast) inputs and returns one force per
car in newtons.

Sign conventions
----------------
* :func:`traction` and :func:`gravity` are **signed forces in the train frame**
  (+ = towards the train front). Traction follows the reverser (+1 forward, −1 back);
  a flipped locomotive pulls the same way as the others (the driver's reverser is for
  the train).
* :func:`davis`, :func:`curve_resistance` and :func:`brake` are **magnitudes** (≥ 0) of
  forces that oppose the motion; the integrator applies them against the speed (and at
  standstill only up to the force that would start the car — docs/physics.md §4).
* Speeds are m/s; only ``|v|`` matters to traction, Davis and the curve formula.

Formulas and the choices made where the sources leave room
----------------------------------------------------------
* **Traction** (docs/physics.md §3.4): with an effort–speed curve (``ORTSMaxTractiveForceCurves``)
  ``F = max(curve(t, |v|), 0)``. Otherwise ``F = MaxForce·t``; the power limit
  ``P = MaxPower·t²`` caps it at ``P/|v|`` when ``F·|v| > P``; within 0.05 m/s of
  MaxVelocity it is multiplied by ``20·(MaxVelocity − |v|)`` and it is 0 above
  MaxVelocity. ``t`` is clipped to [0, 1]. Engines without MaxForce give 0, without
  MaxPower no power limit, without MaxVelocity no taper. Wagons give 0.
* **Davis** (docs/physics.md §3.2): ``A + B·|v| + C·v²`` with the load-time coefficients of
  :class:`~tdbtools.formats.stock.Stock` (no low-speed blending). Optionally
  (``trailing_loco_factor=True``) C is multiplied by ``TrailLocoResistanceFactor`` for
  every engine after the first (lead) engine and for tenders not directly behind it.
* **Gravity** (docs/physics.md §3.1): ``−m·g·sinθ`` with ``sinθ = (y_front − y_rear)/b``,
  the height difference of the two bogie points over the bogie spacing ``b`` measured
  along the track (on a straight that is the chord Open Rails divides by; on curves
  the chord is shorter by < 2 cm in 25 m, docs/physics.md §5.1). Track offsets are metres
  along the inclined track, so a grade of 1 % (rise per *horizontal* metre, tan) gives
  ``sinθ = sin(atan 0.01) = 0.0099995``. :func:`gravity_from_grade` is the same from a
  grade: ``−m·g·sin(atan(grade))``.
* **Curves**: ``"osrd"`` (default, docs/physics.md §3.3): the curve adds ``800 m / r`` to the grade
  ``i`` in ‰, i.e. an extra *fraction* ``0.8/R``; the force is ``m·g·0.8/R`` (the
  small-angle form of ``m·g·sin(0.8/R)``, which differs by < 1e-7 relative for R ≥
  100 m). R = 800 m → 0.1 % → ``m·g·0.001``. ``"openrails"``: the older Open Rails
  formula of docs/physics.md §3.3, ``m·μ·(gauge + wheelbase)/(2R) · |(Veq − v)/Veq| · 2.0 · 0.5 · g``
  with μ = 0.5, gauge 1.435 m, the rigid wheelbase (default 2.4384 m for passenger
  stock, else 1.6764 m) and the balanced speed ``Veq = √(g·R·e/gauge)`` for the
  superelevation ``e``; with no superelevation (Veq = 0) the speed factor is taken as
  1 (its value at standstill).
* **Braking** (docs/physics.md §3.5): :attr:`BrakeMode.FORCE` — ``fraction × MaxBrakeForce``
  per car, times ``clip(μ(v)/μ(0), 0.01, 1)`` for cars whose stock gives a brake-shoe
  friction curve (``ORTSBrakeShoeFriction``; :func:`brake_shoe_factor`). :attr:`BrakeMode.DECELERATION` — the "hourly" model: the train decelerates
  at a fixed ``a_b`` (typically 0.4…0.7 m/s²) whatever the other forces; per car the
  brake supplies ``m·a_b·fraction`` minus what the other resistances already give
  (Davis + curve + the part of gravity that opposes the motion), never negative, and
  not limited by MaxBrakeForce.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from ..formats.stock import BrakeShoeFriction, Stock, TractiveForceCurve

__all__ = [
    "BrakeMode",
    "CarModel",
    "DEFAULT_DECELERATION",
    "G",
    "OSRD_CURVE_FACTOR",
    "brake",
    "brake_force_floor",
    "brake_force_floors",
    "brake_for_deceleration",
    "brake_shoe_factor",
    "braking",
    "curve_resistance",
    "davis",
    "gravity",
    "gravity_from_grade",
    "opposing_resistance",
    "traction",
    "adhesion_coefficient",
    "adhesion_limit",
    "implicit_taper",
    "running_resistance",
    "taper_factor",
    "EMERGENCY_FACTOR",
    "ROTATING_MASS_CAR",
    "ROTATING_MASS_ENGINE",
    "WET_RAIL_FACTOR",
]

#: Standard gravity (m/s²).
G = 9.80665
#: docs/physics.md §3.3: the curve adds 800 m / r (‰) to the grade, i.e. 0.8/R as a fraction.
OSRD_CURVE_FACTOR = 0.8
#: A typical "hourly" braking deceleration (m/s²; docs/physics.md §3.5: typically 0.4…0.7).
DEFAULT_DECELERATION = 0.5
#: Open Rails' simple-traction taper starts this far (m/s) below MaxVelocity (docs/physics.md §3.4).
TAPER_MS = 0.05
#: Older Open Rails curve-resistance constants (docs/physics.md §3.3).
OR_CURVE_MU = 0.5
OR_START_FACTOR = 2.0
OR_ZERO_SPEED_FACTOR = 0.5
STANDARD_GAUGE_M = 1.435
#: Rotating-mass factors (docs/running-time.md §5): the inertia of wheelsets, gears and
#: motors as a fraction of the mass, for engines and for the other cars.
ROTATING_MASS_ENGINE = 1.15
ROTATING_MASS_CAR = 1.05
#: Adhesion (docs/running-time.md §6): Curtius and Kniffler's dry-rail formula
#: μ = 0.161 + 7.5 / (v[km/h] + 44); wet rail takes this fraction of it.
WET_RAIL_FACTOR = 0.7
#: The emergency brake gives this much more than a full service application.
EMERGENCY_FACTOR = 1.15
WHEELBASE_PASSENGER_M = 2.4384
WHEELBASE_OTHER_M = 1.6764


class BrakeMode(str, Enum):
    """How braking is modelled (docs/physics.md §3.5): a force (``fraction × MaxBrakeForce``) or a
    constant deceleration (the "hourly" approach)."""

    FORCE = "force"
    DECELERATION = "deceleration"


@dataclass(frozen=True, eq=False)
class CarModel:
    """The physical values of a train's cars, one array entry per car, front → back.

    Units: kg, m, N, N/(m/s), N/(m/s)², W, m/s. ``max_force``, ``max_power`` and
    ``max_velocity`` are NaN where a car has none (wagons, or absent in the file).
    ``bogie_spacing`` is the file's value or 0.65·length (docs/physics.md §3.1).
    """

    mass: np.ndarray
    length: np.ndarray
    bogie_spacing: np.ndarray
    davis_a: np.ndarray
    davis_b: np.ndarray
    davis_c: np.ndarray
    max_force: np.ndarray
    max_power: np.ndarray
    max_velocity: np.ndarray
    max_brake: np.ndarray
    is_engine: np.ndarray
    flipped: np.ndarray
    is_passenger: np.ndarray
    curves: tuple[TractiveForceCurve | None, ...]
    names: tuple[str, ...] = ()
    #: Rotating-mass factor ρ per car (≥ 1): the cars accelerate as if of mass ρ·m.
    rotating_mass: np.ndarray | None = None
    #: Mass on driven axles (kg; 0 for wagons), for the adhesion limit.
    adhesive_mass: np.ndarray | None = None
    #: Starting resistance (N) at standstill, blended linearly into Davis at
    #: ``merge_speed`` (m/s); NaN: none beyond Davis.
    starting_resistance: np.ndarray | None = None
    merge_speed: np.ndarray | None = None
    #: Brake-shoe friction curve per car (None: constant brake force); () when no car has one.
    brake_shoe: tuple[BrakeShoeFriction | None, ...] = ()

    @property
    def rho(self) -> np.ndarray:
        """ρ per car (1 where not given)."""
        return np.ones(len(self.mass)) if self.rotating_mass is None else self.rotating_mass

    @property
    def inertial_mass(self) -> np.ndarray:
        """ρ·m per car (kg): what resists acceleration."""
        return self.mass * self.rho

    @classmethod
    def concat(cls, models: Sequence[CarModel]) -> CarModel:
        """The models of several trains, one after the other."""

        def cat(name: str):  # noqa: ANN202
            vals = [getattr(m, name) for m in models]
            if any(v is None for v in vals):
                return None
            return np.concatenate(vals)

        kw = {
            f: cat(f)
            for f in (
                "mass",
                "length",
                "bogie_spacing",
                "davis_a",
                "davis_b",
                "davis_c",
                "max_force",
                "max_power",
                "max_velocity",
                "max_brake",
                "is_engine",
                "flipped",
                "is_passenger",
                "rotating_mass",
                "adhesive_mass",
                "starting_resistance",
                "merge_speed",
            )
        }
        shoes = tuple(c for m in models for c in (m.brake_shoe or (None,) * len(m)))
        return cls(
            curves=tuple(c for m in models for c in m.curves),
            names=tuple(n for m in models for n in m.names),
            brake_shoe=shoes if any(c is not None for c in shoes) else (),
            **kw,
        )

    @classmethod
    def from_stock(
        cls,
        stocks: Sequence[Stock],
        flipped: Sequence[bool] | None = None,
        *,
        trailing_loco_factor: bool = False,
        rotating_mass: bool = False,
    ) -> CarModel:
        """The model of cars made of ``stocks`` (front → back), with their Flip flags.

        ``rotating_mass``: the default factors (:data:`ROTATING_MASS_ENGINE`,
        :data:`ROTATING_MASS_CAR`) instead of 1."""
        stocks = list(stocks)
        n = len(stocks)
        if not n:
            raise ValueError("a train needs at least one car")
        flips = np.zeros(n, dtype=bool) if flipped is None else np.array(list(flipped), dtype=bool)
        if flips.shape != (n,):
            raise ValueError(f"{n} cars but {len(flips)} flipped flags")

        def col(get) -> np.ndarray:  # noqa: ANN001
            return np.array([np.nan if (v := get(s)) is None else float(v) for s in stocks])

        engine = np.array([s.kind == "engine" for s in stocks], dtype=bool)
        c = col(lambda s: s.davis_c)
        if trailing_loco_factor:
            lead = next((i for i in range(n) if engine[i]), None)
            for i, s in enumerate(stocks):
                trailing = (engine[i] and lead is not None and i != lead) or (
                    s.wagon_type == "Tender" and lead is not None and i != lead + 1
                )
                if trailing:
                    c[i] *= s.trail_loco_resistance_factor
        shoes = tuple(s.brake_shoe_friction for s in stocks)
        return cls(
            mass=col(lambda s: s.mass_kg),
            length=col(lambda s: s.length_m),
            bogie_spacing=col(lambda s: s.bogie_spacing_or_default_m),
            davis_a=col(lambda s: s.davis_a),
            davis_b=col(lambda s: s.davis_b),
            davis_c=c,
            max_force=col(lambda s: s.max_force_n),
            max_power=col(lambda s: s.max_power_w),
            max_velocity=col(lambda s: s.max_velocity_ms),
            max_brake=col(lambda s: s.max_brake_force_n),
            is_engine=engine,
            flipped=flips,
            is_passenger=np.array([s.wagon_type == "Passenger" for s in stocks], dtype=bool),
            curves=tuple(s.tractive_force_curve if s.kind == "engine" else None for s in stocks),
            names=tuple(s.name for s in stocks),
            rotating_mass=(
                np.where(engine, ROTATING_MASS_ENGINE, ROTATING_MASS_CAR) if rotating_mass else np.ones(n)
            ),
            adhesive_mass=np.array([_adhesive(s) for s in stocks]),
            starting_resistance=col(_starting),
            merge_speed=np.array([max(float(s.merge_speed_ms), 1e-3) for s in stocks]),
            brake_shoe=shoes if any(c is not None for c in shoes) else (),
        )

    def __len__(self) -> int:
        return len(self.mass)

    @property
    def total_mass(self) -> float:
        return float(self.mass.sum())

    @property
    def total_length(self) -> float:
        """Sum of the car lengths (no coupler gaps)."""
        return float(self.length.sum())


def _adhesive(s: Stock) -> float:
    """Mass on the driven axles: the share of drive axles when the file says, else all."""
    if s.kind != "engine":
        return 0.0
    if s.num_drive_axles > 0 and s.num_axles > 0:
        return float(s.mass_kg) * min(s.num_drive_axles / s.num_axles, 1.0)
    return float(s.mass_kg)


def _starting(s: Stock) -> float | None:
    """The standstill resistance the file gives (ORTSStandstillFriction, or the MSTS
    Friction block's zero-speed force), else None."""
    if s.standstill_friction_n > 0:
        return float(s.standstill_friction_n)
    if s.friction0_n is not None and s.friction0_n > 0:
        return float(s.friction0_n)
    return None


def _per_car(model: CarModel, value, name: str) -> np.ndarray:
    a = np.asarray(value, dtype=np.float64)
    if a.shape == (len(model),):
        return a  # the common case in a replay: already one value per car
    if not a.ndim:
        return np.full(len(model), a)  # one value for all (broadcast_to costs more)
    try:
        return np.broadcast_to(a, (len(model),)).astype(np.float64)
    except ValueError:
        raise ValueError(f"{name}: expected one value or {len(model)}, got shape {a.shape}") from None


class _Traction:
    """What traction needs from a model, without NaNs, worked out once per model."""

    __slots__ = ("model", "force", "power", "has_power", "vmax", "has_vmax", "curves")

    def __init__(self, model: CarModel) -> None:
        self.model = model  # keeps the model alive while cached (ids are then unique)
        self.force = np.where(model.is_engine, np.nan_to_num(model.max_force, nan=0.0), 0.0)
        self.has_power = ~np.isnan(model.max_power)
        self.power = np.nan_to_num(model.max_power, nan=0.0)
        self.has_vmax = ~np.isnan(model.max_velocity)
        self.vmax = np.nan_to_num(model.max_velocity, nan=0.0)
        self.curves = [(i, c) for i, c in enumerate(model.curves) if c is not None and model.is_engine[i]]


_TRACTION: dict[int, _Traction] = {}


def _traction_data(model: CarModel) -> _Traction:
    d = _TRACTION.get(id(model))
    if d is None or d.model is not model:
        if len(_TRACTION) > 16:
            _TRACTION.clear()
        d = _TRACTION[id(model)] = _Traction(model)
    return d


# -- traction ---------------------------------------------------------------------------


def traction(model: CarModel, throttle, v, *, reverser: float = 1.0, taper: bool = True) -> np.ndarray:
    """Tractive force per car (N, train frame) at throttle fraction(s) ``throttle`` and
    speed(s) ``v`` (m/s): the effort–speed curve if the engine has one, else the simple
    model of docs/physics.md §3.4 (module docstring). Wagons give 0. ``taper=False``
    leaves out the top-speed taper (the replay applies it implicitly,
    :func:`implicit_taper`)."""
    d = _traction_data(model)
    t = np.minimum(np.maximum(_per_car(model, throttle, "throttle"), 0.0), 1.0)
    speed = np.abs(_per_car(model, v, "v"))
    f = d.force * t
    # The power limit P = MaxPower·t² caps F at P/v (no MaxPower: no limit).
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(d.has_power & (speed > 0), d.power * t * t / speed, np.inf)
    f = np.minimum(f, cap)
    # Near top speed the force tapers to 0 over the last 0.05 m/s, and is 0 above it.
    if taper:
        over = d.vmax - speed
        f = np.where(d.has_vmax & (over < TAPER_MS), np.where(over > 0, f * 20.0 * over, 0.0), f)
    for i, curve in d.curves:
        f[i] = max(float(curve(float(t[i]), float(speed[i]))), 0.0)
    return f * (1.0 if reverser >= 0 else -1.0) + 0.0


def adhesion_coefficient(v, rail: str = "dry") -> np.ndarray:
    """Curtius and Kniffler's adhesion coefficient at speed ``v`` (m/s):
    ``0.161 + 7.5 / (3.6·|v| + 44)`` on dry rail, × :data:`WET_RAIL_FACTOR` on wet."""
    mu = 0.161 + 7.5 / (3.6 * np.abs(np.asarray(v, dtype=np.float64)) + 44.0)
    if rail == "dry":
        return mu
    if rail == "wet":
        return mu * WET_RAIL_FACTOR
    raise ValueError(f"rail must be 'dry' or 'wet', not {rail!r}")


def adhesion_limit(model: CarModel, v, rail: str = "dry") -> np.ndarray:
    """The most tractive (or braking-at-the-wheel) force per car the rails transmit:
    ``μ(v)·m_adhesive·g`` (N; 0 for cars without driven axles)."""
    m = model.adhesive_mass if model.adhesive_mass is not None else np.where(model.is_engine, model.mass, 0.0)
    return adhesion_coefficient(_per_car(model, v, "v"), rail) * m * G


def implicit_taper(force, other, inertia, v, vmax, dt: float) -> np.ndarray:
    """The top-speed taper factor for whole trains, solved implicitly (stable at any step).

    Per train: ``force`` the traction before the taper (N, > 0 forward), ``other`` every
    other force along the motion (N), ``inertia`` ρ·m (kg), speed ``v``, top speed
    ``vmax`` (NaN: none). The taper ``k(v) = clip(20·(vmax − v), 0, 1)`` is evaluated at
    the end-of-step speed ``v'`` solving ``inertia·(v' − v)/dt = k(v')·force + other``
    (one root: the left side rises, the right side falls with ``v'``); returns ``k(v')``.
    An explicit taper is stiff: it makes a light engine oscillate above its top speed
    at the default step (docs/running-time.md §7).
    """
    force = np.asarray(force, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    inertia = np.asarray(inertia, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    vmax = np.asarray(vmax, dtype=np.float64)
    k = np.ones_like(force)
    full = v + dt * (force + other) / inertia  # speed with the whole force
    has = (full > vmax - TAPER_MS) & (force > 0)  # False where vmax is NaN
    if not has.any():
        return k
    slope = 1.0 / TAPER_MS
    # Inside the taper: inertia·dv/dt = slope·force·(vmax − v − dv) + other.
    dv = (other + slope * force * (vmax - v)) / (inertia / dt + slope * force)
    kt = np.minimum(np.maximum(slope * (vmax - v - dv), 0.0), 1.0)
    return np.where(has, kt, k)


def taper_factor(force: float, other: float, inertia: float, v: float, vmax: float, dt: float) -> float:
    """:func:`implicit_taper` for one train, in scalars (the replay's hot loop)."""
    if not force > 0.0 or not v + dt * (force + other) / inertia > vmax - TAPER_MS:
        return 1.0  # also when vmax is NaN (no top speed): the comparison is False
    slope = 1.0 / TAPER_MS
    dv = (other + slope * force * (vmax - v)) / (inertia / dt + slope * force)
    return min(max(slope * (vmax - v - dv), 0.0), 1.0)


# -- resistances --------------------------------------------------------------------------


def davis(model: CarModel, v) -> np.ndarray:
    """Running resistance ``A + B·|v| + C·v²`` per car (N, ≥ 0 for sane coefficients)."""
    speed = np.abs(_per_car(model, v, "v"))
    return model.davis_a + speed * (model.davis_b + speed * model.davis_c)


#: Per model, the constants of its starting resistance (see _start_terms).
_START_TERMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _start_terms(model: CarModel) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray]:
    """(any car has one, which cars, F0 with NaN as 0, davis(v_m) − F0) of ``model``'s
    starting resistance: made once per model (``nan_to_num`` alone cost more than the
    rest of a planner step)."""
    hit = _START_TERMS.get(model)
    if hit is None:
        f0, vm = model.starting_resistance, model.merge_speed
        assert f0 is not None and vm is not None  # (the caller's check)
        finite = np.isfinite(f0)
        n0 = np.nan_to_num(f0)
        at_merge = model.davis_a + vm * (model.davis_b + vm * model.davis_c)
        hit = _START_TERMS[model] = (bool(finite.any()), finite, n0, at_merge - n0)
    return hit


def running_resistance(model: CarModel, v) -> np.ndarray:
    """Davis with the starting resistance (N, ≥ 0): below the merge speed ``v_m`` the
    force runs linearly from the standstill value ``F0`` to Davis at ``v_m``,
    ``F0 + (davis(v_m) − F0)·|v|/v_m``; cars without ``F0`` keep plain Davis."""
    speed = np.abs(_per_car(model, v, "v"))
    f = davis(model, speed)
    if model.starting_resistance is None or model.merge_speed is None:
        return f
    some, finite, n0, rise = _start_terms(model)
    if not some:
        return f
    vm = model.merge_speed
    return np.where(finite & (speed < vm), n0 + rise * speed / vm, f)


def gravity(model: CarModel, elev_front_bogie, elev_rear_bogie) -> np.ndarray:
    """Gravity along the track per car (N, train frame): ``−m·g·sinθ`` with
    ``sinθ = (y_front − y_rear)/bogie_spacing`` (clipped to [−1, 1]). Uphill towards
    the car front → negative (backwards)."""
    dy = _per_car(model, elev_front_bogie, "elev_front_bogie") - _per_car(
        model, elev_rear_bogie, "elev_rear_bogie"
    )
    sin = np.clip(dy / model.bogie_spacing, -1.0, 1.0)
    return -model.mass * G * sin


def gravity_from_grade(model: CarModel, grade) -> np.ndarray:
    """Gravity per car (N, train frame) from the grade under it (rise per horizontal
    metre towards the train front): ``−m·g·sin(atan(grade))``."""
    return -model.mass * G * np.sin(np.arctan(_per_car(model, grade, "grade")))


def curve_resistance(
    model: CarModel,
    curvature,
    *,
    formula: str = "osrd",
    v=0.0,
    superelevation=0.0,
    gauge: float = STANDARD_GAUGE_M,
    mu: float = OR_CURVE_MU,
    wheelbase=None,
) -> np.ndarray:
    """Curve resistance per car (N, ≥ 0) on track of signed ``curvature`` (1/R).

    ``formula="osrd"`` (default): ``m·g·0.8·|curvature|`` (the 800/r ‰ of docs/physics.md §3.3).
    ``formula="openrails"``: the older Open Rails formula (module docstring), using the
    speed ``v``, ``superelevation`` (m), ``gauge``, ``mu`` and ``wheelbase`` (m, per car;
    default by wagon type).
    """
    k = np.abs(_per_car(model, curvature, "curvature"))
    k = np.nan_to_num(k, nan=0.0)
    if formula == "osrd":
        return model.mass * G * OSRD_CURVE_FACTOR * k
    if formula != "openrails":
        raise ValueError(f"formula must be 'osrd' or 'openrails', not {formula!r}")
    if wheelbase is None:
        wb = np.where(model.is_passenger, WHEELBASE_PASSENGER_M, WHEELBASE_OTHER_M)
    else:
        wb = _per_car(model, wheelbase, "wheelbase")
    speed = np.abs(_per_car(model, v, "v"))
    e = _per_car(model, superelevation, "superelevation")
    with np.errstate(divide="ignore", invalid="ignore"):
        radius = np.where(k > 0, 1.0 / k, np.inf)
        veq = np.sqrt(np.maximum(G * radius * e / gauge, 0.0))
        factor = np.where((veq > 0) & np.isfinite(veq), np.abs((veq - speed) / veq), 1.0)
        f = model.mass * mu * (gauge + wb) * k / 2.0
    return np.where(k > 0, f * factor * OR_START_FACTOR * OR_ZERO_SPEED_FACTOR * G, 0.0)


def opposing_resistance(v, davis_n, curve_n, gravity_n) -> np.ndarray:
    """What the other forces already do against the motion (N per car): Davis + curve
    + the part of gravity against the direction of ``v`` (standstill: gravity
    counts against a forward move). Used by the deceleration braking mode."""
    direction = np.where(np.asarray(v, dtype=np.float64) < 0, -1.0, 1.0)
    return (
        np.asarray(davis_n, dtype=np.float64)
        + np.asarray(curve_n, dtype=np.float64)
        - direction * np.asarray(gravity_n, dtype=np.float64)
    )


# -- braking ------------------------------------------------------------------------------


def brake_shoe_factor(model: CarModel, v) -> np.ndarray | None:
    """The share of MaxBrakeForce each car's brakes give at speed ``v`` (m/s):
    ``clip(μ(v)/μ(0), 0.01, 1)`` from its ``ORTSBrakeShoeFriction`` curve, 1 for cars
    without one (docs/physics.md §3.5). None when no car has a curve."""
    if not model.brake_shoe:
        return None
    speed = _per_car(model, v, "v")
    out = np.ones(len(model))
    for idx, curve in _shoe_groups(model):
        out[idx] = curve.factors(speed[idx])
    return out


def _shoe_groups(model: CarModel) -> list[tuple[np.ndarray, BrakeShoeFriction]]:
    """Cars sharing one curve object (cars of the same stock file), grouped."""
    groups: dict[int, tuple[list[int], BrakeShoeFriction]] = {}
    for i, c in enumerate(model.brake_shoe):
        if c is not None:
            groups.setdefault(id(c), ([], c))[0].append(i)
    return [(np.array(ix, dtype=np.intp), c) for ix, c in groups.values()]


def brake_force_floor(model: CarModel, v_top: float) -> float:
    """The least total full-service brake force (N) of the cars at any speed in
    [0, v_top] (m/s): what a driver can count on over that range. Without friction
    curves: ``ΣMaxBrakeForce``."""
    if not model.brake_shoe:
        return float(model.max_brake.sum())
    return float(brake_force_floors(model, v_top)[1][-1])


def brake_force_floors(model: CarModel, v_top: float) -> tuple[np.ndarray, np.ndarray]:
    """Speeds ``v`` (m/s, 0…v_top) and the least total full-service brake force (N) at
    any speed in [0, v] for each: what the brakes can be counted on for from ``v`` down."""
    # The factors are piecewise linear in v with kinks at the table speeds and where the
    # clamp starts: the table speeds and a fine grid find the least sum.
    top = max(float(v_top), 0.0) if np.isfinite(v_top) else 100.0
    pts = [np.linspace(0.0, top, 401)]
    pts += [np.asarray(c.speed_kmh) / 3.6 for c in model.brake_shoe if c is not None]
    v = np.unique(np.clip(np.concatenate(pts), 0.0, top))
    total = np.zeros(len(v))
    for i, mb in enumerate(model.max_brake):
        c = model.brake_shoe[i] if model.brake_shoe else None
        total += mb * (c.factors(v) if c is not None else 1.0)
    return v, np.minimum.accumulate(total)


def brake(model: CarModel, fraction, v=None) -> np.ndarray:
    """Brake force per car (N, ≥ 0): ``fraction × MaxBrakeForce`` (fraction clipped to
    [0, 1]), at speed ``v`` times :func:`brake_shoe_factor` for cars with a friction curve
    (``v`` None: the force at standstill)."""
    f = np.clip(_per_car(model, fraction, "fraction"), 0.0, 1.0) * model.max_brake
    k = brake_shoe_factor(model, v) if v is not None else None
    return f if k is None else f * k


def brake_for_deceleration(model: CarModel, deceleration, resistance=0.0) -> np.ndarray:
    """The "hourly" brake force per car (N, ≥ 0): ``m·a_b − resistance``, never
    negative, where ``resistance`` is what the other forces already give against the
    motion (:func:`opposing_resistance`)."""
    a = np.maximum(_per_car(model, deceleration, "deceleration"), 0.0)
    return np.maximum(model.mass * a - _per_car(model, resistance, "resistance"), 0.0)


def braking(
    model: CarModel,
    mode: BrakeMode | str,
    *,
    fraction=1.0,
    deceleration=DEFAULT_DECELERATION,
    resistance=0.0,
    v=None,
) -> np.ndarray:
    """Brake force per car in either mode: ``"force"`` → :func:`brake` (``fraction``, at
    speed ``v``);
    ``"deceleration"`` → :func:`brake_for_deceleration` at ``fraction × deceleration``
    (``fraction`` 1 is the full ``a_b``; ``fraction`` 0 releases the brake — it does
    not hold the speed against a falling grade)."""
    mode = BrakeMode(mode)
    if mode is BrakeMode.FORCE:
        return brake(model, fraction, v)
    frac = np.clip(_per_car(model, fraction, "fraction"), 0.0, 1.0)
    f = brake_for_deceleration(model, frac * _per_car(model, deceleration, "deceleration"), resistance)
    return np.where(frac > 0, f, 0.0)


class Prepared:
    """The per-car forces of one model with everything that does not change per step
    worked out once (a replay's hot loop). Same results as the module functions
    (:func:`gravity`, :func:`davis`, the :func:`curve_resistance` of docs/physics.md §3.3,
    :func:`brake`); ``tests/test_physics_parts.py`` checks that."""

    __slots__ = (
        "model",
        "_mg_curve",
        "_a",
        "_b",
        "_c",
        "_brake",
        "_start",
        "_f0",
        "_vm",
        "_slope",
        "_vm_max",
        "_neg_mg",
        "engines",
        "_e_force",
        "_e_power",
        "_e_has_power",
        "_e_curves",
        "_e_curve_rows",
        "_e_force_l",
        "_e_power_l",
        "_e_has_power_l",
        "_shoes",
    )

    def __init__(self, model: CarModel) -> None:
        self.model = model
        self._neg_mg = -model.mass * G
        # Traction: only engines pull (a wagon's force is 0 at any throttle and speed).
        d = _traction_data(model)
        #: Rows of the engines (the cars with traction).
        self.engines = np.flatnonzero(model.is_engine)
        self._e_force = d.force[self.engines]
        self._e_power = d.power[self.engines]
        self._e_has_power = d.has_power[self.engines]
        self._e_force_l = self._e_force.tolist()
        self._e_power_l = self._e_power.tolist()
        self._e_has_power_l = self._e_has_power.tolist()
        pos = {int(c): k for k, c in enumerate(self.engines)}
        self._e_curves = [(pos[i], c) for i, c in d.curves]
        self._e_curve_rows = np.array([i for i, _c in self._e_curves], dtype=np.int64)
        self._mg_curve = model.mass * G * OSRD_CURVE_FACTOR
        self._a, self._b, self._c = model.davis_a, model.davis_b, model.davis_c
        self._brake = model.max_brake
        self._shoes = _shoe_groups(model)
        f0 = model.starting_resistance
        self._start = f0 is not None and model.merge_speed is not None and bool(np.isfinite(f0).any())
        if self._start:
            assert f0 is not None and model.merge_speed is not None
            vm = model.merge_speed
            at_merge = self._a + vm * (self._b + vm * self._c)
            has = np.isfinite(f0)
            self._f0 = np.where(has, f0, 0.0)
            self._vm = np.where(has, vm, 0.0)  # no blend where there is no F0
            self._slope = np.where(has, (at_merge - self._f0) / vm, 0.0)
            self._vm_max = float(np.fmax.reduce(self._vm))  # (NaN: skipped, as `<` never holds)

    @property
    def has_shoe_curves(self) -> bool:
        """Whether a car's brake force depends on speed (:meth:`max_brake` is not None)."""
        return bool(self._shoes)

    def engine_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """Per row of :attr:`engines`: the tractive force, the power limit and whether it
        has one (1/0), as :meth:`traction` uses them; and whether an engine has a
        tractive-force curve instead (which only Python can evaluate)."""
        return (
            self._e_force.astype(np.float64),
            self._e_power.astype(np.float64),
            self._e_has_power.astype(np.float64),
            bool(self._e_curves),
        )

    def columns(self) -> tuple | None:
        """Per car, what :meth:`gravity`, :meth:`davis` and :meth:`curve` work from, as
        new contiguous float arrays (for a compiled loop doing their operations): −m·g,
        the bogie spacing, Davis A, B, C, whether any car has a starting resistance, and
        per car its F0, merge speed and blend slope (0 where none), m·g·k_curve. None when
        a column is not float64 (the loop would not do numpy's arithmetic)."""
        n = len(self._a)
        z = np.zeros(n)
        start = self._start
        f0, vm, slope = (self._f0, self._vm, self._slope) if start else (z, z, z)
        cols = (self._neg_mg, self.model.bogie_spacing, self._a, self._b, self._c)
        tail = (f0, vm, slope, self._mg_curve)
        if any(np.asarray(c).dtype != np.float64 for c in (*cols, *tail)):
            return None
        arr = [np.array(np.broadcast_to(c, (n,)), dtype=np.float64) for c in cols]
        arr2 = [np.array(np.broadcast_to(c, (n,)), dtype=np.float64) for c in tail]
        return (*arr, bool(start), *arr2)

    def gravity(self, elev_front_bogie: np.ndarray, elev_rear_bogie: np.ndarray) -> np.ndarray:
        # −m·g·sinθ, sinθ = Δy / spacing clipped to [−1, 1] (only a car standing on its
        # end would need the clip).
        sin = (elev_front_bogie - elev_rear_bogie) / self.model.bogie_spacing
        return self._neg_mg * np.minimum(np.maximum(sin, -1.0), 1.0)

    def traction(
        self, throttle: np.ndarray, v: np.ndarray, adhesive_g: np.ndarray | None = None
    ) -> np.ndarray:
        """:func:`traction` without the taper (``taper=False``), for the engines only:
        ``throttle`` and ``v`` (and the result) have one value per row of
        :attr:`engines`. ``adhesive_g``: the engines' adhesive weight (N); the force is
        then at most Curtius–Kniffler's μ(v) times it (docs/running-time.md §6)."""
        if len(throttle) <= 4:
            adh = adhesive_g.tolist() if adhesive_g is not None else None
            return np.array(self.traction_few(throttle.tolist(), v.tolist(), adh), dtype=np.float64)
        t = np.minimum(np.maximum(throttle, 0.0), 1.0)
        speed = np.abs(v)
        f = self._e_force * t
        moving = self._e_has_power & (speed > 0)
        # P/v where there is a power limit and the engine moves (no division by 0)
        cap = np.where(moving, self._e_power * t * t / np.where(moving, speed, 1.0), np.inf)
        f = np.minimum(f, cap)
        if self._e_curves:
            # (in Python floats: the same values as float(t[i]), without a numpy scalar each)
            tl, sl = t.tolist(), speed.tolist()
            f[self._e_curve_rows] = [max(float(curve(tl[i], sl[i])), 0.0) for i, curve in self._e_curves]
        f = f + 0.0
        if adhesive_g is not None:
            mu = 0.161 + 7.5 / (3.6 * speed + 44.0)  # (speed: np.abs(v))
            f = np.minimum(f, mu * adhesive_g)
        return f

    def traction_few(self, throttle: list, v: list, adhesive_g: list | None = None) -> list[float]:
        """:meth:`traction` in Python floats, for a few engines: the same IEEE
        operations without numpy's per-call cost on one-element arrays."""
        out = []
        force, power, has_power = self._e_force_l, self._e_power_l, self._e_has_power_l
        for k, (tk, vk) in enumerate(zip(throttle, v)):
            t = min(max(tk, 0.0), 1.0)
            speed = abs(vk)
            f = force[k] * t
            if has_power[k] and speed > 0:
                f = min(f, power[k] * t * t / speed)
            out.append(f + 0.0)
        for i, curve in self._e_curves:
            t = min(max(float(throttle[i]), 0.0), 1.0)
            out[i] = max(float(curve(t, abs(float(v[i])))), 0.0) + 0.0
        if adhesive_g is not None:
            out = [min(f, (0.161 + 7.5 / (3.6 * abs(vk) + 44.0)) * a) for f, vk, a in zip(out, v, adhesive_g)]
        return out

    def davis(self, v: np.ndarray) -> np.ndarray:
        """:func:`running_resistance` (Davis, with the starting resistance if any)."""
        speed = np.abs(v)
        f = self._a + speed * (self._b + speed * self._c)
        # (moving trains: no car is under its merge speed; fmin skips a NaN as `<` does)
        if self._start and np.fmin.reduce(speed) < self._vm_max:
            low = speed < self._vm
            if np.logical_or.reduce(low):
                return np.where(low, self._f0 + self._slope * speed, f)
        return f

    def curve(self, curvature: np.ndarray) -> np.ndarray:
        return self._mg_curve * np.abs(curvature)

    def curve_rows(self, curvature: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """:meth:`curve` of the cars ``rows`` only (``curvature`` one value per row)."""
        return self._mg_curve[rows] * np.abs(curvature)

    def brake(self, fraction: np.ndarray) -> np.ndarray:
        return np.clip(fraction, 0.0, 1.0) * self._brake

    def max_brake(self, v: np.ndarray) -> np.ndarray | None:
        """Full-service brake force per car at speeds ``v`` (:func:`brake_shoe_factor`);
        None when no car has a friction curve (the force is then MaxBrakeForce)."""
        if not self._shoes:
            return None
        out = self._brake.copy()
        for idx, curve in self._shoes:
            out[idx] *= curve.factors(v[idx])
        return out
