"""Walking a rolling-stock file: the raw, mutable state and one handler per block path
(docs/formats.md §10.1; :mod:`tdbtools.formats.stock` builds the record from the state)."""

from __future__ import annotations

from typing import Any

from ..stf.tree import Block
from ._read import Reader, to_float, to_int, to_int32
from .stock_parts import (
    ANY_UNITS,
    BEARING_TYPES,
    CAR_SLACK2_M,
    CAR_STIFFNESS_NPM,
    COUPLER_BREAK2_WHEN_ZERO,
    COUPLER_DEFAULT_BREAK,
    COUPLER_DEFAULT_R0_DIFF,
    COUPLER_DEFAULT_STIFFNESS,
    DEFAULT_DRIVER_WHEEL_RADIUS_M,
    DEFAULT_MASS_KG,
    DEFAULT_MAX_BRAKE_FORCE_N,
    DEFAULT_MERGE_SPEED_MS,
    DEFAULT_SIZE_M,
    DEFAULT_WHEEL_RADIUS_M,
    ENGINE_TYPES,
    MAX_BRAKE_SHOE_POINTS,
    RIGID_SLACK1_M,
    RIGID_SLACK2_M,
    WAGON_TYPES,
    BrakeShoeFriction,
    Coupler,
    TractiveForceCurve,
    _line,
)

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


def _read_curve(rd: Reader, blk: Block) -> TractiveForceCurve | None:
    """A 2-D force-curve block read as ``ORTSMaxTractiveForceCurves`` is (for the dynamic
    brake's curves in formats/stock_orts.py)."""
    holder = _Raw()
    _h_curves(holder, blk, rd)
    return holder.curve
