"""The Open Rails parts of a ``.eng`` / ``.wag`` the Open Rails physics profile needs
(docs/physics.md §7): diesel prime movers (``ORTSDieselEngines``), brake shoes and the
air or vacuum brake system, dynamic braking, steam cylinders and boiler, the continuous
force and rail-power limits.

Read once per file into one immutable :class:`OrtsStock` (``Stock.orts``). Like the rest
of the stock reader, the last occurrence of a field wins, and every physical value goes
through the unit families of :mod:`tdbtools.stf.units` (pressures stay in psi, as Open
Rails keeps them; pressure rates in psi/s). Values that do not parse are findings
(strict: errors) and leave the field at its Open Rails default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..stf.tree import Block, Document
from ._read import Reader, to_float, to_int32
from ._records import fast_pickle

__all__ = [
    "AirBrakeSpec",
    "ControllerSpec",
    "Notch",
    "DieselEngineSpec",
    "FreightSpec",
    "GearBoxSpec",
    "MstsDiesel",
    "LocoBrakeSpec",
    "OrtsStock",
    "SteamSpec",
    "Table",
    "TractionRamps",
    "read_orts",
]

#: A table longer than this many (x, y) pairs is refused (hostile input).
MAX_TABLE_POINTS = 200
#: At most this many prime movers in one ORTSDieselEngines block.
MAX_DIESEL_ENGINES = 16


@dataclass(frozen=True, slots=True)
class Table:
    """A 1-D table (Open Rails' Interpolator): linear between points, the end segments
    extended past the ends. ``xs`` strictly increase."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __call__(self, x: float) -> float:
        xs, ys = self.xs, self.ys
        if len(xs) == 1:
            return ys[0]
        n = len(xs)
        i = 0
        if x >= xs[1]:
            i = n - 2
            while i > 0 and xs[i] > x:
                i -= 1
        d = xs[i + 1] - xs[i]
        return ((xs[i + 1] - x) * ys[i] + (x - xs[i]) * ys[i + 1]) / d

    def inverse(self) -> Table:
        """The table read the other way round (y → x); ys must strictly increase."""
        return Table(self.ys, self.xs)


@dataclass(frozen=True, slots=True)
class DieselEngineSpec:
    """One ``Diesel ( … )`` of ``ORTSDieselEngines`` (Open Rails' DieselEngine.Parse).

    RPMs are revolutions per minute; ``change_up``/``change_down`` are the RPM rate
    limits (RPM/s), ``rate_up``/``rate_down`` the limits of the rate's change (RPM/s²).
    ``throttle_rpm`` maps throttle % (0–100) to demanded RPM; its RPMs are made strictly
    increasing (each at least 1 RPM above the one before) as Open Rails does, so that the
    inverse (the *apparent throttle*) exists. ``power`` maps RPM to power (W).
    """

    idle_rpm: float = 0.0
    max_rpm: float = 0.0
    governor_rpm: float = 0.0
    change_up: float = 0.0
    change_down: float = 0.0
    rate_up: float = 0.0
    rate_down: float = 0.0
    max_power_w: float = 0.0
    starting_rpm: float = 0.0
    throttle_rpm: Table | None = None
    power: Table | None = None
    torque: Table | None = None


@dataclass(frozen=True, slots=True)
class AirBrakeSpec:
    """A car's brake equipment (``BrakeSystemType`` and the MSTS/ORTS brake tokens of the
    ``Wagon`` block). Pressures psi, rates psi/s; defaults are AirSinglePipe's."""

    system: str = "air_single_pipe"
    max_cylinder_psi: float = 64.0  # BrakeCylinderPressureForMaxBrakeBrakeForce
    max_release_rate: float = 1.86  # MaxReleaseRate
    max_application_rate: float = 0.9  # MaxApplicationRate
    max_aux_charging_rate: float = 1.684  # MaxAuxilaryChargingRate
    aux_cyl_volume_ratio: float = 2.5  # TripleValveRatio
    cylinder_spring_psi: float = 0.0  # ORTSCylinderSpringPressure
    # VacuumSinglePipe's reading of the same tokens (a bare number is inHg, inHg/s)
    # and its own: psi, psi/s, m
    vac_max_force_psi: float = 21 * 0.4911542  # BrakeCylinderPressureForMaxBrakeBrakeForce
    vac_application_rate: float = 2.5  # MaxApplicationRate
    vac_release_rate: float = 2.5  # MaxReleaseRate
    vac_cylinder_size_m: float = 18 * 0.0254  # ORTSBrakeCylinderSize
    vac_num_cylinders: int = 2  # ORTSNumberBrakeCylinders
    direct_admission: bool = False  # ORTSDirectAdmissionValve ( 1 )

    @property
    def vacuum(self) -> bool:
        return self.system.startswith("vacuum")


@dataclass(frozen=True, slots=True)
class LocoBrakeSpec:
    """The locomotive's train-brake controller and brake pipe (``Engine`` block).
    Pressures psi (vacuum systems: inHg of vacuum), rates psi/s, times s."""

    max_system_psi: float = 90.0  # TrainBrakesControllerMaxSystemPressure
    full_service_drop_psi: float = 26.0  # TrainBrakesControllerFullServicePressureDrop
    pipe_charging_rate: float = 21.0  # (ORTS)BrakePipeChargingRate
    pipe_time_factor_s: float = 0.0015  # BrakePipeTimeFactor
    service_time_factor_s: float = 1.009  # BrakeServiceTimeFactor
    emergency_time_factor_s: float = 0.1  # BrakeEmergencyTimeFactor
    # a vacuum train's: full vacuum (psi; a bare number is inHg) and the ejector's or
    # exhauster's rate (psi/s; bare inHg/s) from the same tokens
    vac_max_psi: float = 21 * 0.4911542  # TrainBrakesControllerMaxSystemPressure
    vac_charging_rate: float = 10 * 0.4911542  # (ORTS)BrakePipeChargingRate


@dataclass(frozen=True, slots=True)
class SteamSpec:
    """Cylinders and boiler (``Engine`` block): diameter and stroke in m, boiler pressure
    psi, the number of cylinders (Open Rails' default 2)."""

    num_cylinders: int = 2
    cylinder_diameter_m: float = 0.0
    cylinder_stroke_m: float = 0.0
    boiler_psi: float = 0.0


@dataclass(frozen=True, slots=True)
class Notch:
    """One notch of a cab controller: its value, whether the handle moves smoothly from
    it to the next, and its type (the token without the ``TrainBrakesController`` /
    ``EngineBrakesController`` prefix and the ``Start`` suffix, lower case: ``release``,
    ``fullservice``, ``graduatedselflaplimited``, ``emergency``, ``dummy`` …)."""

    value: float
    smooth: bool
    kind: str = "dummy"


@dataclass(frozen=True, slots=True)
class ControllerSpec:
    """A cab controller (``EngineControllers ( Throttle ( min max step default
    NumNotches ( n Notch ( value smooth type ) … ) ) )``; docs/physics.md §7.10)."""

    minimum: float = 0.0
    maximum: float = 1.0
    step: float = 0.0
    default: float = 0.0
    notches: tuple[Notch, ...] = ()


@dataclass(frozen=True, slots=True)
class GearBoxSpec:
    """The gearbox tokens of an ``Engine`` block (Open Rails' ``MSTSGearBoxParams``):
    per gear its top speed (m/s; bare numbers mph) and largest force (N) or, with
    ``ORTSGearBoxTractiveForceAtSpeed``, the force at its top speed; the shift proportions
    and forces; ``operation`` manual/automatic/semiautomatic; ``transmission`` the
    ``ORTSDieselTransmissionType`` (legacy when absent). ``params`` counts the four tokens
    Open Rails requires three of before it fits a gearbox."""

    gears: int = 1
    operation: str = "manual"
    max_speeds_ms: tuple[float, ...] = ()
    max_forces_n: tuple[float, ...] = ()
    forces_at_speed_n: tuple[float, ...] = ()
    overspeed_percent: float = 150.0
    back_load_force_n: float = 1000.0
    coasting_force_n: float = 500.0
    up_proportion: float = 0.85
    down_proportion: float = 0.35
    transmission: str = "legacy"
    clutch: str = "unknown"
    params: int = 0

    @property
    def fitted(self) -> bool:
        return self.params >= 3 and len(self.max_speeds_ms) == self.gears > 0


@dataclass(frozen=True, slots=True)
class MstsDiesel:
    """A diesel's MSTS engine tokens, from which Open Rails builds its prime mover when
    the file has no ``ORTSDieselEngines`` (``DieselEngine.EstablishParameters``); 0 = absent."""

    idle_rpm: float = 0.0  # DieselEngineIdleRPM
    max_rpm: float = 0.0  # DieselEngineMaxRPM
    change_rate: float = 0.0  # DieselEngineMaxRPMChangeRate
    governor_rpm: float = 0.0  # ORTSDieselEngineGovernorRPM
    max_power_w: float = 0.0  # ORTSDieselEngineMaxPower


@dataclass(frozen=True, slots=True)
class FreightSpec:
    """``ORTSFreightAnims`` as it sets the mass (``FreightAnimations``): the empty weight
    (None: not given, ``MassKG`` stands), the load of the first continuous animation full at
    the start, the static animations' weights."""

    empty_kg: float | None = None
    load_kg: float = 0.0
    static_kg: float = 0.0


@dataclass(frozen=True, slots=True)
class TractionRamps:
    """``ORTSTractiveForceRamp{Up,Down,DownToZero}Rate`` (N/s) and
    ``ORTSTractivePowerRamp{Up,Down,DownToZero}Rate`` (W/s) of an ``Engine`` block
    (MSTSLocomotive.Parse); 0 = not given: the force follows its target at once."""

    force_up: float = 0.0
    force_down: float = 0.0
    force_to_zero: float = 0.0
    power_up: float = 0.0
    power_down: float = 0.0
    power_to_zero: float = 0.0


@dataclass(frozen=True, slots=True)
class OrtsStock:
    """The Open Rails values of one stock file (None / 0: not given)."""

    diesel_engines: tuple[DieselEngineSpec, ...] = ()
    max_brake_shoe_force_n: float = 0.0
    brake_shoe_type: str = ""
    num_brake_shoes: int = 0
    brakes: AirBrakeSpec = field(default_factory=AirBrakeSpec)
    loco_brakes: LocoBrakeSpec | None = None
    drive_wheel_weight_kg: float | None = None
    max_rail_power_w: float = 0.0
    unloading_speed_ms: float = 0.0
    continuous_force_time_factor_s: float = 1800.0
    max_dynamic_brake_force_n: float = 0.0
    dynamic_brake_min_speed_ms: float = 0.0
    dynamic_brake_curve: object | None = None  # a stock.TractiveForceCurve
    dynamic_brake_delay_s: float = 0.0  # DynamicBrakesDelayTimeBeforeEngaging
    dynamic_brake: ControllerSpec | None = None  # EngineControllers ( Brake_Dynamic ( … ) )
    dynamic_ramps: TractionRamps = field(default_factory=TractionRamps)
    steam: SteamSpec | None = None
    throttle: ControllerSpec | None = None  # EngineControllers ( Throttle ( … ) )
    train_brake: ControllerSpec | None = None  # EngineControllers ( Brake_Train ( … ) )
    min_reduction_psi: float = 0.0  # TrainBrakesControllerMinPressureReduction
    ramps: TractionRamps = field(default_factory=TractionRamps)
    power_limited: bool = False  # ORTSTractiveForceIsPowerLimited (a diesel)
    gearbox: GearBoxSpec | None = None
    freight: FreightSpec | None = None
    msts_diesel: MstsDiesel = field(default_factory=MstsDiesel)


# -- reading -----------------------------------------------------------------------------------


def _table(rd: Reader, blk: Block, ys_family: str | None = None) -> Table | None:
    """``Name ( x y x y … )`` as a :class:`Table`, or None (reported) when unusable."""
    items = blk.items
    if len(items) > 2 * MAX_TABLE_POINTS:
        rd.problem(blk, f"{blk.name}: more than {MAX_TABLE_POINTS} pairs")
        return None
    vals: list[float] = []
    for j, it in enumerate(items):
        if it.__class__ is Block:
            rd.problem(blk, f"{blk.name}: expected numbers, found block {it.name!r}", j)
            return None
        if j % 2 and ys_family is not None:
            v = rd.quantity_of(blk, str(it), j, (ys_family,), None)
        else:
            v = rd.value(blk, j, to_float, None, "a table value")
        if v is None:
            return None
        vals.append(float(v))
    if len(vals) % 2:
        rd.problem(blk, f"{blk.name}: odd number of values (the last one is ignored)", len(vals) - 1)
        vals.pop()
    xs, ys = vals[0::2], vals[1::2]
    if len(xs) < 2:
        rd.problem(blk, f"{blk.name}: at least two pairs are needed")
        return None
    if any(b <= a for a, b in zip(xs, xs[1:])):
        rd.problem(blk, f"{blk.name}: the first values of the pairs must increase")
        return None
    return Table(tuple(xs), tuple(ys))


def _num(rd: Reader, blk: Block, family: str | None, default: float) -> float:
    if family is None:
        return float(rd.value(blk, 0, to_float, default, blk.name))
    return float(rd.quantity(blk, 0, family, default=default))


_DIESEL_FIELDS: dict[str, tuple[str, str | None]] = {
    "idlerpm": ("idle_rpm", None),
    "maxrpm": ("max_rpm", None),
    "govenorrpm": ("governor_rpm", None),  # sic: Open Rails' spelling
    "changeuprpmps": ("change_up", None),
    "changedownrpmps": ("change_down", None),
    "rateofchangeuprpmpss": ("rate_up", None),
    "rateofchangedownrpmpss": ("rate_down", None),
    "maximalpower": ("max_power_w", "power"),
    "startingrpm": ("starting_rpm", None),
}


def _diesel(rd: Reader, blk: Block) -> DieselEngineSpec:
    values: dict[str, object] = {}
    for it in blk.items:
        if it.__class__ is not Block:
            continue
        known = _DIESEL_FIELDS.get(it.key)
        if known is not None:
            values[known[0]] = _num(rd, it, known[1], 0.0)
        elif it.key == "throttlerpmtab":
            t = _table(rd, it)
            if t is not None:
                ys = list(t.ys)
                for i in range(1, len(ys)):  # Open Rails: keep the RPMs strictly increasing
                    if ys[i] <= ys[i - 1]:
                        ys[i] = ys[i - 1] + 1.0
                values["throttle_rpm"] = Table(t.xs, tuple(ys))
        elif it.key == "dieselpowertab":
            values["power"] = _table(rd, it, "power")
        elif it.key == "dieseltorquetab":
            values["torque"] = _table(rd, it, "force")
    spec = DieselEngineSpec(**values)  # type: ignore[arg-type]
    if spec.max_rpm <= spec.idle_rpm:
        rd.problem(blk, f"Diesel: MaxRPM ({spec.max_rpm:g}) must exceed IdleRPM ({spec.idle_rpm:g})")
    if spec.change_up <= 0 or spec.change_down <= 0:
        rd.problem(blk, "Diesel: ChangeUpRPMpS and ChangeDownRPMpS must be positive")
    if spec.rate_up <= 0 or spec.rate_down <= 0:
        rd.problem(
            blk,
            "Diesel: RateOfChangeUpRPMpSS and RateOfChangeDownRPMpSS must be positive (else the RPM never moves)",
        )
    return spec


def _diesel_engines(rd: Reader, blk: Block) -> tuple[DieselEngineSpec, ...]:
    engines = [_diesel(rd, it) for it in blk.items if it.__class__ is Block and it.key == "diesel"]
    if len(engines) > MAX_DIESEL_ENGINES:
        rd.problem(blk, f"{blk.name}: more than {MAX_DIESEL_ENGINES} engines; the rest are ignored")
        engines = engines[:MAX_DIESEL_ENGINES]
    count = next((it for it in blk.items if it.__class__ is not Block), None)
    if count is not None:
        n = rd.value(blk, 0, to_int32, len(engines), "the number of engines")
        if n != len(engines):
            rd.problem(blk, f"{blk.name}: the count says {n} engines, found {len(engines)}", 0)
    if not engines:
        rd.problem(blk, f"{blk.name}: no Diesel block")
    return tuple(engines)


_WAGON_BRAKE: dict[str, tuple[str, str]] = {
    "brakecylinderpressureformaxbrakebrakeforce": ("max_cylinder_psi", "pressure"),
    "maxreleaserate": ("max_release_rate", "pressure_rate"),
    "maxapplicationrate": ("max_application_rate", "pressure_rate"),
    "maxauxilarychargingrate": ("max_aux_charging_rate", "pressure_rate"),
    "triplevalveratio": ("aux_cyl_volume_ratio", ""),
    # Open Rails' token (AirSinglePipe.Parse); the longer name was ours, still read
    "ortscylinderspringpressure": ("cylinder_spring_psi", "pressure"),
    "ortsbrakecylinderspringpressure": ("cylinder_spring_psi", "pressure"),
}
#: The vacuum reading of brake tokens (Open Rails' VacuumSinglePipe.Parse): bare inHg.
_WAGON_VACUUM: dict[str, tuple[str, str]] = {
    "brakecylinderpressureformaxbrakebrakeforce": ("vac_max_force_psi", "pressure_inhg"),
    "maxreleaserate": ("vac_release_rate", "pressure_rate_inhg"),
    "maxapplicationrate": ("vac_application_rate", "pressure_rate_inhg"),
}
_LOCO_VACUUM: dict[str, tuple[str, str]] = {
    "trainbrakescontrollermaxsystempressure": ("vac_max_psi", "pressure_inhg"),
    "brakepipechargingrate": ("vac_charging_rate", "pressure_rate_inhg"),
    "ortsbrakepipechargingrate": ("vac_charging_rate", "pressure_rate_inhg"),
}
_LOCO_BRAKE: dict[str, tuple[str, str]] = {
    "trainbrakescontrollermaxsystempressure": ("max_system_psi", "pressure"),
    "trainbrakescontrollerfullservicepressuredrop": ("full_service_drop_psi", "pressure"),
    "brakepipechargingrate": ("pipe_charging_rate", "pressure_rate"),
    "ortsbrakepipechargingrate": ("pipe_charging_rate", "pressure_rate"),  # (real files: ORTS…)
    "brakepipetimefactor": ("pipe_time_factor_s", "time"),
    "brakeservicetimefactor": ("service_time_factor_s", "time"),
    "brakeemergencytimefactor": ("emergency_time_factor_s", "time"),
}
_RAMPS: dict[str, tuple[str, str]] = {
    "ortstractiveforcerampuprate": ("force_up", "force_rate"),
    "ortstractiveforcerampdownrate": ("force_down", "force_rate"),
    "ortstractiveforcerampdowntozerorate": ("force_to_zero", "force_rate"),
    "ortstractivepowerrampuprate": ("power_up", "power_rate"),
    "ortstractivepowerrampdownrate": ("power_down", "power_rate"),
    "ortstractivepowerrampdowntozerorate": ("power_to_zero", "power_rate"),
}
#: the dynamic brake's ramps (the same fields; MSTSLocomotive.Parse, manual §"ramps")
_DYN_RAMPS: dict[str, tuple[str, str]] = {
    k.replace("ortstractive", "ortsdynamicbrake"): x for k, x in _RAMPS.items()
}
_GEARBOX_NUM: dict[str, tuple[str, str]] = {
    "gearboxoverspeedpercentageforfailure": ("overspeed_percent", ""),
    "gearboxbackloadforce": ("back_load_force_n", "force"),
    "gearboxcoastingforce": ("coasting_force_n", "force"),
    "gearboxupgearproportion": ("up_proportion", ""),
    "gearboxdowngearproportion": ("down_proportion", ""),
}
_GEARBOX_LIST: dict[str, tuple[str, str, bool]] = {  # field, unit family, counts toward "fitted"
    "gearboxmaxspeedforgears": ("max_speeds_ms", "speed_mph", True),
    "gearboxmaxtractiveforceforgears": ("max_forces_n", "force", True),
    "ortsgearboxtractiveforceatspeed": ("forces_at_speed_n", "force", True),
}
_MSTS_DIESEL: dict[str, tuple[str, str | None]] = {
    "dieselengineidlerpm": ("idle_rpm", None),
    "dieselenginemaxrpm": ("max_rpm", None),
    "dieselenginemaxrpmchangerate": ("change_rate", None),
    "ortsdieselenginegovernorrpm": ("governor_rpm", None),
    "ortsdieselenginemaxpower": ("max_power_w", "power"),
}
#: At most this many gears (hostile input).
MAX_GEARS = 32


def _gear_list(rd: Reader, blk: Block, family: str, n: int) -> tuple[float, ...]:
    vals = [it for it in blk.items if it.__class__ is not Block][: min(n, MAX_GEARS)]
    out = [rd.quantity_of(blk, str(v), j, (family,), None) for j, v in enumerate(vals)]
    if len(out) < n:
        rd.problem(blk, f"{blk.name}: {n} gears need {n} values, found {len(out)}")
    return tuple(float(x) for x in out if x is not None)


_STEAM: dict[str, tuple[str, str | None]] = {
    "cylinderdiameter": ("cylinder_diameter_m", "distance"),
    "cylinderstroke": ("cylinder_stroke_m", "distance"),
    "maxboilerpressure": ("boiler_psi", "pressure"),
}


#: Prefixes Open Rails strips from a notch's type (MSTSNotch).
_NOTCH_PREFIXES = ("trainbrakescontroller", "enginebrakescontroller", "brakemanbrakescontroller")
#: At most this many notches in one controller (hostile input).
MAX_NOTCHES = 64


def _notch_kind(token: str) -> str:
    k = token.lower()
    for p in _NOTCH_PREFIXES:
        if k.startswith(p):
            k = k[len(p) :]
            break
    return k[: -len("start")] if k.endswith("start") else (k or "dummy")


#: EngineControllers' blocks this profile reads, and the field each fills
_CONTROLLERS = {"throttle": "throttle", "brake_train": "train_brake", "brake_dynamic": "dynamic_brake"}


def _controller(rd: Reader, blk: Block) -> ControllerSpec | None:
    """``Name ( min max step default NumNotches ( n Notch ( v smooth type ) … ) )``."""
    nums: list[float] = []
    notches: list[Notch] = []
    for j, it in enumerate(blk.items):
        if it.__class__ is Block:
            if it.key != "numnotches":
                continue
            for nb in it.items:
                if nb.__class__ is not Block or nb.key != "notch":
                    continue
                if len(notches) >= MAX_NOTCHES:
                    rd.problem(it, f"{blk.name}: more than {MAX_NOTCHES} notches; the rest are ignored")
                    break
                value = rd.value(nb, 0, to_float, None, "a notch value")
                smooth = rd.value(nb, 1, to_float, 0.0, "a notch's smooth flag")
                kind = rd.string(nb, 2, "dummy") if len(nb.items) > 2 else "dummy"
                if value is not None:
                    notches.append(Notch(float(value), float(smooth) != 0.0, _notch_kind(kind)))
        elif len(nums) < 4:
            x = rd.value(blk, j, to_float, None, f"{blk.name}'s min, max, step and default")
            if x is None:
                return None
            nums.append(float(x))
    if len(nums) < 4:
        rd.problem(blk, f"{blk.name}: expected min, max, step and default")
        return None
    lo, hi, step, default = nums
    if not hi > lo:
        rd.problem(blk, f"{blk.name}: the maximum ({hi:g}) must exceed the minimum ({lo:g})")
        return None
    if any(b.value < a.value for a, b in zip(notches, notches[1:])):
        rd.problem(blk, f"{blk.name}: the notch values must not decrease")
        return None
    return ControllerSpec(lo, hi, step, default, tuple(notches))


def _flag(rd: Reader, blk: Block, default: bool) -> bool:
    """STFReader.ReadBoolBlock: an empty block is ``default``; else 0/false is false."""
    if not blk.items:
        return default
    return str(blk.items[0]).lower() not in ("0", "false", "off")


def _freight(rd: Reader, blk: Block) -> FreightSpec:
    empty: float | None = None
    load = static = 0.0
    for it in blk.items:
        if it.__class__ is not Block:
            continue
        if it.key == "wagonemptyweight":
            empty = _num(rd, it, "mass", -1.0)
        elif it.key == "freightanimcontinuous":
            full = when_full = 0.0
            for sub in it.items:
                if sub.__class__ is Block and sub.key == "freightweightwhenfull":
                    when_full = _num(rd, sub, "mass", 0.0)
                elif sub.__class__ is Block and sub.key == "fullatstart":
                    full = 1.0 if _flag(rd, sub, True) else 0.0
            if full and not load:  # only the first full load counts (Open Rails warns)
                load = when_full
        elif it.key == "freightanimstatic":
            for sub in it.items:
                if sub.__class__ is Block and sub.key == "freightweight":
                    static += _num(rd, sub, "mass", 0.0)
    return FreightSpec(None if empty is None or empty == -1.0 else empty, load, static)


def _positive(rd: Reader, blk: Block, v: float) -> float | None:
    if not v > 0:
        rd.problem(blk, f"{blk.name}: must be positive, found {v:g}")
        return None
    return v


def read_orts(
    doc: Document, rd: Reader, kind: str, read_curve: Callable[[Reader, Block], object] | None = None
) -> OrtsStock:
    """The :class:`OrtsStock` of a parsed stock file (``kind`` "engine" or "wagon"; a
    ``.wag`` ignores ``Engine`` blocks, as Open Rails' MSTSWagon does). ``read_curve``
    reads a 2-D force-curve block (the stock reader passes its
    ``ORTSMaxTractiveForceCurves`` reader; without it such blocks are skipped)."""
    v: dict[str, object] = {}
    brakes: dict[str, object] = {}
    loco: dict[str, object] = {}
    steam: dict[str, object] = {}
    ramps: dict[str, object] = {}
    dyn_ramps: dict[str, object] = {}
    gear: dict[str, object] = {}
    msts_diesel: dict[str, object] = {}
    handlers: dict[str, Callable[[Block], None]] = {}

    def wagon(it: Block) -> None:
        k = it.key
        if k == "ortsmaxbrakeshoeforce":
            v["max_brake_shoe_force_n"] = _num(rd, it, "force", 0.0)
        elif k == "ortsbrakeshoetype":
            v["brake_shoe_type"] = rd.string(it, 0, "")
        elif k == "ortsnumbercarbrakeshoes":
            v["num_brake_shoes"] = int(rd.value(it, 0, to_int32, 0, it.name))
        elif k == "brakesystemtype":
            brakes["system"] = rd.string(it, 0, "air_single_pipe").lower()
        elif k in _WAGON_BRAKE:
            name, fam = _WAGON_BRAKE[k]
            x = _positive(rd, it, _num(rd, it, fam or None, 0.0))
            if x is not None:
                brakes[name] = x
            if k in _WAGON_VACUUM:
                vname, vfam = _WAGON_VACUUM[k]
                if x is not None:
                    brakes[vname] = _num(rd, it, vfam, 0.0)
        elif k == "ortsbrakecylindersize":
            x = _positive(rd, it, _num(rd, it, "distance", 0.0))
            if x is not None:
                brakes["vac_cylinder_size_m"] = x
        elif k == "ortsnumberbrakecylinders":
            brakes["vac_num_cylinders"] = min(max(int(rd.value(it, 0, to_int32, 2, it.name)), 1), 64)
        elif k == "ortsdirectadmissionvalve":
            brakes["direct_admission"] = _num(rd, it, None, 0.0) == 1.0
        elif k == "brakeequipmenttype":
            pass  # informational in Open Rails' simple systems
        elif k == "ortsfreightanims":
            v["freight"] = _freight(rd, it)

    def engine(it: Block) -> None:
        k = it.key
        if k == "ortsdieselengines":
            v["diesel_engines"] = _diesel_engines(rd, it)
        elif k == "ortsdrivewheelweight":
            v["drive_wheel_weight_kg"] = _num(rd, it, "mass", 0.0)
        elif k == "ortsmaxrailoutputpower":
            v["max_rail_power_w"] = _num(rd, it, "power", 0.0)
        elif k == "ortsunloadingspeed":
            v["unloading_speed_ms"] = _num(rd, it, "speed", 0.0)
        elif k == "ortscontinuousforcetimefactor":
            x = _positive(rd, it, _num(rd, it, "time", 1800.0))
            if x is not None:
                v["continuous_force_time_factor_s"] = x
        elif k == "dynamicbrakesmaximumforce" or k == "ortsmaxdynamicbrakeforce":
            v["max_dynamic_brake_force_n"] = _num(rd, it, "force", 0.0)
        elif k == "dynamicbrakesminusablespeed":
            # a bare number is mph (MSTSLocomotive.Parse: SpeedDefaultMPH)
            v["dynamic_brake_min_speed_ms"] = _num(rd, it, "speed_mph", 0.0)
        elif k == "dynamicbrakesdelaytimebeforeengaging":
            v["dynamic_brake_delay_s"] = max(_num(rd, it, "time", 0.0), 0.0)
        elif k == "ortsdynamicbrakeforcecurves" and read_curve is not None:
            v["dynamic_brake_curve"] = read_curve(rd, it)
        elif k in _LOCO_BRAKE:
            name, fam = _LOCO_BRAKE[k]
            x = _positive(rd, it, _num(rd, it, fam, 0.0))
            if x is not None:
                loco[name] = x
                if k in _LOCO_VACUUM:
                    vname, vfam = _LOCO_VACUUM[k]
                    loco[vname] = _num(rd, it, vfam, 0.0)
        elif k in _STEAM:
            sname, sfam = _STEAM[k]
            steam[sname] = _num(rd, it, sfam, 0.0)
        elif k in _RAMPS:
            rname, rfam = _RAMPS[k]
            x = _positive(rd, it, _num(rd, it, rfam, 0.0))
            if x is not None:
                ramps[rname] = x
        elif k in _DYN_RAMPS:
            rname, rfam = _DYN_RAMPS[k]
            x = _positive(rd, it, _num(rd, it, rfam, 0.0))
            if x is not None:
                dyn_ramps[rname] = x
        elif k == "gearboxnumberofgears":
            gear["gears"] = min(max(int(rd.value(it, 0, to_int32, 1, it.name)), 1), MAX_GEARS)
            gear["params"] = int(gear.get("params", 0)) + 1  # type: ignore[call-overload]
        elif k == "gearboxoperation":
            gear["operation"] = rd.string(it, 0, "manual").lower()
            gear["params"] = int(gear.get("params", 0)) + 1  # type: ignore[call-overload]
        elif k in _GEARBOX_LIST:
            gname, gfam, counts = _GEARBOX_LIST[k]
            gear[gname] = _gear_list(rd, it, gfam, int(gear.get("gears", 1)))  # type: ignore[call-overload]
            gear["params"] = int(gear.get("params", 0)) + counts  # type: ignore[call-overload]
        elif k in _GEARBOX_NUM:
            gname, gfam = _GEARBOX_NUM[k]
            gear[gname] = _num(rd, it, gfam or None, 0.0)
        elif k == "ortsdieseltransmissiontype":
            gear["transmission"] = rd.string(it, 0, "legacy").lower()
        elif k == "ortsmainclutchtype":
            gear["clutch"] = rd.string(it, 0, "unknown").lower()
        elif k in _MSTS_DIESEL:
            mname, mfam = _MSTS_DIESEL[k]
            msts_diesel[mname] = _num(rd, it, mfam, 0.0)
        elif k == "ortstractiveforceispowerlimited":
            v["power_limited"] = rd.string(it, 0, "false").lower() in ("1", "true", "on")
        elif k == "numcylinders":
            steam["num_cylinders"] = int(rd.value(it, 0, to_int32, 2, it.name))
        elif k == "trainbrakescontrollerminpressurereduction":
            v["min_reduction_psi"] = _num(rd, it, "pressure", 0.0)
        elif k == "enginecontrollers":
            for c in it.items:
                if c.__class__ is Block and c.key in _CONTROLLERS:
                    spec = _controller(rd, c)
                    if spec is not None:
                        v[_CONTROLLERS[c.key]] = spec

    handlers["wagon"] = wagon
    if kind == "engine":
        handlers["engine"] = engine
    for top in doc.items:
        if top.__class__ is not Block:
            continue
        h = handlers.get(top.key)
        if h is None:
            continue
        for it in top.items:
            if it.__class__ is Block:
                h(it)
    if kind == "engine" and (loco or brakes):
        v["loco_brakes"] = LocoBrakeSpec(**loco)  # type: ignore[arg-type]
    v["brakes"] = AirBrakeSpec(**brakes)  # type: ignore[arg-type]
    if ramps:
        v["ramps"] = TractionRamps(**ramps)  # type: ignore[arg-type]
    if dyn_ramps:
        # Open Rails (MSTSLocomotive.Initialize): the rates down to zero default to the
        # rates down
        dyn_ramps.setdefault("force_to_zero", dyn_ramps.get("force_down", 0.0))
        dyn_ramps.setdefault("power_to_zero", dyn_ramps.get("power_down", 0.0))
        v["dynamic_ramps"] = TractionRamps(**dyn_ramps)  # type: ignore[arg-type]
    if gear:
        v["gearbox"] = GearBoxSpec(**gear)  # type: ignore[arg-type]
    if msts_diesel:
        v["msts_diesel"] = MstsDiesel(**msts_diesel)  # type: ignore[arg-type]
    if kind == "engine" and steam.get("cylinder_diameter_m"):
        v["steam"] = SteamSpec(**steam)  # type: ignore[arg-type]
    return OrtsStock(**v)  # type: ignore[arg-type]


fast_pickle(Table, DieselEngineSpec, AirBrakeSpec, LocoBrakeSpec, SteamSpec, Notch, ControllerSpec, OrtsStock)
fast_pickle(TractionRamps, GearBoxSpec, MstsDiesel, FreightSpec)
