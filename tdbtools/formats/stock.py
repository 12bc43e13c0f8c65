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

from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import Diagnostics
from ..stf import parse_file
from ..stf.tree import Document
from ._read import Reader
from ._records import fast_pickle
from .stock_generic import _GENERIC
from .stock_handlers import _Raw, _read_curve, _uic_screw_coupling, _walk
from .stock_orts import OrtsStock, read_orts
from .stock_parts import (
    DEFAULT_COUPLER,
    DEFAULT_DRIVER_WHEEL_RADIUS_M,
    DEFAULT_MASS_KG,
    DEFAULT_MERGE_SPEED_MS,
    DEFAULT_SIZE_M,
    DEFAULT_WHEEL_RADIUS_M,
    DRAG_CONSTANT,
    DRAG_CONSTANT_OTHER,
    FCALC_V2_MAX,
    LBF_N,
    SHORT_TON_KG,
    BrakeShoeFriction,
    Coupler,
    TractiveForceCurve,
)
from .stock_resistance import davis_a_estimate, davis_b_estimate, davis_c_estimate, fcalc_davis

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


fast_pickle(Stock)
